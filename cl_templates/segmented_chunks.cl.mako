## The segmented sort for CPU devices (drivers/segmented_chunks.py), each work-item owning whole
## segments:
##   cs_check    - one work-item: info[0] = whether the offsets are invalid (not non-decreasing or
##                 outside [0, n]); cs_segments then returns at once. The verdict is an INDEX_T, as
##                 seg_plan's (segmented.cl.mako): the host reads it back as the index type
##   cs_segments - work-item w sorts segments [w * spi, (w + 1) * spi), each as the bucket sort
##                 sorts a bucket (cb_insertion, cb_lsd: chunks_steps.mako) between it and its
##                 place in a scratch buffer, where it ends
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), radix_bits and run_bits (8),
## value_t (None for keys only), index_t ("uint" when every index and offset fits 32 bits, else
## "ulong"), off_t (the offsets' type: "int" or "long").
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="chunks_steps.mako"/>
<% wide = key_bits == 32 %>\
${steps.prelude()}
${steps.run_key_fns_all()}
${steps.run_sort_fns(wide)}
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
% if value_t in ("uint", "ulong"):

${common.iota_kernel(value_t, index_t)}
% endif
