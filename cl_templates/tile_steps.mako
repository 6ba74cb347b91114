## The steps that the segmented sort (segmented.cl.mako) compiles: a tile of keys ranked by an
## 8-bit digit in local memory, stably, by tile_rank.mako's block rank. A Mako library of defs that emit C and read the program's
## template parameters (key codec, wg, ipt, value_t, index_t, backend, sg_size) from the render's
## context; each program imports it with
##   <%namespace name="tile" file="tile_steps.mako"/>
## and emits ${tile.prelude()} (pragmas, the sort prelude, the subgroup primitives, counters and
## scans), then its own #defines, then ${tile.tile_fns()} (place, load_slots, reload_slots).
<%namespace name="common" file="common.mako"/>
<%namespace name="rank" file="tile_rank.mako"/>

## The head of the program: tile_rank.mako's (pragmas, the keys' and tile's #defines with RADIX
## 256, SG, NW, SG_ATTR, the subgroup primitives over 9-bit digits (RADIX for padding), the index
## counters, wg_scan_uint, STEP), then DPI, the index scan, wg_any and (ptx) the 8-bit ballot
## match. Tile positions are kept in ushort (tile_rank.mako's assert: under 65536).
<%def name="prelude()">
${rank.prelude(8, 9)}
/* digits per work-item: work-item lid owns digits lid, lid + WG, ... */
#define DPI ${-(-256 // wg)}
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
${common.wg_any_fn()}
% if backend == "ptx":
/* sg_match for a round without padding: digits below RADIX need one ballot per digit bit */
${common.ballot_match_fn("sg_match_digits", 8, scratch=False)}
% endif
</%def>

## The tile's steps: SLOT and HAS, place (a tile ranked and placed in local memory by its digits),
## load_slots and reload_slots. `unroll` lines come from the backend (ptx: #pragma unroll).
<%def name="tile_fns()">
<% unroll = "    #pragma unroll" if backend == "ptx" else "" %>\
${rank.rank_fns(8, True, "sg_match_digits")}
/* The tile's items: subgroup w owns tile slots [w*SG*e, (w+1)*SG*e), lane-striped, so that
   loads are coalesced and slot order is the order in which rank() meets the items; e (at most
   IPT) is the items per work-item in use: IPT for a full tile, fewer for a short run of segments,
   so that every subgroup ranks a share of it instead of the first ones all of it. HAS(i): item i
   is one of the `valid` keys (not padding). */
#define SLOT(i) (w * (SG * e) + (i) * SG + lane)
#define HAS(i) ((i) < e && SLOT(i) < valid)

/* Stable placement of the tile by the digits dig[i] (RADIX for padding), by tile_rank.mako's
   block rank (match masks within subgroups, the subgroups' counts summed per digit, the digits
   scanned): keys and source slots move to local memory in digit order (the source slots only
   with `track`: values, or a pass by segment, follow). Afterwards lcount[d] (subgroup 0's entry)
   is the number of the tile's keys whose digit is below d. Every work-item must call it; it
   ends with a barrier. */
STEP void place(__private const KEY_T k[IPT], __private const ushort src[IPT],
                __private uint dig[IPT], uint valid, uint e, uint track,
                __local KEY_T* lkeys, __local ushort* lsrc, __local uint* lcount,
                __local RankStorage* r, uint w, uint lane, uint lid)
{
    for (uint x = lid; x < NW * RADIX; x += WG)
        lcount[x] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    rank_in_subgroups(dig, lcount, r, valid, e, w, lane);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint cnt[DPI];
    sum_subgroups(cnt, lcount, r, lid);
    scan_digits(lcount, r, lid);
    uint dest[IPT];
    places(dest, dig, lcount, r, w);
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        if (dest[i] < valid) {
            lkeys[dest[i]] = k[i];
            if (track)
                lsrc[dest[i]] = src[i];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* the tile's first `valid` keys from global memory, in slot order; src[i] is the slot */
STEP void load_slots(__private KEY_T k[IPT], __private ushort src[IPT],
                     __global const KEY_T* keys, INDEX_T base, uint valid, uint e, uint w,
                     uint lane)
{
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = SLOT(i);
        src[i] = (ushort)j;
        k[i] = HAS(i) ? keys[base + j] : (KEY_T)0;
    }
}

/* the items back from local memory after place(), in slot order */
STEP void reload_slots(__private KEY_T k[IPT], __private ushort src[IPT],
                       __local const KEY_T* lkeys, __local const ushort* lsrc,
                       uint valid, uint e, uint track, uint w, uint lane)
{
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = SLOT(i);
        if (HAS(i)) {
            k[i] = lkeys[j];
            if (track)
                src[i] = lsrc[j];
        }
    }
}
</%def>
