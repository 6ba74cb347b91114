/* Top-k by most-significant-digit radix select (the pass structure of AIR top-k), for
   `rows` rows of `row_len` keys.

   The selection key of an element is the pair (sel, pos): sel is the order key (common.mako),
   inverted for the largest k, and pos its position in the row. The k smallest pairs are selected;
   as pairs are distinct, the k-th one is unique, ties go to the smaller position and NaN, whose
   order key is the largest, counts as the largest value. Digits of DIGIT_BITS are taken from
   sel (KEY_DIGITS of them: 3 for 32-bit keys) and then from pos (pos_bits, the bit length of the
   row's largest position), most significant first; a field's last digit is the narrower one (its
   low bits): digit j of a b-bit field is (field >> max(b - DIGIT_BITS (j + 1), 0)) & (RADIX - 1),
   whose bits above the digit's own were resolved by the digits before it.

     topk_init   - per row: state, counters and histogram zeroed
     topk_sample / topk_pass_t - (sample > 0: the threshold pass) one work-group per row sorts
                   `sample` keys taken at evenly spaced positions and makes the order key of rank
                   `rank` among them the row's threshold; topk_pass_t then reads the row once,
                   writes every key whose order key is at most the threshold as a candidate and
                   counts their digit 0. When at least k and at most cap keys passed (the k-th
                   of the row is among them), its last work-group writes the state of pass 1 (a
                   pivot among the candidates) and pass 0 returns at once: the row is read once.
                   Otherwise pass 0 and the later passes run as without it.
     topk_pass   - pass p reads the row (or the candidates of pass p - 1) once: an element that
                   matched digits 0..p-2 is classified by its digit p - 1 against the pivot (the
                   row state): below goes to the output (an atomic slot), equal is a candidate
                   (written to the candidate buffer when the pivot bucket fits it, and counted by
                   its digit p), above is dropped. Pass 0 only counts digit 0. The work-group that
                   finishes the pass last in its row (an atomic counter of finished groups: no
                   group waits for another) scans the histogram and writes the next pivot to the
                   row state; when the pivot bucket is exactly what is still needed, the next pass
                   takes it whole and the row is done (later passes return at once).
     topk_single - one work-group per row does every pass over its row (re-read from global
                   memory, a cache's worth for the rows it is planned for), the histogram and pivot
                   in local memory, and (sorted, k <= sort_size) sorts the selection in local
                   memory: the whole top-k in one launch.
     topk_fused  - (fused) every pass of topk_pass in one launch: work-groups in pass order, a
                   pass's groups waiting until the pass before wrote the row's state
     topk_sort_rows - per row, in local memory: bitonic sort of the k selected pairs (sorted=True)
     topk_row_of / topk_gather - the pieces of the global-sort route for larger k

   For random 32-bit keys pass 0 and pass 1 read the row and later passes only candidates. A pivot
   bucket larger than the candidate buffer (clustered data) is not written; the next pass re-reads
   the row instead (the adaptive re-read).

   Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), index_t (positions and
   counts), out_index_t (indices topk_pass writes: row positions, or indices into the whole batch
   for the global-sort route), idx_t (the caller's index type), wg (a power of two, 64 to RADIX),
   ipt, sort_size (power of two, the largest k that topk_sort_rows and topk_single sort; 0 when
   they do not sort), sample (0, or the threshold pass's sample per row: a power of two of at
   least 2 wg), part ("select": every kernel but the threshold pass's; "threshold": topk_sample
   and topk_pass_t, a program of their own: a compiler may count the local arrays of every pass
   kernel of one program against one of them, as oclgrind's does), ptx (an NVIDIA GPU,
   common.mako: warp ballots and a shuffle merge a warp's equal digits into one local atomic,
   and the fences and acquire loads are PTX's), fused (topk_fused is built), skip_idle_tiles (GPUs:
   a tile none of whose elements is taken or written skips claiming slots, the branch around the
   claim's barriers uniform by a local flag; CPUs claim for every tile: PoCL 3.0 turns that
   uniform branch into wrong or missing output slots, and the scan costs a CPU little).

   Work-item dependent branches after a barrier: PoCL 3.1 treats the first branch of a region after
   a barrier as uniform when it is a loop whose bounds depend on the work-item (a per-digit loop
   `for (d = lid; d < RADIX; d += WG)` ran for every work-item). So the kernels walk the histogram
   with loops of a fixed trip count (RADIX / WG digits per work-item) and branch on lid only in
   `if`s. */
<%namespace name="common" file="common.mako"/>
<%
    DIGIT_BITS = digit_bits
    RADIX = 1 << DIGIT_BITS
    KEY_DIGITS = -(-key_bits // DIGIT_BITS)
    TILE = wg * ipt
    assert TILE < 65536, "per-tile counts are packed in 16 bits"
    assert 64 <= wg <= RADIX and wg & (wg - 1) == 0
    RPT = RADIX // wg
    unroll = "#pragma unroll"
    # Unrolled, the output loop keeps x, pos and cls in registers (NVIDIA); PoCL 3.1 computes
    # wrong output slots from the unrolled loop, so it stays a loop elsewhere.
    unroll_out = unroll if ptx else ""
    VEC = min(16 // (key_bits // 8), ipt)
    assert sample == 0 or (sample & (sample - 1) == 0 and sample >= 2 * wg)
    assert ipt % VEC == 0 and VEC in (2, 4, 8, 16)
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
#define RPT ${RPT}
#define DIGIT_BITS ${DIGIT_BITS}
#define STATE_BYTES ${state_bytes}
#define KEY_BITS ${key_bits}
#define KEY_DIGITS ${KEY_DIGITS}
% if sample:
#define SAMPLE ${sample}
% endif
${common.step_define()}

/* row state flags */
#define F_LAST 1u        /* the pass takes the pivot bucket whole; then the row is done */
#define F_DONE 2u
#define F_SRC_CANDS 4u   /* the pass reads the candidates written by the pass before it */
#define F_WRITE 8u       /* the pass writes its candidates */
#define F_THRESH 16u     /* (copy 1, read by topk_pass_t) the threshold is in pkey */
#define F_SKIP 32u       /* (copy 0) topk_pass_t selected the candidates: pass 0 hands on the
                            state of pass 1 */
/* a candidate slot no candidate took (the threshold pass's chunks) */
#define DEAD_POS ((INDEX_T)~(INDEX_T)0)

${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
% if ptx:
${common.sg_primitives("ptx", 32, wg, 1)}
${common.sg_ballot_fn("ptx")}
% endif
% if ptx and index_t == "uint":
${common.wg_scan_warp_fn("wg_scan_index", wg)}
% else:
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
% endif
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
${common.counter_fns(index_t)}
${common.cross_group_fns(ptx, False)}

/* The state a pass runs with: the pivot digits resolved so far (digits 0..digits-1; the last of
   them, `bucket`, is the one the pass classifies by) and what remains to select. */
typedef struct {
    ulong pkey;        /* resolved digits of sel (a KEY_T) */
    INDEX_T ppos;      /* resolved digits of pos */
    INDEX_T need;      /* pairs still to select from the pivot bucket */
    INDEX_T count;     /* pairs in the pivot bucket */
    INDEX_T src_count; /* candidates the pass reads */
    uint digits;       /* digits resolved */
    uint bucket;       /* the last pivot digit */
    uint flags;
    uint pad;          /* no padding bytes: every byte of a copied state is written */
} row_state;
/* the host gives each row state STATE_BYTES bytes (a compile error where it does not fit) */
typedef char row_state_fits[sizeof(row_state) <= STATE_BYTES ? 1 : -1];

/* The shift of digit j of a field of `bits` bits (its last digit the narrower one). */
static inline uint digit_shift(uint bits, uint j)
{
    const int s = (int)bits - DIGIT_BITS * (int)(j + 1);
    return s > 0 ? (uint)s : 0u;
}

static inline uint digit_at(KEY_T sel, INDEX_T pos, uint j, uint pos_bits)
{
    if (j < KEY_DIGITS)
        return (uint)(sel >> digit_shift(KEY_BITS, j)) & (RADIX - 1);
    return (uint)(pos >> digit_shift(pos_bits, j - KEY_DIGITS)) & (RADIX - 1);
}

/* the bits of sel and pos covered by the first r digits */
static inline KEY_T key_mask(uint r)
{
    if (r == 0)
        return (KEY_T)0;
    const int s = KEY_BITS - DIGIT_BITS * (int)r;
    return s <= 0 ? (KEY_T)~(KEY_T)0 : (KEY_T)(~(KEY_T)0 << s);
}

static inline INDEX_T pos_mask(uint r, uint pos_bits)
{
    if (r <= KEY_DIGITS)
        return (INDEX_T)0;
    const int s = (int)pos_bits - DIGIT_BITS * (int)(r - KEY_DIGITS);
    return s <= 0 ? (INDEX_T)~(INDEX_T)0 : (INDEX_T)(~(INDEX_T)0 << s);
}

static inline row_state first_state(INDEX_T k, INDEX_T row_len)
{
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
    return s;
}

/* The temporaries live in one buffer (no sub-buffers): each at a byte offset (a multiple of
   4 KiB) of `temp`. */
#define AT(type, off) ((__global type*)(temp + (off)))

% if part == "select":
__kernel void topk_init(__global uchar* temp, ulong state_off, ulong hist_off, ulong counters_off,
                        uint rows, INDEX_T k, INDEX_T row_len, ulong sync_off)
{
    __global row_state* state = AT(row_state, state_off);
    __global INDEX_T* hist = AT(INDEX_T, hist_off);
    __global INDEX_T* counters = AT(INDEX_T, counters_off);
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    for (uint j = 0; j < RPT; ++j)
        hist[(size_t)row * RADIX + j * WG + lid] = 0;
    if (lid == 0) {
        state[row] = first_state(k, row_len);   /* pass 0 reads the first of the two */
        counters[(size_t)4 * row] = 0;       /* output slots */
        counters[(size_t)4 * row + 1] = 0;   /* candidate slots, even passes */
        counters[(size_t)4 * row + 2] = 0;   /* candidate slots, odd passes */
        counters[(size_t)4 * row + 3] = 0;   /* work-groups done with the pass */
        /* (topk_fused) the row's passes whose state is written; row 0: the virtual ids */
        AT(uint, sync_off)[1 + row] = 0;
        if (row == 0)
            AT(uint, sync_off)[0] = 0;
    }
}
% endif

/* The row state for pass p + 1 from st (the state pass p ran with) and the histogram of digit p
   that pass p counted (work-item lid holds digits lid * RPT ... lid * RPT + RPT - 1 of it, in hd):
   the bucket that holds the remaining k-th pair. Once that bucket is exactly what is still
   needed, pass p + 1 takes it whole; after that pass the row is done. Every work-item calls it
   and gets the state (through *lstate). */
STEP row_state next_state(row_state st, const __private INDEX_T* hd, uint p, uint pos_bits,
                          INDEX_T cap, __local INDEX_T* scratch, __local row_state* lstate,
                          uint lid)
{
    if (st.flags & (F_LAST | F_DONE)) {
        st.flags = F_DONE;
        return st;
    }
    INDEX_T sum = 0;
    for (uint j = 0; j < RPT; ++j)
        sum += hd[j];
    INDEX_T total;
    INDEX_T below = wg_scan_index(sum, scratch, lid, &total);
    uint found = RADIX;
    INDEX_T f_below = 0, f_h = 0;
    for (uint j = 0; j < RPT; ++j) {
        const INDEX_T h = hd[j];
        const bool hit = below < st.need && st.need <= below + h;
        found = hit ? lid * RPT + j : found;
        f_below = hit ? below : f_below;
        f_h = hit ? h : f_h;
        below += h;
    }
    if (found < RADIX) {
        row_state s = st;
        s.need = st.need - f_below;
        s.count = f_h;
        s.bucket = found;
        s.digits = p + 1;
        if (p < KEY_DIGITS)
            s.pkey |= (ulong)(KEY_T)((KEY_T)found << digit_shift(KEY_BITS, p));
        else
            s.ppos |= (INDEX_T)((INDEX_T)found << digit_shift(pos_bits, p - KEY_DIGITS));
        const bool whole = f_h == s.need;
        s.src_count = st.count;   /* the candidates pass p wrote: its pivot bucket */
        s.flags = (whole ? F_LAST : 0u) | ((st.flags & F_WRITE) ? F_SRC_CANDS : 0u)
                  | (!whole && f_h <= cap ? F_WRITE : 0u);
        *lstate = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const row_state r = *lstate;
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* What pass p tests an element against, from its row state: the digits resolved before digit
   p - 1 (pkey, ppos under kmask, pmask), the pivot digit of digit p - 1 (bucket) and the flags. */
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

/* The local histogram, the tiles' output flags and the slot scratch, zeroed. */
STEP void clear_pass_locals(__local uint* lhist, __local uint* l_any, __local uint* scratch,
                            uint lid)
{
    for (uint j = 0; j < RPT; ++j)
        lhist[j * WG + lid] = 0;
    if (lid < 3)
        l_any[lid] = 0;
    if (lid == 0)
        scratch[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The keys of a tile, all loads first, so that a work-item has IPT of them in flight: element i
   of a work-item is ELEM(i), runs of VEC consecutive keys, one vector load each in a full tile;
   past n they are 0. */
STEP void load_row_keys(__private KEY_T* x, const __global KEY_T* src, INDEX_T base, INDEX_T n,
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

/* The row positions of a tile's elements: read with the candidates, or the elements' own. */
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
% if ptx:
## A warp whose candidates share one digit (clustered data) adds once; otherwise each lane adds on
## its own. A warp without candidates does nothing.
% endif
STEP void count_candidate(__local uint* lhist, bool cand, KEY_T sel, INDEX_T pi, uint p,
                          uint pos_bits, uint lid)
{
% if ptx:
    const uint dd = cand ? digit_at(sel, pi, p, pos_bits) : 0xffffffffu;
    const uint any = sg_ballot((uint)cand);
    if (any) {
        const uint first = popcount((any & (0u - any)) - 1u);
        const uint d0 = sg_shuffle(dd, first);
        const uint same = sg_ballot_eq(dd, d0);
        const uint lane = lid & 31u;
        if ((same & any) == any) {
            if (lane == first)
                atomic_add(&lhist[d0], popcount(any));
        } else if (cand) {
            atomic_inc(&lhist[dd]);
        }
    }
% else:
    if (cand)
        atomic_inc(&lhist[digit_at(sel, pi, p, pos_bits)]);
% endif
}

/* An element by its digit p - 1 against the pivot: 1 among the k, 2 a candidate to write, 0
   neither (above the pivot, decided earlier, invalid, or a candidate not written). Candidates are
   counted by digit p. */
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

/* cls[i] for each element of a tile; returns how many are taken and how many are candidates to
   write. */
STEP uint2 classify_tile(__private uint* cls, const __private KEY_T* x,
                         const __private INDEX_T* pos, INDEX_T base, INDEX_T n, bool full,
                         pass_filter f, __local uint* lhist, uint lid)
{
    uint n_take = 0, n_cand = 0;
    ${unroll}
    for (uint i = 0; i < IPT; ++i) {
% if sample:
        /* (the threshold pass's candidates have dead entries: slots its groups did not use) */
        const bool valid = (full || ELEM(i) < n) && !(f.from_cands && pos[i] == DEAD_POS);
% else:
        const bool valid = full || ELEM(i) < n;
% endif
        const uint c = classify(order_key(x[i], f.flip), pos[i], valid, f, lhist, lid);
        cls[i] = c;
        n_take += c & 1u;
        n_cand += c >> 1;
    }
    return (uint2)(n_take, n_cand);
}

% if sample:
/* The threshold pass's classification: an element whose order key is at most the row's threshold
   is a candidate to write, counted by its digit 0; none is taken. */
STEP uint2 threshold_tile(__private uint* cls, const __private KEY_T* x,
                          const __private INDEX_T* pos, INDEX_T base, INDEX_T n, bool full,
                          KEY_T thresh, KEY_T flip, uint pos_bits, __local uint* lhist, uint lid)
{
    uint n_cand = 0;
    ${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const KEY_T sel = order_key(x[i], flip);
        const bool cand = (full || ELEM(i) < n) && sel <= thresh;
        count_candidate(lhist, cand, sel, pos[i], 0, pos_bits, lid);
        cls[i] = cand ? 2u : 0u;
        n_cand += cand ? 1u : 0u;
    }
    return (uint2)(0u, n_cand);
}

% endif
/* Whether some work-item of the tile has output: one flag per tile in a rotation of three, so one
   barrier per tile suffices (tile t's flag is cleared during tile t + 1, once every work-item has
   read it, and set again only in tile t + 3). */
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

/* The first of n candidate slots: one add to the row's counter (chunk 0), or (the threshold
   pass, whose candidates come from every tile of the row: one counter shared by every group of
   the row costs more than the read) from the group's chunk of slots, l_base[2] (next) to
   l_base[3] (end); when the n do not fit, a new chunk of at least `chunk` slots, and the rest of
   the old one a hole, l_base[4] to l_base[5], which the group fills with dead entries.
   Called by one work-item. */
STEP INDEX_T take_slots(INDEX_T n, __global INDEX_T* count, __local INDEX_T* l_base,
                        INDEX_T chunk)
{
    if (!chunk)
        return n ? COUNTER_ADD(count, n) : 0;
    INDEX_T next = l_base[2], end = l_base[3];
    l_base[4] = l_base[5] = 0;
    if (next + n > end) {
        l_base[4] = next;
        l_base[5] = end;
        const INDEX_T size = max(chunk, n);
        next = COUNTER_ADD(count, size);
        end = next + size;
    }
    l_base[2] = next + n;
    l_base[3] = end;
    return next;
}

## Output slots for a tile: one counter add each (taken, candidates) for the whole tile. *o and *c:
## the work-item's first output and candidate slot. The order of the slots is of no consequence
## (the selection is sorted afterwards, or returned unordered, and the candidates are a set).
% if ptx:
/* NVIDIA: a warp scan (shuffles) of the packed counts, one local add per warp, then one work-item
   adds the tile's totals to the row's counters: two barriers. */
STEP void claim_slots(uint n_take, uint n_cand, __local uint* scratch, __local INDEX_T* l_base,
                      __global INDEX_T* out_count, __global INDEX_T* cout_count, INDEX_T chunk,
                      uint lid, __private INDEX_T* o, __private INDEX_T* c)
{
    const uint lane = lid & 31u;
    const uint v = n_take | (n_cand << 16);
    const uint x = warp_scan_incl(v, lane);
    const uint warp_total = sg_shuffle(x, 31);
    uint wbase = 0;
    if (lane == 0 && warp_total)
        wbase = atomic_add(&scratch[0], warp_total);   /* scratch[0]: zero at the tile's start */
    wbase = sg_shuffle(wbase, 0) + (x - v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        const uint total = scratch[0];
        scratch[0] = 0;   /* for the next tile: its adds come after its first barrier */
        l_base[0] = (total & 0xffffu) ? COUNTER_ADD(out_count, total & 0xffffu) : 0;
        l_base[1] = take_slots(total >> 16, cout_count, l_base, chunk);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    *o = l_base[0] + (wbase & 0xffffu);
    *c = l_base[1] + (wbase >> 16);
}
% else:
/* A work-group scan of (taken, candidates): slots in tile order. */
STEP void claim_slots(uint n_take, uint n_cand, __local uint* scratch, __local INDEX_T* l_base,
                      __global INDEX_T* out_count, __global INDEX_T* cout_count, INDEX_T chunk,
                      uint lid, __private INDEX_T* o, __private INDEX_T* c)
{
    uint total;
    const uint before = wg_scan_uint(n_take | (n_cand << 16), scratch, lid, &total);
    if (lid == 0) {
        l_base[0] = (total & 0xffffu) ? COUNTER_ADD(out_count, total & 0xffffu) : 0;
        l_base[1] = take_slots(total >> 16, cout_count, l_base, chunk);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    *o = l_base[0] + (before & 0xffffu);
    *c = l_base[1] + (before >> 16);
}
% endif

/* The taken elements to the row's output from slot o (the first k slots), the candidates to write
   to its candidate buffer from slot c (the first cap). */
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

% if sample:
/* Candidate slots [a, b) that no candidate took (the threshold pass's chunks): dead entries,
   which the pass reading the candidates skips. Every work-item of the group (stride WG) or of
   the warp (stride 32) calls it. */
STEP void fill_dead(INDEX_T a, INDEX_T b, __global KEY_T* cout_key, __global INDEX_T* cout_pos,
                    INDEX_T cap, uint first, uint stride)
{
    for (INDEX_T i = a + first; i < min(b, cap); i += stride) {
        cout_key[i] = (KEY_T)0;
        cout_pos[i] = DEAD_POS;
    }
}
% if ptx:

/* The threshold pass on NVIDIA: each warp takes `chunk` slots at a time from the row's counter
   (*next to *end, the same in every lane) and hands them to its lanes, without a barrier, so
   that the warps of a group stream the row on their own; the rest of a chunk too small for the
   warp's candidates becomes dead entries. Every lane calls it; returns the lane's first slot. */
STEP INDEX_T warp_slots(uint n, __global INDEX_T* count, INDEX_T chunk,
                        __private INDEX_T* next, __private INDEX_T* end,
                        __global KEY_T* cout_key, __global INDEX_T* cout_pos, INDEX_T cap,
                        uint lid)
{
    const uint lane = lid & 31u;
    const uint x = warp_scan_incl(n, lane);
    const uint total = sg_shuffle(x, 31);
    if (*next + total > *end) {
        fill_dead(*next, *end, cout_key, cout_pos, cap, lane, 32);
        const INDEX_T size = max(chunk, (INDEX_T)total);
        INDEX_T base = 0;
        if (lane == 31u)
            base = COUNTER_ADD(count, size);
% if index_t == "ulong":
        base = (INDEX_T)sg_shuffle((uint)base, 31)
               | ((INDEX_T)sg_shuffle((uint)(base >> 32), 31) << 32);
% else:
        base = sg_shuffle(base, 31);
% endif
        *next = base;
        *end = base + size;
    }
    const INDEX_T c = *next + (x - n);
    *next += total;
    return c;
}
% endif

% endif
/* One work-group's end of a pass: its local histogram added into the row's (when `add`), a fence,
   and it counts itself done (the row's counter of finished groups). True in every work-item of the
   group that finished last, whose hd then holds the row's histogram (work-item lid: digits
   lid * RPT ...), every group's adds, read and zeroed for the next pass. */
STEP bool finished_last(bool add, uint groups_per_row, const __local uint* lhist,
                        __global INDEX_T* hist, __global INDEX_T* counters, __local uint* l_last,
                        __private INDEX_T* hd, uint lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    if (add) {
        for (uint j = 0; j < RPT; ++j) {
            const uint c = lhist[j * WG + lid];
            if (c)
                COUNTER_ADD(hist + j * WG + lid, c);
        }
    }
    /* this group's histogram adds (and output writes) before its count */
    global_fence();
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
        *l_last = COUNTER_ADD(counters + 3, 1) == (INDEX_T)(groups_per_row - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const bool last = *l_last != 0;
    if (last) {
        global_fence();
        for (uint j = 0; j < RPT; ++j)
            hd[j] = COUNTER_TAKE(hist + lid * RPT + j);
    }
    return last;
}

/* The end of pass p for one work-group of a row: its local histogram added into the row's; then
   the group that finishes last (the row's counter of finished groups) scans the row's histogram,
   writes the state of pass p + 1 and readies the counters and histogram for it. No group waits
   for another: each adds, fences and counts itself done. Every access to what the groups of a
   pass share is atomic (the histogram and counters: read and zeroed by exchange), and the state
   alternates between two copies (pass p reads one, its last group writes the other), so no
   plain access of one group meets another group's in the same pass. */
STEP void finish_pass(row_state st, uint p, uint pos_bits, INDEX_T cap, uint groups_per_row,
                      const __local uint* lhist, __global INDEX_T* hist,
                      __global row_state* state_next, __global INDEX_T* counters,
                      __local INDEX_T* iscratch, __local row_state* lstate, __local uint* l_last,
                      uint lid)
{
    INDEX_T hd[RPT];
    if (finished_last(!(st.flags & F_LAST), groups_per_row, lhist, hist, counters, l_last, hd,
                      lid)) {
        const row_state s = next_state(st, hd, p, pos_bits, cap, iscratch, lstate, lid);
        if (lid == 0) {
            *state_next = s;
            COUNTER_TAKE(counters + 3);
            COUNTER_TAKE(counters + 1 + (p & 1));   /* pass p + 2 writes candidates with it */
        }
    }
}

% if sample:
/* The end of the threshold pass for one work-group of a row, as finish_pass; the group that
   finishes last takes the histogram of the candidates' digit 0 and their count. At least k and at
   most cap: the state pass 0 reads (copy 0; the pass read copy 1) is the state of pass 1, the
   pivot among the candidates (read from the candidate buffer pass 0 would have written), marked
   F_SKIP: pass 0 only hands it on. Otherwise it is the first state again, and the passes run as
   without the threshold. Either way the counters and histogram are zero again, as pass 0's own
   end leaves them. */
STEP void finish_threshold(row_state st, uint pos_bits, INDEX_T cap, uint groups_per_row,
                           const __local uint* lhist, __global INDEX_T* hist,
                           __global row_state* state0, __global INDEX_T* counters,
                           __local INDEX_T* iscratch, __local row_state* lstate,
                           __local uint* l_last, uint lid)
{
    INDEX_T hd[RPT];
    if (finished_last(true, groups_per_row, lhist, hist, counters, l_last, hd, lid)) {
        INDEX_T sum = 0;
        for (uint j = 0; j < RPT; ++j)
            sum += hd[j];
        INDEX_T total;
        wg_scan_index(sum, iscratch, lid, &total);
        /* the candidates as pass 0's output: pass 1 reads them (every work-item calls it) */
        row_state c = first_state(st.need, total);
        c.flags = F_WRITE;
        if (lid == 0)
            *lstate = c;   /* what next_state returns when the k-th is not among them */
        const row_state s = next_state(c, hd, 0, pos_bits, cap, iscratch, lstate, lid);
        if (lid == 0) {
            /* the slots the groups took: the candidates and their chunks' dead entries (read
               only: pass 0 zeroes the counter for pass 2, whether it runs or hands on; PoCL 3.0
               returned 0 here from an exchange, and from an add of 0 followed by one) */
            const INDEX_T slots = COUNTER_ADD(counters + 1, 0);
            if (total >= st.need && slots <= cap) {
                row_state skip = s;
                skip.flags |= F_SKIP;
                skip.src_count = slots;   /* pass 1 reads every slot, skipping dead ones */
                *state0 = skip;
            } else {
                *state0 = first_state(st.need, st.count);
            }
            COUNTER_TAKE(counters + 3);
        }
    }
}

## The row's threshold: the order key of rank `rank` (from 1) among SAMPLE keys taken at evenly
## spaced positions of the row (the middle of each of SAMPLE equal stretches), sorted in local
## memory (bitonic); written with F_THRESH into the state's copy 1, which topk_pass_t reads.
% if part == "threshold":
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_sample(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
                 KEY_T flip, uint rank, __global uchar* temp, ulong state_off)
{
    __global row_state* state = AT(row_state, state_off);
    const uint row = get_group_id(0);
    const uint rows = get_num_groups(0);
    const uint lid = get_local_id(0);
    const __global KEY_T* src = keys + keys_off + (size_t)row * row_len;
    __local KEY_T ls[SAMPLE];
    for (uint j = 0; j < SAMPLE / WG; ++j) {
        const uint i = j * WG + lid;
        const ulong at = ((ulong)i * (ulong)row_len + (ulong)row_len / 2) / SAMPLE;
        ls[i] = order_key(src[at], flip);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint len = 2; len <= SAMPLE; len <<= 1) {
        for (uint stride = len >> 1; stride > 0; stride >>= 1) {
            for (uint j = 0; j < SAMPLE / 2 / WG; ++j) {
                const uint t = j * WG + lid;
                const uint a = 2 * t - (t & (stride - 1));
                const uint b = a + stride;
                const KEY_T xa = ls[a], xb = ls[b];
                if ((xa > xb) == ((a & len) == 0)) {
                    ls[a] = xb;
                    ls[b] = xa;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    if (lid == 0) {
        row_state st = first_state(k, row_len);
        st.pkey = (ulong)ls[rank - 1];
        st.flags = F_THRESH;
        state[(size_t)rows + row] = st;
    }
}
% endif

% endif
## Pass p over the rows (NDRange groups_per_row x rows groups): group g of a row handles tiles g,
## g + groups_per_row, ... The first two passes, which read whole rows, have kernels of their own
## with p a constant (topk_pass_0, topk_pass_1): their per-key work folds to a few instructions,
## and pass 0, which has no output, only counts (no per-tile barrier).
## Candidates alternate between two buffers (pass p writes cands[p & 1], reads cands[(p + 1) & 1]);
## every other argument is the same for every pass of a call.
##
## Each pass kernel is a sequence of the steps below (defs that write a part of the kernel's body,
## as onesweep's tile_steps), in this order:
##   pass_head          the kernel's signature, its buffers in `temp`, p, row, g, lid
##   pass_state         the row state of pass p  | threshold_state  (topk_pass_t) topk_sample's
##   hand_on_skipped    (topk_pass_0) topk_pass_t did the selection: hand its state on
##   hand_on_done       a row already done hands its state on
##   filter_step        the filter of pass p, from the row state
##   nothing_decided    (topk_pass_0, topk_pass_t) no pivot yet: nothing is taken or written
##   no_candidates_in   (topk_pass_1) pass 0 wrote no candidates
##   pass_buffers       the input (row or candidates), the candidate output, the local arrays
##   no_chunk | threshold_chunk [group_chunk]   candidate slots by tile, or by chunk
##   clear_locals, [warp_chunk]
##   tile_loop(classify step, write step)   per tile: load, classify (classify_pass |
##                      classify_threshold), then write (count_only | claim_and_write |
##                      group_write_threshold | warp_write)
##   pass_end | fill_last_chunk_* and threshold_end   the group's histogram added; the last group
##                      of the row writes the next state
## The kernels (at the end of this section) differ only in which steps they take.

## (fused: topk_fused's head, which takes the rows and its words in p's place and reads p, row
## and g from its virtual id, waiting for the row's state of pass p; see fused_pass_kernel)
<%def name="pass_head(name, p, fused=False)">\
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ${name}(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
               INDEX_T cap, uint pos_bits, uint groups_per_row, KEY_T flip,
               OUT_INDEX_T idx_row_mul, __global uchar* temp, ulong state_off, ulong hist_off,
               ulong counters_off, ulong cand_key0_off, ulong cand_pos0_off, ulong cand_key1_off,
               ulong cand_pos1_off,
               __global KEY_T* restrict out_key, ulong out_key_off,
               __global OUT_INDEX_T* restrict out_idx, ulong out_idx_off,
               ${"uint rows, ulong sync_off" if fused else "uint p_arg"})
{
    __global row_state* state = AT(row_state, state_off);
    __global INDEX_T* hist = AT(INDEX_T, hist_off);
    __global INDEX_T* counters = AT(INDEX_T, counters_off);
    __global KEY_T* cand_key0 = AT(KEY_T, cand_key0_off);
    __global INDEX_T* cand_pos0 = AT(INDEX_T, cand_pos0_off);
    __global KEY_T* cand_key1 = AT(KEY_T, cand_key1_off);
    __global INDEX_T* cand_pos1 = AT(INDEX_T, cand_pos1_off);
    const uint lid = get_local_id(0);
% if fused:
    __global volatile uint* sync = AT(volatile uint, sync_off);
    __local uint l_vid;
    if (lid == 0)
        l_vid = atomic_inc(sync);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint per_pass = rows * groups_per_row;
    const uint p = l_vid / per_pass;
    const uint row = l_vid % per_pass / groups_per_row;
    const uint g = l_vid % groups_per_row;
    __global volatile uint* ready = sync + 1 + row;
    if (p > 0) {
        if (lid == 0)
            while (load_acquire(ready) < p)
                ;
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }
% else:
    /* a constant in the first passes' kernels (and the threshold pass's: 0) */
    const uint p = ${p};
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint rows = get_num_groups(1);
% endif
</%def>

<%def name="pass_state()">\
    /* the state of pass p, and the copy pass p + 1 reads */
    const row_state st = state[(size_t)(p & 1) * rows + row];
    __global row_state* state_next = state + (size_t)((p + 1) & 1) * rows + row;
</%def>

<%def name="threshold_state()">\
    /* topk_sample's state (copy 1), and the copy pass 0 reads */
    const row_state st = state[(size_t)rows + row];
    __global row_state* state_next = state + row;
    if (!(st.flags & F_THRESH))
        return;
</%def>

## (only in a program with the threshold pass)
<%def name="hand_on_skipped(signal=False)">\
% if sample:
    if (st.flags & F_SKIP) {   /* topk_pass_t selected the candidates: the state of pass 1 */
        if (g == 0 && lid == 0) {
            row_state s = st;
            s.flags &= ~F_SKIP;
            *state_next = s;
            COUNTER_TAKE(counters + (size_t)4 * row + 1);   /* pass 2 writes candidates with it */
%   if signal:
            release_store(ready, p + 1);
%   endif
        }
        return;
    }
% endif
</%def>

<%def name="hand_on_done(signal=False)">\
    if (st.flags & F_DONE) {
        if (g == 0 && lid == 0) {
            *state_next = st;
% if signal:
            release_store(ready, p + 1);
% endif
        }
        return;
    }
</%def>

<%def name="filter_step()">\
    counters += (size_t)4 * row;
    pass_filter f = filter_of(st, p, pos_bits, flip);
</%def>

<%def name="nothing_decided()">\
    f.last = f.from_cands = f.write = false;   /* nothing decided yet */
</%def>

## (with the threshold pass, pass 0 may hand on its candidates: then pass 1 reads them)
<%def name="no_candidates_in()">\
% if not sample:
    f.from_cands = false;                      /* pass 0 writes no candidates */
% endif
</%def>

<%def name="pass_buffers()">\
    const bool odd = (p & 1) != 0;
    const __global KEY_T* cin_key = (odd ? cand_key0 : cand_key1) + (size_t)row * cap;
    const __global INDEX_T* cin_pos = (odd ? cand_pos0 : cand_pos1) + (size_t)row * cap;
    __global KEY_T* cout_key = (odd ? cand_key1 : cand_key0) + (size_t)row * cap;
    __global INDEX_T* cout_pos = (odd ? cand_pos1 : cand_pos0) + (size_t)row * cap;
    const INDEX_T n_src = f.from_cands ? st.src_count : row_len;
    const __global KEY_T* src_key = f.from_cands ? cin_key
                                                 : keys + keys_off + (size_t)row * row_len;
    __local uint lhist[RADIX];
    __local uint scratch[WG];
    __local INDEX_T iscratch[WG];
    __local row_state lstate;
    __local uint l_any[3];
    __local uint l_last;
    __local INDEX_T l_base[6];   /* the tile's slots; (threshold pass) its chunk and hole */
</%def>

<%def name="no_chunk()">\
    const INDEX_T chunk = 0;
</%def>

<%def name="threshold_chunk()">\
    const INDEX_T chunk = p_arg;   /* the threshold pass takes its chunk of slots in p's place */
</%def>

<%def name="group_chunk()">\
    if (lid == 0)   /* the group's chunk (warps keep their own on NVIDIA) */
        l_base[2] = l_base[3] = l_base[4] = l_base[5] = 0;
</%def>

<%def name="clear_locals()">\
    clear_pass_locals(lhist, l_any, scratch, lid);
</%def>

<%def name="warp_chunk()">\
    INDEX_T w_next = 0, w_end = 0;   /* the warp's chunk of candidate slots */
</%def>

## The tiles of the group: each loaded, classified by `classify` (a step that declares n: the
## tile's taken and candidates to write) and written by `write`.
<%def name="tile_loop(classify, write)">\
    uint tile_no = 0;
    for (INDEX_T base = (INDEX_T)g * TILE; base < n_src;
         base += (INDEX_T)groups_per_row * TILE, ++tile_no) {
        KEY_T x[IPT];
        INDEX_T pos[IPT];
        uint cls[IPT];    /* 1: among the k, 2: a candidate to write, 0: neither */
        const bool full = base + TILE <= n_src;
        load_row_keys(x, src_key, base, n_src, full, lid);
        load_positions(pos, cin_pos, base, n_src, f.from_cands, lid);
${classify()}
${write()}
    }
</%def>

<%def name="classify_pass()">\
        const uint2 n = classify_tile(cls, x, pos, base, n_src, full, f, lhist, lid);
</%def>

<%def name="classify_threshold()">\
        const uint2 n = threshold_tile(cls, x, pos, base, n_src, full, (KEY_T)st.pkey, flip,
                                       pos_bits, lhist, lid);
</%def>

## pass 0 has no output: it only counts its candidates' digits (classify_pass)
<%def name="count_only()">\
</%def>

## slots for the tile's output (claim_slots), its output written; then `after` (a step, or None)
<%def name="claim_and_write(after=None)">\
% if skip_idle_tiles:
        if (tile_has_output((n.x | n.y) != 0, l_any, tile_no, lid)) {
% else:
        {   /* every tile claims slots: no barrier in a branch (see skip_idle_tiles) */
% endif
            INDEX_T o, c;
            claim_slots(n.x, n.y, scratch, l_base, counters, counters + 1 + (p & 1), chunk, lid,
                        &o, &c);
            write_tile(x, pos, cls, o, c, out_key + out_key_off + (size_t)row * k,
                       out_idx + out_idx_off + (size_t)row * k, k,
                       (OUT_INDEX_T)row * idx_row_mul, cout_key, cout_pos, cap);
% if after:
${after()}
% endif
        }
</%def>

## the threshold pass by work-group: slots from the group's chunk, whose hole (the rest of a chunk
## too small for the tile) is filled with dead entries
<%def name="group_write_threshold()">\
${claim_and_write(fill_hole)}
</%def>

<%def name="fill_hole()">\
            fill_dead(l_base[4], l_base[5], cout_key, cout_pos, cap, lid, WG);
</%def>

## the threshold pass by warp (NVIDIA): each warp with candidates takes slots from its own chunk
<%def name="warp_write()">\
        if (sg_ballot(n.y != 0))
            write_tile(x, pos, cls, 0,
                       warp_slots(n.y, counters + 1, chunk, &w_next, &w_end, cout_key, cout_pos,
                                  cap, lid),
                       out_key + out_key_off + (size_t)row * k,
                       out_idx + out_idx_off + (size_t)row * k, k,
                       (OUT_INDEX_T)row * idx_row_mul, cout_key, cout_pos, cap);
</%def>

<%def name="fill_last_chunk_group()">\
    fill_dead(l_base[2], l_base[3], cout_key, cout_pos, cap, lid, WG);   /* the last chunk's rest */
</%def>

<%def name="fill_last_chunk_warp()">\
    fill_dead(w_next, w_end, cout_key, cout_pos, cap, lid & 31u, 32);   /* the last chunk's rest */
</%def>

<%def name="pass_end()">\
    finish_pass(st, p, pos_bits, cap, groups_per_row, lhist,
                hist + (size_t)row * RADIX, state_next, counters, iscratch, &lstate, &l_last,
                lid);
</%def>

<%def name="threshold_end()">\
    finish_threshold(st, pos_bits, cap, groups_per_row, lhist, hist + (size_t)row * RADIX,
                     state_next, counters, iscratch, &lstate, &l_last, lid);
</%def>

## The threshold pass (the program of part "threshold"): pass 0's counting over the keys at most
## the row's threshold, which it writes as candidates. Its slots come in chunks: a work-group's,
## or on NVIDIA (ptx) each warp's own.
<%def name="threshold_pass_kernel()">\
${pass_head("topk_pass_t", "0")}
${threshold_state()}
${hand_on_done()}
${filter_step()}
${nothing_decided()}
${pass_buffers()}
${threshold_chunk()}
% if ptx:
${clear_locals()}
${warp_chunk()}
${tile_loop(classify_threshold, warp_write)}
${fill_last_chunk_warp()}
% else:
${group_chunk()}
${clear_locals()}
${tile_loop(classify_threshold, group_write_threshold)}
${fill_last_chunk_group()}
% endif
${threshold_end()}
}
</%def>

## Pass 0: counts digit 0 of the row; nothing is taken or written.
<%def name="first_pass_kernel()">\
${pass_head("topk_pass_0", "0")}
${pass_state()}
${hand_on_skipped()}
${hand_on_done()}
${filter_step()}
${nothing_decided()}
${pass_buffers()}
${no_chunk()}
${clear_locals()}
${tile_loop(classify_pass, count_only)}
${pass_end()}
}
</%def>

## Pass 1: reads the row (or, after topk_pass_t, its candidates); takes and writes.
<%def name="second_pass_kernel()">\
${pass_head("topk_pass_1", "1")}
${pass_state()}
${hand_on_done()}
${filter_step()}
${no_candidates_in()}
${pass_buffers()}
${no_chunk()}
${clear_locals()}
${tile_loop(classify_pass, claim_and_write)}
${pass_end()}
}
</%def>

## Pass p >= 2 (p from p_arg): reads the row or the candidates of pass p - 1.
<%def name="later_pass_kernel()">\
${pass_head("topk_pass", "p_arg")}
${pass_state()}
${hand_on_done()}
${filter_step()}
${pass_buffers()}
${no_chunk()}
${clear_locals()}
${tile_loop(classify_pass, claim_and_write)}
${pass_end()}
}
</%def>
## Every pass of a call in one launch (fused; after topk_init, and the threshold pass when there
## is one): the work-groups take virtual ids from an atomic counter, pass by pass (id v: pass
## v / (rows x groups_per_row), then row, then group), and a group of pass p > 0 waits until its
## row's state for pass p is written (`ready`: the passes of the row whose state is written, set by
## whoever writes it: the last group of the pass, or group 0 when the row hands its state on). A
## group waits only for groups with smaller ids, which have started and wait only for smaller ids
## in turn: no assumption about which work-groups run together (as onesweep's os_fused). The pass
## itself is the steps of the kernels above, p from the id.
<%def name="fused_pass_kernel()">\
${pass_head("topk_fused", None, fused=True)}
${pass_state()}
    if (p == 0) {
${hand_on_skipped(signal=True)}
    }
${hand_on_done(signal=True)}
${filter_step()}
    if (p == 0) {
${nothing_decided()}
    }
% if not sample:
    if (p == 1)
        f.from_cands = false;                  /* pass 0 writes no candidates */
% endif
${pass_buffers()}
${no_chunk()}
${clear_locals()}
    if (p == 0) {
${tile_loop(classify_pass, count_only)}
    } else {
${tile_loop(classify_pass, claim_and_write)}
    }
${pass_end()}
    if (lid == 0 && l_last)
        release_store(ready, p + 1);   /* this group wrote the state of pass p + 1 */
}
</%def>
% if part == "threshold":
${threshold_pass_kernel()}
% else:
${first_pass_kernel()}
${second_pass_kernel()}
${later_pass_kernel()}
% if fused:
${fused_pass_kernel()}
% endif

% if sort_size:
<% S = sort_size %>
## sorted=True for k <= ${S}: one group per row sorts its k selected pairs by (sel, pos) in local
## memory (bitonic), and writes keys and row positions.

/* The row's k pairs as (order key, key, index), padded to size with pairs behind every pair. */
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

/* Bitonic sort of size (a power of two) pairs by (lsel, lpos), lkey moving with them. */
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
void topk_sort_rows(const __global KEY_T* restrict sel_key, ulong sel_key_off,
                    const __global OUT_INDEX_T* restrict sel_idx, ulong sel_idx_off,
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
    load_pairs(lsel, lkey, lpos, sel_key + sel_key_off + (size_t)row * k,
               sel_idx + sel_idx_off + (size_t)row * k, k, size,
               flip, lid);
    bitonic_sort_pairs(lsel, lkey, lpos, size, lid);
    for (uint i = lid; i < (uint)k; i += WG) {
        out_key[out_key_off + (size_t)row * k + i] = lkey[i];
        out_idx[out_idx_off + (size_t)row * k + i] = (IDX_T)lpos[i];
    }
}
% endif

/* One work-group per row does the whole selection (rows the planner deems small): every pass
   re-reads the row (from the caches, for such rows), counts its candidates in local memory and
   resolves the next pivot there; taken elements get slots from a local counter. Sorted (a
   program with sort_size), the selection is sorted in local memory before it is written; else it
   goes straight to the outputs. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_single(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
                 uint pos_bits, uint digits, KEY_T flip,
                 __global KEY_T* restrict out_key, ulong out_key_off,
                 __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    const __global KEY_T* src = keys + keys_off + (size_t)row * row_len;
    out_key += out_key_off + (size_t)row * k;
    out_idx += out_idx_off + (size_t)row * k;
    __local uint lhist[RADIX];
    __local INDEX_T iscratch[WG];
    __local row_state lstate;
    __local uint l_out;
% if sort_size:
    __local KEY_T lsel[${sort_size}];
    __local KEY_T lkey[${sort_size}];
    __local OUT_INDEX_T lpos[${sort_size}];
% endif
    if (lid == 0)
        l_out = 0;
    row_state st = first_state(k, row_len);
    /* a row of one tile is loaded once, and stays in registers for every pass */
    const bool one_tile = row_len <= TILE;
    KEY_T x[IPT];
    if (one_tile) {
        const INDEX_T base = 0;
        load_row_keys(x, src, base, row_len, row_len == TILE, lid);
    }
    for (uint p = 0; p <= digits; ++p) {
        for (uint j = 0; j < RPT; ++j)
            lhist[j * WG + lid] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        pass_filter f = filter_of(st, p, pos_bits, flip);
        f.from_cands = f.write = false;
        for (INDEX_T base = 0; base < row_len; base += TILE) {
            const bool full = base + TILE <= row_len;
            if (!one_tile)
                load_row_keys(x, src, base, row_len, full, lid);
            for (uint i = 0; i < IPT; ++i) {
                const INDEX_T pi = ELEM(i);
                const KEY_T sel = order_key(x[i], flip);
                if (classify(sel, pi, full || pi < row_len, f, lhist, lid) == 1u) {
                    const uint o = atomic_inc(&l_out);
% if sort_size:
                    lsel[o] = sel;
                    lkey[o] = x[i];
                    lpos[o] = (OUT_INDEX_T)pi;
% else:
                    out_key[o] = x[i];
                    out_idx[o] = (IDX_T)pi;
% endif
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (f.last)
            break;
        INDEX_T hd[RPT];
        for (uint j = 0; j < RPT; ++j)
            hd[j] = lhist[lid * RPT + j];
        st = next_state(st, hd, p, pos_bits, 0, iscratch, &lstate, lid);
    }
% if sort_size:
    uint size = 1;
    while (size < (uint)k)
        size <<= 1;
    for (uint j = 0; j < (size + WG - 1) / WG; ++j) {
        const uint i = j * WG + lid;
        if (i >= (uint)k && i < size) {
            lkey[i] = (KEY_T)0;
            lsel[i] = (KEY_T)~(KEY_T)0;   /* padding sorts behind every pair */
            lpos[i] = (OUT_INDEX_T)~(OUT_INDEX_T)0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    bitonic_sort_pairs(lsel, lkey, lpos, size, lid);
    for (uint j = 0; j < (size + WG - 1) / WG; ++j) {
        const uint i = j * WG + lid;
        if (i < (uint)k) {
            out_key[i] = lkey[i];
            out_idx[i] = (IDX_T)lpos[i];
        }
    }
% endif
}

/* The global-sort route (sorted=True, k above the local sort): the row of each selected element
   from its index in the whole batch, then the keys and row positions gathered by that index. */
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
% endif
