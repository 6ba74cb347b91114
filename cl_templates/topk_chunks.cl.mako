## Top-k on CPU devices: each work-group is one work-item that reads one chunk of one row once
## (twice when a sampled bound proves too tight: sample_bound).
##   tc_chunk - work-item (g, row) keeps the best candidates of chunk g of its row in a buffer of
##              cap >= 2k (key, position) pairs: a key is compared with the chunk's threshold
##              (first a bound from a sample of the chunk, then the k-th best candidate so far)
##              and dropped unless better; when the buffer fills, a radix selection keeps its
##              best k and the threshold rises. It writes its best min(k, chunk length)
##              candidates, best first, and their count.
##   tc_merge - one work-item per row: merges the chunks' sorted candidate lists (each best
##              first) two by two through a scratch buffer and writes the row's best k: values
##              and positions, best first.
## "Best" is the smaller (sort key, position): the sort key is the order key with `flip` all ones
## for the k largest (common.mako), so ties go to the smaller position and NaN counts as largest.
## Results are ranked whether or not the caller asked (a superset of an unsorted answer).
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), index_t (positions within a
## row: "uint" or "ulong"), idx_t (the indices handed back), out_index_t (unused: the plan's).
<%namespace name="common" file="common.mako"/>
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define IDX_T ${idx_t}
#define ONE_ITEM __attribute__((reqd_work_group_size(1, 1, 1)))
${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}

/* whether candidate (ka, pa) is better than (kb, pb) */
static inline int better(KEY_T ka, INDEX_T pa, KEY_T kb, INDEX_T pb)
{
    return ka < kb || (ka == kb && pa < pb);
}

/* insertion sort of the pairs [lo, hi), best first */
static void insert_pairs(__global KEY_T* k, __global INDEX_T* p, INDEX_T lo, INDEX_T hi)
{
    for (INDEX_T i = lo + 1; i < hi; ++i) {
        const KEY_T xk = k[i];
        const INDEX_T xp = p[i];
        INDEX_T j = i;
        while (j > lo && better(xk, xp, k[j - 1], p[j - 1])) {
            k[j] = k[j - 1];
            p[j] = p[j - 1];
            --j;
        }
        k[j] = xk;
        p[j] = xp;
    }
}

/* Rearranges the m pairs so that the best `want` (0 < want <= m) come first, in no order: an
   MSD radix select over the pairs' digits (the sort key's bytes from the most significant, then
   the position's, which settle ties: every pair is distinct). Each level counts the digits of
   the undecided pairs [lo, hi), finds the digit d of the want-th best and moves the pairs of
   smaller digits before those of digit d and the larger ones after them; the next level looks
   only at digit d's. A level whose pairs all share a digit moves nothing. At most
   SELECT_LEVELS levels of O(hi - lo) each, whatever the order of the pairs (a quickselect's
   pivots can remove one pair a partition on ordered rows: quadratic); the last few pairs by
   insertion. */
#define SELECT_LEVELS ((uint)(sizeof(KEY_T) + sizeof(INDEX_T)))
#define SELECT_INSERTION 16

static inline uint pair_digit(KEY_T key, INDEX_T pos, uint level)
{
    return level < sizeof(KEY_T)
        ? (uint)(key >> (8 * (sizeof(KEY_T) - 1 - level))) & 0xFFu
        : (uint)(pos >> (8 * (SELECT_LEVELS - 1 - level))) & 0xFFu;
}

static void select_best(__global KEY_T* k, __global INDEX_T* p, INDEX_T m, INDEX_T want)
{
    if (want >= m)
        return;
    INDEX_T lo = 0, hi = m;   /* [0, lo) are among the best want, [hi, m) not: lo < want <= hi */
    INDEX_T count[256];
    for (uint level = 0; level < SELECT_LEVELS && hi - lo > SELECT_INSERTION; ++level) {
        for (uint d = 0; d < 256; ++d)
            count[d] = 0;
        for (INDEX_T i = lo; i < hi; ++i)
            ++count[pair_digit(k[i], p[i], level)];
        INDEX_T below = lo;
        uint b = 0;
        while (below + count[b] < want)
            below += count[b++];
        if (count[b] == hi - lo)
            continue;   /* one digit: the next level splits them */
        /* three-way partition of [lo, hi) by digit against b */
        INDEX_T i = lo, lt = lo, gt = hi;
        while (i < gt) {
            const uint d = pair_digit(k[i], p[i], level);
            if (d == b) {
                ++i;
                continue;
            }
            const INDEX_T j = d < b ? lt++ : --gt;
            const KEY_T tk = k[i]; k[i] = k[j]; k[j] = tk;
            const INDEX_T tp = p[i]; p[i] = p[j]; p[j] = tp;
            if (d < b)
                ++i;
        }
        lo = below;
        hi = below + count[b];
        if (hi == want)
            return;   /* digit b's pairs are all among the best want */
    }
    insert_pairs(k, p, lo, hi);
}

/* the m pairs sorted best first through the scratch (sk, sp) of m pairs; the result in (k, p):
   runs of 8 by insertion, then merges of doubling runs */
static void sort_pairs(__global KEY_T* k, __global INDEX_T* p, __global KEY_T* sk,
                       __global INDEX_T* sp, INDEX_T m)
{
    for (INDEX_T s = 0; s < m; s += 8)
        insert_pairs(k, p, s, min(s + 8, m));
    __global KEY_T* fk = k;
    __global INDEX_T* fp = p;
    __global KEY_T* tk = sk;
    __global INDEX_T* tp = sp;
    for (INDEX_T w = 8; w < m; w *= 2) {
        for (INDEX_T s = 0; s < m; s += 2 * w) {
            const INDEX_T mid = min(s + w, m), end = min(s + 2 * w, m);
            INDEX_T i = s, j = mid, o = s;
            while (i < mid && j < end) {
                if (better(fk[j], fp[j], fk[i], fp[i])) {
                    tk[o] = fk[j]; tp[o++] = fp[j++];
                } else {
                    tk[o] = fk[i]; tp[o++] = fp[i++];
                }
            }
            while (i < mid) { tk[o] = fk[i]; tp[o++] = fp[i++]; }
            while (j < end) { tk[o] = fk[j]; tp[o++] = fp[j++]; }
        }
        __global KEY_T* xk = fk; fk = tk; tk = xk;
        __global INDEX_T* xp = fp; fp = tp; tp = xp;
    }
    if (fk != k) {
        for (INDEX_T i = 0; i < m; ++i) {
            k[i] = fk[i];
            p[i] = fp[i];
        }
    }
}

/* Reads keys [lo, hi) of the row into the buffer (m pairs so far): a key enters unless `full`
   and its sort key is at least `limit`; a full buffer (cap pairs) keeps its best k, and `limit`
   becomes the k-th best's key. Returns whether the buffer filled. Once the buffer has a limit,
   each block of SCAN_BLOCK keys first takes its least sort key in a loop with no branch and no
   store, which the compiler turns into vector lanes, and is passed over when even that key does
   not enter: after the first blocks, most of them. (A select, not the min() builtin: PoCL keeps
   a loop over min() scalar, 16x slower; BENCHMARKS_NOTES.md, "the CPU top-k scan in vector
   lanes".) */
#define SCAN_BLOCK 64

static int scan_chunk(const __global KEY_T* src, INDEX_T lo, INDEX_T hi, KEY_T flip,
                      __global KEY_T* buf_k, __global INDEX_T* buf_p, INDEX_T cap, INDEX_T k,
                      INDEX_T* m_io, KEY_T limit, int full)
{
    INDEX_T m = *m_io;
    int filled = 0;
    for (INDEX_T b = lo; b < hi; b += SCAN_BLOCK) {
        const INDEX_T e = min(b + (INDEX_T)SCAN_BLOCK, hi);
        if (full && e - b == SCAN_BLOCK) {
            KEY_T least = (KEY_T)~(KEY_T)0;
            for (uint j = 0; j < SCAN_BLOCK; ++j) {
                const KEY_T sk = order_key(src[b + j], flip);
                least = sk < least ? sk : least;
            }
            if (least >= limit)
                continue;   /* no key of the block enters */
        }
        for (INDEX_T i = b; i < e; ++i) {
            const KEY_T sk = order_key(src[i], flip);
            if (full && sk >= limit)
                continue;   /* no better than the k-th so far (a later position loses a tie) */
            buf_k[m] = sk;
            buf_p[m] = i;
            if (++m == cap) {
                select_best(buf_k, buf_p, m, k);
                m = k;
                limit = buf_k[0];   /* the k-th best's key: the largest of the best k */
                for (INDEX_T j = 1; j < k; ++j)
                    limit = max(limit, buf_k[j]);
                full = filled = 1;
            }
        }
    }
    *m_io = m;
    return filled;
}

/* The scan's first bound, from a sample of the chunk [lo, hi): s = min(cap / 2, len /
   SAMPLE_EVERY) keys at evenly spaced positions and T, their r-th best sort key, where r is the
   expected count of samples among the chunk's best k (e = s k / len) plus 4 sqrt(e) + 4. Keys
   worse than T can be among the chunk's best k only if fewer than k keys are at most T: rare on
   random keys, and at least r keys are (the samples), so the caller checks the count after the
   scan and reads the chunk again without the bound when it falls short (at most one more read,
   whatever the order). On ordered rows the bound keeps the scan from taking nearly every key.
   Returns 0 (no bound) for chunks of fewer than SAMPLE_MIN samples, when r would be every
   sample, or when T is the largest sort key; else 1 and *limit = T + 1 (the scan takes keys
   below it). The buffer holds the sample meanwhile. */
#define SAMPLE_EVERY 64
#define SAMPLE_MIN 64

static int sample_bound(const __global KEY_T* src, INDEX_T lo, INDEX_T hi, KEY_T flip,
                        __global KEY_T* buf_k, __global INDEX_T* buf_p, INDEX_T cap, INDEX_T k,
                        KEY_T* limit)
{
    const INDEX_T len = hi - lo;
    const INDEX_T s = min(cap / 2, len / SAMPLE_EVERY);
    if (s < SAMPLE_MIN)
        return 0;
    const float e = (float)s * (float)k / (float)len;
    const float rf = ceil(e + 4.0f * sqrt(e) + 4.0f);
    if (rf >= (float)s)
        return 0;
    const INDEX_T r = (INDEX_T)rf;
    const INDEX_T step = len / s;
    for (INDEX_T j = 0; j < s; ++j) {
        const INDEX_T i = lo + j * step + step / 2;
        buf_k[j] = order_key(src[i], flip);
        buf_p[j] = i;
    }
    select_best(buf_k, buf_p, s, r);
    KEY_T t = buf_k[0];
    for (INDEX_T j = 1; j < r; ++j)
        t = max(t, buf_k[j]);
    if (t == (KEY_T)~(KEY_T)0)
        return 0;
    *limit = (KEY_T)(t + 1);
    return 1;
}

/* chunk g = get_global_id(0) of row get_global_id(1): its best min(k, chunk length) candidates
   (sort keys and positions), best first, at cand_*[(row * groups + g) * k], their count at
   counts[row * groups + g]. buf_*: cap pairs per work-item. The temporaries are parts of one
   allocation `block`, at the byte offsets o_* (multiples of 4 KiB). */
__kernel ONE_ITEM void tc_chunk(__global const KEY_T* restrict keys, ulong keys_off,
                                INDEX_T row_len, INDEX_T k, INDEX_T chunk_len, uint groups,
                                INDEX_T cap, KEY_T flip, __global uchar* block, ulong o_buf_k,
                                ulong o_buf_p, ulong o_cand_k, ulong o_cand_p, ulong o_counts)
{
    __global KEY_T* buf_k = (__global KEY_T*)(block + o_buf_k);
    __global INDEX_T* buf_p = (__global INDEX_T*)(block + o_buf_p);
    __global KEY_T* cand_k = (__global KEY_T*)(block + o_cand_k);
    __global INDEX_T* cand_p = (__global INDEX_T*)(block + o_cand_p);
    __global INDEX_T* counts = (__global INDEX_T*)(block + o_counts);
    const uint g = get_global_id(0);
    const size_t row = get_global_id(1);
    const size_t item = row * groups + g;
    const INDEX_T lo = (INDEX_T)g * chunk_len;
    const INDEX_T hi = min(lo + chunk_len, row_len);
    const __global KEY_T* src = keys + keys_off + row * row_len;
    buf_k += item * cap;
    buf_p += item * cap;
    INDEX_T m = 0;
    KEY_T limit = (KEY_T)0;
    const int bounded = sample_bound(src, lo, hi, flip, buf_k, buf_p, cap, k, &limit);
    if (!scan_chunk(src, lo, hi, flip, buf_k, buf_p, cap, k, &m, limit, bounded)
        && m < min(k, hi - lo)) {
        /* fewer than k keys below the sample's bound (only a bounded scan takes fewer than
           every key before the buffer fills): read the chunk again without it */
        m = 0;
        scan_chunk(src, lo, hi, flip, buf_k, buf_p, cap, k, &m, limit, 0);
    }
    const INDEX_T keep = min(k, m);
    cand_k += item * k;
    cand_p += item * k;
    if (keep) {
        select_best(buf_k, buf_p, m, keep);
        sort_pairs(buf_k, buf_p, cand_k, cand_p, keep);   /* (the candidates' slot as scratch) */
    }
    for (INDEX_T i = 0; i < keep; ++i) {
        cand_k[i] = buf_k[i];
        cand_p[i] = buf_p[i];
    }
    counts[item] = keep;
}

/* row = get_global_id(0): the best k of its chunks' lists, merged two lists at a time (each list
   best first), into out_key / out_idx (keys by their own bits: the sort key undone by `flip`) */
__kernel ONE_ITEM void tc_merge(__global const KEY_T* restrict keys, ulong keys_off,
                                INDEX_T row_len, INDEX_T k, uint groups, __global uchar* block,
                                ulong o_cand_k, ulong o_cand_p, ulong o_counts, ulong o_tmp_k,
                                ulong o_tmp_p,
                                __global KEY_T* restrict out_key, ulong out_key_off,
                                __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    __global KEY_T* cand_k = (__global KEY_T*)(block + o_cand_k);
    __global INDEX_T* cand_p = (__global INDEX_T*)(block + o_cand_p);
    __global const INDEX_T* counts = (__global const INDEX_T*)(block + o_counts);
    __global KEY_T* tmp_k = (__global KEY_T*)(block + o_tmp_k);
    __global INDEX_T* tmp_p = (__global INDEX_T*)(block + o_tmp_p);
    const size_t row = get_global_id(0);
    __global KEY_T* ak = cand_k + row * groups * k;
    __global INDEX_T* ap = cand_p + row * groups * k;
    __global KEY_T* bk = tmp_k + row * 2 * k;
    __global INDEX_T* bp = tmp_p + row * 2 * k;
    /* the running result (best first, at most k) lives in list 0's slot, at most k long */
    INDEX_T have = counts[row * groups];
    for (uint g = 1; g < groups; ++g) {
        const __global KEY_T* ck = ak + (size_t)g * k;
        const __global INDEX_T* cp = ap + (size_t)g * k;
        const INDEX_T cn = counts[row * groups + g];
        INDEX_T i = 0, j = 0, o = 0;
        while (o < k && (i < have || j < cn)) {
            const int take_a = j >= cn || (i < have && better(ak[i], ap[i], ck[j], cp[j]));
            if (take_a) {
                bk[o] = ak[i];
                bp[o] = ap[i];
                ++i;
            } else {
                bk[o] = ck[j];
                bp[o] = cp[j];
                ++j;
            }
            ++o;
        }
        for (INDEX_T e = 0; e < o; ++e) {
            ak[e] = bk[e];
            ap[e] = bp[e];
        }
        have = o;
    }
    const __global KEY_T* src = keys + keys_off + row * row_len;
    out_key += out_key_off + row * k;
    out_idx += out_idx_off + row * k;
    for (INDEX_T i = 0; i < have; ++i) {
        out_key[i] = src[ap[i]];
        out_idx[i] = (IDX_T)ap[i];
    }
}
