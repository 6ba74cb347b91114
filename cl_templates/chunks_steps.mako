## The shared steps of the chunked CPU programs: chunks.cl.mako (the LSD digit passes),
## chunk_buckets.cl.mako (the bucket sort) and segmented_chunks.cl.mako (the segments). Each
## work-group is one work-item that owns one contiguous chunk of the keys (or whole segments), so
## no kernel has a barrier, a local-memory rank or a scan across work-items: plain scalar loops
## that a CPU runs at its cache's speed. Keys keep their own bits; the digit comes from the order
## key (common.mako), so the codec costs no pass and the output is bit-exact.
## A Mako library of defs that emit C and read the program's template parameters (key codec,
## radix_bits, value_t, index_t; lines for the digit passes, run_bits for the runs' sorts) from
## the render's context; each program imports it with
##   <%namespace name="steps" file="chunks_steps.mako"/>
<%namespace name="common" file="common.mako"/>

## The head of every chunk program: the sort prelude (a work-group of one work-item) and ONE_ITEM.
<%def name="prelude()">
${common.sort_prelude(key_kind, key_bits, key_t, key_inf_bits, index_t, radix_bits, 1, 1,
                      value_t)}
#define ONE_ITEM __attribute__((reqd_work_group_size(1, 1, 1)))
</%def>

## The values' pointers of a run routine's parameter list (nothing for keys only), and their
## arguments.
<%def name="vparams(a, b, pad)">${f"__global VALUE_T* {a}, __global VALUE_T* {b},\n{' ' * pad}" if value_t else ""}</%def>
<%def name="vargs(a, b)">${f"{a}, {b}, " if value_t else ""}</%def>

## WC and chunk_range: the whole-array programs' chunks (chunks, chunk_buckets).
<%def name="chunk_fns()">
/* keys per write-combining line of the scatter: one 64-byte cache line */
#define WC ${64 * 8 // key_bits}

/* the chunk of work-item c: keys [*lo, *hi) */
static inline void chunk_range(INDEX_T n, INDEX_T chunk_len, uint c, INDEX_T* lo, INDEX_T* hi)
{
    *lo = (INDEX_T)c * chunk_len;
    *hi = min(*lo + chunk_len, n);
}
</%def>

## cb_key and run_digit (run_key_fns_all: of the order key, and for float keys of the bits' order):
## a key's bits and digits within a run (chunk_buckets, segmented_chunks).
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
</%def>
<%def name="run_key_fns_all()">
${run_key_fns("", "order_key")}
% if key_kind == "float":
/* (the same of the bits' order, common.mako's order_bits: equal for every key but -0.0 and the
   NaNs, in half the operations; a run with neither of them takes these) */
${run_key_fns("_bits", "order_bits")}
% endif
</%def>

## The digit pass of the whole-array programs (chunks; chunk_buckets' pass by the bucket, with
## `buckets`): cc_count and cc_scatter.
##   cc_count   - chunk c counts the digits of its keys: counts[d][c]
##   cc_scatter - chunk c scans the table up to its own entries (RADIX x chunks additions), then
##                walks its keys in order and writes each at its digit's running offset
##                (stable: chunks in order, each chunk in order); with `lines` (digits wider
##                than 8 bits) through a 64-byte write-combining line per digit (software
##                write-combining: a cache line of the output written whole, not a key at a time
##                into RADIX places, whose lines the L1 cache no longer holds); a pass whose keys
##                all share its digit copies the chunk instead
<%def name="top_digit(buckets)">\
% if buckets:
    /* the bucket sort's fine digit: placed by the keys' span (cb_span) */
    const uint shift = top_shift(span, chunks, lo_bit, fine_mask);
% else:
    const uint shift = shift_arg;
% endif
</%def>
<%def name="digit(k, buckets)">\
% if buckets:
lut[digit_of(${k}, shift, fine_mask, flip)]\
% else:
digit_of(${k}, shift, digit_mask, flip)\
% endif
</%def>

## C copying one line of WC elements of `width` bytes from src to dst: as words where the line is
## word-aligned (keys' lines are aligned to the line, values of 4 bytes or more to a word), else
## element by element.
<%def name="line_copy(dst, src, width)">\
% if width >= 4 or src == "kbuf":
{ __global uint* to_ = (__global uint*)(${dst}); __global const uint* from_ = (__global const uint*)(${src}); for (uint j = 0; j < ${64 * 8 // key_bits * width // 4}; ++j) to_[j] = from_[j]; }\
% else:
{ __global VALUE_T* to_ = ${dst}; for (uint j = 0; j < WC; ++j) to_[j] = (${src})[j]; }\
% endif
</%def>

<%def name="pass_kernels(buckets)">
<% value_bytes = {"uchar": 1, "ushort": 2, "uint": 4, "ulong": 8, "uint4": 16}.get(value_t, 0) %>\
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
${top_digit(buckets)}
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
        hist[${digit("keys[i]", buckets)}] += 1;
        hist[RADIX + ${digit("keys[i + 1]", buckets)}] += 1;
    }
    if (i < hi)
        hist[${digit("keys[i]", buckets)}] += 1;
    for (uint d = 0; d < RADIX; ++d)
        counts[(INDEX_T)d * chunks + c] = hist[d] + hist[RADIX + d];
}

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
${top_digit(buckets)}
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
        const INDEX_T o = at[${digit("k", buckets)}]++;
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
        const uint d = ${digit("k", buckets)};
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
</%def>

## The in-cache sort of one run of keys by one work-item (cb_copy, cb_insertion, cb_lsd and with
## `wide` cb_lsd_wide: the buckets' and the segments').
<%def name="run_sort_fns(wide)">
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
                    ${vparams("vx", "vy", 20)}INDEX_T len)
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

${lsd_fn("cb_lsd", run_bits, False)}
% if wide:
${lsd_fn("cb_lsd_wide", 12, False)}
% endif
</%def>

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
