/* Selection by ranks: the order keys of the keys of given ranks in each row (MSD radix select of
   several ranks at once), and what partition, argpartition and kthvalue make of them. The state
   and its digits are in rank_select_steps.mako, whose prelude follows.

     rs_init    - per row: counters zeroed, the first state (one group: the whole row), the
                  row's histograms zeroed (work-groups of several work-items)
     rs_pass0   - pass 0: counts digit 0 of every key (and the NaN keys); its last work-group
                  computes the ranks (from the row's keys that count: numpy's quantile indexes,
                  the median's two middle ranks, or the caller's) and resolves digit 0
     rs_pass    - pass p >= 1: counts digit p of the keys in a group's prefix; writes them as
                  candidates when every group's keys fit the candidate buffer, and reads the
                  candidates of the pass before when it wrote them (the adaptive re-read: keys
                  that do not fit are read again from the row)
     rs_count   - per chunk of a row: the keys of each class (below the first threshold, equal to
                  it, between it and the next, ...)
     rs_scatter - per chunk: its keys (and positions) to their class's positions (after those of
                  the chunks before), in position order within a class (a stable split:
                  partition, argpartition)
     rs_locate  - per row and rank: the key of that rank and its position, the one a stable sort
                  puts there (kthvalue)

   A pass runs over the rows (NDRange groups_per_row x rows work-groups); work-group g of a row
   takes a contiguous span of its tiles. The last work-group of a row to finish a pass (a counter
   of finished work-groups: no work-group waits for another) resolves the next digit of every
   rank and writes the row's next state (the pass structure of clradix's top-k radix select,
   radix_select.cl.mako, with several ranks per row, a histogram per group of ranks, and nothing
   written but candidates).

   Work-groups of one work-item (wg = 1, CPUs) keep their counts in a histogram slot of their
   own in global memory (no atomics: 16-bit digits, two reads of a 32-bit key's row), which the
   last work-group sums; larger work-groups count in local memory and add to the row's
   histogram. Keys of a tile are blocked: work-item lid takes IPT consecutive keys (one vector
   load each where the tile is full).

   Two programs of this template (`program`): "first", rs_pass0, whose local histogram of the
   first digit (up to 2^12 counts) a compiler may count against every kernel of its program (as
   oclgrind's does), and "rest", every other kernel.

   Parameters: those of the prelude, and program, wg, ipt, idx_t (the positions written), ptx
   (NVIDIA's fences), uniform_branches (the device runs a branch on a work-group-uniform value
   around barriers as written: GPUs; PoCL 3.0 does not, radix_select_steps.mako). Loops that hold
   barriers have work-group-uniform trip counts, and loops after a barrier never have bounds that
   depend on the work-item (PoCL 3.1, radix_select_steps.mako). */
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="rank_select_steps.mako"/>
${steps.prelude()}
<%
    RADIX = 1 << digit_bits
    RADIX0 = 1 << first_bits
    DIGITS = 1 + -(-(key_bits - first_bits) // digit_bits)
    TILE = wg * ipt
    assert TILE < 65536, "a tile's class counts are packed in 16 bits"
    assert wg == 1 or (wg <= RADIX and RADIX % wg == 0 and RADIX0 % wg == 0)
    RPT = RADIX // wg
    RPT0 = RADIX0 // wg
    CMAX = 2 * rmax + 1
    WORDS = -(-CMAX // 4)
    VEC = 1
    while VEC * 2 <= min(ipt, 16 // (key_bits // 8)):
        VEC *= 2
    one = wg == 1
    # NVIDIA: a pass whose candidates are few claims their slots by warps (warp_claims)
    warp_claims = ptx and wg >= 32
%>
#define WG ${wg}
#define IPT ${ipt}
#define TILE ${TILE}
#define RPT ${RPT}
#define RPT0 ${RPT0}
/* the counts of a row's histogram (wg > 1): the first digit's, or RADIX per group */
#define HIST_ROW(nranks) max((size_t)FIRST_RADIX, (size_t)(nranks) * RADIX)
/* a bin no key counts in (count_bins) */
#define NO_BIN 0xFFFFFFFFu
/* (warp_claims) a pass claims candidate slots by warps when at most one key in
   WARP_CLAIM_SHARE is a member: a warp's tile of 32 x IPT keys then rarely holds one, so the
   warps' counter adds are fewer than one a tile; with more members they would serialize on the
   counter (uniform(0, 1) floats at 12 bits: one key in 16), and the tile's claim, a scan
   between barriers, wins */
#define WARP_CLAIM_SHARE 2048u
#define CMAX ${CMAX}
#define WORDS ${WORDS}
#define IDX_T ${idx_t}
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
% if ptx and wg >= 32:
${common.sg_primitives("ptx", 32, wg, 1)}
/* the candidate slots' scan by warps (one barrier pair a tile, as top-k's claims) */
${common.wg_scan_warp_fn("wg_scan_uint", wg)}
% else:
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% endif
${common.wg_scan_fn("wg_scan_ulong", "ulong", wg)}
${common.cross_group_fns(ptx, False)}

/* the row's four counters: work-groups done with the pass, candidate slots of even and odd
   passes, NaN keys */
static inline __global INDEX_T* sel_counters(__global uchar* temp, ulong counters_off, uint row)
{
    return AT(INDEX_T, counters_off) + (size_t)4 * row;
}

/* The tiles [*t0, *t1) of n keys that work-group g of `groups` takes: a contiguous span. */
static inline void tile_span(INDEX_T n, uint g, uint groups, INDEX_T* t0, INDEX_T* t1)
{
    const ulong tiles = ((ulong)n + TILE - 1) / TILE;
    *t0 = (INDEX_T)(tiles * g / groups);
    *t1 = (INDEX_T)(tiles * (g + 1) / groups);
}

/* The keys [*lo, *hi) of n that work-group g of `groups` takes (its span of tiles). */
static inline void chunk_of(INDEX_T n, uint g, uint groups, INDEX_T* lo, INDEX_T* hi)
{
    INDEX_T t0, t1;
    tile_span(n, g, groups, &t0, &t1);
    *lo = t0 * TILE;
    *hi = min((INDEX_T)(t1 * TILE), n);
}

/* A work-item's IPT consecutive keys from `at` (0 past n): vector loads in a full run. */
STEP void load_run(__private KEY_T* x, const __global KEY_T* src, INDEX_T at, INDEX_T n)
{
    if (at + IPT <= n) {
        #pragma unroll
        for (uint j = 0; j < IPT / ${VEC}; ++j) {
% if VEC == 1:
            x[j] = src[at + j];
% else:
            vstore${VEC}(vload${VEC}(0, src + at + j * ${VEC}), 0, x + j * ${VEC});
% endif
        }
    } else {
        #pragma unroll
        for (uint i = 0; i < IPT; ++i)
            x[i] = at + i < n ? src[at + i] : (KEY_T)0;
    }
}

/* (wg > 1) A work-item's counts of its IPT bins (NO_BIN: none), one local add per
   distinct bin: keys of one digit (half the keys of uniform(0, 1) floats share their top
   byte) would otherwise serialize the adds of a warp on one counter. */
STEP void count_bins(const __private uint* bin, __local uint* lhist)
{
    #pragma unroll
    for (uint i = 0; i < IPT; ++i) {
        uint c = 0;
        bool first = bin[i] != NO_BIN;
        #pragma unroll
        for (uint j = 0; j < IPT; ++j) {
            c += bin[j] == bin[i];
            first = first && !(j < i && bin[j] == bin[i]);
        }
        if (first)
            atomic_add(&lhist[bin[i]], c);
    }
}

/* (wg = 1) n staged candidates to the candidate buffer: one counter add for them all. */
#define STAGE 64
static inline void write_stage(const KEY_T* stage, uint n, __global INDEX_T* counter,
                               __global KEY_T* cout, INDEX_T cap)
{
    const INDEX_T c = COUNTER_ADD(counter, n);
    for (uint s = 0; s < n; ++s)
        if (c + s < cap)
            cout[c + s] = stage[s];
}

/* The group whose prefix is pm (ng when none). */
static inline uint group_of(KEY_T pm, const __local KEY_T* gpre, uint ng)
{
    for (uint u = 0; u < ng; ++u)
        if (gpre[u] == pm)
            return u;
    return ng;
}

/* A pass kernel's local memory (declared at the kernel's scope, as OpenCL C requires). */
typedef struct {
    __local uint* hist;      /* (wg > 1) the work-group's counts: FIRST_RADIX (pass 0), or
                                RADIX per group */
    __local KEY_T* gpre;     /* RMAX: the groups' prefixes */
    __local INDEX_T* scratch;  /* WG: the last work-group's scans */
    __local uint* uscratch;  /* WG: the candidate slots' scan */
    __local INDEX_T* cbase;  /* the tile's first candidate slot */
    __local uint* head;      /* groups, flags, and whether this group finished last */
    __local ulong* rank;     /* RMAX each: the state the pass ran with */
    __local ulong* below;
    __local ulong* count;
    __local ulong* prefix;
    __local uint* group;
    __local ulong* nbelow;   /* RMAX each: what the pass resolved */
    __local ulong* ncount;
    __local ulong* nprefix;
    __local ulong* rowinfo;  /* the ranks' key count, the NaN keys, the keys the pass read */
} sel_locals;

<%def name="pass_locals(hist_size)">\
% if not one:
    __local uint lhist[${hist_size}];
% endif
    __local KEY_T gpre[RMAX];
    __local INDEX_T scratch[WG];
    __local uint uscratch[WG];
    __local INDEX_T cbase;
    __local uint head[3];
    __local ulong lrank[RMAX], lbelow[RMAX], lcount[RMAX], lprefix[RMAX];
    __local uint lgroup[RMAX];
    __local ulong nbelow[RMAX], ncount[RMAX], nprefix[RMAX];
    __local ulong rowinfo[3];
    const sel_locals loc = {${"0" if one else "lhist"}, gpre, scratch, uscratch, &cbase, head,
                            lrank, lbelow, lcount, lprefix, lgroup, nbelow, ncount, nprefix,
                            rowinfo};\
</%def>

<%def name="pass_params()">\
const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T cap,
              uint nranks, __global uchar* temp, ulong state_off, ulong counters_off,
              ulong hist_off, ulong cand0_off, ulong cand1_off, uint rank_mode, uint method,
              uint skip_nan, const __global ulong* restrict params\
</%def>

#define RANKS_FIXED 0u    /* the caller's ranks (params[r]) */
#define RANKS_MEDIAN 1u   /* (n - 1) / 2 and n / 2 of the n keys that count */
#define RANKS_QUANTILE 2u /* numpy's two order statistics of each quantile params[0..nranks/2) */

/* The ranks of a row whose ranks count n keys, in ascending order (work-item 0 of its last
   work-group of pass 0; rs_values finds a statistic's slot by its rank). */
static inline void first_ranks(uint mode, uint method, uint nranks, ulong n,
                               const __global ulong* params, __local ulong* rank)
{
    for (uint r = 0; r < nranks; ++r) {
        if (mode == RANKS_FIXED) {
            rank[r] = params[r];
        } else if (mode == RANKS_MEDIAN) {
            rank[r] = n == 0 ? 0 : (r == 0 ? (n - 1) / 2 : n / 2);
% if fp64:
        } else {
            /* q, then the method's alpha and 1 - alpha - beta, as float64 bits */
            const uint nq = nranks / 2;
            ulong prev, next;
            double gamma;
            quantile_points(method, n ? n : 1, as_double(params[r / 2]), as_double(params[nq]),
                            as_double(params[nq + 1]), &prev, &next, &gamma);
            rank[r] = (r & 1) ? next : prev;
% else:
        } else {
            rank[r] = 0;   /* (refused by the host without cl_khr_fp64) */
% endif
        }
    }
    /* ascending (a group's ranks are neighbours): the two statistics of neighbouring quantiles
       interleave (q 0.5 and 0.5001 of 101 keys read ranks 49, 50, 49, 50) */
    for (uint r = 1; r < nranks; ++r) {
        const ulong v = rank[r];
        uint s = r;
        for (; s > 0 && rank[s - 1] > v; --s)
            rank[s] = rank[s - 1];
        rank[s] = v;
    }
}

/* The row's count of digit bin b of group j, taken for the last work-group's scan. With
   work-groups of one work-item: the sum of every work-group's slot (each clears its own at the
   start of a pass); else the row's histogram, zeroed for the next pass as it is read. */
% if one:
/* A work-item's slot: RADIX counts per group, and one more RADIX that takes the adds of keys
   outside every group (a count without a branch adds 0 there, a line that stays in the cache);
   pass 0 counts FIRST_RADIX bins. */
#define SLOT_SIZE(nranks) max((size_t)FIRST_RADIX, ((size_t)(nranks) + 1) * RADIX)

static inline INDEX_T bin_total(__global INDEX_T* slots, uint groups, uint nranks, uint j,
                                uint b)
{
    INDEX_T c = 0;
    for (uint g = 0; g < groups; ++g)
        c += slots[g * SLOT_SIZE(nranks) + (size_t)j * RADIX + b];
    return c;
}
% endif

/* The end of pass p in the row's last work-group: the ranks (pass 0: computed), the histogram
   of each group scanned, each rank's bin found (its key's digit p), and the next state written:
   the ranks' new prefixes and counts, the groups (neighbouring ranks of one prefix), whether the
   next pass reads the candidates this pass wrote (F_SRC_CANDS: how many, from the slot counter,
   zeroed for the pass after next) and whether it writes its own (F_WRITE: its groups' keys fit
   the candidate buffer, are at most a quarter of the row, and a pass reads them). Every
   work-item calls it; it ends with a barrier, and the kernels have nothing after it
   (as radix_select.cl.mako's finish_pass). */
STEP void resolve(uint p, uint rows, uint row, uint groups, INDEX_T row_len, INDEX_T cap,
                  uint nranks, __global uchar* temp, ulong state_off, __global INDEX_T* counters,
                  __global INDEX_T* hist, uint rank_mode, uint method, uint skip_nan,
                  const __global ulong* params, sel_locals loc, uint lid)
{
    const __global sel_state* st = sel_state_at(temp, state_off, p & 1, rows, row);
    if (lid == 0) {
        if (p == 0) {
            const ulong nans = (ulong)COUNTER_TAKE(counters + 3);
            const ulong n = skip_nan ? (ulong)row_len - nans : (ulong)row_len;
            loc.rowinfo[0] = n;
            loc.rowinfo[1] = nans;
            loc.head[0] = 1;
            loc.head[1] = 0;
            first_ranks(rank_mode, method, nranks, n, params, loc.rank);
            for (uint r = 0; r < nranks; ++r) {
                loc.below[r] = 0;
                loc.count[r] = row_len;
                loc.prefix[r] = 0;
                loc.group[r] = 0;
            }
        } else {
            loc.rowinfo[0] = st->n_eff;
            loc.rowinfo[1] = st->nans;
            loc.head[0] = st->ngroups;
            loc.head[1] = st->flags;
            for (uint r = 0; r < nranks; ++r) {
                loc.rank[r] = st->rank[r];
                loc.below[r] = st->below[r];
                loc.count[r] = st->count[r];
                loc.prefix[r] = st->prefix[r];
                loc.group[r] = st->group[r];
            }
        }
        COUNTER_TAKE(counters);   /* the finished work-groups, for the next pass */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint ng = loc.head[0];
    const uint shift = sel_shift(p);
    const uint bins = p == 0 ? FIRST_RADIX : RADIX;   /* a group's */
    for (uint j = 0; j < ng; ++j) {
% if one:
        /* the group's ranks are neighbours, in ascending order: one walk over the bins */
        uint r = 0;
        while (r < nranks && loc.group[r] != j)
            ++r;
        ulong b = 0;
        for (uint d = 0; d < bins && r < nranks && loc.group[r] == j; ++d) {
            const ulong c = bin_total(hist, groups, nranks, j, d);
            while (r < nranks && loc.group[r] == j && loc.rank[r] - loc.below[r] < b + c) {
                loc.nbelow[r] = loc.below[r] + b;
                loc.ncount[r] = c;
                loc.nprefix[r] = loc.prefix[r] | ((ulong)d << shift);
                ++r;
            }
            b += c;
        }
% else:
        /* work-item lid's bins: rpt from lid * rpt */
        const uint rpt = p == 0 ? RPT0 : RPT;
        INDEX_T hd[RPT0 > RPT ? RPT0 : RPT];
        INDEX_T sum = 0;
        for (uint jj = 0; jj < rpt; ++jj) {
            hd[jj] = COUNTER_TAKE(hist + (size_t)j * RADIX + lid * rpt + jj);
            sum += hd[jj];
        }
        INDEX_T total;
        const INDEX_T before = wg_scan_index(sum, loc.scratch, lid, &total);
        for (uint r = 0; r < nranks; ++r) {
            if (loc.group[r] != j)
                continue;
            const ulong resid = loc.rank[r] - loc.below[r];
            ulong b = before;
            for (uint jj = 0; jj < rpt; ++jj) {
                if (resid >= b && resid < b + hd[jj]) {
                    loc.nbelow[r] = loc.below[r] + b;
                    loc.ncount[r] = hd[jj];
                    loc.nprefix[r] = loc.prefix[r] | ((ulong)(lid * rpt + jj) << shift);
                }
                b += hd[jj];
            }
        }
% endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        __global sel_state* nx = sel_state_at(temp, state_off, (p + 1) & 1, rows, row);
        uint ng2 = 0;
        ulong members = 0;
        for (uint r = 0; r < nranks; ++r) {
            if (r == 0 || loc.nprefix[r] != loc.nprefix[r - 1]) {
                ++ng2;
                members += loc.ncount[r];
            }
            nx->rank[r] = loc.rank[r];
            nx->below[r] = loc.nbelow[r];
            nx->count[r] = loc.ncount[r];
            nx->prefix[r] = loc.nprefix[r];
            nx->group[r] = ng2 - 1;
        }
        const bool wrote = (loc.head[1] & F_WRITE) != 0;
        /* the candidates this pass wrote (their slot counter zeroed for the pass after next) */
        nx->n_src = wrote ? (ulong)COUNTER_TAKE(counters + 1 + (p & 1)) : (ulong)row_len;
        /* candidates pay when they fit and are at most a quarter of the row (a pass that
           writes most of the row costs more than the reads it saves) */
        const bool fit = members <= (ulong)cap && 4 * members <= (ulong)row_len;
        nx->flags = (wrote ? F_SRC_CANDS : 0u) | (p + 2 < DIGITS && fit ? F_WRITE : 0u);
        nx->ngroups = ng2;
        nx->n_eff = loc.rowinfo[0];
        nx->nans = loc.rowinfo[1];
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
}

/* The end of a pass for one work-group: its nbins counts into the row's histogram (wg > 1; a
   work-item's own slot is already in global memory), a fence, its count of finished
   work-groups; the last one to finish resolves. */
STEP void end_pass(uint p, uint nbins, uint rows, uint row, uint groups, INDEX_T row_len,
                      INDEX_T cap, uint nranks, __global uchar* temp, ulong state_off,
                      __global INDEX_T* counters, __global INDEX_T* hist, uint rank_mode,
                      uint method, uint skip_nan, const __global ulong* params, sel_locals loc,
                      uint lid)
{
% if one:
    global_fence();   /* this work-item's counts before its count of finished work-groups */
    if (COUNTER_ADD(counters, 1) == (INDEX_T)(groups - 1)) {
        global_fence();
        resolve(p, rows, row, groups, row_len, cap, nranks, temp, state_off, counters, hist,
                rank_mode, method, skip_nan, params, loc, lid);
    }
% else:
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint jj = 0; jj < nbins / WG; ++jj) {
        const uint b = jj * WG + lid;
        const uint c = loc.hist[b];
        if (c)
            COUNTER_ADD(hist + b, c);
    }
    /* this work-group's adds before its count */
    global_fence();
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
        loc.head[2] = COUNTER_ADD(counters, 1) == (INDEX_T)(groups - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (loc.head[2]) {
        global_fence();
        resolve(p, rows, row, groups, row_len, cap, nranks, temp, state_off, counters, hist,
                rank_mode, method, skip_nan, params, loc, lid);
    }
% endif
}

/* The histogram the last work-group resolves from: the row's, or the row's first slot (wg = 1,
   whose work-item counts in its own slot: HIST_INC; larger work-groups: count_bins). */
% if one:
#define MY_HIST(row, g) (AT(INDEX_T, hist_off) + ((size_t)(row) * groups + (g)) * SLOT_SIZE(nranks))
#define ROW_HIST(row) MY_HIST(row, 0)
#define HIST_INC(j, d) (++mine[(size_t)(j) * RADIX + (d)])
% else:
#define ROW_HIST(row) (AT(INDEX_T, hist_off) + (size_t)(row) * HIST_ROW(nranks))
% endif

/* Zero the nbins counts this work-group keeps (its local histogram, or its slot). */
<%def name="clear_hist(nbins)">\
% if one:
    __global INDEX_T* mine = MY_HIST(row, g);
    for (uint b = 0; b < ${nbins}; ++b)
        mine[b] = 0;
% else:
    for (uint jj = 0; jj < (${nbins}) / WG; ++jj)
        loc.hist[jj * WG + lid] = 0;
% endif
</%def>

% if program == "rest":
/* Also writes the call's parameter words (PARAM_WORDS kernel arguments, w0 ..) to params when
   has_params: the arguments are copied when the kernel is enqueued, so the call copies no host
   memory into a buffer and enqueues no fill for them. */
__kernel void rs_init(__global uchar* temp, ulong state_off, ulong counters_off, ulong hist_off,
                      uint nranks, __global ulong* restrict params, uint has_params,
                      ${", ".join(f"ulong w{i}" for i in range(param_words))})
{
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint wg = get_local_size(0);
    if (has_params && row == 0 && lid == 0) {
% for i in range(param_words):
        params[${i}] = w${i};
% endfor
    }
% if not one:
    __global INDEX_T* hist = AT(INDEX_T, hist_off) + (size_t)row * HIST_ROW(nranks);
    for (uint b = lid; b < HIST_ROW(nranks); b += wg)
        hist[b] = 0;
% endif
    if (lid == 0) {
        __global INDEX_T* counters = sel_counters(temp, counters_off, row);
        for (uint i = 0; i < 4; ++i)
            counters[i] = 0;
    }
}

% endif
% if program == "first":
/* Pass 0: counts digit 0 of every key of the row and its NaN keys. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rs_pass0(${pass_params()})
{
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint groups = get_num_groups(0);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
${pass_locals("FIRST_RADIX")}
${clear_hist("FIRST_RADIX")}
    barrier(CLK_LOCAL_MEM_FENCE);
    const __global KEY_T* src = keys + keys_off + (size_t)row * row_len;
    uint nans = 0;
% if one:
    INDEX_T lo, hi;
    chunk_of(row_len, g, groups, &lo, &hi);
    for (INDEX_T i = lo; i < hi; ++i) {
        const KEY_T k = order_key(src[i], 0);
        HIST_INC(0, sel_digit(k, 0));
%   if key_kind == "float":
        nans += k == KEY_ONES;
%   endif
    }
% else:
    INDEX_T t0, t1;
    tile_span(row_len, g, groups, &t0, &t1);
    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T at = t * TILE + lid * IPT;
        KEY_T x[IPT];
        load_run(x, src, at, row_len);
        uint bin[IPT];
        #pragma unroll
        for (uint i = 0; i < IPT; ++i) {
            const KEY_T k = order_key(x[i], 0);
            const bool valid = at + i < row_len;
            bin[i] = valid ? sel_digit(k, 0) : NO_BIN;
%   if key_kind == "float":
            nans += valid && k == KEY_ONES;
%   endif
        }
        count_bins(bin, loc.hist);
    }
% endif
    __global INDEX_T* counters = sel_counters(temp, counters_off, row);
    if (nans)
        COUNTER_ADD(counters + 3, nans);
    end_pass(0, FIRST_RADIX, rows, row, groups, row_len, cap, nranks, temp, state_off,
                counters, ROW_HIST(row), rank_mode, method, skip_nan, params, loc, lid);
}

% endif
% if program == "rest":
/* Pass p >= 1: counts digit p of the keys in a group's prefix (the first p digits of a rank's
   key), from the row or the candidates of pass p - 1, and writes them as candidates (F_WRITE). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rs_pass(${pass_params()}, uint p)
{
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint groups = get_num_groups(0);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
${pass_locals("RMAX * RADIX")}
    const __global sel_state* st = sel_state_at(temp, state_off, p & 1, rows, row);
    if (lid == 0) {
        loc.head[0] = st->ngroups;
        loc.head[1] = st->flags;
        loc.rowinfo[2] = st->n_src;
% if warp_claims:
        ulong members = 0;   /* the keys of the groups (ranks of one group share its count) */
        uint seen = 0;
        for (uint r = 0; r < nranks; ++r) {
            loc.gpre[st->group[r]] = (KEY_T)st->prefix[r];
            members += (seen >> st->group[r]) & 1u ? 0ul : st->count[r];
            seen |= 1u << st->group[r];
        }
        /* (read before end_pass, which writes head[2]) */
        loc.head[2] = members * WARP_CLAIM_SHARE <= st->n_src;
% else:
        for (uint r = 0; r < nranks; ++r)
            loc.gpre[st->group[r]] = (KEY_T)st->prefix[r];
% endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint ng = loc.head[0];
    const uint flags = loc.head[1];
    const INDEX_T n = (INDEX_T)loc.rowinfo[2];
% if warp_claims:
    const bool by_warps = loc.head[2] != 0;
% endif
${clear_hist("ng * RADIX")}
    barrier(CLK_LOCAL_MEM_FENCE);
    /* pass p reads the candidates of buffer (p + 1) & 1 and writes those of buffer p & 1 */
    const bool from_cands = (flags & F_SRC_CANDS) != 0;
    const bool write = (flags & F_WRITE) != 0;
    const __global KEY_T* src = from_cands
        ? AT(KEY_T, (p & 1) ? cand0_off : cand1_off) + (size_t)row * cap
        : keys + keys_off + (size_t)row * row_len;
    __global KEY_T* cout = AT(KEY_T, (p & 1) ? cand1_off : cand0_off) + (size_t)row * cap;
    __global INDEX_T* counters = sel_counters(temp, counters_off, row);
    const KEY_T mask = prefix_mask(p);
% if one:
    /* members are staged and written STAGE at a time (one counter add each) */
    KEY_T stage[STAGE];
    uint ns = 0;
    INDEX_T lo, hi;
    chunk_of(n, g, groups, &lo, &hi);
    const KEY_T g0 = loc.gpre[0];
    if (!write) {
        /* counting alone, without a branch per key (half of a row's keys are members or not,
           as good as at random: a branch would be mispredicted every other key) */
        /* keys outside every group add to 16 words in turn: adds to one word would each wait
           for the one before (never read: zeroed before they are counted in) */
        __global INDEX_T* const outside = mine + (size_t)nranks * RADIX;
        for (uint u = 0; u < 16; ++u)
            outside[u] = 0;
        if (ng == 1) {
            for (INDEX_T i = lo; i < hi; ++i) {
                const KEY_T k = order_key(src[i], 0);
                const bool member = (KEY_T)(k & mask) == g0;
                ++*(member ? mine + sel_digit(k, p) : outside + (i & 15));
            }
        } else {
            /* the groups' prefixes in registers (the last one repeated past ng): a key's
               group is the count of prefixes below its own, a member when one equals it */
% for u in range(rmax):
            const KEY_T gp${u} = loc.gpre[min(${u}u, ng - 1)];
% endfor
            for (INDEX_T i = lo; i < hi; ++i) {
                const KEY_T k = order_key(src[i], 0);
                const KEY_T pm = (KEY_T)(k & mask);
                const uint j = ${" + ".join(f"(gp{u} < pm)" for u in range(rmax))};
                const bool member = ${" | ".join(f"(gp{u} == pm)" for u in range(rmax))};
                ++*(member ? mine + (size_t)j * RADIX + sel_digit(k, p) : outside + (i & 15));
            }
        }
        hi = lo;
    }
    for (INDEX_T i = lo; i < hi; ++i) {
        const KEY_T x = src[i];
        const KEY_T k = order_key(x, 0);
        const uint j = ng == 1 ? ((KEY_T)(k & mask) == g0 ? 0u : 1u)
                               : group_of((KEY_T)(k & mask), loc.gpre, ng);
        if (j < ng) {
            HIST_INC(j, sel_digit(k, p));
            if (write) {
                stage[ns++] = x;
                if (ns == STAGE) {
                    write_stage(stage, ns, counters + 1 + (p & 1), cout, cap);
                    ns = 0;
                }
            }
        }
    }
    if (ns)
        write_stage(stage, ns, counters + 1 + (p & 1), cout, cap);
% else:
    INDEX_T t0, t1;
    tile_span(n, g, groups, &t0, &t1);
    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T at = t * TILE + lid * IPT;
        KEY_T x[IPT];
        uint cls[IPT];
        load_run(x, src, at, n);
        uint nm = 0, bin[IPT];
        for (uint i = 0; i < IPT; ++i) {
            const KEY_T k = order_key(x[i], 0);
            const uint j = at + i < n ? group_of((KEY_T)(k & mask), loc.gpre, ng) : ng;
            bin[i] = j < ng ? j * RADIX + sel_digit(k, p) : NO_BIN;
            cls[i] = j < ng;
            nm += j < ng;
        }
        count_bins(bin, loc.hist);
% if warp_claims:
        if (write && by_warps) {   /* each warp claims its members' slots: no barrier */
            const uint lane = lid & 31u;
            const uint incl = warp_scan_incl(nm, lane);
            const uint wtot = sg_shuffle(incl, 31u);
            if (wtot) {   /* (the same in every lane of the warp) */
                INDEX_T base = 0;
                if (lane == 31u)
                    base = COUNTER_ADD(counters + 1 + (p & 1), (INDEX_T)wtot);
% if index_t == "ulong":
                base = (INDEX_T)sg_shuffle((uint)base, 31u)
                     | ((INDEX_T)sg_shuffle((uint)(base >> 32), 31u) << 32);
% else:
                base = sg_shuffle(base, 31u);
% endif
                INDEX_T c = base + incl - nm;
                for (uint i = 0; i < IPT; ++i) {
                    if (cls[i]) {
                        if (c < cap)
                            cout[c] = x[i];
                        ++c;
                    }
                }
            }
        }
        if (write && !by_warps) {
% elif uniform_branches:
        if (write) {
% else:
        nm = write ? nm : 0u;
        {   /* every tile claims (no barrier in a branch: uniform_branches) */
% endif
            uint total;
            const uint before = wg_scan_uint(nm, loc.uscratch, lid, &total);
            if (lid == 0)
                *loc.cbase = total ? COUNTER_ADD(counters + 1 + (p & 1), total) : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            INDEX_T c = *loc.cbase + before;
            for (uint i = 0; i < IPT; ++i) {
                if (cls[i] && write) {
                    if (c < cap)
                        cout[c] = x[i];
                    ++c;
                }
            }
        }
    }
% endif
    end_pass(p, ng * RADIX, rows, row, groups, row_len, cap, nranks, temp, state_off,
                counters, ROW_HIST(row), rank_mode, method, skip_nan, params, loc, lid);
}

/* ---------------------------------------------------------------- the split (after the passes)

   The thresholds of a row are its groups after the last pass: the distinct order keys T_0 <
   T_1 < ... of its ranks. A key's class: 2u + 1 when it equals T_u, 2u when it lies between
   T_{u-1} and T_u (below T_0: 0), 2U above the last of U. Classes in order are the row in
   ascending order up to the order inside each class, and class 2u + 1 holds every position of
   the order whose key is T_u: so a split by class puts each rank's key in its sorted place. */

/* The final state's thresholds into local memory (work-item 0); the count of them. */
STEP uint load_thresholds(const __global sel_state* st, uint nranks, __local KEY_T* thr,
                          __local uint* l_u, uint lid)
{
    if (lid == 0) {
        *l_u = st->ngroups;
        for (uint r = 0; r < nranks; ++r)
            thr[st->group[r]] = (KEY_T)st->prefix[r];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return *l_u;
}

static inline uint class_of(KEY_T k, const __local KEY_T* thr, uint nthr)
{
    uint c = 0;
    for (uint u = 0; u < nthr; ++u)
        c += k > thr[u] ? 2u : (k == thr[u] ? 1u : 0u);
    return c;
}

/* Per chunk of a row (work-group g, the passes' span of tiles): its keys of each class. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rs_count(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, uint nranks,
              __global uchar* temp, ulong state_off, ulong cnt_off)
{
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint groups = get_num_groups(0);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
    __local KEY_T thr[RMAX];
    __local uint l_u;
    __local uint lcnt[CMAX];
    for (uint j = 0; j < (CMAX + WG - 1) / WG; ++j)
        if (j * WG + lid < CMAX)
            lcnt[j * WG + lid] = 0;
    const uint nthr = load_thresholds(sel_state_at(temp, state_off, DIGITS & 1, rows, row),
                                      nranks, thr, &l_u, lid);
    const __global KEY_T* src = keys + keys_off + (size_t)row * row_len;
% if one:
    INDEX_T lo, hi;
    chunk_of(row_len, g, groups, &lo, &hi);
    if (nthr == 1) {
        const KEY_T t0 = thr[0];
        INDEX_T below = 0, at = 0;
        for (INDEX_T i = lo; i < hi; ++i) {
            const KEY_T k = order_key(src[i], 0);
            below += k < t0;
            at += k == t0;
        }
        lcnt[0] = below;
        lcnt[1] = at;
        lcnt[2] = (hi - lo) - below - at;
    } else {
        for (INDEX_T i = lo; i < hi; ++i)
            ++lcnt[class_of(order_key(src[i], 0), thr, nthr)];
    }
% else:
    /* a work-item's own counts (three in registers for one threshold), added once: a third of
       random keys in each of three classes would serialize local adds */
    INDEX_T t0, t1;
    tile_span(row_len, g, groups, &t0, &t1);
    uint mine[CMAX];
    for (uint c = 0; c < CMAX; ++c)
        mine[c] = 0;
    uint below = 0, equal = 0, above = 0;
    const KEY_T first = thr[0];
    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T at = t * TILE + lid * IPT;
        KEY_T x[IPT];
        load_run(x, src, at, row_len);
        for (uint i = 0; i < IPT; ++i) {
            if (at + i < row_len) {
                const KEY_T k = order_key(x[i], 0);
                if (nthr == 1) {
                    below += k < first;
                    equal += k == first;
                    above += k > first;
                } else {
                    ++mine[class_of(k, thr, nthr)];
                }
            }
        }
    }
    if (nthr == 1) {
        mine[0] = below;
        mine[1] = equal;
        mine[2] = above;
    }
    for (uint c = 0; c < 2 * nthr + 1; ++c)
        if (mine[c])
            atomic_add(&lcnt[c], mine[c]);
% endif
    barrier(CLK_LOCAL_MEM_FENCE);
    __global INDEX_T* cnt = AT(INDEX_T, cnt_off) + ((size_t)row * groups + g) * CMAX;
    for (uint j = 0; j < (CMAX + WG - 1) / WG; ++j)
        if (j * WG + lid < CMAX)
            cnt[j * WG + lid] = lcnt[j * WG + lid];
}

/* The first position of class c in the row: class 2u + 1 starts after the keys below T_u, class
   2u after those of T_{u-1} (class 0 at 0, class 2U after the last threshold's keys). */
static inline ulong class_start(const __global sel_state* st, uint nranks, uint c)
{
    const uint u = c / 2;
    const uint want = (c & 1) ? u : u - 1;   /* (class 0: no group) */
    if (!(c & 1) && u == 0)
        return 0;
    for (uint r = 0; r < nranks; ++r)
        if (st->group[r] == want)
            return (c & 1) ? st->below[r] : st->below[r] + st->count[r];
    return 0;
}

/* Per chunk: its keys (write_keys) and positions (write_pos) to their class's positions, in
   position order within a class, from the chunk's first position in each class: the class's
   first, past the keys of the class in the chunks before (rs_count's counts). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rs_scatter(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len,
                uint nranks, __global uchar* temp, ulong state_off, ulong cnt_off,
                __global KEY_T* restrict out_key, ulong out_key_off,
                __global IDX_T* restrict out_pos, ulong out_pos_off, uint write_keys,
                uint write_pos)
{
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint groups = get_num_groups(0);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
    __local KEY_T thr[RMAX];
    __local uint l_u;
    __local INDEX_T lrun[CMAX];   /* the chunk's next position in each class */
% if not one:
    __local ulong wscratch[WG];
% endif
    const __global sel_state* st = sel_state_at(temp, state_off, DIGITS & 1, rows, row);
    const uint nthr = load_thresholds(st, nranks, thr, &l_u, lid);
    const __global INDEX_T* cnt = AT(INDEX_T, cnt_off) + (size_t)row * groups * CMAX;
    for (uint j = 0; j < (CMAX + WG - 1) / WG; ++j) {
        const uint c = j * WG + lid;
        if (c < 2 * nthr + 1) {
            ulong at = class_start(st, nranks, c);
            for (uint h = 0; h < g; ++h)
                at += cnt[(size_t)h * CMAX + c];
            lrun[c] = (INDEX_T)at;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong row_at = (ulong)row * row_len;
    const __global KEY_T* src = keys + keys_off + row_at;
% if one:
    INDEX_T lo, hi;
    chunk_of(row_len, g, groups, &lo, &hi);
    __global KEY_T* ok = out_key + out_key_off + row_at;
    __global IDX_T* op = out_pos + out_pos_off + row_at;
    if (nthr == 1) {   /* the common call, one kth: three cursors */
        const KEY_T t0 = thr[0];
        INDEX_T run0 = lrun[0], run1 = lrun[1], run2 = lrun[2];
<%def name="split3(write)">\
        for (INDEX_T i = lo; i < hi; ++i) {
            const KEY_T x = src[i];
            const KEY_T k = order_key(x, 0);
            /* without branches (a class per key is as good as random) */
            const bool lt = k < t0, eq = k == t0;
            const INDEX_T dst = lt ? run0 : (eq ? run1 : run2);
            run0 += lt;
            run1 += eq;
            run2 += !lt && !eq;
            ${write}
        }
</%def>
        /* a loop for each output (partition writes keys, argpartition positions) */
        if (write_keys && !write_pos) {
${split3("ok[dst] = x;")}
        } else if (write_pos && !write_keys) {
${split3("op[dst] = (IDX_T)i;")}
        } else {
${split3("ok[dst] = x; op[dst] = (IDX_T)i;")}
        }
    } else {
        INDEX_T run[CMAX];
        for (uint c = 0; c < 2 * nthr + 1; ++c)
            run[c] = lrun[c];
        for (INDEX_T i = lo; i < hi; ++i) {
            const KEY_T x = src[i];
            const INDEX_T dst = run[class_of(order_key(x, 0), thr, nthr)]++;
            if (write_keys)
                ok[dst] = x;
            if (write_pos)
                op[dst] = (IDX_T)i;
        }
    }
% else:
    INDEX_T t0, t1;
    tile_span(row_len, g, groups, &t0, &t1);
    /* the tile's class counts, four classes of 16 bits to a word */
    const uint words = (2 * nthr + 1 + 3) / 4;
    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T at = t * TILE + lid * IPT;
        KEY_T x[IPT];
        load_run(x, src, at, row_len);
        uint cls[IPT];
        ulong mine[WORDS];
        for (uint w = 0; w < WORDS; ++w)
            mine[w] = 0;
        for (uint i = 0; i < IPT; ++i) {
            cls[i] = at + i < row_len ? class_of(order_key(x[i], 0), thr, nthr) : CMAX;
            if (cls[i] < CMAX)
                mine[cls[i] / 4] += 1UL << (16 * (cls[i] % 4));
        }
        ulong pre[WORDS], tot[WORDS];
        for (uint w = 0; w < words; ++w)
            pre[w] = wg_scan_ulong(mine[w], wscratch, lid, &tot[w]);
        for (uint i = 0; i < IPT; ++i) {
            const uint c = cls[i];
            if (c < CMAX) {
                const uint sh = 16 * (c % 4);
                const ulong dst = row_at + lrun[c] + ((pre[c / 4] >> sh) & 0xFFFF);
                pre[c / 4] += 1UL << sh;
                if (write_keys)
                    out_key[out_key_off + dst] = x[i];
                if (write_pos)
                    out_pos[out_pos_off + dst] = (IDX_T)(at + i);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* every work-item read lrun */
        if (lid == 0)
            for (uint c = 0; c < 2 * nthr + 1; ++c)
                lrun[c] += (tot[c / 4] >> (16 * (c % 4))) & 0xFFFF;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
% endif
}

/* Per row and rank (work-group (r, row)): the key of rank r and its position, the one a stable
   sort puts there: the (rank - below)-th key equal to the threshold in position order, found
   from the chunks' counts of its class and one walk over that chunk. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rs_locate(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len,
               uint nranks, uint groups, __global uchar* temp, ulong state_off, ulong cnt_off,
               __global KEY_T* restrict out_key, ulong out_key_off,
               __global IDX_T* restrict out_pos, ulong out_pos_off)
{
    const uint r = get_group_id(0);
    const uint row = get_group_id(1);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
    __local INDEX_T scratch[WG];
    const __global sel_state* st = sel_state_at(temp, state_off, DIGITS & 1, rows, row);
    const KEY_T thr = (KEY_T)st->prefix[r];
    const uint c = 2 * st->group[r] + 1;
    ulong j = st->rank[r] - st->below[r];   /* the wanted key among those equal to thr */
    const __global INDEX_T* cnt = AT(INDEX_T, cnt_off) + (size_t)row * groups * CMAX + c;
    uint g = 0;
    while (g + 1 < groups && j >= cnt[(size_t)g * CMAX]) {
        j -= cnt[(size_t)g * CMAX];
        ++g;
    }
    const ulong row_at = (ulong)row * row_len;
    const __global KEY_T* src = keys + keys_off + row_at;
    const ulong out_at = (ulong)row * nranks + r;
% if one:
    INDEX_T lo, hi;
    chunk_of(row_len, g, groups, &lo, &hi);
    for (INDEX_T i = lo; i < hi; ++i) {
        const KEY_T x = src[i];
        if (order_key(x, 0) == thr) {
            if (j == 0) {
                out_key[out_key_off + out_at] = x;
                out_pos[out_pos_off + out_at] = (IDX_T)i;
                break;
            }
            --j;
        }
    }
% else:
    INDEX_T t0, t1;
    tile_span(row_len, g, groups, &t0, &t1);
    bool found = false;   /* the same in every work-item */
    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T at = t * TILE + lid * IPT;
        KEY_T x[IPT];
        load_run(x, src, at, row_len);
        INDEX_T m = 0;
        for (uint i = 0; i < IPT; ++i)
            m += at + i < row_len && order_key(x[i], 0) == thr;
        INDEX_T total;
        const INDEX_T before = wg_scan_index(m, scratch, lid, &total);
        if (!found && j >= before && j < before + m) {
            ulong left = j - before;
            for (uint i = 0; i < IPT; ++i) {
                if (at + i < row_len && order_key(x[i], 0) == thr) {
                    if (left == 0) {
                        out_key[out_key_off + out_at] = x[i];
                        out_pos[out_pos_off + out_at] = (IDX_T)(at + i);
                    }
                    --left;
                }
            }
        }
        if (!found && j < total)
            found = true;
        else if (!found)
            j -= total;
    }
% endif
}
% endif
