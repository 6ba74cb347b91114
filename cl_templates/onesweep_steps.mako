## The shared steps of the onesweep programs (onesweep.cl.mako: os_histogram, os_bins, os_pass;
## onesweep_fused.cl.mako: os_fused; onesweep_small.cl.mako: os_small). A Mako library: each def
## emits C, and reads the program's template parameters (key type, radix_bits, wg, ipt, backend,
## ...) from the render's context. C comments, not Mako ones, carry what a build log's reader
## needs.
<%namespace name="common" file="common.mako"/>
<%namespace name="rank" file="tile_rank.mako"/>

## The head of every onesweep program: tile_rank.mako's (pragmas, the keys' and the tile's
## constants, the subgroup primitives), then the cross-group accesses.
<%def name="prelude()">
<% RADIX = 1 << radix_bits %>\
${rank.prelude(radix_bits, radix_bits)}
/* digits per work-item: work-item lid owns digits lid, lid + WG, ... */
#define DPI ${-(-RADIX // wg)}
/* the work-group size the kernels are built for: stated, except under a register cap, which
   NVIDIA's compiler ignores on a kernel that states it (drivers/onesweep.py, capped_registers) */
#define WG_ATTR ${"__attribute__((reqd_work_group_size(WG, 1, 1)))" if reqd_wg else ""}

/* padding slots of a tile take the largest digit: a subgroup's padding comes after its keys, so
   the padding ranks after every key of the tile and its places are the tile's last ones */
#define PAD_DIGIT (RADIX - 1u)

${common.cross_group_fns(ptx, c11)}
</%def>

## The form a tile holds a key in, from its load (tile_key) to its write (key_of_tile), in the
## key's own register: a float key as its order_bits (the order's sign flip applied once, where
## it is loaded), an integer key as itself (its order, one xor, is applied where a digit is
## taken: held in the order's form the integer passes kept more values live and spilled more,
## BENCHMARKS_NOTES.md "Float keys in their order's form"). `tile_digit(y, canon, mask)`: the C
## expression of the digit of tile key `y`: its order bits' digit, or with `canon` (float keys
## only) numpy's order key's (ordered_canon: -0.0 == +0.0, NaN after +inf).
<%def name="tile_key(x)">${f"order_bits({x}, flip)" if key_kind == "float" else x}</%def>
<%def name="key_of_tile(y)">${f"key_from_ordered({y}, flip)" if key_kind == "float" else y}</%def>
<%def name="tile_digit(y, canon, mask='digit_mask')">\
% if key_kind != "float":
ordered_digit(order_bits(${y}, flip), shift, ${mask})\
% elif canon:
ordered_digit(ordered_canon(${y}, flip), shift, ${mask})\
% else:
ordered_digit(${y}, shift, ${mask})\
% endif
</%def>

## A tile loop `loop(canon)` in the form the pass's keys need: for float keys two copies under
## the uniform `exact` (no -0.0 or NaN in the pass: the bits' digits), for integer keys one.
<%def name="by_exactness(loop)">\
% if key_kind == "float":
    if (exact) {
${loop(False)}
    } else {
${loop(True)}
    }
% else:
${loop(False)}
% endif
</%def>

## The ranking of a tile, shared by os_pass, os_fused and os_small: keys in registers
## (KEY_T k[IPT], lane-striped by subgroup), each key's digit in dig[] (PAD_DIGIT for padding),
## ranked by tile_rank.mako's block rank.
<%def name="ranking_fns()">
<%
    RADIX = 1 << radix_bits
    unroll = "    #pragma unroll" if backend == "ptx" else ""
%>\
${rank.rank_fns(radix_bits, False)}
<%def name="load_loop(canon)">
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = w * SG * IPT + i * SG + lane;
        k[i] = j < valid ? ${tile_key("keys[j]")} : (KEY_T)0;
        dig[i] = j < valid ? ${tile_digit("k[i]", canon)} : PAD_DIGIT;
    }
</%def>\
/* load: subgroup w holds keys [w*SG*IPT, (w+1)*SG*IPT) of the tile, lane-striped (coalesced);
   k[i] holds its key in the tile's form (tile_key: a floating-point key's order_bits) until the
   write, and dig[i] its digit, PAD_DIGIT for padding. `exact`: the pass's keys hold
   no -0.0 and no NaN (os_histogram counted them), so the bits' digit is the order key's. */
static inline void load_keys(__private KEY_T k[IPT], __private uint dig[IPT],
                             __global const KEY_T* keys, uint valid, uint shift,
                             uint digit_mask, KEY_T flip, uint exact, uint w, uint lane)
{
${by_exactness(load_loop)}
}
</%def>

## The digit counts of every pass in one read of the keys, and their scan into digit starts
## (os_histogram and os_bins; os_fused's histogram work-groups).
<%def name="histogram_fns()">
<%
    RADIX = 1 << radix_bits
    MAXP = -(-key_bits // radix_bits)
    hv = 16 // (key_bits // 8)   # keys per 16-byte load
    unroll = "    #pragma unroll" if backend == "ptx" else ""
%>\
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
${common.rake_scan_fn("rake_scan_index", "INDEX_T", "__global", "wg_scan_index")}

/* lh[p * RADIX + d] += 1 for key x's digit d of each pass p */
static inline void hist_key(KEY_T x, KEY_T flip, __local uint* lh, uint passes,
                            __private const uint* sh, __private const uint* mk)
{
    const KEY_T k = order_key(x, flip);
${unroll}
    for (uint p = 0; p < ${MAXP}; ++p)
        if (p < passes)
            atomic_inc(&lh[p * RADIX + ((uint)(k >> sh[p]) & mk[p])]);
}

/* hist[p * RADIX + d] += the number of keys of this work-group's share (group of groups,
   grid-stride) whose digit of pass p is d, counted in lh (local, passes x RADIX). The keys are
   read 16 bytes at a time (${hv} keys) where their start allows it, the rest one at a time.
   hist[passes * RADIX] += the number of its keys that are -0.0 or NaN (is_special). */
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
    uint specials = 0;
% if hv > 1:
    if ((keys_off & ${hv - 1}) == 0) {
        const INDEX_T nv = n / ${hv};
        __global const ${key_t}${hv}* kv = (__global const ${key_t}${hv}*)keys;
        for (INDEX_T v = first; v < nv; v += stride) {
            const ${key_t}${hv} x = kv[v];
%   for c in range(hv):
            hist_key(x.s${"0123456789abcdef"[c]}, flip, lh, passes, sh, mk);
            specials += is_special(x.s${"0123456789abcdef"[c]});
%   endfor
        }
        head = nv * ${hv};
    }
% endif
    for (INDEX_T i = head + first; i < n; i += stride) {
        hist_key(keys[i], flip, lh, passes, sh, mk);
        specials += is_special(keys[i]);
    }
    if (specials)
        COUNTER_ADD(&hist[passes * RADIX], specials);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < passes * RADIX; e += WG)
        if (lh[e])
            COUNTER_ADD(&hist[e], lh[e]);
}
</%def>

## The look-back and the other steps of a digit pass's tile (os_pass, os_fused; `fused`: os_fused,
## whose histogram work-groups count and scan in the tile's staging area).
<%def name="pass_fns(fused=False)">
<%
    RADIX = 1 << radix_bits
    MAXP = -(-key_bits // radix_bits)
    unroll = "    #pragma unroll" if backend == "ptx" else ""
    assert lookback + 1 <= ring, "the ring must outrun the look-back"
    assert ring_words == ring * (RADIX + 1) + 1, "a ring: status words, done words, a counter"
%>\
/* The status ring (Adinets & Merrill's decoupled look-back, in a ring of constant size).
   Status word (32 bits): [31:30] flag (0 not ready, 1 aggregate, 2 inclusive prefix), [29] epoch
   (parity of tile / RING, so a slot's previous owner is never mistaken for its current one),
   [28:0] count, relative to the portion (so a portion holds fewer than 2**29 keys).
   Tile t uses slot t % RING. A tile looks back at most LOOKBACK tiles through the ring (beyond
   that it counts a predecessor's digits from its keys), and claims its slot only once every tile
   that could still read the slot's previous owner has finished its look-back: tiles t - RING to
   t - RING + LOOKBACK. A tile marks itself done in a ring of done words (done[t % RING] = t + 1,
   which only grows), and a claimant reads those words.
   Two rings: launch k (a pass, or a portion of one) reads ring k % 2 and zeroes the part of the
   other ring that launch k + 1 will use; os_histogram zeroes ring 0 for the first launch.
   Fallback: a look-back that spins SPIN_LIMIT times on a tile that has not published counts
   that tile's digits from its keys, posts them, and goes on. FORCE_FALLBACK does so at once. */
#define RING ${ring}
#define LOOKBACK ${lookback}
#define SPIN_LIMIT ${spin_limit}
/* words of one ring: RING x RADIX status words, RING done words, the tile counter (the host's
   count, drivers/onesweep.py, ring_words) */
#define RING_WORDS ${ring_words}
#define LB_WIN 8
#define FLAG_AGG 0x40000000u
#define FLAG_PREFIX 0x80000000u
#define FLAG_MASK 0xc0000000u
#define EPOCH_BIT 0x20000000u
#define VALUE_MASK 0x1fffffffu
/* lflags: [0] wg_any's word, [1] some digit's look-back needs the slow path, [2] os_fused's
   last histogram work-group */
#define FLAG_WORDS 3
${common.wg_any_fn()}

/* The local memory of a digit pass's tile (pass_tile), declared once by the kernel (OpenCL
   declares __local variables at kernel scope). The staging area holds in turn: the subgroup
   counters (consumed by places_ranked(), before the keys are placed), the tile's keys in digit order
   (read by scatter_keys before scatter_values' barrier lets the values overwrite them), its
   values; os_fused's histogram work-groups count and scan there before any tile. Its size is
   the host's (drivers/onesweep.py, stage_bytes, which the driver budgets), or the counters' if
   larger. */
typedef struct {
    union {
        ulong2 raw[${(max(stage_bytes, wg // sg_size * RADIX * 4) + 15) // 16}];
        uint count[NW * RADIX];   /* the subgroup counters */
        KEY_T keys[TILE];
% if value_t:
        VALUE_T vals[TILE];
% endif
% if fused:
        uint hist[${MAXP} * RADIX];   /* os_fused: every pass's digit counts (count_all_digits) */
        INDEX_T scan[WG];         /* os_fused: the digit starts' scan */
% endif
    } stage;
    INDEX_T base[RADIX];   /* where a digit's keys of the tile go, less its first place */
    RankStorage rank;
    uint fb[RADIX];        /* a predecessor's digit counts (fallback) */
    uint tile;             /* the tile id, from the kernel's one work-item to all */
    uint flags[FLAG_WORDS];
} TileStorage;

static inline uint status_epoch(uint tile) { return ((tile / RING) & 1u) ? EPOCH_BIT : 0u; }

/* Zero what the first `slots` tiles of a launch use in `ring` (their status and done words, and
   the tile counter), spread over `groups` work-groups (this one is `group`). */
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

/* Claim tile t's ring slot: its previous owner (t - RING) and every tile that may still read
   that owner (t - RING + 1 .. t - RING + LOOKBACK) must have finished their look-back. The owner
   itself matters: until it is done, it may still write its prefix and its done word into this
   slot. Each work-item waits for its own done words; the caller's next barrier joins the waits.
   Why a wait ends: the tiles waited for took their ids before this tile did, so their
   work-groups have started, and a device runs the work-groups it has started. Each reaches its
   done word in a bounded number of steps: its look-back is bounded (spin limit, then fallback)
   and its own claim waits only for tiles with still smaller ids; tiles below RING claim nothing.
   By induction on the tile id every claim ends. (The counter starts at 0 in every launch: the
   launch before clears it.) */
static inline void claim_slot(uint t, __global volatile uint* done, uint lid)
{
    if (t >= RING)
        for (uint x = t - RING + lid; x <= t - RING + LOOKBACK; x += WG)
            while (status_load(&done[x % RING]) < x + 1)
                ;
}

/* The digit counts of tile u of the portion, computed from its keys (fallback). */
static inline void tile_histogram(__global const KEY_T* keys, uint portion_len, uint u,
                                  uint shift, uint digit_mask, KEY_T flip, __local uint* lfb,
                                  uint lid)
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

/* Look-back, fast path for digit d of tile t, by one work-item without barriers: a window of
   LB_WIN predecessors read at once (independent loads), the ready ones consumed in order, ending
   at a prefix; at the look-back limit only a prefix will do. Returns the digit's exclusive
   prefix | FLAG_PREFIX, or 0 where it spun too long or reached the limit (the slow path then
   takes over). */
static inline uint look_back_digit(__global volatile uint* status, uint t, uint d)
{
    uint acc = 0;
    uint found = t == 0;
% if not force_fallback:
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
                                    uint u, uint dist, int ring_ok, __private const uint pre[DPI],
                                    uint lid)
{
    const uint useslot = (u % RING) * RADIX;
    const uint uepoch = status_epoch(u);
    uint missing = 0;
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        uint s = 0;
        if (pre[q] & FLAG_PREFIX) {
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

/* Fallback: count tile u's digits from its keys, post them (where its slot holds no word of
   tile u yet), and take them as its words. Tile 0's counts are its inclusive prefix and go out
   flagged so, which ends every walk back at tile 0. */
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
static inline uint add_predecessor(__private const uint words[DPI], __private uint pre[DPI],
                                   uint lid)
{
    uint more = 0;
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        if (pre[q] & FLAG_PREFIX)
            continue;
        const uint s = words[q];
        pre[q] += s & VALUE_MASK;
        if (s & FLAG_PREFIX)
            pre[q] |= FLAG_PREFIX;
        else
            more = 1;
    }
    return more;
}

/* Look-back, slow path, for the whole work-group (every work-item calls it): one predecessor
   at a time for the digits whose fast path gave up (pre[q] without FLAG_PREFIX), spinning on a
   predecessor up to SPIN_LIMIT rounds, then counting its digits from its keys. */
static inline void look_back_slow(__private uint pre[DPI], __global volatile uint* status,
                                  uint t, __global const KEY_T* keys, uint portion_len,
                                  uint shift, uint digit_mask, KEY_T flip, __local uint* lfb,
                                  __local uint* lflags, uint lid)
{
    uint u = t - 1;
    uint dist = 1;
    uint spins = 0;
    for (;;) {
        const int ring_ok = ${'0' if force_fallback else 'dist <= LOOKBACK'};
        uint words[DPI];
        if (wg_any(lflags, read_predecessor(words, status, u, dist, ring_ok, pre, lid))) {
            if (ring_ok && ++spins < SPIN_LIMIT)
                continue;  /* spin on the same predecessor */
            fallback_counts(words, status, u, dist, keys, portion_len, shift, digit_mask, flip,
                            lfb, lid);
        }
        spins = 0;
        if (!wg_any(lflags, add_predecessor(words, pre, lid)) || u == 0)
            break;
        --u;
        ++dist;
    }
}

/* Digit d's look-back is done (pre: its exclusive prefix | FLAG_PREFIX): the tile's inclusive
   prefix goes to its slot (tile 0 posted its counts as prefixes), lbase[d] becomes where the
   digit's keys of the tile go less their first place in the tile, and the portion's last tile
   writes the next portion's digit start (bins_out, where not null). */
static inline void finish_digit(uint d, uint pre, uint cnt, INDEX_T bin, uint t, uint last,
                                __global volatile uint* status_slot, uint epoch,
                                __local const uint* ldigits, __local INDEX_T* lbase,
                                __global INDEX_T* bins_out)
{
    const uint excl = pre & VALUE_MASK;
    if (t > 0)
        status_store(&status_slot[d], FLAG_PREFIX | epoch | (excl + cnt));
    lbase[d] = bin + excl - ldigits[d];
    if (last && bins_out)
        bins_out[d] = bin + excl + cnt;
}

/* The keys go out from local memory in their tile order (coalesced runs per digit), each
   turned back from the tile's form; dj[i] keeps the digit of place i * WG + lid for the
   values */
<%def name="scatter_loop(canon)">
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            const KEY_T y = lkeys[j];
            dj[i] = ${tile_digit("y", canon)};
            if (write_keys)
                keys_out[lbase[dj[i]] + j] = ${key_of_tile("y")};
        }
    }
</%def>\
static inline void scatter_keys(__private uint dj[IPT], __local const KEY_T* lkeys,
                                __global KEY_T* keys_out, uint write_keys, uint valid,
                                uint shift, uint digit_mask, KEY_T flip, uint exact,
                                __local const INDEX_T* lbase, uint lid)
{
${by_exactness(scatter_loop)}
}
% if value_t:

/* values: loaded as the keys were, they take the keys' places through the same local memory
   (lvals overlays lkeys: the barrier before their placement keeps the keys' reads first) */
static inline void scatter_values(__private const uint dest[IPT], __private const uint dj[IPT],
                                  __global const VALUE_T* vals_in, __global VALUE_T* vals_out,
                                  uint vals_iota, INDEX_T first, uint valid,
                                  __local VALUE_T* lvals, __local const INDEX_T* lbase, uint w,
                                  uint lane, uint lid)
{
    VALUE_T v[IPT];
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint j = w * SG * IPT + i * SG + lane;
        if (j < valid)
            v[i] = value_at(vals_in, j, first, vals_iota);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
${unroll}
    for (uint i = 0; i < IPT; ++i)
        if (dest[i] < valid)
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

/* One tile of a digit pass, as named phases; every work-item calls it, with the tile id in
   s->tile (written before the call by one work-item). keys and vals point at the portion's first
   element; status and done are the pass's ring; bins_in holds the pass's digit starts; exact:
   no key is -0.0 or NaN (load_keys).
   Barriers: 7 (3 of them in the digit scan), 2 more with values; the slow look-back has its
   own. */
static inline void pass_tile(
        __global const KEY_T* keys, __global KEY_T* keys_out, uint write_keys,
% if value_t:
        __global const VALUE_T* vals, __global VALUE_T* vals_out, uint vals_iota,
        INDEX_T portion_start,
% endif
        uint portion_len, uint shift, uint digit_mask, KEY_T flip, uint exact,
        __global volatile uint* status, __global volatile uint* done,
        __global const INDEX_T* bins_in, __global INDEX_T* bins_out,
        __local TileStorage* s)
{
    const uint lid = get_local_id(0);
    const uint lane = sg_lane();
    const uint w = sg_id();
    __local uint* lcount = s->stage.count;
    __local uint* ldigits = s->rank.digits;

    /* begin: zero the subgroup counters and the slow-path flag; the pass's digit starts are
       needed only after the look-back but loaded now */
    for (uint e = lid; e < NW * RADIX; e += WG)
        lcount[e] = 0;
    if (lid == 0)
        s->flags[1] = 0;
    INDEX_T bin[DPI];
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q)
        bin[q] = bins_in[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint t = s->tile;
    const uint base = t * TILE;
    const uint valid = min((uint)TILE, portion_len - base);
    const uint last = base + valid == portion_len;
    __global volatile uint* slot = status + (t % RING) * RADIX;
    const uint epoch = status_epoch(t);

    /* load and count the digits by subgroups; the ring claim waits after the counting */
    KEY_T k[IPT];
    uint dig[IPT];
    load_keys(k, dig, keys + base, valid, shift, digit_mask, flip, exact, w, lane);
    count_in_subgroups(dig, lcount, w);
    claim_slot(t, done, lid);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* the tile's counts go out (less the padding, all of it of PAD_DIGIT), then its digits'
       places in the tile */
    uint cnt[DPI];
    sum_subgroups(cnt, lcount, &s->rank, lid);
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        if (d == PAD_DIGIT)
            cnt[q] -= TILE - valid;
        status_store(&slot[d], (t == 0 ? FLAG_PREFIX : FLAG_AGG) | epoch | cnt[q]);
    }
    scan_digits(lcount, &s->rank, lid);
    /* lcount now holds each subgroup's first rank within each digit: the ranking's counters
       start there */
    rank_in_subgroups(dig, lcount, &s->rank, w, lane);
    uint dest[IPT];
    places_ranked(dest, dig, &s->rank);
    barrier(CLK_LOCAL_MEM_FENCE);   /* the staging area overlays the subgroup counters */
${unroll}
    for (uint i = 0; i < IPT; ++i)
        if (dest[i] < valid)
            s->stage.keys[dest[i]] = k[i];

    /* look-back, each digit by its own work-item; a digit that gives up raises the flag that
       sends the whole work-group down the slow path */
    uint pre[DPI];
    uint gave_up = 0;   /* bit q: digit lid + q * WG left to the slow path */
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        pre[q] = look_back_digit(status, t, d);
        if (pre[q])
            finish_digit(d, pre[q], cnt[q], bin[q], t, last, slot, epoch, ldigits, s->base,
                         bins_out);
        else
            gave_up |= 1u << q;
    }
    if (gave_up)
        atomic_or(&s->flags[1], 1u);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (s->flags[1]) {
        look_back_slow(pre, status, t, keys, portion_len, shift, digit_mask, flip, s->fb,
                       s->flags, lid);
        for (uint q = 0, d = lid; d < RADIX; d += WG, ++q)
            if (gave_up & (1u << q))
                finish_digit(d, pre[q], cnt[q], bin[q], t, last, slot, epoch, ldigits,
                             s->base, bins_out);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* this tile is done with the ring: done words only grow (atomic_max), whatever the order of
       the stores */
    if (lid == 0)
        atomic_max(&done[t % RING], t + 1);

    uint dj[IPT];
    scatter_keys(dj, s->stage.keys, keys_out, write_keys, valid, shift, digit_mask, flip, exact,
                 s->base, lid);
% if value_t:
    scatter_values(dest, dj, vals + base, vals_out, vals_iota, portion_start + base, valid,
                   s->stage.vals, s->base, w, lane, lid);
% endif
}
</%def>
