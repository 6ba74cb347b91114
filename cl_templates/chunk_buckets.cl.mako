## The bucket sort for CPU devices (drivers/chunks.py, ChunkBuckets). It reads the keys once
## for the bits that differ among them (cb_span), places its fine digit (radix_bits + 6 bits) at
## the highest of them, maps each fine value to a bucket from a sample of float keys (cb_sample,
## cb_lut: the top bits of the fine digit where they fill the buckets evenly enough, else the
## sample's quantiles, so that float keys, whose top bits are a few exponents, fill them as
## evenly as uniform integers), and makes one chunked pass by the bucket (cc_count, cc_scatter:
## chunks_steps.mako) into a buffer A: bucket d is the keys [starts[d], starts[d + 1]) of A
## (cb_starts). Each bucket is then sorted on its own by a work-item (cb_buckets) between its
## range of A and the same range of a buffer B, where it ends, by the bits that differ within it
## (hi_bits[d], less base[d]: cb_lut). A bucket of at most bucket_keys keys stays in the core's
## cache through its passes: one read counts every remaining digit (counts do not depend on the
## order a pass leaves) while copying the bucket to B, then an LSD pass per digit that is not
## constant in the bucket; a larger bucket (one the sample misjudged) is first split by its next
## 8 bits (A to B, stable), and each part sorted so. The bucket pass and the passes within a
## bucket are stable and the buckets are in key order, so the whole sort is.
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), radix_bits (2..12: the
## buckets' number), lines (the bucket pass's write-combining lines), run_bits (the widest digit
## of a bucket's passes, cb_lsd), wide_runs (large runs of 32-bit keys may take 12-bit digits:
## cb_bucket_lsd), value_t (None for keys only), index_t ("uint" when every index
## fits 32 bits, else "ulong").
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="chunks_steps.mako"/>
${steps.prelude()}
${steps.chunk_fns()}
${steps.run_key_fns_all()}

/* span[2c], span[2c + 1]: the OR and the AND of bits [lo, hi) of chunk c's order keys */
__kernel ONE_ITEM void cb_span(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n,
                               INDEX_T chunk_len, uint lo_bit, uint hi_bit, KEY_T flip,
                               __global KEY_T* restrict span)
{
    const uint c = get_global_id(0);
    INDEX_T lo, hi;
    chunk_range(n, chunk_len, c, &lo, &hi);
    keys += keys_off;
    KEY_T any = 0, all = (KEY_T)~(KEY_T)0;
    for (INDEX_T i = lo; i < hi; ++i) {
        const KEY_T k = cb_key(keys[i], lo_bit, hi_bit, flip, 0);
        any |= k;
        all &= k;
    }
    span[2 * c] = any;
    span[2 * c + 1] = all;
}

/* The top digit's shift: its digit_mask-wide digit ends at the highest bit of [lo, hi) that
   differs among the keys (bits above it are the same in every key: they order nothing), or
   starts at lo where fewer bits differ. */
static inline uint top_shift(__global const KEY_T* span, uint chunks, uint lo, uint digit_mask)
{
    KEY_T any = 0, all = (KEY_T)~(KEY_T)0;
    for (uint c = 0; c < chunks; ++c) {
        any |= span[2 * c];
        all &= span[2 * c + 1];
    }
    KEY_T differ = (KEY_T)(any ^ all);
    uint top = lo;   /* one past the highest differing bit */
    while (differ) {
        ++top;
        differ >>= 1;
    }
    const uint bits = popcount(digit_mask);
    return top >= lo + bits ? top - bits : lo;
}

/* The buckets follow the keys' distribution: the fine digit (fine_mask wide, placed by
   top_shift) of a sample of the keys is counted (cb_sample), and a monotone table maps each fine
   value to a bucket so that each bucket holds about as many of the sample (cb_lut). Float keys,
   whose top bits (sign, exponent) take few values, so fill the buckets as evenly as uniform
   integers do. */
/* the bucket of a fine value */
#define LUT_T ${"uchar" if radix_bits <= 8 else "ushort"}
/* the sample: every SAMPLE_BLOCK keys of a chunk's blocks of them, of at most SAMPLE_KEYS
   keys a chunk */
#define SAMPLE_BLOCK 64
#define SAMPLE_KEYS 65536

/* samples[c * (fine_mask + 1) + v]: how many keys of chunk c's sample have fine value v */
__kernel ONE_ITEM void cb_sample(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n,
                                 INDEX_T chunk_len, uint chunks, KEY_T flip,
                                 __global const KEY_T* restrict span, uint lo_bit,
                                 uint fine_mask, __global uint* restrict samples)
{
    const uint shift = top_shift(span, chunks, lo_bit, fine_mask);
    const uint c = get_global_id(0);
    INDEX_T lo, hi;
    chunk_range(n, chunk_len, c, &lo, &hi);
    __global uint* h = samples + (size_t)c * (fine_mask + 1);
    for (uint v = 0; v <= fine_mask; ++v)
        h[v] = 0;
    keys += keys_off;
    const INDEX_T every = chunk_len > SAMPLE_KEYS ? chunk_len / SAMPLE_KEYS : 1;
    for (INDEX_T b = lo; b < hi; b += every * SAMPLE_BLOCK) {
        const INDEX_T e = min(b + SAMPLE_BLOCK, hi);
        for (INDEX_T i = b; i < e; ++i)
            h[digit_of(keys[i], shift, fine_mask, flip)] += 1;
    }
}

/* Bucket d of fine values [f, l] (f at the fine digit's shift): the keys' order keys less
   base[d] differ only in bits below hi_bits[d]. Every key has the bits above the highest bit in
   which f and l differ; less f, only the bits of l - f are left, which can be one bit fewer
   (f = 63, l = 64) and so a pass fewer in the bucket. The base is f only where it saves a pass
   (a subtraction a key in each pass), else 0. */
static inline void bucket_bits(uint d, uint f, uint l, uint shift, uint lo_bit,
                               __global uint* hi_bits, __global KEY_T* base)
{
    const uint common = shift + (32 - clz(f ^ l)), less_f = shift + (32 - clz(l - f));
    const uint saves = (common - lo_bit + ${run_bits - 1}) / ${run_bits}
                       > (less_f - lo_bit + ${run_bits - 1}) / ${run_bits};
    hi_bits[d] = saves ? less_f : common;
    base[d] = saves ? (KEY_T)f << shift : 0;
}

/* lut[v]: the bucket of fine value v. Without a sample (integer keys: the fine digit is the top
   digit) v itself. Where the top bits of the fine digit (as many as make the buckets' number)
   fill no bucket with more than twice its share of the sample, those bits
   (uniform keys: each bucket's passes are the bits below the top digit, as digit-aligned as
   ever); else (the sample's keys below v) x buckets / (the sample's keys), monotone in v: each
   bucket about its share, a value that outweighs one a bucket of its own. hi_bits and base:
   bucket_bits (the bits above the fine digit are every key's: cb_span). */
__kernel ONE_ITEM void cb_lut(__global uint* restrict samples, uint chunks, uint fine_mask,
                              uint buckets, __global const KEY_T* restrict span, uint lo_bit,
                              uint sampled, __global LUT_T* restrict lut, __global uint* restrict hi_bits,
                              __global KEY_T* restrict base)
{
    const uint shift = top_shift(span, chunks, lo_bit, fine_mask);
    const uint fine = fine_mask + 1;
    ulong total = 0;
    for (uint v = 0; sampled && v < fine; ++v) {   /* every chunk's counts summed into chunk 0's */
        uint s = samples[v];
        for (uint c = 1; c < chunks; ++c)
            s += samples[(size_t)c * fine + v];
        samples[v] = s;
        total += s;
    }
    for (uint d = 0; d < buckets; ++d) {
        hi_bits[d] = shift;
        base[d] = 0;
    }
    const uint below_top = popcount(fine_mask) - popcount(buckets - 1);
    ulong fullest = 0, run = 0;   /* the top bits' fullest bucket */
    for (uint v = 0; sampled && v < fine; ++v) {
        run = (v & ((1u << below_top) - 1)) ? run + samples[v] : samples[v];
        fullest = max(fullest, run);
    }
    const uint top_bits = !sampled || fullest * buckets <= 2 * total;
    ulong below = 0;
    uint d_first = 0, d = 0;   /* the bucket of the value before, and its first value */
    for (uint v = 0; v < fine; ++v) {
        const uint dv = top_bits ? v >> below_top
                      : total ? (uint)min(below * buckets / total, (ulong)buckets - 1) : 0;
        if (dv != d) {
            d = dv;
            d_first = v;
        }
        lut[v] = (LUT_T)d;
        bucket_bits(d, d_first, v, shift, lo_bit, hi_bits, base);
        below += sampled ? samples[v] : 0;
    }
}

${steps.pass_kernels(True)}
${steps.run_sort_fns(wide_runs)}
${steps.lsd_fn("cb_lsd_based", run_bits, True)}
% if wide_runs:
${steps.lsd_fn("cb_lsd_based_wide", 12, True)}
% endif

/* The LSD passes of every run of a bucket (the whole bucket, or a part of it after a split):
   the keys' digits less the bucket's base (bucket_bits), as the split and the insertion sort
   count them. The base is 0 where it saves no pass; such a run takes cb_lsd, which saves the
   subtraction. cb_lsd has no base parameter, so that no run can hand it a base it would leave
   out: a bucket's runs reach it only through here. */
static void cb_bucket_lsd(__global KEY_T* x, __global KEY_T* y,
                          ${steps.vparams("vx", "vy", 26)}INDEX_T len, uint lo, uint hi, KEY_T flip,
                          KEY_T base, uint end_in_y)
{
% if wide_runs:
    /* a run of at least WIDE_MIN keys whose bits take fewer passes of 12-bit digits than of
       run_bits-bit ones (24 bits: 2, not 3) takes the 12-bit passes: 4-9 % less time for sorts
       of 2^20 to 2^24 keys; smaller runs were slower, their 4096 counters a pass outweighing a
       pass saved (BENCHMARKS_NOTES.md, "the CPU sort's in-bucket passes of 12-bit digits") */
    if (len >= WIDE_MIN && (hi - lo + 11) / 12 < (hi - lo + ${run_bits - 1}) / ${run_bits}) {
        if (base)
            cb_lsd_based_wide(x, y, ${steps.vargs("vx", "vy")}len, lo, hi, flip, base, end_in_y);
        else
            cb_lsd_wide(x, y, ${steps.vargs("vx", "vy")}len, lo, hi, flip, end_in_y);
        return;
    }
% endif
    if (base)
        cb_lsd_based(x, y, ${steps.vargs("vx", "vy")}len, lo, hi, flip, base, end_in_y);
    else
        cb_lsd(x, y, ${steps.vargs("vx", "vy")}len, lo, hi, flip, end_in_y);
}
/* starts[d]: the first key of bucket d; starts[buckets]: n */
__kernel ONE_ITEM void cb_starts(__global const INDEX_T* restrict counts, uint chunks,
                                 uint buckets, __global INDEX_T* restrict starts)
{
    INDEX_T run = 0;
    for (uint d = 0; d < buckets; ++d) {
        starts[d] = run;
        for (uint c = 0; c < chunks; ++c)
            run += counts[(INDEX_T)d * chunks + c];
    }
    starts[buckets] = run;
}

/* bucket d: its keys at keys_a [starts[d], starts[d + 1]) sorted by bits [lo_bit, hi_bits[d])
   of their order keys less bases[d] into the same range of keys_b (values likewise); every
   step (the split, the insertion sort, the passes: cb_bucket_lsd) counts them so */
__kernel ONE_ITEM void cb_buckets(__global KEY_T* restrict keys_a, ulong keys_a_off,
                                  __global KEY_T* restrict keys_b, ulong keys_b_off,
% if value_t:
                                  __global VALUE_T* restrict vals_a, ulong vals_a_off,
                                  __global VALUE_T* restrict vals_b, ulong vals_b_off,
% endif
                                  __global const INDEX_T* restrict starts,
                                  __global const uint* restrict hi_bits,
                                  __global const KEY_T* restrict bases, uint lo_bit,
                                  KEY_T flip, INDEX_T bucket_keys)
{
    const uint d = get_global_id(0);
    const uint hi_bit = hi_bits[d];
    const KEY_T base = bases[d];
    const INDEX_T first = starts[d];
    const INDEX_T len = starts[d + 1] - first;
    if (len == 0)
        return;
    __global KEY_T* a = keys_a + keys_a_off + first;
    __global KEY_T* b = keys_b + keys_b_off + first;
% if value_t:
    __global VALUE_T* va = vals_a + vals_a_off + first;
    __global VALUE_T* vb = vals_b + vals_b_off + first;
% endif
    if (lo_bit == hi_bit || len <= INSERTION_KEYS) {
        cb_copy(a, b, ${steps.vargs("va", "vb")}len);
        if (lo_bit < hi_bit)
            cb_insertion(b, ${"vb, " if value_t else ""}len, lo_bit, hi_bit, flip, base);
        return;
    }
    if (len <= bucket_keys || hi_bit - lo_bit <= 8) {
        cb_bucket_lsd(a, b, ${steps.vargs("va", "vb")}len, lo_bit, hi_bit, flip, base, 1);
        return;
    }
    /* a bucket over the cache bound: split by bits [mid, hi_bit) from a to b first */
    const uint mid = hi_bit - 8;
    INDEX_T at[256], part[256];
    for (uint e = 0; e < 256; ++e)
        at[e] = 0;
    for (INDEX_T i = 0; i < len; ++i)
        at[run_digit(a[i], mid, 255, flip, base)] += 1;
    if (at[run_digit(a[0], mid, 255, flip, base)] == len) {   /* one part: no split */
        cb_bucket_lsd(a, b, ${steps.vargs("va", "vb")}len, lo_bit, hi_bit, flip, base, 1);
        return;
    }
    INDEX_T run = 0;
    for (uint e = 0; e < 256; ++e) {
        part[e] = run;
        run += at[e];
        at[e] = part[e];
    }
    for (INDEX_T i = 0; i < len; ++i) {
        const KEY_T k = a[i];
        const INDEX_T o = at[run_digit(k, mid, 255, flip, base)]++;
        b[o] = k;
% if value_t:
        vb[o] = va[i];
% endif
    }
    for (uint e = 0; e < 256; ++e) {   /* part e: b [part[e], at[e]), sorted where it is */
        const INDEX_T plen = at[e] - part[e];
        const INDEX_T o = part[e];
        if (plen <= INSERTION_KEYS)
            cb_insertion(b + o, ${"vb + o, " if value_t else ""}plen, lo_bit, mid, flip, base);
        else
            cb_bucket_lsd(b + o, a + o, ${steps.vargs("vb + o", "va + o")}plen, lo_bit, mid, flip, base, 0);
    }
}
% if value_t in ("uint", "ulong"):

${common.iota_kernel(value_t, index_t)}
% endif
