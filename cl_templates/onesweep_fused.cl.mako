/* Onesweep in one launch (os_fused): the histogram, the scan into digit starts and every digit
   pass of a sort of n keys (n < 2**29). `work` (the counters and the histogram) is zero when the
   launch starts and zero again when it ends: the last histogram work-group zeroes the histogram
   once it has scanned it, and the last tile of the last pass zeroes the counters once every
   work-group has passed its last use of them, so a block kept for the next launch on an
   in-order queue needs no fill in between (drivers/onesweep.py, OnesweepFused). The
   work-groups take virtual ids from an atomic counter; the first hist_groups of them count the
   digits of every pass (os_histogram's work) and zero the rings, and the last of those to
   finish scans the counts into the digit starts (os_bins' work); the others are the
   tiles of pass 0, then of pass 1, ... (os_pass's pass_tile, onesweep_steps.mako), each waiting
   until the digit starts are ready (pass 0) or every tile of the pass before has written its
   keys. As with the ring, a work-group waits only for work-groups with smaller ids, which have
   started and wait only for smaller ids in turn: no assumption about which work-groups run
   together. */
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="onesweep_steps.mako"/>
<%
    RADIX = 1 << radix_bits
    MAXP = -(-key_bits // radix_bits)
    # the host's sizes (drivers/onesweep.py, fused_words) hold what the kernel addresses in them
    assert fused_head >= 3 + MAXP and fused_hist_words * 4 >= (MAXP * RADIX + 1) * (
        8 if index_t == "ulong" else 4), "os_fused's counters, histogram and special keys"
%>\
${steps.prelude()}
${steps.ranking_fns()}
${steps.histogram_fns()}
${steps.pass_fns(fused=True)}

/* `work`: FUSED_HEAD counter words, then the histogram (passes x RADIX counts, and the count of
   -0.0 and NaN keys that count_all_digits also makes, which the tiles here leave unread: they
   take numpy's order key). Counters: [0] virtual work-group ids, [1] histogram work-groups done,
   [2] digit starts ready, [3 + p] tiles of pass p done. `rings`: one status ring per pass, which
   the histogram work-groups clear. */
#define FUSED_HEAD ${fused_head}
#define FUSED_HIST_WORDS ${fused_hist_words}

/* Pass p reads keys_src (p = 0) or the output of pass p - 1, and writes keys_a (even p) or
   keys_b (odd p); the last pass writes keys only when last_writes_keys (not for argsort).
   Values likewise from vals_first (or the indices, vals_iota) through vals_a and vals_b. */
__kernel WG_ATTR SG_ATTR
void os_fused(__global KEY_T* keys_src, ulong keys_src_off,
              __global KEY_T* keys_a, ulong keys_a_off,
              __global KEY_T* keys_b, ulong keys_b_off,
% if value_t:
              __global VALUE_T* vals_first, ulong vals_first_off,
              __global VALUE_T* vals_a, ulong vals_a_off,
              __global VALUE_T* vals_b, ulong vals_b_off, uint vals_iota,
% endif
              __global volatile uint* restrict work, __global volatile uint* restrict rings,
              __global INDEX_T* restrict bins,
              uint n, uint begin_bit, uint end_bit, KEY_T flip, uint last_writes_keys,
              uint hist_groups, uint tiles, uint clear_slots)
{
    __local TileStorage s;
    __local uint lvid;
    const uint lid = get_local_id(0);
    const uint passes = (end_bit - begin_bit + ${radix_bits - 1}) / ${radix_bits};
    __global INDEX_T* hist = (__global INDEX_T*)(work + FUSED_HEAD);
    if (lid == 0)
        lvid = atomic_inc(&work[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint v = lvid;
    if (v < hist_groups) {
        for (uint p = 0; p < passes; ++p)
            clear_ring((__global uint*)(rings + p * RING_WORDS), clear_slots, v, hist_groups);
        count_all_digits(keys_src, keys_src_off, n, hist, begin_bit, end_bit, flip,
                         s.stage.hist, v, hist_groups, lid);
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (lid == 0)
            s.flags[2] = arrive(&work[1]) == hist_groups - 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (s.flags[2]) {   /* the last histogram work-group: every pass's digit starts */
            for (uint p = 0; p < passes; ++p)
                rake_scan_index(hist + p * RADIX, bins + p * RADIX, RADIX,
                                s.stage.scan, lid);
            barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
            /* every histogram work-group has counted and the counts are scanned: none is read
               again this launch */
            for (uint i = lid; i < FUSED_HIST_WORDS; i += get_local_size(0))
                ((__global uint*)work)[FUSED_HEAD + i] = 0u;
            barrier(CLK_GLOBAL_MEM_FENCE);
            if (lid == 0)
                arrive(&work[2]);
        }
    } else {
        /* a tile of a pass (an else, not an early return from the branch above: PoCL does not
           finish the ring claim's loop of barriers after such a return) */
        const uint u = v - hist_groups;
        const uint p = u / tiles;
        if (lid == 0) {
            while (load_acquire(&work[2 + p]) < (p == 0 ? 1u : tiles))
                ;
            s.tile = u - p * tiles;
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        const uint shift = begin_bit + p * ${radix_bits};
        const uint digit_mask = (1u << min((uint)${radix_bits}, end_bit - shift)) - 1u;
        __global const KEY_T* keys_in = p == 0 ? keys_src + keys_src_off
                                      : (p & 1u) ? keys_a + keys_a_off : keys_b + keys_b_off;
        __global KEY_T* keys_out = (p & 1u) ? keys_b + keys_b_off : keys_a + keys_a_off;
% if value_t:
        __global const VALUE_T* vals_in = p == 0 ? vals_first + vals_first_off
                                        : (p & 1u) ? vals_a + vals_a_off : vals_b + vals_b_off;
        __global VALUE_T* vals_out = (p & 1u) ? vals_b + vals_b_off : vals_a + vals_a_off;
% endif
        __global volatile uint* status = rings + p * RING_WORDS;
        pass_tile(keys_in, keys_out, p + 1 < passes || last_writes_keys,
% if value_t:
                  vals_in, vals_out, p == 0 && vals_iota, 0,
% endif
                  n, shift, digit_mask, flip, 0, status, status + RING * RADIX,
                  bins + p * RADIX, (__global INDEX_T*)0, &s);
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        /* the last tile of the last pass: every work-group of the launch has taken its id and
           passed its waits (each tile waits for every tile before its pass, the last pass's
           tiles have all arrived), so the counters are read no more */
        if (lid == 0 && arrive(&work[3 + p]) == tiles - 1 && p + 1 == passes)
            for (uint i = 0; i < FUSED_HEAD; ++i)
                work[i] = 0u;
    }
}
% if value_t in ("uint", "ulong"):

${common.iota_kernel(value_t, index_t)}
% endif
