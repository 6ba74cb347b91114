## The top-k radix select's shared steps: what radix_select.cl.mako (the selection's program) and
## radix_select_threshold.cl.mako (the threshold pass's program) both compile. A library of defs;
## each program imports it with
##   <%namespace name="steps" file="radix_select_steps.mako"/>
## and emits ${steps.prelude()} first. prelude() is C: the #defines, the row state and its
## digits, and the functions a digit pass is made of. The two other defs write what C cannot
## share between kernels: pass_params(tail), a pass kernel's parameter list (the host reads it
## from the rendered source), and pass_locals(name), a pass kernel's local arrays (OpenCL C
## declares them at a kernel's scope).
##
## Parameters (both programs take them; radix_select.cl.mako also takes passes, its header says
## why): key codec (key_kind, key_bits, key_t, key_inf_bits), index_t, out_index_t, idx_t, wg,
## ipt, sort_size, sample, digit_bits, state_bytes, ptx, skip_idle_tiles, fused; prelude()'s
## comment says what each means.
<%namespace name="common" file="common.mako"/>

<%def name="prelude()">
<%
    DIGIT_BITS = digit_bits
    RADIX = 1 << DIGIT_BITS
    KEY_DIGITS = -(-key_bits // DIGIT_BITS)
    TILE = wg * ipt
    assert TILE < 65536, "per-tile counts are packed in 16 bits"
    assert 64 <= wg <= RADIX and wg & (wg - 1) == 0
    RPT = RADIX // wg
    # Unrolled, the output loop keeps x, pos and cls in registers (NVIDIA); PoCL 3.1 computes
    # wrong output slots from the unrolled loop, so it stays a loop elsewhere.
    unroll_out = "#pragma unroll" if ptx else ""
    VEC = min(16 // (key_bits // 8), ipt)
    assert sample == 0 or (sample & (sample - 1) == 0 and sample >= 2 * wg)
    assert ipt % VEC == 0 and VEC in (2, 4, 8, 16)
%>
/* Top-k by most-significant-digit radix select (the pass structure of AIR top-k), for `rows` rows
   of `row_len` keys.

   The selection key of an element is the pair (sel, pos): sel is the order key (common.mako),
   inverted for the largest k, and pos its position in the row. The k smallest pairs are selected;
   as pairs are distinct, the k-th one is unique, ties go to the smaller position and NaN, whose
   order key is the largest, counts as the largest value. Digits of DIGIT_BITS are taken from
   sel (KEY_DIGITS of them: 3 for 32-bit keys) and then from pos (pos_bits, the bit length of the
   row's largest position), most significant first; a field's last digit is the narrower one (its
   low bits): digit j of a b-bit field is (field >> max(b - DIGIT_BITS (j + 1), 0)) & (RADIX - 1),
   whose bits above the digit's own were resolved by the digits before it.

   A digit pass p reads the row (or the candidates of pass p - 1) once: an element that matched
   digits 0..p-2 is classified by its digit p - 1 against the pivot (the row state): below goes to
   the output (an atomic slot), equal is a candidate (written to the candidate buffer when the
   pivot bucket fits it, and counted by its digit p), above is dropped. Pass 0 only counts digit
   0. The work-group that finishes the pass last in its row (an atomic counter of finished groups:
   no group waits for another) scans the histogram and writes the next pivot to the row state;
   when the pivot bucket is exactly what is still needed, the next pass takes it whole and the row
   is done (later passes return at once). For random 32-bit keys pass 0 and pass 1 read the row
   and later passes only candidates. A pivot bucket larger than the candidate buffer (clustered
   data) is not written; the next pass re-reads the row instead (the adaptive re-read).

   A pass kernel reads as its phases: the row's state (returning at once when the row is done),
   the pass's filter and buffers (pass_filter, pass_io), its local arrays cleared, its tiles
   (each loaded, classified, and its output slots claimed and written), and the pass's end
   (finish_pass: the last group of the row writes the next state).

   Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), index_t (positions and
   counts), out_index_t (indices the passes write: row positions, or indices into the whole batch
   for the global-sort route), idx_t (the caller's index type), wg (a power of two, 64 to RADIX),
   ipt, sort_size (power of two, the largest k that topk_sort_rows and topk_single sort; 0 when
   they do not sort), sample (0, or the threshold pass's sample per row: a power of two of at
   least 2 wg), ptx (an NVIDIA GPU, common.mako: warp ballots and a shuffle merge a warp's equal
   digits into one local atomic, and the fences and acquire loads are PTX's), fused (topk_fused
   is built), skip_idle_tiles (GPUs: a tile none of whose elements is taken or written skips
   claiming slots, the branch around the claim's barriers uniform by a local flag; CPUs claim for
   every tile: PoCL 3.0 turns that uniform branch into wrong or missing output slots, and the scan
   costs a CPU little).

   Work-item dependent branches after a barrier: PoCL 3.1 treats the first branch of a region after
   a barrier as uniform when it is a loop whose bounds depend on the work-item (a per-digit loop
   `for (d = lid; d < RADIX; d += WG)` ran for every work-item). So the kernels walk the histogram
   with loops of a fixed trip count (RADIX / WG digits per work-item) and branch on lid only in
   `if`s. */
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

/* Copy c (0 or 1) of a row's state. A row has two: pass p reads copy p & 1 and its last group
   writes copy (p + 1) & 1, which pass p + 1 reads, so that no group of a pass reads the copy
   another group of it writes. */
static inline __global row_state* state_copy(__global uchar* temp, ulong state_off, uint c,
                                             uint rows, uint row)
{
    return AT(row_state, state_off) + (size_t)c * rows + row;
}

/* The row's four counters: output slots, candidate slots of even and of odd passes, work-groups
   done with the pass. */
static inline __global INDEX_T* row_counters(__global uchar* temp, ulong counters_off, uint row)
{
    return AT(INDEX_T, counters_off) + (size_t)4 * row;
}

/* A row already done (F_DONE) hands its state on to the next pass (group 0 copies it) and every
   group of the pass returns: true when the row is done. */
STEP bool hand_on_done(row_state st, __global row_state* state_next, uint g, uint lid)
{
    if (!(st.flags & F_DONE))
        return false;
    if (g == 0 && lid == 0)
        *state_next = st;
    return true;
}

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

/* Where one work-group of pass p reads and writes its row. Candidates alternate between two
   buffers: pass p writes buffer p & 1 and reads buffer (p + 1) & 1, the one pass p - 1 wrote. */
typedef struct {
    const __global KEY_T* src_key;   /* the input: the row, or the candidates of pass p - 1 */
    const __global INDEX_T* src_pos; /* the candidates' row positions (read with candidates) */
    INDEX_T n_src;                   /* the input's length */
    __global KEY_T* out_key;         /* the row's k output slots */
    __global OUT_INDEX_T* out_idx;
    OUT_INDEX_T idx_base;            /* added to a row position: the index written */
    INDEX_T k;
    __global KEY_T* cout_key;        /* the candidates pass p writes: cap slots */
    __global INDEX_T* cout_pos;
    INDEX_T cap;
    __global INDEX_T* counters;      /* the row's counters (row_counters) */
    __global INDEX_T* hist;          /* the row's histogram: RADIX counts */
} pass_io;

STEP pass_io pass_io_of(uint p, uint row, bool from_cands, INDEX_T src_count,
                        const __global KEY_T* keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
                        INDEX_T cap, OUT_INDEX_T idx_row_mul, __global uchar* temp,
                        ulong hist_off, ulong counters_off, ulong cand_key0_off,
                        ulong cand_pos0_off, ulong cand_key1_off, ulong cand_pos1_off,
                        __global KEY_T* out_key, ulong out_key_off,
                        __global OUT_INDEX_T* out_idx, ulong out_idx_off)
{
    const bool odd = (p & 1) != 0;
    __global KEY_T* cand_key0 = AT(KEY_T, cand_key0_off);
    __global INDEX_T* cand_pos0 = AT(INDEX_T, cand_pos0_off);
    __global KEY_T* cand_key1 = AT(KEY_T, cand_key1_off);
    __global INDEX_T* cand_pos1 = AT(INDEX_T, cand_pos1_off);
    const __global KEY_T* cin_key = (odd ? cand_key0 : cand_key1) + (size_t)row * cap;
    pass_io io;
    io.src_pos = (odd ? cand_pos0 : cand_pos1) + (size_t)row * cap;
    io.cout_key = (odd ? cand_key1 : cand_key0) + (size_t)row * cap;
    io.cout_pos = (odd ? cand_pos1 : cand_pos0) + (size_t)row * cap;
    io.n_src = from_cands ? src_count : row_len;
    io.src_key = from_cands ? cin_key : keys + keys_off + (size_t)row * row_len;
    io.out_key = out_key + out_key_off + (size_t)row * k;
    io.out_idx = out_idx + out_idx_off + (size_t)row * k;
    io.idx_base = (OUT_INDEX_T)row * idx_row_mul;
    io.k = k;
    io.cap = cap;
    io.counters = row_counters(temp, counters_off, row);
    io.hist = AT(INDEX_T, hist_off) + (size_t)row * RADIX;
    return io;
}

/* A pass kernel's local arrays (pass_locals in radix_select_steps.mako declares them). */
typedef struct {
    __local uint* hist;        /* RADIX: the group's counts of its candidates' digit p */
    __local uint* scratch;     /* WG: the tile's slot scan */
    __local INDEX_T* iscratch; /* WG: the pivot scan */
    __local row_state* state;  /* the next state, to every work-item */
    __local uint* any;         /* 3: the tiles' output flags (tile_has_output) */
    __local uint* last;        /* the group finished the pass last */
    __local INDEX_T* base;     /* 6: the tile's slots; (threshold pass) its chunk and hole */
} pass_locals;

/* The local histogram, the tiles' output flags and the slot scratch, zeroed. */
STEP void clear_pass_locals(pass_locals loc, uint lid)
{
    for (uint j = 0; j < RPT; ++j)
        loc.hist[j * WG + lid] = 0;
    if (lid < 3)
        loc.any[lid] = 0;
    if (lid == 0)
        loc.scratch[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The keys of a tile, all loads first, so that a work-item has IPT of them in flight: element i
   of a work-item is ELEM(i), runs of VEC consecutive keys, one vector load each in a full tile;
   past n they are 0. */
STEP void load_row_keys(__private KEY_T* x, const __global KEY_T* src, INDEX_T base, INDEX_T n,
                    bool full, uint lid)
{
    if (full) {
        #pragma unroll
        for (uint j = 0; j < IPT / VEC; ++j) {
            KEY_T v[VEC];
            vstore${VEC}(vload${VEC}(0, src + ELEM(j * VEC)), 0, v);
            #pragma unroll
            for (uint c = 0; c < VEC; ++c)
                x[j * VEC + c] = v[c];
        }
    } else {
        #pragma unroll
        for (uint i = 0; i < IPT; ++i)
            x[i] = ELEM(i) < n ? src[ELEM(i)] : (KEY_T)0;
    }
}

/* The row positions of a tile's elements: read with the candidates, or the elements' own. */
STEP void load_positions(__private INDEX_T* pos, const __global INDEX_T* src,
                         INDEX_T base, INDEX_T n, bool from_cands, uint lid)
{
    if (from_cands) {
        #pragma unroll
        for (uint i = 0; i < IPT; ++i)
            pos[i] = ELEM(i) < n ? src[ELEM(i)] : (INDEX_T)0;
    } else {
        #pragma unroll
        for (uint i = 0; i < IPT; ++i)
            pos[i] = ELEM(i);
    }
}

/* A tile's keys (load_row_keys) and their row positions (load_positions). */
STEP void load_pass_tile(__private KEY_T* x, __private INDEX_T* pos, pass_io io,
                         bool from_cands, INDEX_T base, bool full, uint lid)
{
    load_row_keys(x, io.src_key, base, io.n_src, full, lid);
    load_positions(pos, io.src_pos, base, io.n_src, from_cands, lid);
}

/* A candidate adds one to the count of its digit p in the local histogram. With ptx, a warp whose
   candidates share one digit (clustered data) adds once, otherwise each lane adds on its own,
   and a warp without candidates does nothing. */
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

/* Output slots for a tile: one counter add each (taken, candidates) for the whole tile. *o and *c:
   the work-item's first output and candidate slot. The order of the slots is of no consequence
   (the selection is sorted afterwards, or returned unordered, and the candidates are a set). */
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
</%def>

## A pass kernel's parameters: the keys and the row's shape, the temporaries (byte offsets into
## `temp`, in the order of the driver's _temp_parts), the outputs, then `tail` (the kernel's own:
## pass p, the threshold pass's chunk, or topk_fused's rows and words). A kernel writes
##   void name(${steps.pass_params("uint p_arg")})
<%def name="pass_params(tail)">\
const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
               INDEX_T cap, uint pos_bits, uint groups_per_row, KEY_T flip,
               OUT_INDEX_T idx_row_mul, __global uchar* temp, ulong state_off, ulong hist_off,
               ulong counters_off, ulong cand_key0_off, ulong cand_pos0_off, ulong cand_key1_off,
               ulong cand_pos1_off,
               __global KEY_T* restrict out_key, ulong out_key_off,
               __global OUT_INDEX_T* restrict out_idx, ulong out_idx_off,
               ${tail}\
</%def>

## A pass kernel's local arrays, declared at the kernel's scope (as OpenCL C requires), and the
## pass_locals `name` that the steps take them in.
<%def name="pass_locals(name)">\
    __local uint lhist[RADIX];
    __local uint scratch[WG];
    __local INDEX_T iscratch[WG];
    __local row_state lstate;
    __local uint l_any[3];
    __local uint l_last;
    __local INDEX_T l_base[6];
    const pass_locals ${name} = {lhist, scratch, iscratch, &lstate, l_any, &l_last, l_base};\
</%def>
