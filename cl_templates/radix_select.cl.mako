## Top-k by most-significant-digit radix select (seed 000), for `rows` rows of `row_len` keys.
##
## The selection key of an element is the pair (sel, pos): sel is the order key (common.mako),
## inverted for the largest k, and pos its position in the row. The k smallest pairs are selected;
## as pairs are distinct, the k-th one is unique, ties go to the smaller position and NaN, whose
## order key is the largest, counts as the largest value. Digits of DIGIT_BITS are taken from sel
## (KEY_DIGITS of them) and then from pos (pos_bits / DIGIT_BITS, the host's choice from row_len),
## most significant first.
##
##   topk_init  - per row: state, output and candidate counters, the histograms zeroed
##   topk_pass  - pass p: first the pivot of digit p - 1 from pass p - 1's histogram (the bucket
##                that holds the remaining k-th pair); then reads the row (or the candidates of
##                pass p - 1) and classifies every element that matched digits 0..p-2 by its digit
##                p - 1 against the pivot: below goes to the output, equal stays a candidate
##                (written out when it fits, histogrammed by digit p), above is dropped. Pass 0
##                only histograms digit 0. Once the pivot bucket is exactly what is still needed,
##                the pass takes it whole and the row is done.
##   topk_sort_rows - per row, in local memory: bitonic sort of the k selected pairs (sorted=True)
##   topk_row_of / topk_gather - the pieces of the global-sort route for larger k
##
## Each pass reads its input once; for random data pass 0 and pass 1 read the row and later passes
## read only candidates, so the input is read about twice. A pivot bucket larger than the candidate
## buffer (clustered data) is not written; the next pass re-reads the row instead.
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), index_t (positions and
## counts), out_index_t (indices topk_pass writes: row positions, or indices into the whole batch
## for the global-sort route), idx_t (the caller's index type), wg (a power of two >= RADIX),
## ipt, sort_size (power of two, the largest k that topk_sort_rows sorts; 0 when it is not
## built), warp_aggregate (NVIDIA: warp ballots and a shuffle, common.mako's "ptx" subgroup
## primitives, merge a warp's equal digits into one local atomic).
##
## Work-item dependent branches after a barrier: the pass kernels have barriers under uniform
## conditions (a finished row returns early, `if (!last)`, `if (any)`), and PoCL 3.1 treats the
## first branch of a region after such a barrier as uniform: it evaluates it for work-item 0 and
## assumes the others agree. A per-digit loop `for (d = lid; d < RADIX; d += WG)` there is always
## taken when wg == RADIX, but from wg = 512 on work-items lid >= RADIX ran it too, adding their
## histogram counts 1 KiB (wg - RADIX counters) past their row's histogram: into the next row's,
## or past the buffer. So after a barrier the pass kernels hand out digits without branching on
## lid: every work-item takes digit lid & (RADIX - 1), those from RADIX on with a count of zero
## (a select, not a branch), in next_state's histogram read and in the final histogram add.
<%namespace name="common" file="common.mako"/>
<%
    DIGIT_BITS = 8
    RADIX = 1 << DIGIT_BITS
    assert key_bits % DIGIT_BITS == 0
    KEY_DIGITS = key_bits // DIGIT_BITS
    TILE = wg * ipt
    assert TILE < 65536, "per-tile counts are packed in 16 bits"
    assert wg >= RADIX and wg & (wg - 1) == 0
    unroll = "#pragma unroll"
    # Unrolled, the output loop keeps x, pos and cls in registers (NVIDIA); PoCL 3.1 computes
    # wrong output slots from the unrolled loop, so it stays a loop elsewhere.
    unroll_out = unroll if warp_aggregate else ""
    VEC = min(16 // (key_bits // 8), ipt)
    assert ipt % VEC == 0 and VEC in (2, 4, 8, 16)
    ksfx = "UL" if key_bits == 64 else "U"
    isfx = "UL" if index_t == "ulong" else "U"
%>
% if index_t == "ulong" or key_bits == 64:
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define OUT_INDEX_T ${out_index_t}
#define IDX_T ${idx_t}
#define WG ${wg}
#define IPT ${ipt}
#define TILE ${TILE}
#define VEC ${VEC}
#define ELEM(i) (base + ((INDEX_T)((i) / VEC) * WG + lid) * VEC + (i) % VEC)
#define RADIX ${RADIX}
#define NSUB ${8 if warp_aggregate else 1}
#define DIGIT_BITS ${DIGIT_BITS}
#define KEY_BITS ${key_bits}
#define KEY_DIGITS ${KEY_DIGITS}
/* the kernels' steps: always inlined, so that the private arrays a step takes stay in registers */
#define STEP inline __attribute__((always_inline))

## row state flags
#define F_LAST 1u        /* the next pass takes the pivot bucket whole; then the row is done */
#define F_DONE 2u
#define F_SRC_CANDS 4u   /* the next pass reads the candidates written by the pass before it */
#define F_WRITE 8u       /* the next pass writes its candidates */

${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% if warp_aggregate:
${common.sg_primitives("ptx", 32, wg, DIGIT_BITS)}
${common.sg_ballot_fn("ptx")}
% endif

typedef struct {
    ulong pkey;        /* resolved digits of sel (a KEY_T) */
    INDEX_T ppos;      /* resolved digits of pos */
    INDEX_T need;      /* pairs still to select from the pivot bucket */
    INDEX_T count;     /* pairs in the pivot bucket */
    INDEX_T src_count; /* candidates the next pass reads */
    uint digits;       /* digits resolved */
    uint bucket;       /* the last pivot digit */
    uint flags;
    uint pad;          /* no padding bytes: every byte of a copied state is written */
} row_state;

## a counter in global memory; 64-bit ones need cl_khr_int64_base_atomics
% if index_t == "ulong":
#define COUNTER_ADD(p, v) atom_add((volatile __global ulong*)(p), (ulong)(v))
% else:
#define COUNTER_ADD(p, v) atomic_add((volatile __global uint*)(p), (uint)(v))
% endif

inline uint digit_at(KEY_T sel, INDEX_T pos, uint j, uint pos_bits)
{
    if (j < KEY_DIGITS)
        return (uint)(sel >> (KEY_BITS - DIGIT_BITS * (j + 1))) & (RADIX - 1);
    return (uint)(pos >> (pos_bits - DIGIT_BITS * (j - KEY_DIGITS + 1))) & (RADIX - 1);
}

## the bits of sel and pos covered by the first r digits
inline KEY_T key_mask(uint r)
{
    if (r == 0)
        return (KEY_T)0;
    if (r >= KEY_DIGITS)
        return (KEY_T)~(KEY_T)0;
    return (KEY_T)(~(KEY_T)0 << (KEY_BITS - DIGIT_BITS * r));
}

inline INDEX_T pos_mask(uint r, uint pos_bits)
{
    if (r <= KEY_DIGITS)
        return (INDEX_T)0;
    const uint shift = pos_bits - DIGIT_BITS * (r - KEY_DIGITS);
    return shift >= ${64 if index_t == "ulong" else 32} ? (INDEX_T)0 : (INDEX_T)(~(INDEX_T)0 << shift);
}

__kernel void topk_init(__global row_state* state, __global INDEX_T* out_count,
                        __global INDEX_T* cand_count, __global INDEX_T* hist0,
                        __global INDEX_T* hist1, __global INDEX_T* hist2, uint rows, INDEX_T k,
                        INDEX_T row_len)
{
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    hist0[(size_t)row * RADIX + lid] = 0;
    hist1[(size_t)row * RADIX + lid] = 0;
    hist2[(size_t)row * RADIX + lid] = 0;
    if (lid == 0) {
        row_state s;
        s.pkey = 0;
        s.pad = 0;
        s.ppos = 0;
        s.need = k;
        s.count = row_len;
        s.src_count = 0;
        s.digits = 0;
        s.bucket = 0;
        s.flags = 0;
        state[row] = s;
        out_count[row] = 0;
        cand_count[row] = 0;
        cand_count[rows + row] = 0;
    }
}

## The row state for pass p from the state of pass p - 1 and the histogram of its digit p - 1:
## the bucket that holds the remaining k-th pair. Once that bucket is exactly what is still
## needed, pass p takes it whole and the row is done. Every group computes it (the histogram is
## complete when pass p starts); the row's group 0 stores it for pass p + 1.
inline row_state next_state(row_state st, const __global INDEX_T* hist, uint p, uint pos_bits,
                            INDEX_T cap, __local INDEX_T* scratch, __local row_state* lstate,
                            uint lid)
{
    if (p == 0 || (st.flags & F_DONE))
        return st;
    if (st.flags & F_LAST) {
        st.flags = F_DONE;
        return st;
    }
    /* work-item d holds digit d; those from RADIX on hold an empty bucket (h = 0), for which the
       test below is false (below < need <= below + 0 cannot hold): no branch on lid after the
       scan's barriers (see the top of the file) */
    const uint d = lid & (RADIX - 1);
    if (lid == 0)
        *lstate = st;
    const INDEX_T hd = hist[d];
    const INDEX_T h = lid < RADIX ? hd : (INDEX_T)0;
    INDEX_T total;
    const INDEX_T below = wg_scan_index(h, scratch, lid, &total);
    if (below < st.need && st.need <= below + h) {
        const uint q = p - 1;      /* the digit this histogram counted */
        row_state s = st;
        s.need = st.need - below;
        s.count = h;
        s.bucket = d;
        s.digits = p;
        if (q < KEY_DIGITS)
            s.pkey |= (ulong)(KEY_T)((KEY_T)d << (KEY_BITS - DIGIT_BITS * (q + 1)));
        else
            s.ppos |= (INDEX_T)((INDEX_T)d << (pos_bits - DIGIT_BITS * (q - KEY_DIGITS + 1)));
        const bool whole = h == s.need;
        s.src_count = st.count;
        s.flags = (whole ? F_LAST : 0u) | ((st.flags & F_WRITE) ? F_SRC_CANDS : 0u)
                  | (!whole && h <= cap ? F_WRITE : 0u);
        *lstate = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return *lstate;
}

## What pass p tests an element against, from its row state: the digits resolved before digit
## p - 1 (pkey, ppos under kmask, pmask), the pivot digit of digit p - 1 (bucket) and the flags.
typedef struct {
    KEY_T pkey, kmask, flip;
    INDEX_T ppos, pmask;
    uint p, pos_bits, bucket;
    bool last;         /* the pivot bucket is taken whole */
    bool from_cands;   /* the input is the candidates of pass p - 1 */
    bool write;        /* candidates are written out */
} pass_filter;

STEP pass_filter filter_of(row_state st, uint p, uint pos_bits, KEY_T flip)
{
    pass_filter f;
    f.pkey = (KEY_T)st.pkey;
    f.kmask = key_mask(p == 0 ? 0 : p - 1);
    f.flip = flip;
    f.ppos = st.ppos;
    f.pmask = pos_mask(p == 0 ? 0 : p - 1, pos_bits);
    f.p = p;
    f.pos_bits = pos_bits;
    f.bucket = st.bucket;
    f.last = (st.flags & F_LAST) != 0;
    f.from_cands = (st.flags & F_SRC_CANDS) != 0;
    f.write = (st.flags & F_WRITE) != 0;
    return f;
}

## Group 0 of a row readies pass p + 1: the row state, the candidate counter pass p + 1 writes
## with, and the histogram it adds into, zeroed.
STEP void prepare_next_pass(row_state st, __global row_state* state_out,
                            __global INDEX_T* next_cand_count, __global INDEX_T* hist_next,
                            uint lid)
{
    if (lid == 0) {
        *state_out = st;
        *next_cand_count = 0;
    }
    if (lid < RADIX)   /* wg >= RADIX */
        hist_next[lid] = 0;
}

## The local histogram and the tiles' output flags, zeroed.
STEP void clear_pass_locals(__local uint* lhist, __local uint* l_any, uint lid)
{
    for (uint d = lid; d < RADIX * NSUB; d += WG)
        lhist[d] = 0;
    if (lid < 3)
        l_any[lid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
}

## The keys of a tile, all loads first, so that a work-item has IPT of them in flight: element i
## of a work-item is ELEM(i), runs of VEC consecutive keys, one vector load each in a full tile;
## past n they are 0.
STEP void load_keys(__private KEY_T* x, const __global KEY_T* src, INDEX_T base, INDEX_T n,
                    bool full, uint lid)
{
    if (full) {
        ${unroll}
        for (uint j = 0; j < IPT / VEC; ++j) {
            KEY_T v[VEC];
            vstore${VEC}(vload${VEC}(0, src + ELEM(j * VEC)), 0, v);
            ${unroll}
            for (uint c = 0; c < VEC; ++c)
                x[j * VEC + c] = v[c];
        }
    } else {
        ${unroll}
        for (uint i = 0; i < IPT; ++i)
            x[i] = ELEM(i) < n ? src[ELEM(i)] : (KEY_T)0;
    }
}

## The row positions of a tile's elements: read with the candidates, or the elements' own.
STEP void load_positions(__private INDEX_T* pos, const __global INDEX_T* src,
                         INDEX_T base, INDEX_T n, bool from_cands, uint lid)
{
    if (from_cands) {
        ${unroll}
        for (uint i = 0; i < IPT; ++i)
            pos[i] = ELEM(i) < n ? src[ELEM(i)] : (INDEX_T)0;
    } else {
        ${unroll}
        for (uint i = 0; i < IPT; ++i)
            pos[i] = ELEM(i);
    }
}

## A candidate adds one to the count of its digit p in the local histogram.
% if warp_aggregate:
## A warp whose candidates share one digit (clustered data) adds once; otherwise each lane adds to
## its copy of the histogram (NSUB copies: at most 32 / NSUB lanes meet on one address). A warp
## without candidates does nothing.
% endif
STEP void count_candidate(__local uint* lhist, bool cand, KEY_T sel, INDEX_T pi, uint p,
                          uint pos_bits, uint lid)
{
% if warp_aggregate:
    const uint dd = cand ? digit_at(sel, pi, p, pos_bits) : 0xffffffffu;
    const uint any = sg_ballot((uint)cand);
    if (any) {
        const uint first = popcount((any & (0u - any)) - 1u);
        const uint d0 = sg_shuffle(dd, first);
        const uint same = sg_ballot_eq(dd, d0);
        const uint lane = lid & 31u;
        if ((same & any) == any) {
            if (lane == first)
                atomic_add(&lhist[d0 * NSUB], popcount(any));
        } else if (cand) {
            atomic_inc(&lhist[dd * NSUB + (lane & (NSUB - 1))]);
        }
    }
% else:
    if (cand)
        atomic_inc(&lhist[digit_at(sel, pi, p, pos_bits)]);
% endif
}

## An element by its digit p - 1 against the pivot: 1 among the k, 2 a candidate to write, 0
## neither (above the pivot, decided earlier, invalid, or a candidate not written). Candidates are
## counted by digit p.
STEP uint classify(KEY_T sel, INDEX_T pi, bool valid, pass_filter f, __local uint* lhist,
                   uint lid)
{
    /* elements that left the pivot's bucket at an earlier digit were decided then */
    const bool match = valid && (f.from_cands || (((sel ^ f.pkey) & f.kmask) == 0
                                                  && ((pi ^ f.ppos) & f.pmask) == 0));
    const uint d = f.p > 0 ? digit_at(sel, pi, f.p - 1, f.pos_bits) : f.bucket;
    const bool take = match && (d < f.bucket || (d == f.bucket && f.last));
    const bool cand = match && d == f.bucket && !f.last;   /* still in the pivot's bucket */
    count_candidate(lhist, cand, sel, pi, f.p, f.pos_bits, lid);
    return take ? 1u : (cand && f.write ? 2u : 0u);
}

## cls[i] for each element of a tile; returns how many are taken and how many are candidates to
## write.
STEP uint2 classify_tile(__private uint* cls, const __private KEY_T* x,
                         const __private INDEX_T* pos, INDEX_T base, INDEX_T n, bool full,
                         pass_filter f, __local uint* lhist, uint lid)
{
    uint n_take = 0, n_cand = 0;
    ${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint c = classify(order_key(x[i], f.flip), pos[i], full || ELEM(i) < n, f, lhist,
                                lid);
        cls[i] = c;
        n_take += c & 1u;
        n_cand += c >> 1;
    }
    return (uint2)(n_take, n_cand);
}

## Whether some work-item of the tile has output: one flag per tile in a rotation of three, so one
## barrier per tile suffices (tile t's flag is cleared during tile t + 1, once every work-item has
## read it, and set again only in tile t + 3).
STEP uint tile_has_output(bool mine, __local uint* l_any, uint tile_no, uint lid)
{
    if (mine)
        atomic_or(&l_any[tile_no % 3], 1u);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint any = l_any[tile_no % 3];
    if (lid == 0)
        l_any[(tile_no + 2) % 3] = 0;
    return any;
}

## Output slots in tile order: a work-group scan of (taken, candidates), one counter add each for
## the tile. *o and *c: the work-item's first output and candidate slot.
STEP void claim_slots(uint n_take, uint n_cand, __local uint* scratch, __local INDEX_T* l_base,
                      __global INDEX_T* out_count, __global INDEX_T* cout_count, uint lid,
                      __private INDEX_T* o, __private INDEX_T* c)
{
    uint total;
    const uint before = wg_scan_uint(n_take | (n_cand << 16), scratch, lid, &total);
    if (lid == 0) {
        l_base[0] = (total & 0xffffu) ? COUNTER_ADD(out_count, total & 0xffffu) : 0;
        l_base[1] = (total >> 16) ? COUNTER_ADD(cout_count, total >> 16) : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    *o = l_base[0] + (before & 0xffffu);
    *c = l_base[1] + (before >> 16);
}

## The taken elements to the row's output from slot o (the first k slots), the candidates to write
## to its candidate buffer from slot c (the first cap).
STEP void write_tile(const __private KEY_T* x, const __private INDEX_T* pos,
                     const __private uint* cls, INDEX_T o, INDEX_T c,
                     __global KEY_T* out_key, __global OUT_INDEX_T* out_idx, INDEX_T k,
                     OUT_INDEX_T idx_base, __global KEY_T* cout_key, __global INDEX_T* cout_pos,
                     INDEX_T cap)
{
    ${unroll_out}
    for (uint i = 0; i < IPT; ++i) {
        if (cls[i] == 1u) {
            if (o < k) {
                out_key[o] = x[i];
                out_idx[o] = idx_base + (OUT_INDEX_T)pos[i];
            }
            ++o;
        } else if (cls[i] == 2u) {
            if (c < cap) {
                cout_key[c] = x[i];
                cout_pos[c] = pos[i];
            }
            ++c;
        }
    }
}

## The local histogram (its NSUB copies summed) added into the row's. Work-item lid adds digit
## lid's count, those from RADIX on a zero one (see the top of the file): no branch on lid after
## the barrier, and no address outside the row's histogram.
STEP void add_histogram(const __local uint* lhist, __global INDEX_T* hist, uint lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint d = lid & (RADIX - 1);
    uint c = 0;
    for (uint j = 0; j < NSUB; ++j)
        c += lhist[d * NSUB + j];
    c = lid < RADIX ? c : 0u;
    if (c)
        COUNTER_ADD(hist + d, c);
}

## Pass p over the rows (NDRange groups_per_row x rows groups): group g of a row handles tiles g,
## g + groups_per_row, ... The first two passes, which read whole rows, have kernels of their own
## with p a constant (topk_pass_0, topk_pass_1): their per-key work folds to a few instructions.
## Histograms rotate through three buffers (pass p reads hist_prev, adds into hist_cur, and its
## group 0 zeroes hist_next for pass p + 1) and the state through two (state_in from pass p - 1,
## state_out for pass p + 1), so no pass writes what another group of the same pass reads.
<%def name="pass_kernel(name, P)">
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ${name}(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
               INDEX_T cap, uint p_arg, uint pos_bits, uint groups_per_row, uint rows, KEY_T flip,
               OUT_INDEX_T idx_row_mul,
               const __global row_state* state_in, __global row_state* state_out,
               const __global INDEX_T* hist_prev, __global INDEX_T* hist_cur,
               __global INDEX_T* hist_next,
               const __global KEY_T* restrict cin_key, const __global INDEX_T* restrict cin_pos,
               __global KEY_T* restrict cout_key, __global INDEX_T* restrict cout_pos,
               __global INDEX_T* cand_count,
               __global KEY_T* restrict out_key, ulong out_key_off,
               __global OUT_INDEX_T* restrict out_idx, ulong out_idx_off,
               __global INDEX_T* out_count)
{
    const uint p = ${"p_arg" if P is None else P};   /* a constant in the first passes' kernels */
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    __local INDEX_T iscratch[WG];
    __local row_state lstate;
    const row_state st = next_state(state_in[row], hist_prev + (size_t)row * RADIX, p, pos_bits,
                                    cap, iscratch, &lstate, lid);
    if (g == 0)   /* pass p + 1 writes candidates with the other counter */
        prepare_next_pass(st, state_out + row, cand_count + (size_t)((p + 1) & 1) * rows + row,
                          hist_next + (size_t)row * RADIX, lid);
    if (st.flags & F_DONE)
        return;
    pass_filter f = filter_of(st, p, pos_bits, flip);
% if P == 0:
    f.last = f.from_cands = f.write = false;   /* nothing decided yet */
% elif P == 1:
    f.from_cands = false;                      /* pass 0 writes no candidates */
% endif
    const INDEX_T n_src = f.from_cands ? st.src_count : row_len;
    const __global KEY_T* src_key = f.from_cands ? cin_key + (size_t)row * cap
                                                 : keys + keys_off + (size_t)row * row_len;
    __local uint lhist[RADIX * NSUB];
    __local uint scratch[WG];
    __local uint l_any[3];
    __local INDEX_T l_base[2];
    clear_pass_locals(lhist, l_any, lid);
    uint tile_no = 0;
    for (INDEX_T base = (INDEX_T)g * TILE; base < n_src;
         base += (INDEX_T)groups_per_row * TILE, ++tile_no) {
        KEY_T x[IPT];
        INDEX_T pos[IPT];
        uint cls[IPT];    /* 1: among the k, 2: a candidate to write, 0: neither */
        const bool full = base + TILE <= n_src;
        load_keys(x, src_key, base, n_src, full, lid);
        load_positions(pos, cin_pos + (size_t)row * cap, base, n_src, f.from_cands, lid);
        const uint2 n = classify_tile(cls, x, pos, base, n_src, full, f, lhist, lid);
        if (tile_has_output((n.x | n.y) != 0, l_any, tile_no, lid)) {
            INDEX_T o, c;
            claim_slots(n.x, n.y, scratch, l_base, out_count + row,
                        cand_count + (size_t)(p & 1) * rows + row, lid, &o, &c);
            write_tile(x, pos, cls, o, c, out_key + out_key_off + (size_t)row * k,
                       out_idx + out_idx_off + (size_t)row * k, k,
                       (OUT_INDEX_T)row * idx_row_mul, cout_key + (size_t)row * cap,
                       cout_pos + (size_t)row * cap, cap);
        }
    }
    if (!f.last)
        add_histogram(lhist, hist_cur + (size_t)row * RADIX, lid);
}
</%def>
${pass_kernel("topk_pass_0", 0)}
${pass_kernel("topk_pass_1", 1)}
${pass_kernel("topk_pass", None)}

% if sort_size:
<% S = sort_size %>
## sorted=True for k <= ${S}: one group per row sorts its k selected pairs by (sel, pos) in local
## memory (bitonic), and writes keys and row positions.

## The row's k pairs as (order key, key, index), padded to size with pairs behind every pair.
STEP void load_pairs(__local KEY_T* lsel, __local KEY_T* lkey, __local OUT_INDEX_T* lpos,
                     const __global KEY_T* sel_key, const __global OUT_INDEX_T* sel_idx,
                     INDEX_T k, uint size, KEY_T flip, uint lid)
{
    for (uint i = lid; i < size; i += WG) {
        if (i < (uint)k) {
            const KEY_T x = sel_key[i];
            lkey[i] = x;
            lsel[i] = order_key(x, flip);
            lpos[i] = sel_idx[i];
        } else {
            lkey[i] = (KEY_T)0;
            lsel[i] = (KEY_T)~(KEY_T)0;   /* padding sorts behind every pair */
            lpos[i] = (OUT_INDEX_T)~(OUT_INDEX_T)0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

## Bitonic sort of size (a power of two) pairs by (lsel, lpos), lkey moving with them.
STEP void bitonic_sort_pairs(__local KEY_T* lsel, __local KEY_T* lkey, __local OUT_INDEX_T* lpos,
                             uint size, uint lid)
{
    for (uint len = 2; len <= size; len <<= 1) {
        for (uint stride = len >> 1; stride > 0; stride >>= 1) {
            for (uint t = lid; t < size / 2; t += WG) {
                const uint a = 2 * t - (t & (stride - 1));
                const uint b = a + stride;
                const bool up = (a & len) == 0;
                const KEY_T sa = lsel[a], sb = lsel[b];
                const OUT_INDEX_T pa = lpos[a], pb = lpos[b];
                const bool a_gt_b = sa > sb || (sa == sb && pa > pb);
                if (a_gt_b == up) {
                    lsel[a] = sb; lsel[b] = sa;
                    lpos[a] = pb; lpos[b] = pa;
                    const KEY_T ka = lkey[a];
                    lkey[a] = lkey[b]; lkey[b] = ka;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_sort_rows(const __global KEY_T* restrict sel_key, const __global OUT_INDEX_T* restrict sel_idx,
                    INDEX_T k, KEY_T flip,
                    __global KEY_T* restrict out_key, ulong out_key_off,
                    __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    __local KEY_T lsel[${S}];
    __local KEY_T lkey[${S}];
    __local OUT_INDEX_T lpos[${S}];
    uint size = 1;
    while (size < (uint)k)
        size <<= 1;
    load_pairs(lsel, lkey, lpos, sel_key + (size_t)row * k, sel_idx + (size_t)row * k, k, size,
               flip, lid);
    bitonic_sort_pairs(lsel, lkey, lpos, size, lid);
    for (uint i = lid; i < (uint)k; i += WG) {
        out_key[out_key_off + (size_t)row * k + i] = lkey[i];
        out_idx[out_idx_off + (size_t)row * k + i] = (IDX_T)lpos[i];
    }
}
% endif

## The global-sort route (sorted=True, k above the local sort): the row of each selected element
## from its index in the whole batch, then the keys and row positions gathered by that index.
__kernel void topk_row_of(const __global OUT_INDEX_T* restrict gidx, __global uint* restrict row_of,
                          ulong m, OUT_INDEX_T row_len)
{
    const size_t i = get_global_id(0);
    if (i < m)
        row_of[i] = (uint)(gidx[i] / row_len);
}

__kernel void topk_gather(const __global KEY_T* restrict keys, ulong keys_off,
                          const __global OUT_INDEX_T* restrict gidx, ulong m, OUT_INDEX_T row_len,
                          __global KEY_T* restrict out_key, ulong out_key_off,
                          __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    const size_t i = get_global_id(0);
    if (i < m) {
        const OUT_INDEX_T g = gidx[i];
        out_key[out_key_off + i] = keys[keys_off + g];
        out_idx[out_idx_off + i] = (IDX_T)(g % row_len);
    }
}
