## Chunked LSD radix sort for CPU devices: each work-group is one work-item that owns one
## contiguous chunk of the keys, so no pass has a barrier, a local-memory rank or a scan across
## work-items; the kernels are plain scalar loops that a CPU runs at its cache's speed.
## A digit pass is two launches:
##   cc_count   - chunk c counts the digits of its keys: counts[d][c]
##   cc_scatter - chunk c scans the table up to its own entries (RADIX x chunks additions), then
##                walks its keys in order and writes each at its digit's running offset
##                (stable: chunks in order, each chunk in order); with `lines` (digits wider
##                than 8 bits) through a 64-byte write-combining line per digit (software
##                write-combining: a cache line of the output written whole, not a key at a time
##                into RADIX places, whose lines the L1 cache no longer holds); a pass whose keys
##                all share its digit copies the chunk instead
## Keys keep their own bits; the digit comes from the order key (common.mako), so the codec costs
## no pass and the output is bit-exact. Values follow their keys; argsort's first pass makes them
## (the indices).
##
## Segmented sorts (off_t given: the offsets' type), each work-item owning whole segments:
##   cs_check    - one work-item: info[0] = whether the offsets are invalid (not non-decreasing or
##                 outside [0, n]); cs_segments then returns at once. The verdict is an INDEX_T, as
##                 seg_plan's (segmented.cl.mako): the host reads it back as the index type
##   cs_segments - work-item w sorts segments [w * spi, (w + 1) * spi), each as the bucket sort
##                 sorts a bucket (cb_insertion, cb_lsd) between it and its place in a scratch
##                 buffer, where it ends
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), radix_bits (2..12), lines
## (the scatter's write-combining lines; the whole-array kernels only), buckets (the bucket
## sort's kernels: cb_span, cb_sample, cb_lut, cb_starts, cb_buckets; the whole-array kernels
## only), run_bits (the widest digit of a run's passes, cb_lsd; None without buckets or
## segments), value_t
## (None for keys only), index_t ("uint" when every index and offset fits 32 bits, else "ulong"),
## off_t (None: the whole-array kernels; "int" or "long": the segmented ones, 8-bit digits).
<%namespace name="common" file="common.mako"/>
<%
    iota_ok = value_t in ("uint", "ulong")

    def line_keys(bits):
        return 64 * 8 // bits
    value_bytes = {"uchar": 1, "ushort": 2, "uint": 4, "ulong": 8, "uint4": 16}.get(value_t, 0)
%>
${common.sort_prelude(key_kind, key_bits, key_t, key_inf_bits, index_t, radix_bits, 1, 1,
                      value_t)}
#define ONE_ITEM __attribute__((reqd_work_group_size(1, 1, 1)))
<%def name="top_digit()">\
% if buckets:
    /* the bucket sort's fine digit: placed by the keys' span (cb_span) */
    const uint shift = top_shift(span, chunks, lo_bit, fine_mask);
% else:
    const uint shift = shift_arg;
% endif
</%def>
<%def name="digit(k)">\
% if buckets:
lut[digit_of(${k}, shift, fine_mask, flip)]\
% else:
digit_of(${k}, shift, digit_mask, flip)\
% endif
</%def>
/* keys per write-combining line of the scatter: one 64-byte cache line */
#define WC ${line_keys(key_bits)}

/* the chunk of work-item c: keys [*lo, *hi) */
static inline void chunk_range(INDEX_T n, INDEX_T chunk_len, uint c, INDEX_T* lo, INDEX_T* hi)
{
    *lo = (INDEX_T)c * chunk_len;
    *hi = min(*lo + chunk_len, n);
}

% if buckets or off_t:
<%def name="run_key_fns(suffix, order)">
/* bits [lo, hi) of x's ${order} less base (lo < hi; base: the smallest one of a run, in its bits
   from lo, or 0) */
static inline KEY_T cb_key${suffix}(KEY_T x, uint lo, uint hi, KEY_T flip, KEY_T base)
{
    const KEY_T k = (KEY_T)(${order}(x, flip) - base) >> lo;
    const uint bits = hi - lo;
    return bits < ${key_bits} ? k & (((KEY_T)1 << bits) - 1) : k;
}

/* the digit of x in a pass over a run: bits [shift, shift + popcount(mask)) of its ${order}
   less base */
static inline uint run_digit${suffix}(KEY_T x, uint shift, uint mask, KEY_T flip, KEY_T base)
{
    return (uint)((KEY_T)(${order}(x, flip) - base) >> shift) & mask;
}
</%def>\
${run_key_fns("", "order_key")}
% if key_kind == "float":
/* (the same of the bits' order, common.mako's order_bits: equal for every key but -0.0 and the
   NaNs, in half the operations; a run with neither of them takes these) */
${run_key_fns("_bits", "order_bits")}
% endif
% endif
% if buckets:

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

% endif
/* counts[d * chunks + c]: how many keys of chunk c have digit d in this pass */
__kernel ONE_ITEM void cc_count(__global const KEY_T* restrict keys, ulong keys_off,
                                __global INDEX_T* restrict counts, INDEX_T n, INDEX_T chunk_len,
                                uint chunks, uint shift_arg, uint digit_mask, KEY_T flip
% if buckets:
                                , __global const KEY_T* restrict span, uint lo_bit,
                                __global const LUT_T* restrict lut, uint fine_mask
% endif
                                )
{
${top_digit()}
    const uint c = get_global_id(0);
    INDEX_T lo, hi;
    chunk_range(n, chunk_len, c, &lo, &hi);
    /* two tables, for the keys at even and odd places: a run of keys of one digit (skewed keys)
       then makes two chains of increments of one counter, not one twice as long */
    INDEX_T hist[2 * RADIX];
    for (uint d = 0; d < 2 * RADIX; ++d)
        hist[d] = 0;
    keys += keys_off;
    INDEX_T i = lo;
    for (; i + 1 < hi; i += 2) {
        hist[${digit("keys[i]")}] += 1;
        hist[RADIX + ${digit("keys[i + 1]")}] += 1;
    }
    if (i < hi)
        hist[${digit("keys[i]")}] += 1;
    for (uint d = 0; d < RADIX; ++d)
        counts[(INDEX_T)d * chunks + c] = hist[d] + hist[RADIX + d];
}

## C copying one line of WC elements of `width` bytes from src to dst: as words where the line is
## word-aligned (keys' lines are aligned to the line, values of 4 bytes or more to a word), else
## element by element.
<%def name="line_copy(dst, src, width)">\
% if width >= 4 or src == "kbuf":
{ __global uint* to_ = (__global uint*)(${dst}); __global const uint* from_ = (__global const uint*)(${src}); for (uint j = 0; j < ${line_keys(key_bits) * width // 4}; ++j) to_[j] = from_[j]; }\
% else:
{ __global VALUE_T* to_ = ${dst}; for (uint j = 0; j < WC; ++j) to_[j] = (${src})[j]; }\
% endif
</%def>\
/* A write-combining line of digit d: the buffered keys (and values) bound for [from, to), all in
   one line of WC keys of the output (slot of position o: (o + line_off) % WC), copied out. */
static inline void wc_flush(__global const KEY_T* kbuf, __global KEY_T* keys_out,
% if value_t:
                            __global const VALUE_T* vbuf, __global VALUE_T* vals_out,
% endif
                            INDEX_T from, INDEX_T to, uint line_off, uint write_keys)
{
    if (to - from == WC) {   /* a whole line (slots 0 .. WC - 1): copied as words */
        if (write_keys)
            ${line_copy("keys_out + from", "kbuf", key_bits // 8)}
% if value_t:
        ${line_copy("vals_out + from", "vbuf", value_bytes)}
% endif
        return;
    }
    for (INDEX_T o = from; o < to; ++o) {
        const uint slot = (uint)(o + line_off) & (WC - 1);
        if (write_keys)
            keys_out[o] = kbuf[slot];
% if value_t:
        vals_out[o] = vbuf[slot];
% endif
    }
}

/* chunk c writes each of its keys (and values) at its digit's running offset, which starts at
   the keys of smaller digits plus those of its digit in the chunks before it (a scan of the
   [d][c] table by every chunk: RADIX x chunks additions, no launch of its own). The writes go
   through a line of WC slots per digit (wc_keys, wc_vals: RADIX x WC per chunk, cache-resident),
   copied out whole when it fills: each output line is written at once instead of one key at a
   time into RADIX places, which keeps the scatter at memory speed. A line shared with the chunks
   before and after (the digit's first and last) is copied only where it is this chunk's. */
__kernel ONE_ITEM void cc_scatter(${common.stream_params(value_t, 34) | trim}
                                  __global const INDEX_T* restrict counts, INDEX_T n,
                                  INDEX_T chunk_len, uint chunks, uint shift_arg,
                                  uint digit_mask, KEY_T flip,
% if buckets:
                                  __global const KEY_T* restrict span, uint lo_bit,
                                  __global const LUT_T* restrict lut, uint fine_mask,
% endif
% if lines and value_t:
                                  __global VALUE_T* restrict wc_vals,
% endif
% if lines:
                                  __global KEY_T* restrict wc_keys,
% endif
                                  uint write_keys)
{
${top_digit()}
    const uint c = get_global_id(0);
    INDEX_T lo, hi;
    chunk_range(n, chunk_len, c, &lo, &hi);
    INDEX_T at[RADIX], first[RADIX];
    INDEX_T run = 0;
    uint one_digit = 0;   /* every key has the same digit: the pass moves no key */
    for (uint d = 0; d <= digit_mask; ++d) {
        __global const INDEX_T* row = counts + (INDEX_T)d * chunks;
        INDEX_T before = 0, total = 0;
        for (uint j = 0; j < chunks; ++j) {
            before += j < c ? row[j] : 0;
            total += row[j];
        }
        at[d] = first[d] = run + before;
        run += total;
        one_digit |= total == n;
    }
    keys_in += keys_in_off;
    keys_out += keys_out_off;
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
% endif
    if (one_digit) {   /* a copy of the chunk to the same place */
        for (INDEX_T i = lo; i < hi; ++i) {
            if (write_keys)
                keys_out[i] = keys_in[i];
% if value_t:
            vals_out[i] = value_at(vals_in, i, 0, vals_iota);
% endif
        }
        return;
    }
% if not lines:
    for (INDEX_T i = lo; i < hi; ++i) {
        const KEY_T k = keys_in[i];
        const INDEX_T o = at[${digit("k")}]++;
        if (write_keys)
            keys_out[o] = k;
%   if value_t:
        vals_out[o] = value_at(vals_in, i, 0, vals_iota);
%   endif
    }
% else:
    const uint line_off = (uint)keys_out_off & (WC - 1);
    __global KEY_T* kbuf = wc_keys + (size_t)c * (RADIX * WC);
% if value_t:
    __global VALUE_T* vbuf = wc_vals + (size_t)c * (RADIX * WC);
% endif
    for (INDEX_T i = lo; i < hi; ++i) {
        const KEY_T k = keys_in[i];
        const uint d = ${digit("k")};
        const INDEX_T o = at[d]++;
        const uint slot = (uint)(o + line_off) & (WC - 1);
        kbuf[d * WC + slot] = k;
% if value_t:
        vbuf[d * WC + slot] = value_at(vals_in, i, 0, vals_iota);
% endif
        if (slot == WC - 1) {
            /* the line's first slot, or the digit's first key where the line began before it
               (in the chunk before) */
            const INDEX_T from = o + 1 - first[d] >= WC ? o + 1 - WC : first[d];
            wc_flush(kbuf + d * WC, keys_out,
% if value_t:
                     vbuf + d * WC, vals_out,
% endif
                     from, o + 1, line_off, write_keys);
        }
    }
    for (uint d = 0; d <= digit_mask; ++d) {   /* the lines left part-filled */
        const uint pending = (uint)(at[d] + line_off) & (WC - 1);
        if (pending == 0 || at[d] == first[d])
            continue;
        const INDEX_T from = at[d] - first[d] >= pending ? at[d] - pending : first[d];
        wc_flush(kbuf + d * WC, keys_out,
% if value_t:
                 vbuf + d * WC, vals_out,
% endif
                 from, at[d], line_off, write_keys);
    }
% endif
}
% if buckets or off_t:
<%
    wide = off_t is not None and key_bits == 32
    def vp(a, b, pad):
        """the values' pointers of a bucket routine's parameter list (nothing for keys only)"""
        if not value_t:
            return ""
        return f"__global VALUE_T* {a}, __global VALUE_T* {b},\n{' ' * pad}"
    def va(a, b):
        return f"{a}, {b}, " if value_t else ""
%>
## The in-cache sort of one run of keys by one work-item (cb_insertion, cb_lsd: the buckets' and
## the segments'), and the bucket sort (buckets). The bucket sort reads the keys once for the
## bits that differ among them (cb_span), places its fine digit (radix_bits + 6 bits) at the
## highest of them, maps each fine value to a bucket from a sample of float keys (cb_sample,
## cb_lut: the top bits of the fine digit where they fill the buckets evenly enough, else the
## sample's quantiles, so that float keys, whose top bits are a few exponents, fill them as
## evenly as uniform integers), and makes one chunked pass by the bucket (cc_count, cc_scatter)
## into a buffer A: bucket d is the keys [starts[d], starts[d + 1]) of A (cb_starts). Each bucket
## is then sorted on its own by a work-item (cb_buckets) between its range of A and the same
## range of a buffer B, where it ends, by the bits that differ within it (hi_bits[d], less
## base[d]: cb_lut). A bucket of at most bucket_keys keys stays in the core's cache through its
## passes: one read counts every remaining digit (counts do not depend on the order a pass
## leaves) while copying the bucket to B, then an LSD pass per digit that is not constant in the
## bucket; a larger bucket (one the sample misjudged) is first split by its next 8 bits (A to B,
## stable), and each part sorted so. The bucket pass and the passes within a bucket are stable
## and the buckets are in key order, so the whole sort is.
/* a bucket (or a part) of at most this many keys is sorted by insertion */
#define INSERTION_KEYS 32
% if wide:
/* a segment of at least this many 32-bit keys is sorted by passes of 12-bit digits: 3 passes
   instead of 4, each scanning a table of 4096 counts (measured faster for rows of 4096 float32,
   not clearly for the buckets: BENCHMARKS_NOTES.md, "the bucket sort on CPUs") */
#define WIDE_MIN 4096
% endif

/* len keys (and values) copied from x to y */
static void cb_copy(__global const KEY_T* x, __global KEY_T* y,
                    ${vp("vx", "vy", 20)}INDEX_T len)
{
    for (INDEX_T i = 0; i < len; ++i) {
        y[i] = x[i];
% if value_t:
        vy[i] = vx[i];
% endif
    }
}

/* the len keys at x (values at vx) stably sorted in place by bits [lo, hi) (lo < hi) */
<% vx_param = " __global VALUE_T* vx," if value_t else "" %>\
static void cb_insertion(__global KEY_T* x,${vx_param} INDEX_T len, uint lo, uint hi,
                         KEY_T flip, KEY_T base)
{
    for (INDEX_T i = 1; i < len; ++i) {
        const KEY_T k = x[i];
        const KEY_T kk = cb_key(k, lo, hi, flip, base);
% if value_t:
        const VALUE_T v = vx[i];
% endif
        INDEX_T j = i;
        while (j > 0 && cb_key(x[j - 1], lo, hi, flip, base) > kk) {
            x[j] = x[j - 1];
% if value_t:
            vx[j] = vx[j - 1];
% endif
            --j;
        }
        x[j] = k;
% if value_t:
        vx[j] = v;
% endif
    }
}

<%def name="lsd_count(B, maxp, kbase, key_fn, copy)">\
<% radix = 1 << B %>\
    switch (npasses) {   /* (a loop of its own for each pass count: no branch a key) */
% for m in range(1, maxp + 1):
    case ${m}:
        for (INDEX_T i = 0; i < len; ++i) {
            const KEY_T x_i = x[i];
%   if copy:
            y[i] = x_i;
%     if value_t:
            vy[i] = vx[i];
%     endif
%     if key_kind == "float":
            special |= is_special(x_i);
%     endif
%   endif
            const KEY_T k = ${key_fn}(x_i, lo, hi, flip, ${kbase});
%   for p in range(m):
            hist[${p * radix}u + ((uint)(k >> ${B * p}) & ${radix - 1})] += 1;
%   endfor
        }
        break;
% endfor
    }
</%def>\
<%def name="lsd_passes(B, kbase, digit_fn)">\
<% radix = 1 << B %>\
    {
        uint moving = 0;   /* the passes whose digit is not constant */
        for (uint p = 0; p < npasses; ++p) {
            const uint shift = lo + ${B} * p;
            const uint bits = hi - shift < ${B} ? hi - shift : ${B};
            moving += hist[p * ${radix} + ${digit_fn}(x[0], shift, (1u << bits) - 1, flip, ${kbase})]
                != len;
        }
        /* after an odd number of passes the keys are in the other buffer than the first's */
        const uint from_x = (moving & 1) == (end_in_y != 0);
        __global KEY_T* src = from_x ? x : y;
        __global KEY_T* dst = from_x ? y : x;
% if value_t:
        __global VALUE_T* vsrc = from_x ? vx : vy;
        __global VALUE_T* vdst = from_x ? vy : vx;
% endif
        for (uint p = 0; p < npasses; ++p) {
            __private INDEX_T* h = hist + p * ${radix};
            const uint shift = lo + ${B} * p;
            const uint bits = hi - shift < ${B} ? hi - shift : ${B};
            const uint mask = (1u << bits) - 1;
            if (h[${digit_fn}(src[0], shift, mask, flip, ${kbase})] == len)
                continue;   /* every key has the same digit: the pass keeps the order */
            INDEX_T run = 0;
            for (uint d = 0; d <= mask; ++d) {
                const INDEX_T c = h[d];
                h[d] = run;
                run += c;
            }
            for (INDEX_T i = 0; i < len; ++i) {
                const KEY_T k = src[i];
                const INDEX_T o = h[${digit_fn}(k, shift, mask, flip, ${kbase})]++;
                dst[o] = k;
% if value_t:
                vdst[o] = vsrc[i];
% endif
            }
            __global KEY_T* t = src; src = dst; dst = t;
% if value_t:
            __global VALUE_T* vt = vsrc; vsrc = vdst; vdst = vt;
% endif
        }
    }
</%def>\
<%def name="lsd_fn(name, B, based)">\
<%
    radix = 1 << B
    maxp = -(-key_bits // B)
    kbase = "base" if based else "0"
    base_param = " KEY_T base," if based else ""
    cheap = key_kind == "float"
%>\
/* the len keys at x stably sorted by bits [lo, hi) of their order keys${" less base" if based else ""}, by LSD
   passes of ${B}-bit digits between x and y (values vx, vy alike), the result in y when end_in_y, else
   in x. One read counts every pass's digits and copies the keys to y, which brings y's lines
   into the cache (where the first pass would otherwise miss on each of them, in no order a
   prefetcher follows); with the keys in both, the passes start from whichever makes the last
   one write the result's place. A pass whose digit all keys share is skipped.${"""
   Float keys are counted by the bits' order (cb_key_bits); a run with a -0.0 or a NaN among
   them is counted again by numpy's order key, and its passes take that key.""" if cheap else ""} */
static void ${name}(__global KEY_T* x, __global KEY_T* y,
% if value_t:
${" " * (len(name) + 13)}__global VALUE_T* vx, __global VALUE_T* vy,
% endif
${" " * (len(name) + 13)}INDEX_T len, uint lo, uint hi, KEY_T flip,${base_param}
${" " * (len(name) + 13)}uint end_in_y)
{
    const uint npasses = (hi - lo + ${B - 1}) / ${B};
    INDEX_T hist[${maxp * radix}];
    for (uint e = 0; e < npasses * ${radix}; ++e)
        hist[e] = 0;
% if cheap:
    uint special = 0;
${lsd_count(B, maxp, kbase, "cb_key_bits", True)}\
    if (special) {   /* (uniform over the run) */
        for (uint e = 0; e < npasses * ${radix}; ++e)
            hist[e] = 0;
${lsd_count(B, maxp, kbase, "cb_key", False)}\
${lsd_passes(B, kbase, "run_digit")}\
    } else {
${lsd_passes(B, kbase, "run_digit_bits")}\
    }
% else:
${lsd_count(B, maxp, kbase, "cb_key", True)}\
${lsd_passes(B, kbase, "run_digit")}\
% endif
}
</%def>
${lsd_fn("cb_lsd", run_bits, False)}
% if wide:
${lsd_fn("cb_lsd_wide", 12, False)}
% endif
% if buckets:
${lsd_fn("cb_lsd_based", run_bits, True)}

/* The LSD passes of every run of a bucket (the whole bucket, or a part of it after a split):
   the keys' digits less the bucket's base (bucket_bits), as the split and the insertion sort
   count them. The base is 0 where it saves no pass; such a run takes cb_lsd, which saves the
   subtraction. cb_lsd has no base parameter, so that no run can hand it a base it would leave
   out: a bucket's runs reach it only through here. */
static void cb_bucket_lsd(__global KEY_T* x, __global KEY_T* y,
                          ${vp("vx", "vy", 26)}INDEX_T len, uint lo, uint hi, KEY_T flip,
                          KEY_T base, uint end_in_y)
{
    if (base)
        cb_lsd_based(x, y, ${va("vx", "vy")}len, lo, hi, flip, base, end_in_y);
    else
        cb_lsd(x, y, ${va("vx", "vy")}len, lo, hi, flip, end_in_y);
}
% endif

% endif
% if buckets:
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
        cb_copy(a, b, ${va("va", "vb")}len);
        if (lo_bit < hi_bit)
            cb_insertion(b, ${"vb, " if value_t else ""}len, lo_bit, hi_bit, flip, base);
        return;
    }
    if (len <= bucket_keys || hi_bit - lo_bit <= 8) {
        cb_bucket_lsd(a, b, ${va("va", "vb")}len, lo_bit, hi_bit, flip, base, 1);
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
        cb_bucket_lsd(a, b, ${va("va", "vb")}len, lo_bit, hi_bit, flip, base, 1);
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
            cb_bucket_lsd(b + o, a + o, ${va("vb + o", "va + o")}plen, lo_bit, mid, flip, base, 0);
    }
}
% endif
% if off_t:
#define OFF_T ${off_t}

/* the first key of segment s (and the end of segment s - 1) */
static inline INDEX_T bound(__global const OFF_T* offsets, INDEX_T row_len, INDEX_T s)
{
    return row_len ? s * row_len : (INDEX_T)offsets[s];
}

__kernel ONE_ITEM void cs_check(__global const OFF_T* restrict offsets, ulong offsets_off,
                                INDEX_T nseg, INDEX_T n, __global INDEX_T* restrict info)
{
    offsets += offsets_off;
    OFF_T prev = offsets[0];
    uint bad = prev < 0 || (ulong)prev > (ulong)n;
    for (INDEX_T s = 1; s <= nseg; ++s) {
        const OFF_T o = offsets[s];
        bad |= (uint)(o < prev) | (uint)((ulong)o > (ulong)n);
        prev = o;
    }
    info[0] = (INDEX_T)bad;
}

/* the len keys at a (and values at va) stably sorted by bits [begin_bit, end_bit) of their order
   keys, through the scratch b (vb) of the same length: in the cache, as a bucket is (cb_lsd) */
static void sort_run(__global KEY_T* a, __global KEY_T* b,
% if value_t:
                     __global VALUE_T* va, __global VALUE_T* vb,
% endif
                     INDEX_T len, uint begin_bit, uint end_bit, KEY_T flip)
{
    if (begin_bit == end_bit)
        return;
    if (len <= INSERTION_KEYS)
        cb_insertion(a, ${"va, " if value_t else ""}len, begin_bit, end_bit, flip, 0);
% if wide:
    else if (len >= WIDE_MIN)
        cb_lsd_wide(a, b, ${"va, vb, " if value_t else ""}len, begin_bit, end_bit, flip, 0);
% endif
    else
        cb_lsd(a, b, ${"va, vb, " if value_t else ""}len, begin_bit, end_bit, flip, 0);
}

/* Segments [w * spi, (w + 1) * spi) of work-item w. In place: keys (and vals) through the scratch
   kscr (vscr). argsort: the keys are only read; each segment's keys are copied to kcopy, the
   positions within the segment made in vals, and both sorted through kscr / vscr. */
__kernel ONE_ITEM void cs_segments(__global KEY_T* restrict keys, ulong keys_off,
                                   __global KEY_T* restrict kscr, ulong kscr_off,
                                   __global KEY_T* restrict kcopy, ulong kcopy_off,
% if value_t:
                                   __global VALUE_T* restrict vals, ulong vals_off,
                                   __global VALUE_T* restrict vscr, ulong vscr_off,
% endif
                                   __global const OFF_T* restrict offsets, ulong offsets_off,
                                   INDEX_T nseg, INDEX_T row_len, uint spi,
                                   __global const INDEX_T* restrict info, uint check,
                                   uint begin_bit, uint end_bit, KEY_T flip, uint argsort)
{
    if (check && info[0])
        return;
    const INDEX_T s0 = (INDEX_T)get_global_id(0) * spi;
    const INDEX_T s1 = min(s0 + spi, nseg);
    offsets += offsets_off;
    keys += keys_off;
    kscr += kscr_off;
    kcopy += kcopy_off;
% if value_t:
    vals += vals_off;
    vscr += vscr_off;
% endif
    for (INDEX_T s = s0; s < s1; ++s) {
        const INDEX_T lo = bound(offsets, row_len, s);
        const INDEX_T len = bound(offsets, row_len, s + 1) - lo;
        __global KEY_T* a = keys + lo;
% if value_t:
        if (argsort) {
            a = kcopy + lo;
            for (INDEX_T i = 0; i < len; ++i) {
                a[i] = keys[lo + i];
                vals[lo + i] = (VALUE_T)i;
            }
        }
% endif
        if (len > 1)
            sort_run(a, kscr + lo,
% if value_t:
                     vals + lo, vscr + lo,
% endif
                     len, begin_bit, end_bit, flip);
    }
}
% endif
% if iota_ok:

${common.iota_kernel(value_t, index_t)}
% endif
