/* Onesweep LSD radix sort (Adinets & Merrill), with a constant-size status ring and fallback.
     os_histogram - work-groups in a grid-stride loop count every digit of every pass in one read
                    of the keys
     os_bins      - one work-group per pass: exclusive scan of that pass's digit counts
     os_pass      - one launch per digit pass (and per portion of at most 2**28 keys): tiles take
                    their id from an atomic counter, count their digits and publish the counts,
                    rank their keys stably by digit with subgroup match masks and place them in
                    local memory in digit order, then look back over predecessors in a ring of
                    status words (so the wait for predecessors comes after the tile's own work,
                    and only local positions are held through it), publish their inclusive prefix
                    and write the keys out, coalesced. Its steps are functions, in this order:
                    take_tile, load_keys, count_digits, claim_slot, publish (the counts),
                    rank_keys, rake_scan_counts, scatter_to_local, look_back, publish_prefix,
                    release_slot, scatter_keys, scatter_values.
     os_small     - a whole sort of at most one tile by one work-group: os_pass's ranking and
                    placement in local memory for every digit, then one write.

   Work-groups talk to each other only through the status ring, the done words and the counters,
   and only with atomic functions (common.mako's cross_group_fns): by OpenCL's rules a plain
   access to a word that another work-group writes during the same launch is a data race.
   Status word (32 bits): [31:30] flag (0 not ready, 1 aggregate, 2 inclusive prefix), [29] epoch
   (parity of tile / RING, so a slot's previous owner is never mistaken for its current one),
   [28:0] count, relative to the portion (so a portion holds fewer than 2**29 keys).
   The ring: tile t uses slot t % RING. A tile looks back at most LOOKBACK tiles through the ring
   (beyond that it recomputes counts from keys), and may only claim its slot once every tile that
   could still read the slot's previous owner has finished its look-back: tiles t - RING to
   t - RING + LOOKBACK. A tile marks itself done in a ring of done words (done[t % RING] = t + 1,
   which only grows), and a claimant reads those words.
   Two rings: launch k (a pass, or a portion of one) reads ring k % 2 and zeroes the part of the
   other ring that launch k + 1 will use; os_histogram zeroes ring 0 for the first launch.
   Fallback (decoupled fallback): a look-back that spins SPIN_LIMIT times on a tile that has not
   published computes that tile's digit counts from its keys, posts them, and goes on.
   FORCE_FALLBACK does so at once, for tests.
   The functions are `static inline` (common.mako says why). Steps take the tile's registers as
   private arrays (KEY_T k[IPT]): once inlined, they stay in registers. */
<%namespace name="common" file="common.mako"/>
<%
    RADIX = 1 << radix_bits
    TILE = wg * ipt
    NW = wg // sg_size
    MAXP = -(-key_bits // radix_bits)
    iota_ok = value_t in ("uint", "ulong")
    assert wg % sg_size == 0 and sg_size <= 32
    assert lookback + 1 <= ring, "the ring must outrun the look-back"
    key_bytes = key_bits // 8
    hv = 16 // key_bytes  # keys per 16-byte load in os_histogram
    # the staging area: a tile of keys, then of values; os_fused's histogram work-groups also
    # count (MAXP x RADIX) and scan (WG) in it. Sized by the policy (SortPolicy.stage_bytes),
    # which budgets local memory with the same number.
    raw_bytes = stage_bytes
    # unrolling the items-per-thread loops keeps them in registers on GPUs; CPU compilers (PoCL)
    # only take longer to compile them
    unroll = "    #pragma unroll" if backend == "ptx" else ""
    assert TILE < 1 << 16, "a key's rank shares a 32-bit word with its digit"
    # the host's sizes (clradix.drivers.onesweep) hold what the kernels address in them
    assert ring_words == ring * (RADIX + 1) + 1, "a ring: status words, done words, a counter"
    assert fused_head >= 3 + MAXP and fused_hist_words * 4 >= MAXP * RADIX * (
        8 if index_t == "ulong" else 4), "os_fused's counters and histogram"
    # the work-group size the kernels are built for: stated, except under a register cap, which
    # NVIDIA's compiler ignores on a kernel that states it (onesweep.py, capped_registers)
    WG_ATTR = "__attribute__((reqd_work_group_size(WG, 1, 1)))" if reqd_wg else ""
%>
% if index_t == "ulong":
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
% if backend == "khr":
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_ballot : enable
% elif backend == "intel":
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
% endif
${common.sort_prelude(key_kind, key_bits, key_t, key_inf_bits, index_t, radix_bits, wg, ipt,
                      value_t)}
#define SG ${sg_size}
#define NW ${NW}
/* digits per work-item (d = lid, lid + WG, ...) */
#define DPI ${-(-RADIX // wg)}
#define RING ${ring}
#define LOOKBACK ${lookback}
#define SPIN_LIMIT ${spin_limit}
/* words of one ring: RING x RADIX status words, RING done words, the tile counter (the host's
   count, clradix.drivers.onesweep.ring_words) */
#define RING_WORDS ${ring_words}
#define LB_WIN 8
#define FLAG_AGG 0x40000000u
#define FLAG_PREFIX 0x80000000u
#define FLAG_MASK 0xc0000000u
#define EPOCH_BIT 0x20000000u
#define VALUE_MASK 0x1fffffffu
% if backend in ("khr", "intel"):
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG)))
% else:
#define SG_ATTR
% endif

${common.sg_primitives(backend, sg_size, wg, radix_bits + 1)}
${common.counter_fns(index_t)}
${common.cross_group_fns(ptx, c11)}
% if backend == "ptx":
${common.wg_scan_warp_fn("wg_scan_uint", wg)}
% else:
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% endif
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
${common.rake_scan_fn("rake_scan_index", "INDEX_T", "__global", "wg_scan_index")}
/* (the subgroup counters lcount[w * RADIX + d] are scanned digit-major: entry x is digit x / NW
   of subgroup x % NW) */
${common.rake_scan_fn("rake_scan_counts", "uint", "__local", "wg_scan_uint",
                      at="(x % NW) * RADIX + x / NW")}
${common.wg_any_fn()}

/* Zero what the first `slots` tiles of a launch use in `ring` (their status and done words, and
   the tile counter), spread over `groups` work-groups (this one is `group`). There are two rings: each os_pass
   launch uses one and zeroes the other for the next launch, and os_histogram zeroes the first,
   so that no launch of the sort needs a separate fill. */
static inline void clear_ring(__global uint* ring, uint slots, uint group, uint groups)
{
    const uint words = slots * (RADIX + 1) + 1;
    const uint per = (words + groups - 1) / groups;
    const uint b = group * per;
    const uint e = min(b + per, words);
    for (uint x = b + get_local_id(0); x < e; x += WG) {
        const uint at = x < slots * RADIX ? x
                      : x < slots * (RADIX + 1) ? RING * RADIX + (x - slots * RADIX)
                      : RING * (RADIX + 1) + (x - slots * (RADIX + 1));
        ring[at] = 0;
    }
}

/* hist[p * RADIX + d] += number of keys whose digit of pass p is d; zeroes ring 0. The keys are
   read 16 bytes at a time (HV keys) where their start allows it, the rest one at a time. */
#define HV ${hv}
static inline void hist_key(KEY_T x, KEY_T flip, __local uint* lh, uint passes,
                            __private const uint* sh, __private const uint* mk)
{
    const KEY_T k = order_key(x, flip);
${unroll}
    for (uint p = 0; p < ${MAXP}; ++p)
        if (p < passes)
            atomic_inc(&lh[p * RADIX + ((uint)(k >> sh[p]) & mk[p])]);
}

/* hist[p * RADIX + d] += the counts of the keys of this work-group's share (group of groups,
   grid-stride) in lh (local, passes x RADIX) */
static inline void count_all_digits(__global const KEY_T* keys, ulong keys_off, INDEX_T n,
                                    __global INDEX_T* hist, uint begin_bit, uint end_bit,
                                    KEY_T flip, __local uint* lh, uint group, uint groups,
                                    uint lid)
{
    keys += keys_off;
    const uint passes = (end_bit - begin_bit + ${radix_bits - 1}) / ${radix_bits};
    uint sh[${MAXP}], mk[${MAXP}];
    for (uint p = 0; p < ${MAXP}; ++p) {
        sh[p] = min(begin_bit + p * ${radix_bits}, ${key_bits - 1}u);
        mk[p] = (1u << min((uint)${radix_bits}, end_bit - min(end_bit, sh[p]))) - 1u;
    }
    for (uint e = lid; e < passes * RADIX; e += WG)
        lh[e] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const INDEX_T stride = (INDEX_T)groups * WG;
    const INDEX_T first = (INDEX_T)group * WG + lid;
    INDEX_T head = 0;
% if hv > 1:
    if ((keys_off & ${hv - 1}) == 0) {
        const INDEX_T nv = n / HV;
        __global const ${key_t}${hv}* kv = (__global const ${key_t}${hv}*)keys;
        for (INDEX_T v = first; v < nv; v += stride) {
            const ${key_t}${hv} x = kv[v];
%   for c in range(hv):
            hist_key(x.s${"0123456789abcdef"[c]}, flip, lh, passes, sh, mk);
%   endfor
        }
        head = nv * HV;
    }
% endif
    for (INDEX_T i = head + first; i < n; i += stride)
        hist_key(keys[i], flip, lh, passes, sh, mk);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < passes * RADIX; e += WG)
        if (lh[e])
            COUNTER_ADD(&hist[e], lh[e]);
}
% if not fused:

__kernel ${WG_ATTR}
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
__kernel ${WG_ATTR}
void os_bins(__global const INDEX_T* restrict hist, __global INDEX_T* restrict bins)
{
    __local INDEX_T scratch[WG];
    const uint p = get_group_id(0);
    rake_scan_index(hist + p * RADIX, bins + p * RADIX, RADIX, scratch, get_local_id(0));
}
% endif

static inline uint status_epoch(uint tile) { return ((tile / RING) & 1u) ? EPOCH_BIT : 0u; }

/* The digit counts of tile `u` of the portion, computed from its keys (fallback). */
static inline void tile_histogram(__global const KEY_T* keys, uint portion_len, uint u, uint shift,
                                  uint digit_mask, KEY_T flip, __local uint* lfb, uint lid)
{
    for (uint d = lid; d < RADIX; d += WG)
        lfb[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint base = u * TILE;
    const uint valid = min((uint)TILE, portion_len - base);
    for (uint j = lid; j < valid; j += WG)
        atomic_inc(&lfb[digit_of(keys[base + j], shift, digit_mask, flip)]);
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The steps of os_pass, in the order it takes them. */

/* Take a tile id from the launch's counter; zero the subgroup counters; load the pass's digit
   starts (needed only after the look-back: loaded early). Returns the tile id. */
static inline uint take_tile(__global volatile uint* counters, __local uint* ltile,
                             __local uint* lcount, __global const INDEX_T* bins_in,
                             __local INDEX_T* lbins, uint lid)
{
    if (lid == 0)
        *ltile = atomic_inc(&counters[0]);
    for (uint e = lid; e < NW * RADIX; e += WG)
        lcount[e] = 0;
    for (uint d = lid; d < RADIX; d += WG)
        lbins[d] = bins_in[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    return *ltile;
}

/* load: subgroup w owns keys [w*SG*IPT, (w+1)*SG*IPT) of the tile, lane-striped (coalesced);
   dig[i] is key k[i]'s digit, RADIX for padding (it matches only padding, and is never counted) */
static inline void load_keys(__private KEY_T k[IPT], __private uint dig[IPT],
                             __global const KEY_T* keys_in, uint base, uint valid,
                             uint shift, uint digit_mask, KEY_T flip, uint w, uint lane)
{
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = w * SG * IPT + i * SG + lane;
        if (j < valid) {
            k[i] = keys_in[base + j];
            dig[i] = digit_of(k[i], shift, digit_mask, flip);
        } else {
            k[i] = (KEY_T)0;
            dig[i] = RADIX;
        }
    }
}

/* early counts: the tile's digit histogram in ltotal, published before the ranking so that
   successors find this tile's counts (and prefix) sooner */
static inline void count_digits(__private const uint dig[IPT], __local uint* ltotal, uint lid)
{
    for (uint d = lid; d < RADIX; d += WG)
        ltotal[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
${unroll}
    for (uint i = 0; i < IPT; ++i)
        if (dig[i] < RADIX)
            atomic_inc(&ltotal[dig[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* claim the ring slot: its previous owner (t - RING) and every tile that may still read that
   owner (t - RING + 1 .. t - RING + LOOKBACK) must have finished their look-back. The owner
   itself matters: until it is done, it may still write its prefix and its done word into
   this slot (were its done word to go back from t + 1 to t - RING + 1, a later claimant
   would wait for ever).
   Why the wait ends: the tiles waited for took their ids from the atomic counter before this
   tile did, so their work-groups have started, and a device runs the work-groups it has
   started. Each of them reaches its done word in a bounded number of steps: its look-back
   is bounded (spin limit, then fallback) and its own claim waits only for tiles with still
   smaller ids; tiles below RING claim nothing. By induction on the tile id every claim ends.
   (It relies on the counter starting at 0 in every launch: the launch before clears it.) */
static inline void claim_slot(uint t, __global volatile uint* done, __local uint* lflag,
                              uint lid)
{
    if (t >= RING) {
% if serial_claim:
        /* one work-item waits for every done word in turn: on oclgrind a wait shared by
           several work-items of a group does not end (with or without barriers in it), although
           every word it waits for has been written */
        if (lid == 0)
            for (uint x = t - RING; x <= t - RING + LOOKBACK; ++x)
                while (status_load(&done[x % RING]) < x + 1)
                    ;
% else:
        /* the work-group checks the done words together, a round at a time (faster on NVIDIA
           than a loop in which each work-item waits for its own words alone) */
        for (;;) {
            uint busy = 0;
            for (uint x = t - RING + lid; x <= t - RING + LOOKBACK; x += WG)
                if (status_load(&done[x % RING]) < x + 1)
                    busy = 1;
            if (!wg_any(lflag, busy))
                break;
        }
% endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* the tile's word of every digit in its slot: `flag` | epoch | its count (or its prefix) */
static inline void publish(__global volatile uint* status, uint slot, uint flag, uint epoch,
                           __local const uint* counts, uint lid)
{
    for (uint d = lid; d < RADIX; d += WG)
        status_store(&status[slot + d], flag | epoch | counts[d]);
}

/* rank inside the subgroup: peers with the same digit, in lane order within each round; the rank
   shares the digit's register (dig[i] |= rank << 16) */
static inline void rank_keys(__private uint dig[IPT], __local uint* lcount, __local uint* lsg,
                             uint w, uint lane, int closing_barrier)
{
${common.rank_rounds(backend, unroll)}
    if (closing_barrier)
        barrier(CLK_LOCAL_MEM_FENCE);
}

/* the keys go to local memory in digit order, their digits beside them in ldig (so that the
   scatter does not compute a key's order key again) (lcount: the scanned subgroup counters):
   through the
   look-back each work-item holds only their local positions, dest[i] (TILE for padding) */
static inline void scatter_to_local(__private uint dest[IPT], __private const uint dig[IPT],
                                    __private const KEY_T k[IPT], __local const uint* lcount,
                                    __local KEY_T* lkeys, __local uchar* ldig, uint w)
{
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint di = dig[i] & 0xffffu;
        dest[i] = di < RADIX ? lcount[w * RADIX + di] + (dig[i] >> 16) : TILE;
        if (di < RADIX) {
            lkeys[dest[i]] = k[i];
            if (ldig)  /* os_small keeps no digits (a constant once inlined) */
                ldig[dest[i]] = (uchar)di;
        }
    }
}

/* Look-back, fast path for digit d of tile t: walk back on its own through the ring, without
   barriers. Returns the digit's exclusive prefix | FLAG_PREFIX, or 0 where it spun too long or
   reached the look-back limit (then the slow path takes over). */
static inline uint look_back_digit(__global volatile uint* status, uint t, uint d)
{
    uint acc = 0;
    uint found = t == 0;
% if not force_fallback:
    /* read a window of LB_WIN predecessors at once (independent loads), consume the ready
       ones in order, stop at a prefix; at the look-back limit only a prefix will do */
    uint u = t - 1;
    uint dist = 1;
    uint spins = 0;
    while (!found) {
        uint win[LB_WIN];
        ${unroll}
        for (uint q = 0; q < LB_WIN; ++q)
            win[q] = (q <= u && dist + q <= LOOKBACK)
                ? status_load(&status[((u - q) % RING) * RADIX + d]) : 0u;
        uint used = 0;
        ${unroll}
        for (uint q = 0; q < LB_WIN; ++q) {
            const uint s = win[q];
            const int ready = used == q && q <= u && dist + q <= LOOKBACK
                && (s & EPOCH_BIT) == status_epoch(u - q) && (s & FLAG_MASK) != 0
                && (dist + q < LOOKBACK || (s & FLAG_PREFIX));
            if (ready && !found) {
                acc += s & VALUE_MASK;
                found = (s & FLAG_PREFIX) != 0;
                ++used;
            }
        }
        if (found)
            break;
        if (used == 0) {
            if (++spins >= SPIN_LIMIT)
                break;
            continue;
        }
        spins = 0;
        u -= used;
        dist += used;
    }
% endif
    return found ? (acc | FLAG_PREFIX) : 0;
}

/* Look-back, slow path, predecessor u (at `dist` from the tile): words[q] is its word of digit
   lid + q * WG (FLAG_PREFIX for a digit already done; 0 where it is not ready, or at the
   look-back limit not a prefix). Returns whether this work-item has a 0. */
static inline uint read_predecessor(__private uint words[DPI], __global volatile uint* status,
                                    uint u, uint dist, int ring_ok, __local const uint* lprefix,
                                    uint lid)
{
    const uint useslot = (u % RING) * RADIX;
    const uint uepoch = status_epoch(u);
    uint missing = 0;
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        uint s = 0;
        if (lprefix[d] & FLAG_PREFIX) {
            s = FLAG_PREFIX;  /* this digit is done */
        } else if (ring_ok) {
            s = status_load(&status[useslot + d]);
            if ((s & EPOCH_BIT) != uepoch || (s & FLAG_MASK) == 0
                || (dist == LOOKBACK && !(s & FLAG_PREFIX)))
                s = 0;
        }
        words[q] = s;
        if (s == 0)
            missing = 1;
    }
    return missing;
}

/* fallback: count tile u's digits from its keys, post them (where its slot holds no word of
   tile u yet), and take them as its words. Tile 0's counts are its inclusive prefix and go out
   flagged so: every word of tile 0 is a prefix, which ends every walk back at tile 0 (a walk
   that took an aggregate of tile 0 went on to "tile -1", ring slots no tile of the launch
   writes, and added what they held) */
static inline void fallback_counts(__private uint words[DPI], __global volatile uint* status,
                                   uint u, uint dist, __global const KEY_T* keys,
                                   uint portion_len, uint shift, uint digit_mask, KEY_T flip,
                                   __local uint* lfb, uint lid)
{
    const uint useslot = (u % RING) * RADIX;
    const uint uepoch = status_epoch(u);
    tile_histogram(keys, portion_len, u, shift, digit_mask, flip, lfb, lid);
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        if (words[q] == 0) {
            words[q] = (u == 0 ? FLAG_PREFIX : FLAG_AGG) | uepoch | lfb[d];
            if (dist <= LOOKBACK) {
                const uint cur = status_load(&status[useslot + d]);
                if ((cur & EPOCH_BIT) != uepoch || (cur & FLAG_MASK) == 0)
                    atomic_cmpxchg(&status[useslot + d], cur, words[q]);
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* adds a predecessor's words to the digits not yet done; returns whether one is still not done */
static inline uint add_predecessor(__private const uint words[DPI], __local uint* lprefix, uint lid)
{
    uint more = 0;
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        if (lprefix[d] & FLAG_PREFIX)
            continue;
        const uint s = words[q];
        lprefix[d] += s & VALUE_MASK;
        if (s & FLAG_PREFIX)
            lprefix[d] |= FLAG_PREFIX;
        else
            more = 1;
    }
    return more;
}

/* decoupled look-back: lprefix[d] = the digit's exclusive prefix | FLAG_PREFIX. Fast path: every
   digit walks back on its own through the ring (look_back_digit). A digit that spins too long or
   reaches the look-back limit leaves it to the slow path, which goes one predecessor at a time
   for the whole work-group and can fall back to counting a predecessor's keys. */
static inline void look_back(__global volatile uint* status, uint t, __global const KEY_T* keys,
                             uint portion_len, uint shift, uint digit_mask, KEY_T flip,
                             __local uint* lprefix, __local uint* lfb, __local uint* lflag,
                             uint lid)
{
    uint slow = 0;
    for (uint d = lid; d < RADIX; d += WG) {
        const uint p = look_back_digit(status, t, d);
        lprefix[d] = p;
        if (!p)
            slow = 1;
    }
    if (!wg_any(lflag, slow))
        return;
    uint u = t - 1;
    uint dist = 1;
    uint spins = 0;
    for (;;) {
        const int ring_ok = ${'0' if force_fallback else 'dist <= LOOKBACK'};
        uint words[DPI];
        if (wg_any(lflag, read_predecessor(words, status, u, dist, ring_ok, lprefix, lid))) {
            if (ring_ok && ++spins < SPIN_LIMIT)
                continue;  /* spin on the same predecessor */
            fallback_counts(words, status, u, dist, keys, portion_len, shift, digit_mask, flip,
                            lfb, lid);
        }
        spins = 0;
        if (!wg_any(lflag, add_predecessor(words, lprefix, lid)) || u == 0)
            break;
        --u;
        ++dist;
    }
}

/* publish the tile's inclusive prefix (tile 0 did with its counts); lprefix[d] becomes the
   exclusive prefix; the last tile writes the next portion's digit starts */
static inline void publish_prefix(__global volatile uint* status, uint slot, uint t, uint epoch,
                                  uint last, __local uint* lprefix, __local const uint* ltotal,
                                  __local const INDEX_T* lbins, __global INDEX_T* bins_out,
                                  uint lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = lid; d < RADIX; d += WG) {
        const uint excl = lprefix[d] & VALUE_MASK;
        lprefix[d] = excl;
        if (t > 0)
            status_store(&status[slot + d], FLAG_PREFIX | epoch | (excl + ltotal[d]));
        if (last)
            bins_out[d] = lbins[d] + excl + ltotal[d];
    }
}

/* this tile is done with the ring (its reads of it are consumed: a local barrier suffices) */
static inline void release_slot(uint t, __global volatile uint* done, uint lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    /* done words only grow (atomic_max): a slot's done word never goes back to an earlier
       owner's id, whatever the order of the stores */
    if (lid == 0)
        atomic_max(&done[t % RING], t + 1);
}

/* scatter out: lbase[d] = where digit d's keys of the tile start in the output, less their first
   local position; the keys go out from local memory, coalesced; dj[i] is the digit of local
   position i * WG + lid */
static inline void scatter_keys(__private uint dj[IPT], __local const KEY_T* lkeys,
                                __global KEY_T* keys_out, uint write_keys, uint valid,
                                __local INDEX_T* lbase, __local const INDEX_T* lbins,
                                __local const uint* lprefix, __local const uint* lcount,
                                __local const uchar* ldig, uint lid)
{
    for (uint d = lid; d < RADIX; d += WG)
        lbase[d] = lbins[d] + lprefix[d] - lcount[d];  /* lcount[d]: subgroup 0's start */
    barrier(CLK_LOCAL_MEM_FENCE);
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            const KEY_T key = lkeys[j];
            dj[i] = ldig[j];
            if (write_keys)
                keys_out[lbase[dj[i]] + j] = key;
        }
    }
}
% if value_t:

/* values: loaded as the keys were, they take the same ranks through the same local memory
   (lvals overlays lkeys: the barriers keep the keys' reads before the values' writes) */
static inline void scatter_values(__private const uint dest[IPT], __private const uint dj[IPT],
                                  __global const VALUE_T* vals_in,
                                  __global VALUE_T* vals_out, uint vals_iota,
                                  INDEX_T portion_start, uint base, uint valid,
                                  __local VALUE_T* lvals, __local const INDEX_T* lbase, uint w,
                                  uint lane, uint lid)
{
    VALUE_T v[IPT];
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = w * SG * IPT + i * SG + lane;
        if (j < valid)
            v[i] = value_at(vals_in, base + j, portion_start, vals_iota);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
${unroll}
    for (uint i = 0; i < IPT; ++i)
        if (dest[i] < TILE)
            lvals[dest[i]] = v[i];
    barrier(CLK_LOCAL_MEM_FENCE);
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid)
            vals_out[lbase[dj[i]] + j] = lvals[j];
    }
}
% endif

## The local memory and the steps of one tile of a digit pass, shared by os_pass and os_fused.
## The steps expect: t (the tile), keys_in (the portion's first key), keys_out, portion_start,
## portion_len, shift, digit_mask, flip, write_keys, status and done (the pass's ring),
## bins_out; with values vals_src (the portion's first value), vals_dst, vals_iota_now.
<%def name="tile_locals()">
    __local ulong2 lraw[${(raw_bytes + 15) // 16}];
    __local uint lcount[NW * RADIX];
    __local uint lscan[WG];
    __local uint lsg[WG];
    __local uint ltotal[RADIX];
    __local uint lprefix[RADIX];
    __local uint lfb[RADIX];
    __local INDEX_T lbase[RADIX];
    __local INDEX_T lbins[RADIX];
    __local uint ltile;
    __local uint lflags[2];   /* [0] wg_any's word, [1] os_fused's last histogram group */
    __local uchar ldig[TILE];
    __local KEY_T* lkeys = (__local KEY_T*)lraw;
    const uint lid = get_local_id(0);
    const uint lane = sg_lane();
    const uint w = sg_id();
</%def>
<%def name="tile_steps()">
    const uint base = t * TILE;
    const uint valid = min((uint)TILE, portion_len - base);
    const uint slot = (t % RING) * RADIX;
    const uint epoch = status_epoch(t);
    uint dig[IPT];
    KEY_T k[IPT];
    load_keys(k, dig, keys_in, base, valid, shift, digit_mask, flip, w, lane);
    /* the tile's counts, in a step of their own, published before the ranking */
    count_digits(dig, ltotal, lid);
    claim_slot(t, done, lflags, lid);
    publish(status, slot, t == 0 ? FLAG_PREFIX : FLAG_AGG, epoch, ltotal, lid);
    rank_keys(dig, lcount, lsg, w, lane, 1);
    /* combine subgroups: exclusive scan over (digit, subgroup), digit-major */
    rake_scan_counts(lcount, lcount, NW * RADIX, lscan, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint dest[IPT];
    scatter_to_local(dest, dig, k, lcount, lkeys, ldig, w);
    look_back(status, t, keys_in, portion_len, shift, digit_mask, flip, lprefix, lfb, lflags,
              lid);
    const uint last = t == (portion_len + TILE - 1) / TILE - 1;
    publish_prefix(status, slot, t, epoch, last, lprefix, ltotal, lbins, bins_out, lid);
    release_slot(t, done, lid);

    uint dj[IPT];
    scatter_keys(dj, lkeys, keys_out, write_keys, valid, lbase, lbins, lprefix, lcount, ldig,
                 lid);
% if value_t:
    scatter_values(dest, dj, vals_src, vals_dst, vals_iota_now, portion_start, base, valid,
                   (__local VALUE_T*)lraw, lbase, w, lane, lid);
% endif
</%def>
% if not fused:

/* One digit pass over one portion, in the steps above: a tile per work-group. */
__kernel ${WG_ATTR} SG_ATTR
void os_pass(${common.stream_params(value_t, 13) | trim}
             __global volatile uint* restrict rings, uint ring, uint clear_slots,
             __global const INDEX_T* restrict bins_in, __global INDEX_T* restrict bins_out,
             uint bins_off,
             INDEX_T portion_start, uint portion_len, uint shift, uint digit_mask, KEY_T flip,
             uint write_keys)
{
${tile_locals()}
    __global volatile uint* status = rings + ring * RING_WORDS;
    __global volatile uint* done = status + RING * RADIX;  /* done[t % RING] = t + 1 */
    __global volatile uint* counters = done + RING;        /* [0] tile ids */
    keys_in += keys_in_off + portion_start;
    keys_out += keys_out_off;
    bins_out += bins_off;
% if value_t:
    __global const VALUE_T* vals_src = vals_in + vals_in_off + portion_start;
    __global VALUE_T* vals_dst = vals_out + vals_out_off;
    const uint vals_iota_now = vals_iota;
% endif

    /* the other ring is not read in this launch: zero it for the next one */
    clear_ring((__global uint*)(rings + (ring ^ 1u) * RING_WORDS), clear_slots,
               get_group_id(0), get_num_groups(0));
    const uint t = take_tile(counters, &ltile, lcount, bins_in + bins_off, lbins, lid);
${tile_steps()}
}
% else:

/* `work`: FUSED_HEAD counter words, then the histogram (passes x RADIX counts), then one ring
   per pass. Counters: [0] virtual work-group ids, [1] histogram work-groups done, [2] digit
   starts ready, [3 + p] tiles of pass p done. */
#define FUSED_HEAD ${fused_head}
#define FUSED_HIST_WORDS ${fused_hist_words}

/* A whole sort of n keys (n < 2**29) in one launch, after one fill that zeroes `work`'s
   counters and histogram: the work-groups take virtual ids from an atomic counter; the first
   hist_groups of them count the digits of every pass (os_histogram's work) and zero the rings,
   and the last of those to finish scans the counts into the digit starts (os_bins' work); the
   others are the tiles of pass 0, then of pass 1, ... (os_pass's work), each waiting until the
   digit starts are ready (pass 0) or every tile of the pass before has written its keys. As with
   the ring, a work-group waits only for work-groups with smaller ids, which have started and
   wait only for smaller ids in turn: no assumption about which work-groups run together.
   Pass p reads keys_src (p = 0) or the output of pass p - 1, and writes keys_a (even p) or
   keys_b (odd p); the last pass writes keys only when last_writes_keys (not for argsort).
   Values likewise from vals_first (or the indices, vals_iota) through vals_a and vals_b. */
__kernel ${WG_ATTR} SG_ATTR
void os_fused(__global KEY_T* keys_src, ulong keys_src_off,
              __global KEY_T* keys_a, ulong keys_a_off,
              __global KEY_T* keys_b, ulong keys_b_off,
%   if value_t:
              __global VALUE_T* vals_first, ulong vals_first_off,
              __global VALUE_T* vals_a, ulong vals_a_off,
              __global VALUE_T* vals_b, ulong vals_b_off, uint vals_iota,
%   endif
              __global volatile uint* restrict work, __global INDEX_T* restrict bins,
              uint n, uint begin_bit, uint end_bit, KEY_T flip, uint last_writes_keys,
              uint hist_groups, uint tiles, uint clear_slots)
{
${tile_locals()}
    __local uint lvid;
    const uint passes = (end_bit - begin_bit + ${radix_bits - 1}) / ${radix_bits};
    __global INDEX_T* hist = (__global INDEX_T*)(work + FUSED_HEAD);
    __global volatile uint* rings = work + FUSED_HEAD + FUSED_HIST_WORDS;
    if (lid == 0)
        lvid = atomic_inc(&work[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint v = lvid;
    if (v < hist_groups) {
        for (uint p = 0; p < passes; ++p)
            clear_ring((__global uint*)(rings + p * RING_WORDS), clear_slots, v, hist_groups);
        count_all_digits(keys_src, keys_src_off, n, hist, begin_bit, end_bit, flip,
                         (__local uint*)lraw, v, hist_groups, lid);
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (lid == 0)
            lflags[1] = arrive(&work[1]) == hist_groups - 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lflags[1]) {   /* the last histogram work-group: every pass's digit starts */
            for (uint p = 0; p < passes; ++p)
                rake_scan_index(hist + p * RADIX, bins + p * RADIX, RADIX,
                                (__local INDEX_T*)lraw, lid);
            barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
            if (lid == 0)
                arrive(&work[2]);
        }
    } else {
        /* a tile of a pass (an else, not an early return from the branch above: PoCL does not
           finish the ring claim's loop of barriers after such a return) */
        const uint u = v - hist_groups;
        const uint p = u / tiles;
        const uint t = u - p * tiles;
        if (lid == 0)
            while (load_acquire(&work[2 + p]) < (p == 0 ? 1u : tiles))
                ;
        for (uint e = lid; e < NW * RADIX; e += WG)
            lcount[e] = 0;
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        for (uint d = lid; d < RADIX; d += WG)
            lbins[d] = bins[p * RADIX + d];
        barrier(CLK_LOCAL_MEM_FENCE);

        const uint shift = begin_bit + p * ${radix_bits};
        const uint digit_mask = (1u << min((uint)${radix_bits}, end_bit - shift)) - 1u;
        __global const KEY_T* keys_in = p == 0 ? keys_src + keys_src_off
                                      : (p & 1u) ? keys_a + keys_a_off : keys_b + keys_b_off;
        __global KEY_T* keys_out = (p & 1u) ? keys_b + keys_b_off : keys_a + keys_a_off;
        const uint write_keys = p + 1 < passes || last_writes_keys;
%   if value_t:
        __global const VALUE_T* vals_src = p == 0 ? vals_first + vals_first_off
                                         : (p & 1u) ? vals_a + vals_a_off : vals_b + vals_b_off;
        __global VALUE_T* vals_dst = (p & 1u) ? vals_b + vals_b_off : vals_a + vals_a_off;
        const uint vals_iota_now = p == 0 && vals_iota;
%   endif
        const INDEX_T portion_start = 0;
        const uint portion_len = n;
        __global INDEX_T* bins_out = bins + (passes + p) * RADIX;   /* (read by no one) */
        __global volatile uint* status = rings + p * RING_WORDS;
        __global volatile uint* done = status + RING * RADIX;
${tile_steps()}
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (lid == 0)
            arrive(&work[3 + p]);
    }
}
% endif

/* A whole sort of n <= TILE keys by one work-group in one launch, with os_pass's ranking: for
   each digit of [begin_bit, end_bit), the tile's keys are ranked stably by the digit (rank_keys,
   rake_scan_counts) and placed in local memory in digit order (scatter_to_local), where the
   next digit's ranking reads them, keeping their source positions beside them; then one write.
   Keys and values may be in place: everything is read before anything is written. */
__kernel ${WG_ATTR} SG_ATTR
void os_small(${common.stream_params(value_t, 14, restrict=False) | trim}
              uint n, uint begin_bit, uint end_bit, KEY_T flip, uint write_keys)
{
    __local ulong2 lraw[${(TILE * key_bytes + 15) // 16}];
% if value_t:
    __local ushort lperm[TILE];
% endif
    __local uint lcount[NW * RADIX];
    __local uint lscan[WG];
    __local uint lsg[WG];
    __local KEY_T* lkeys = (__local KEY_T*)lraw;
    const uint lid = get_local_id(0);
    const uint lane = sg_lane();
    const uint w = sg_id();
    keys_in += keys_in_off;
    keys_out += keys_out_off;
    KEY_T k[IPT];
    uint dig[IPT];
% if value_t:
    ushort src[IPT];
% endif
    for (uint shift = begin_bit; shift < end_bit; shift += ${radix_bits}) {
        const uint mask = (1u << min((uint)${radix_bits}, end_bit - shift)) - 1u;
        if (shift == begin_bit) {
            load_keys(k, dig, keys_in, 0, n, shift, mask, flip, w, lane);
        } else {
${unroll}
            for (uint i = 0; i < IPT; ++i) {
                const uint j = w * SG * IPT + i * SG + lane;
                k[i] = j < n ? lkeys[j] : (KEY_T)0;
                dig[i] = j < n ? digit_of(k[i], shift, mask, flip) : RADIX;
            }
        }
% if value_t:
${unroll}
        for (uint i = 0; i < IPT; ++i) {
            const uint j = w * SG * IPT + i * SG + lane;
            src[i] = shift == begin_bit ? (ushort)j : (j < n ? lperm[j] : (ushort)0);
        }
% endif
        for (uint e = lid; e < NW * RADIX; e += WG)
            lcount[e] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        rank_keys(dig, lcount, lsg, w, lane, 1);
        rake_scan_counts(lcount, lcount, NW * RADIX, lscan, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint dest[IPT];
        scatter_to_local(dest, dig, k, lcount, lkeys, (__local uchar*)0, w);
% if value_t:
${unroll}
        for (uint i = 0; i < IPT; ++i)
            if (dest[i] < TILE)
                lperm[dest[i]] = src[i];
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }
${common.small_sort_write(value_t, "n")}
}

% if iota_ok:
${common.iota_kernel(value_t, index_t)}
% endif
