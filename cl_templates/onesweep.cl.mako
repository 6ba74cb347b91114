/* Onesweep LSD radix sort (Adinets & Merrill), with a constant-size status ring and fallback.
     os_histogram - work-groups in a grid-stride loop count every digit of every pass in one read
                    of the keys, and zero the first launch's ring
     os_bins      - one work-group per pass: exclusive scan of that pass's digit counts
     os_pass      - one launch per digit pass (and per portion of at most 2**28 keys): tiles take
                    their id from an atomic counter and run pass_tile (onesweep_steps.mako):
                    load their keys and count their digits by subgroups (one local atomic a
                    key), claim their ring slot, publish the counts, rank the keys within
                    subgroups (ballot match masks, one local atomic per group of equal digits),
                    place them in local memory in digit order, look back over their
                    predecessors for each digit's prefix, publish it, and write the keys out
                    from local memory, coalesced.
   Work-groups talk to each other only through the status ring, the done words and the counters,
   and only with atomic functions (common.mako's cross_group_fns): by OpenCL's rules a plain
   access to a word that another work-group writes during the same launch is a data race.
   The functions are `static inline` (common.mako says why). Steps take the tile's registers as
   private arrays (KEY_T k[IPT]): once inlined, they stay in registers.
   `part`: "all" the three kernels; "prep" os_histogram and os_bins, "pass" os_pass (and the
   iota kernel): the two programs of a pass under a register cap (drivers/onesweep.py, builds). */
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="onesweep_steps.mako"/>
<%
    RADIX = 1 << radix_bits
    MAXP = -(-key_bits // radix_bits)
%>\
${steps.prelude()}
${steps.ranking_fns()}
${steps.histogram_fns()}
${steps.pass_fns()}
% if part != "pass":

/* hist[p * RADIX + d] += number of keys whose digit of pass p is d, hist[passes * RADIX] += the
   number of -0.0 and NaN keys; zeroes ring 0 */
__kernel WG_ATTR
void os_histogram(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n,
                  __global INDEX_T* restrict hist, uint begin_bit, uint end_bit, KEY_T flip,
                  __global uint* restrict rings, uint clear_slots)
{
    __local uint lh[${MAXP * RADIX}];
    clear_ring(rings, clear_slots, get_group_id(0), get_num_groups(0));
    count_all_digits(keys, keys_off, n, hist, begin_bit, end_bit, flip, lh, get_group_id(0),
                     get_num_groups(0), get_local_id(0));
}

/* bins[p * RADIX + d] = number of keys whose digit of pass p is below d (group p scans pass p) */
__kernel WG_ATTR
void os_bins(__global const INDEX_T* restrict hist, __global INDEX_T* restrict bins)
{
    __local INDEX_T scratch[WG];
    const uint p = get_group_id(0);
    rake_scan_index(hist + p * RADIX, bins + p * RADIX, RADIX, scratch, get_local_id(0));
}
% endif
% if part != "prep":

/* One digit pass over one portion: a tile per work-group. */
__kernel WG_ATTR SG_ATTR
void os_pass(${common.stream_params(value_t, 13) | trim}
             __global volatile uint* restrict rings, uint ring, uint clear_slots,
             __global const INDEX_T* restrict bins_in, __global INDEX_T* restrict bins_out,
             uint bins_off, __global const INDEX_T* restrict hist, uint specials_at,
             INDEX_T portion_start, uint portion_len, uint shift, uint digit_mask, KEY_T flip,
             uint write_keys)
{
    __local TileStorage s;
    __global volatile uint* status = rings + ring * RING_WORDS;
    __global volatile uint* done = status + RING * RADIX;  /* done[t % RING] = t + 1 */
    __global volatile uint* counters = done + RING;        /* [0] tile ids */
    /* the other ring is not read in this launch: zero it for the next one */
    clear_ring((__global uint*)(rings + (ring ^ 1u) * RING_WORDS), clear_slots,
               get_group_id(0), get_num_groups(0));
    if (get_local_id(0) == 0)
        s.tile = atomic_inc(&counters[0]);
    pass_tile(keys_in + keys_in_off + portion_start, keys_out + keys_out_off, write_keys,
% if value_t:
              vals_in + vals_in_off + portion_start, vals_out + vals_out_off, vals_iota,
              portion_start,
% endif
              portion_len, shift, digit_mask, flip, !KEY_SPECIALS || hist[specials_at] == 0,
              status, done, bins_in + bins_off, bins_out + bins_off, &s);
}
%   if value_t in ("uint", "ulong"):

${common.iota_kernel(value_t, index_t)}
%   endif
% endif
