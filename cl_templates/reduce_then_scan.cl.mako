## Reduce-then-scan LSD radix sort: one digit pass is three kernels.
##   rts_count   - each block counts the digits of its contiguous range of tiles (local histogram)
##   rts_scan    - one work-group: exclusive scan of the digit-major count table [RADIX][num_blocks]
##   rts_scatter - each block walks its tiles in order; a tile is sorted by the digit in local memory
##                 (stable split passes of at most 4 bits), then written out coalesced, one digit run
##                 after another, at the block's running offset of each digit. Its steps per tile:
##                 load_tile, sort_by_digit (split_pass, reload_tile), find_runs, scatter_tile,
##                 advance_runs.
##   rts_small   - a whole sort of at most one tile by one work-group: load_tile, sort_tile over
##                 every bit, one write.
## Keys keep their own bits; the digit is taken from the order key (common.mako), so the key codec
## costs no pass and the output is bit-exact. The steps are static inline functions (see
## onesweep.cl.mako for why static).
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), radix_bits, wg, ipt,
## value_t (None for keys only), index_t ("uint" when every index and offset fits 32 bits, else "ulong"),
## fused_scan (rts_scatter takes rts_count's counts as they are and scans them itself, block by
## block: a pass is two launches, rts_count and rts_scatter).
<%namespace name="common" file="common.mako"/>
<%
    SUB_BITS = min(radix_bits, 4)
    SUB = 1 << SUB_BITS
    NSUB = radix_bits // SUB_BITS
    TILE = wg * ipt
    iota_ok = value_t in ("uint", "ulong")
    assert radix_bits in (2, 4, 8) and radix_bits % SUB_BITS == 0
    assert TILE <= 65536, "tile positions are kept in ushort"
%>
${common.sort_prelude(key_kind, key_bits, key_t, key_inf_bits, index_t, radix_bits, wg, ipt,
                      value_t)}
#define SUB_BITS ${SUB_BITS}
#define SUB ${SUB}
#define NSUB ${NSUB}

${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% if index_t != "uint":
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
% else:
#define wg_scan_index wg_scan_uint
% endif
${common.rake_scan_fn("rake_scan_index", "INDEX_T", "__global", "wg_scan_index")}
${common.rake_scan_fn("rake_scan_local", "uint", "__local", "wg_scan_uint", per="SUB")}
% if fused_scan:
${common.rake_scan_fn("rake_scan_totals", "INDEX_T", "__local", "wg_scan_index")}
% endif

/* The steps of the tile sorts (rts_scatter, rts_small). Work-item lid holds items k[i], src[i]:
   the tile's keys and their positions lid*IPT + i; positions >= valid are padding, with the
   largest sub-digit so that they stay behind every real key. */

/* coalesced load of the tile's keys into local memory (tile order), then each item takes IPT
   consecutive keys */
static inline void load_tile(__private KEY_T k[IPT], __private ushort src[IPT],
                             __global const KEY_T* keys_in, INDEX_T base, uint valid,
                             __local KEY_T* lkeys, uint lid)
{
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid)
            lkeys[j] = keys_in[base + j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < IPT; ++i) {
        const uint j = lid * IPT + i;
        src[i] = (ushort)j;
        k[i] = j < valid ? lkeys[j] : (KEY_T)0;
    }
}

/* One stable split pass of the tile in local memory by the sub-digit (order key >> sshift) &
   smask (at most SUB_BITS bits). Leaves the tile reordered in lkeys / lperm (source positions). */
static inline void split_pass(__private const KEY_T k[IPT], __private const ushort src[IPT],
                              uint sshift, uint smask, KEY_T flip, uint valid,
                              __local KEY_T* lkeys, __local ushort* lperm, __local uint* lcount,
                              __local uint* lscan, uint lid)
{
    for (uint e = lid; e < SUB * WG; e += WG)
        lcount[e] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint sd[IPT];
    for (uint i = 0; i < IPT; ++i) {
        sd[i] = lid * IPT + i < valid ? (uint)(order_key(k[i], flip) >> sshift) & smask
                                      : (uint)(SUB - 1);
        lcount[sd[i] * WG + lid] += 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* digit-major exclusive scan: item lid rakes entries [lid*SUB, lid*SUB + SUB) */
    rake_scan_local(lcount, lcount, SUB * WG, lscan, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < IPT; ++i) {
        const uint e = sd[i] * WG + lid;
        const uint rank = lcount[e];
        lcount[e] = rank + 1;
        if (lid * IPT + i < valid) {
            lkeys[rank] = k[i];
            lperm[rank] = src[i];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Take the items back from local memory after a split pass. */
static inline void reload_tile(__private KEY_T k[IPT], __private ushort src[IPT],
                               __local const KEY_T* lkeys, __local const ushort* lperm,
                               uint valid, uint lid)
{
    for (uint i = 0; i < IPT; ++i) {
        const uint j = lid * IPT + i;
        if (j < valid) {
            k[i] = lkeys[j];
            src[i] = lperm[j];
        }
    }
}

/* Stable sort of the tile by the digit (order key >> shift) & digit_mask: NSUB split passes of
   SUB_BITS bits, least significant first. The tile ends in lkeys / lperm. */
static inline void sort_by_digit(__private KEY_T k[IPT], __private ushort src[IPT], uint shift,
                                 uint digit_mask, KEY_T flip, uint valid, __local KEY_T* lkeys,
                                 __local ushort* lperm, __local uint* lcount,
                                 __local uint* lscan, uint lid)
{
    for (uint s = 0; s < NSUB; ++s) {
        const uint ss = s * SUB_BITS;
        split_pass(k, src, shift + ss, (digit_mask >> ss) & (SUB - 1), flip, valid, lkeys, lperm,
                   lcount, lscan, lid);
        if (s + 1 < NSUB)
            reload_tile(k, src, lkeys, lperm, valid, lid);
    }
}

/* Stable sort of the tile by bits [shift, end_bit) of the order key: split passes of SUB_BITS
   bits, least significant first. The tile ends in lkeys / lperm. */
static inline void sort_tile(__private KEY_T k[IPT], __private ushort src[IPT], uint shift,
                             uint end_bit, KEY_T flip, uint valid, __local KEY_T* lkeys,
                             __local ushort* lperm, __local uint* lcount, __local uint* lscan,
                             uint lid)
{
    for (; shift < end_bit; shift += SUB_BITS) {
        const uint m = (1u << min((uint)SUB_BITS, end_bit - shift)) - 1u;
        split_pass(k, src, shift, m, flip, valid, lkeys, lperm, lcount, lscan, lid);
        if (shift + SUB_BITS < end_bit)
            reload_tile(k, src, lkeys, lperm, valid, lid);
    }
}

/* counts[d * num_blocks + block] = number of keys of digit d in the block's tiles */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_count(__global const KEY_T* restrict keys, ulong keys_off,
               __global INDEX_T* restrict counts,
               INDEX_T n, INDEX_T tiles_per_block, uint num_blocks,
               uint shift, uint digit_mask, KEY_T flip)
{
    __local uint hist[RADIX];
    const uint lid = get_local_id(0);
    const uint block = get_group_id(0);
    keys += keys_off;
    for (uint e = lid; e < RADIX; e += WG)
        hist[e] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const INDEX_T start = (INDEX_T)block * tiles_per_block * TILE;
    const INDEX_T end = min(start + tiles_per_block * TILE, n);
    for (INDEX_T i = start + lid; i < end; i += WG)
        atomic_inc(&hist[digit_of(keys[i], shift, digit_mask, flip)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < RADIX; e += WG)
        counts[(INDEX_T)e * num_blocks + block] = hist[e];
}

/* In place: counts[i] = sum of counts[0..i) (one work-group; each item rakes a contiguous run). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_scan(__global INDEX_T* restrict counts, uint m)
{
    __local INDEX_T scratch[WG];
    rake_scan_index(counts, counts, m, scratch, get_local_id(0));
}

/* The steps of rts_scatter, after sort_tile. */

/* the tile is ordered by digit in lkeys: where each digit's run starts and ends (lstart, lend:
   zero for a digit the tile lacks); dd[i] is the digit of local position i * WG + lid */
static inline void find_runs(__private uint dd[IPT], __local const KEY_T* lkeys, uint valid,
                             uint shift, uint digit_mask, KEY_T flip, __local uint* lstart,
                             __local uint* lend, uint lid)
{
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            const uint d = digit_of(lkeys[j], shift, digit_mask, flip);
            dd[i] = d;
            if (j == 0 || digit_of(lkeys[j - 1], shift, digit_mask, flip) != d)
                lstart[d] = j;
            if (j == valid - 1 || digit_of(lkeys[j + 1], shift, digit_mask, flip) != d)
                lend[d] = j + 1;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* coalesced scatter: consecutive local positions of a digit go to consecutive addresses, from
   the block's running offset of the digit, lrun */
static inline void scatter_tile(__private const uint dd[IPT], __local const KEY_T* lkeys,
                                __local const ushort* lperm, uint valid, INDEX_T base,
                                __local const INDEX_T* lrun, __local const uint* lstart,
                                __global KEY_T* keys_out, uint write_keys,
% if value_t:
                                __global const VALUE_T* vals_in,
                                __global VALUE_T* vals_out, uint vals_iota,
% endif
                                uint lid)
{
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            const uint d = dd[i];
            const INDEX_T pos = lrun[d] + (j - lstart[d]);
            if (write_keys)
                keys_out[pos] = lkeys[j];
% if value_t:
            vals_out[pos] = value_at(vals_in, base + lperm[j], 0, vals_iota);
% endif
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* the block's running offsets move past the tile's digit runs; the runs are reset */
static inline void advance_runs(__local INDEX_T* lrun, __local uint* lstart, __local uint* lend,
                                uint lid)
{
    for (uint e = lid; e < RADIX; e += WG) {
        lrun[e] += lend[e] - lstart[e];
        lstart[e] = 0;
        lend[e] = 0;
    }
}

/* Each block walks its tiles in order: load, sort by the digit in local memory, find the digit
   runs, scatter them out, advance the block's running offsets. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_scatter(${common.stream_params(value_t, 17) | trim}
                 __global const INDEX_T* restrict offsets,
                 INDEX_T n, INDEX_T tiles_per_block, uint num_blocks,
                 uint shift, uint digit_mask, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lperm[TILE];
    __local uint lcount[SUB * WG];
    __local uint lscan[WG];
    __local uint lstart[RADIX];
    __local uint lend[RADIX];
    __local INDEX_T lrun[RADIX];

    const uint lid = get_local_id(0);
    const uint block = get_group_id(0);
    keys_in += keys_in_off;
    keys_out += keys_out_off;
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
% endif

    const INDEX_T num_tiles = (n + TILE - 1) / TILE;
    const INDEX_T t0 = (INDEX_T)block * tiles_per_block;
    const INDEX_T t1 = min(t0 + tiles_per_block, num_tiles);
% if fused_scan:
    /* offsets holds the counts: digit d of this block starts after every key of a smaller digit
       and after digit d's keys in the blocks before this one */
    __local INDEX_T ltotal[RADIX];
    __local INDEX_T lscan_index[WG];
    for (uint e = lid; e < RADIX; e += WG) {
        INDEX_T total = 0, before = 0;
        for (uint b = 0; b < num_blocks; ++b) {
            const INDEX_T c = offsets[(INDEX_T)e * num_blocks + b];
            before += b < block ? c : (INDEX_T)0;
            total += c;
        }
        ltotal[e] = total;
        lrun[e] = before;
        lstart[e] = 0;
        lend[e] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    rake_scan_totals(ltotal, ltotal, RADIX, lscan_index, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < RADIX; e += WG)
        lrun[e] += ltotal[e];
% else:
    for (uint e = lid; e < RADIX; e += WG) {
        lrun[e] = offsets[(INDEX_T)e * num_blocks + block];
        lstart[e] = 0;
        lend[e] = 0;
    }
% endif

    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T base = t * TILE;
        const uint valid = (uint)min((INDEX_T)TILE, n - base);
        KEY_T k[IPT];
        ushort src[IPT];
        load_tile(k, src, keys_in, base, valid, lkeys, lid);
        sort_by_digit(k, src, shift, digit_mask, flip, valid, lkeys, lperm, lcount, lscan, lid);
        uint dd[IPT];
        find_runs(dd, lkeys, valid, shift, digit_mask, flip, lstart, lend, lid);
        scatter_tile(dd, lkeys, lperm, valid, base, lrun, lstart, keys_out, write_keys,
% if value_t:
                     vals_in, vals_out, vals_iota,
% endif
                     lid);
        advance_runs(lrun, lstart, lend, lid);
    }
}


/* A whole sort of n <= TILE keys by one work-group in one launch: split passes of SUB_BITS bits
   over [begin_bit, end_bit) in local memory, then one write. Buffers may be the same (in place):
   everything is read before anything is written. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_small(${common.stream_params(value_t, 15, restrict=False) | trim}
               uint n, uint begin_bit, uint end_bit, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lperm[TILE];
    __local uint lcount[SUB * WG];
    __local uint lscan[WG];
    const uint lid = get_local_id(0);
    const uint valid = n;
    keys_in += keys_in_off;
    keys_out += keys_out_off;
    KEY_T k[IPT];
    ushort src[IPT];
    load_tile(k, src, keys_in, 0, valid, lkeys, lid);
    sort_tile(k, src, begin_bit, end_bit, flip, valid, lkeys, lperm, lcount, lscan, lid);
${common.small_sort_write(value_t, "valid")}
}

% if iota_ok:
${common.iota_kernel(value_t, index_t)}
% endif
