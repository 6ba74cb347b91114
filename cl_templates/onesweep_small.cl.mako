/* A whole sort of n <= TILE keys by one work-group in one launch (os_small), ranked as onesweep's
   tiles are (onesweep_steps.mako): for each digit of [begin_bit, end_bit), the tile's keys are
   ranked stably by the digit and placed in local memory in digit order, where the next digit's
   ranking reads them, their source positions beside them; then one write. Keys and values may
   be in place: everything is read before anything is written. */
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="onesweep_steps.mako"/>
<%
    RADIX = 1 << radix_bits
    unroll = "    #pragma unroll" if backend == "ptx" else ""
%>\
${steps.prelude()}
${steps.ranking_fns()}

/* os_small's local memory: the tile's keys stay in local memory from one digit to the next, so
   the subgroup counters are apart from them (TileStorage overlays them); RankStorage:
   tile_rank.mako */
typedef struct {
    KEY_T keys[TILE];          /* the tile, in the order of the digits ranked so far */
    uint count[NW * RADIX];    /* the subgroup counters */
    RankStorage rank;
% if value_t:
    ushort perm[TILE];         /* each key's source position */
% endif
} SmallStorage;

__kernel WG_ATTR SG_ATTR
void os_small(${common.stream_params(value_t, 14, restrict=False) | trim}
              uint n, uint begin_bit, uint end_bit, KEY_T flip, uint write_keys)
{
    __local SmallStorage s;
    __local KEY_T* lkeys = s.keys;
    __local uint* lcount = s.count;
% if value_t:
    __local ushort* lperm = s.perm;
% endif
    const uint lid = get_local_id(0);
    const uint lane = sg_lane();
    const uint w = sg_id();
    keys_in += keys_in_off;
    keys_out += keys_out_off;
    KEY_T k[IPT];
    uint dig[IPT];
% if value_t:
    ushort src[IPT];
% endif
    for (uint shift = begin_bit; shift < end_bit; shift += ${radix_bits}) {
        const uint mask = (1u << min((uint)${radix_bits}, end_bit - shift)) - 1u;
        /* the keys: from the input for the first digit, else in the order of the one before;
           in the tile's form (onesweep_steps.mako, tile_key) from their load to their write */
        if (shift == begin_bit) {
            load_keys(k, dig, keys_in, n, shift, mask, flip, 0, w, lane);
        } else {
${unroll}
            for (uint i = 0; i < IPT; ++i) {
                const uint j = w * SG * IPT + i * SG + lane;
                k[i] = j < n ? lkeys[j] : (KEY_T)0;
                dig[i] = j < n ? ${steps.tile_digit("k[i]", True, "mask")} : PAD_DIGIT;
            }
        }
% if value_t:
${unroll}
        for (uint i = 0; i < IPT; ++i) {
            const uint j = w * SG * IPT + i * SG + lane;
            src[i] = shift == begin_bit ? (ushort)j : (j < n ? lperm[j] : (ushort)0);
        }
% endif
        /* rank by the digit, then place (the barrier after the ranks: every key of the tile
           is read before any is overwritten) */
        for (uint e = lid; e < NW * RADIX; e += WG)
            lcount[e] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        rank_in_subgroups(dig, lcount, &s.rank, w, lane);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint cnt[DPI];
        sum_subgroups(cnt, lcount, &s.rank, lid);
        scan_digits(lcount, &s.rank, lid);
        uint dest[IPT];
        places(dest, dig, lcount, &s.rank, w);
${unroll}
        for (uint i = 0; i < IPT; ++i) {
            if (dest[i] < n) {
                lkeys[dest[i]] = k[i];
% if value_t:
                lperm[dest[i]] = src[i];
% endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
${common.small_sort_write(value_t, "n", key=capture(steps.key_of_tile, "lkeys[j]"))}
}
% if value_t in ("uint", "ulong"):

${common.iota_kernel(value_t, index_t)}
% endif
