## Segmented sort: every segment [bound(s), bound(s + 1)) of the keys sorted on its own, in one
## launch sequence whose kernels read the offsets on the device (nothing is read back to sort the
## segments into size classes). bound(s) is offsets[s], or s * row_len for rows of row_len keys.
##   seg_local   - segments of at most one tile (TILE keys): a work-group takes SPG consecutive
##                 segments and sorts runs of them that fit one tile together in local memory:
##                 8-bit digit passes ranked with subgroup match masks (common.mako's rank_rounds),
##                 then, for a run of several segments, one stable pass by segment; one write.
##                 Longer segments are left to the passes below.
##   seg_plan    - one work-item per segment: checks the offsets (non-decreasing, within [0, n]),
##                 lists the segments longer than a tile ("large") and the blocks (work-groups)
##                 each gets, min(its tiles, max_blocks), each block walking consecutive tiles,
##                 and maps blocks to segments.
##   seg_count, seg_scan, seg_scatter - one digit pass of reduce-then-scan inside every large
##                 segment at once: blocks count their digits, one work-group per segment scans
##                 the segment's digit-major count table (from the segment's start), blocks rank
##                 each of their tiles in local memory and write its digit runs out.
## Invalid offsets (seg_plan sets info[0]) make every kernel of the call return at once.
## The steps are static inline functions (common.mako says why); those taking the tile's private
## arrays are always inlined (STEP).
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), wg, ipt, value_t (None for
## keys only), index_t ("uint" below 2**31 keys, else "ulong"), off_t (the offsets' type: "int" or
## "long"), backend and sg_size (the ranking's subgroup primitives, common.mako).
<%namespace name="common" file="common.mako"/>
<%namespace name="tile" file="tile_steps.mako"/>
<%
    RADIX = 256
    TILE = wg * ipt
    MAX_SPG = 256
    iota_ok = value_t in ("uint", "ulong")
    unroll = "    #pragma unroll" if backend == "ptx" else ""
    unroll_at = lambda pad: (" " * pad + "#pragma unroll") if backend == "ptx" else ""
    # partial unrolling of loops of unknown length on NVIDIA (loads in flight together)
    unroll_n = lambda n, pad: (" " * pad + f"#pragma unroll {n}") if backend == "ptx" else ""
    assert wg % sg_size == 0 and sg_size <= 32
    assert TILE < 65536, "tile positions are kept in ushort and ranks share a word with digits"
%>
${tile.prelude()}
#define OFF_T ${off_t}
#define MAX_SPG ${MAX_SPG}

/* the first key of segment s (and the end of segment s - 1) */
static inline INDEX_T seg_bound(__global const OFF_T* offsets, INDEX_T row_len, INDEX_T s)
{
    return row_len ? s * row_len : (INDEX_T)offsets[s];
}

/* blocks of a large segment of len keys: min(tiles, max_blocks), each of tpb tiles */
static inline INDEX_T seg_tiles_per_block(INDEX_T len, uint max_blocks)
{
    const INDEX_T tiles = (len + TILE - 1) / TILE;
    return (tiles + max_blocks - 1) / max_blocks;
}

static inline INDEX_T seg_blocks(INDEX_T len, uint max_blocks)
{
    const INDEX_T tiles = (len + TILE - 1) / TILE;
    const INDEX_T tpb = seg_tiles_per_block(len, max_blocks);
    return (tiles + tpb - 1) / tpb;
}
% if value_t:

/* the value of the element at index i; with iota (argsort) its position in its segment, which
   starts at `first` */
static inline VALUE_T seg_value(__global const VALUE_T* vals, INDEX_T i, INDEX_T first, uint iota)
{
%   if iota_ok:
    if (iota)
        return (VALUE_T)(i - first);
%   endif
    return vals[i];
}
% endif

${tile.tile_fns()}

/* the segment x in [a, b) of a run whose bounds are lofs[a..b] that holds global index p
   (lofs[a] <= p < lofs[b]): the largest x with lofs[x] <= p, which skips empty segments */
static inline uint run_segment(__local const INDEX_T* lofs, uint a, uint b, INDEX_T p)
{
    uint lo = a, hi = b - 1;
    while (lo < hi) {
        const uint mid = (lo + hi + 1) / 2;
        if (lofs[mid] <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* One run: segments [a, b) of the work-group (bounds lofs[a..b], together at most TILE keys)
   sorted in local memory and written out. Keys and values are read before anything is written,
   so the output may be the input (in place). */
STEP void sort_tile_run(${common.stream_params(value_t, 24, restrict=False) | trim}
                        __local const INDEX_T* lofs, uint a, uint b, uint begin_bit,
                        uint end_bit, KEY_T flip, uint write_keys, __local KEY_T* lkeys,
                        __local ushort* lsrc, __local uint* lcount, __local RankStorage* r,
                        uint w, uint lane, uint lid)
{
    const INDEX_T base = lofs[a];
    const uint valid = (uint)(lofs[b] - base);
    KEY_T k[IPT];
    ushort src[IPT];
    uint dig[IPT];
    /* the items per work-item this run needs: a short run is spread over every subgroup */
    const uint e = max(1u, (valid + WG - 1) / WG);
    load_slots(k, src, keys_in, base, valid, e, w, lane);
    const uint track = ${1 if value_t else 0} || b - a > 1;
    uint placed = 0;
    for (uint shift = begin_bit; shift < end_bit; shift += 8) {
        const uint mask = (1u << min(8u, end_bit - shift)) - 1u;
        if (placed)
            reload_slots(k, src, lkeys, lsrc, valid, e, track, w, lane);
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i)
            dig[i] = HAS(i) ? digit_of(k[i], shift, mask, flip) : RADIX;
        place(k, src, dig, valid, e, track, lkeys, lsrc, lcount, r, w, lane, lid);
        placed = 1;
    }
    if (b - a > 1) {
        /* the run sorted by key: one stable pass by segment puts each key in its segment */
        if (placed)
            reload_slots(k, src, lkeys, lsrc, valid, e, track, w, lane);
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i)
            dig[i] = HAS(i) ? run_segment(lofs, a, b, base + src[i]) - a : RADIX;
        place(k, src, dig, valid, e, track, lkeys, lsrc, lcount, r, w, lane, lid);
        placed = 1;
    }
    if (!placed) {   /* no bit to sort by (argsort of an empty bit range): the identity */
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i) {
            if (HAS(i)) {
                lkeys[SLOT(i)] = k[i];
                lsrc[SLOT(i)] = src[i];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
% if value_t:
    VALUE_T v[IPT];
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            const INDEX_T first = lofs[run_segment(lofs, a, b, base + j)];
            v[i] = seg_value(vals_in, base + lsrc[j], first, vals_iota);
        }
    }
% endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            if (write_keys)
                keys_out[base + j] = lkeys[j];
% if value_t:
            vals_out[base + j] = v[i];
% endif
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Segments [g * spg, (g + 1) * spg) of work-group g: consecutive runs of them that fit one tile
   are sorted together; segments longer than a tile are skipped (the digit passes sort them). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) SG_ATTR
void seg_local(${common.stream_params(value_t, 15, restrict=False) | trim}
               __global const OFF_T* offsets, ulong offsets_off, INDEX_T num_segments,
               INDEX_T row_len, __global const INDEX_T* info, uint checked, uint spg,
               uint begin_bit, uint end_bit, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lsrc[TILE];
    __local uint lcount[NW * RADIX];
    __local RankStorage rank;
    __local INDEX_T lofs[MAX_SPG + 1];
    const uint lid = get_local_id(0);
    const uint w = sg_id(), lane = sg_lane();
    if (checked && info[0])
        return;
    offsets += offsets_off;
    keys_in += keys_in_off;
    keys_out += keys_out_off;
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
% endif
    const INDEX_T s0 = (INDEX_T)get_group_id(0) * spg;
    const uint cnt = (uint)min((INDEX_T)spg, num_segments - s0);
    for (uint x = lid; x <= cnt; x += WG)
        lofs[x] = seg_bound(offsets, row_len, s0 + x);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* every work-item takes the same path through the runs (they depend on lofs only) */
    uint a = 0;
    while (a < cnt) {
        if (lofs[a + 1] - lofs[a] > TILE) {
            ++a;
            continue;
        }
        /* b: the largest b <= cnt with lofs[b] - lofs[a] <= TILE */
        uint lo = a + 1, hi = cnt;
        while (lo < hi) {
            const uint mid = (lo + hi + 1) / 2;
            if (lofs[mid] - lofs[a] <= TILE)
                lo = mid;
            else
                hi = mid - 1;
        }
        sort_tile_run(keys_in, 0, keys_out, 0,
% if value_t:
                      vals_in, 0, vals_out, 0, vals_iota,
% endif
                      lofs, a, lo, begin_bit, end_bit, flip, write_keys, lkeys, lsrc, lcount,
                      &rank, w, lane, lid);
        a = lo;
    }
}

/* Work-item s checks segment s (0 <= offsets[s] <= offsets[s + 1] <= n; a failed check sets
   info[0], and every later kernel of the call returns at once) and, for a segment longer than
   a tile, appends it to the large list: r = info[1]++, large[r] = s, its blocks start at
   lblk[r] = (info[2] += its blocks), and blkmap[g] = r for each of them. The order of the list
   is the order of the atomics (it only decides which work-groups sort which segment). lcap and
   gcap bound the list and the blocks (reached only by offsets that fail the check somewhere). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void seg_plan(__global const OFF_T* restrict offsets, ulong offsets_off, INDEX_T num_segments,
              INDEX_T n, INDEX_T row_len, uint check, uint max_blocks,
              __global INDEX_T* restrict info, __global INDEX_T* restrict large,
              __global INDEX_T* restrict lblk, __global INDEX_T* restrict blkmap, INDEX_T lcap,
              INDEX_T gcap)
{
    const INDEX_T s = get_global_id(0);
    offsets += offsets_off;
    if (s > num_segments || (s == num_segments && s > 0))
        return;
    long prev, next;
    if (check) {
        prev = (long)offsets[s];
        next = s < num_segments ? (long)offsets[s + 1] : prev;
    } else {
        prev = (long)seg_bound(offsets, row_len, s);
        next = (long)seg_bound(offsets, row_len, s + 1);
    }
    if (prev < 0 || next < prev || next > (long)n) {
        COUNTER_XCHG(&info[0], 1);
        return;
    }
    if (s == num_segments || next - prev <= TILE)
        return;
    const INDEX_T nb = seg_blocks((INDEX_T)(next - prev), max_blocks);
    const INDEX_T r = COUNTER_ADD(&info[1], 1);
    const INDEX_T g0 = COUNTER_ADD(&info[2], nb);
    if (r >= lcap || g0 + nb > gcap) {
        COUNTER_XCHG(&info[0], 1);
        return;
    }
    large[r] = s;
    lblk[r] = g0;
    for (INDEX_T b = 0; b < nb; ++b)
        blkmap[g0 + b] = r;
}

/* the keys [*lo, *hi) of block g and the first key of its segment, *first */
static inline void block_range(__global const OFF_T* offsets, INDEX_T row_len,
                               __global const INDEX_T* large, __global const INDEX_T* lblk,
                               __global const INDEX_T* blkmap, INDEX_T g, uint max_blocks,
                               INDEX_T* first, INDEX_T* lo, INDEX_T* hi)
{
    const INDEX_T r = blkmap[g];
    const INDEX_T s = large[r];
    const INDEX_T begin = seg_bound(offsets, row_len, s);
    const INDEX_T end = seg_bound(offsets, row_len, s + 1);
    const INDEX_T span = seg_tiles_per_block(end - begin, max_blocks) * TILE;
    *first = begin;
    *lo = begin + (g - lblk[r]) * span;
    *hi = min(*lo + span, end);
}

/* counts[g * RADIX + d] = keys of digit d in block g (block-major: coalesced here, in seg_scan
   and in seg_scatter) */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void seg_count(__global const KEY_T* restrict keys, ulong keys_off,
               __global const OFF_T* restrict offsets, ulong offsets_off, INDEX_T row_len,
               __global const INDEX_T* restrict info, __global const INDEX_T* restrict large,
               __global const INDEX_T* restrict lblk, __global const INDEX_T* restrict blkmap,
               __global INDEX_T* restrict counts, uint max_blocks, uint shift, uint digit_mask,
               KEY_T flip)
{
    __local uint hist[RADIX];
    const uint lid = get_local_id(0);
    const INDEX_T g = get_group_id(0);
    if (info[0] || g >= info[2])
        return;
    keys += keys_off;
    offsets += offsets_off;
    INDEX_T first, lo, hi;
    block_range(offsets, row_len, large, lblk, blkmap, g, max_blocks, &first, &lo, &hi);
    for (uint d = lid; d < RADIX; d += WG)
        hist[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (INDEX_T i = lo + lid; i < hi; i += WG)
        atomic_inc(&hist[digit_of(keys[i], shift, digit_mask, flip)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = lid; d < RADIX; d += WG)
        counts[g * RADIX + d] = hist[d];
}

/* Work-group r, for large segment r: its blocks' counts (B blocks from g0) become
   where each block's keys of each digit go: the segment's first key plus the keys before them
   in (digit, block) order. Each work-item rakes the entries of its digits (a contiguous run of
   the digit-major order; no division by B, which oclgrind's checker cannot follow). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void seg_scan(__global const OFF_T* restrict offsets, ulong offsets_off, INDEX_T row_len,
              __global const INDEX_T* restrict info, __global const INDEX_T* restrict large,
              __global const INDEX_T* restrict lblk, __global INDEX_T* restrict counts,
              uint max_blocks)
{
    __local INDEX_T scratch[WG];
    const uint lid = get_local_id(0);
    const INDEX_T r = get_group_id(0);
    if (info[0] || r >= info[1])
        return;
    offsets += offsets_off;
    const INDEX_T first = seg_bound(offsets, row_len, large[r]);
    const INDEX_T g0 = lblk[r];
    const INDEX_T nb = seg_blocks(seg_bound(offsets, row_len, large[r] + 1) - first, max_blocks);
    const uint d0 = min(lid * ${-(-RADIX // wg)}u, (uint)RADIX);
    const uint d1 = min(d0 + ${-(-RADIX // wg)}u, (uint)RADIX);
    INDEX_T sum = 0;
    for (uint d = d0; d < d1; ++d) {
${unroll_n(8, 8)}
        for (INDEX_T b = 0; b < nb; ++b)
            sum += counts[(g0 + b) * RADIX + d];
    }
    INDEX_T total;
    INDEX_T run = first + wg_scan_index(sum, scratch, lid, &total);
    for (uint d = d0; d < d1; ++d) {
${unroll_n(8, 8)}
        for (INDEX_T b = 0; b < nb; ++b) {
            const INDEX_T at = (g0 + b) * RADIX + d;
            const INDEX_T c = counts[at];
            counts[at] = run;
            run += c;
        }
    }
}

/* Block g walks its tiles in order: each is ranked by the digit in local memory (place), then
   its digit runs are written out, coalesced, at the block's running offsets. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) SG_ATTR
void seg_scatter(${common.stream_params(value_t, 17) | trim}
                 __global const OFF_T* restrict offsets, ulong offsets_off, INDEX_T row_len,
                 __global const INDEX_T* restrict info, __global const INDEX_T* restrict large,
                 __global const INDEX_T* restrict lblk, __global const INDEX_T* restrict blkmap,
                 __global const INDEX_T* restrict counts, uint max_blocks,
                 uint shift, uint digit_mask, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lsrc[TILE];
    __local uint lcount[NW * RADIX];
    __local RankStorage rank;
    __local INDEX_T lrun[RADIX];
    const uint lid = get_local_id(0);
    const uint w = sg_id(), lane = sg_lane();
    const INDEX_T g = get_group_id(0);
    if (info[0] || g >= info[2])
        return;
    keys_in += keys_in_off;
    keys_out += keys_out_off;
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
% endif
    offsets += offsets_off;
    INDEX_T first, lo, hi;
    block_range(offsets, row_len, large, lblk, blkmap, g, max_blocks, &first, &lo, &hi);
    for (uint d = lid; d < RADIX; d += WG)
        lrun[d] = counts[g * RADIX + d];
    for (INDEX_T base = lo; base < hi; base += TILE) {
        const uint valid = (uint)min((INDEX_T)TILE, hi - base);
        KEY_T k[IPT];
        ushort src[IPT];
        uint dig[IPT];
        const uint e = (valid + WG - 1) / WG;   /* IPT but for a segment's last tile */
        load_slots(k, src, keys_in, base, valid, e, w, lane);
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i)
            dig[i] = HAS(i) ? digit_of(k[i], shift, digit_mask, flip) : RADIX;
        place(k, src, dig, valid, e, ${1 if value_t else 0}, lkeys, lsrc, lcount, &rank, w, lane,
              lid);
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i) {
            const uint j = i * WG + lid;
            if (j < valid) {
                const KEY_T key = lkeys[j];
                const uint d = digit_of(key, shift, digit_mask, flip);
                const INDEX_T pos = lrun[d] + (j - lcount[d]);
                if (write_keys)
                    keys_out[pos] = key;
% if value_t:
                vals_out[pos] = seg_value(vals_in, base + lsrc[j], first, vals_iota);
% endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint d = lid; d < RADIX; d += WG)
            lrun[d] += (d + 1 < RADIX ? lcount[d + 1] : valid) - lcount[d];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
