## The hybrid radix sort (after Stehle and Jacobsen, "A Memory Bandwidth-Efficient Hybrid Radix
## Sort on GPUs", SIGMOD 2017): most-significant 8-bit digits first, over global memory, until a
## bucket fits one work-group's tile (CAP keys); then one read and one write of every small bucket
## to sort it in local memory. Every decision is taken on the device: the host enqueues a fixed
## sequence whose launch sizes are bounds (grid-stride loops over lists the kernels fill).
##
##   hy_init    - the first list: one bucket of all n keys (or, n <= CAP, one run of them).
##   per level (L = 0, 1, ...; list p = L % 2 is read, list 1 - p is filled):
##   hy_count   - each block of a listed bucket (consecutive tiles) counts the digit under the
##                bucket's sorted bits and folds its keys' order bits into the bucket's AND and
##                OR (atomics); block 0 empties the other list.
##   hy_scan    - a work-group per bucket: a bucket whose keys agree in every bit left is done; a
##                bucket whose counted digit is constant skips its scatter and goes to the next
##                list, to count the digit under its highest differing bit; otherwise the count
##                table is scanned digit-major (each block's start of each digit) and the children
##                are planned: consecutive children of at most CAP keys form runs of at most CAP
##                keys for hy_local (a run of one child sorts the bits under the digit, of several
##                the digit too), larger ones go to the next list with their blocks, and a larger
##                child with no bit left is copied home in runs of CAP keys.
##   hy_scatter - each block walks its tiles in order: a tile ranked by the digit in local memory
##                (tile_steps.mako's place), its digit runs written at the block's running
##                offsets into the other buffer (stable).
##   hy_local   - each run: its keys loaded once, ranked by each 8-bit digit of its bits that is
##                not constant in the run (the run's AND and OR say which), written home once,
##                the values gathered through the keys' source slots.
##
## Buffers: a bucket occupies the same index range in every buffer, and says which holds it
## (`where`): 0 the caller's input, 1 and 2 the two others (in place, buffer 2 is the input and the
## output: one temporary; argsort: two temporaries, the values' buffer 2 being the output). A
## scatter reads `where` and writes buffer where == 1 ? 2 : 1. `home` has bit w set where buffer w
## is the output (in place 0 and 2, argsort 2), so a bucket done there is not copied.
## Layouts (INDEX_T words unless said): info[INFO_WORDS] = runs, overflow, (count, blocks) of list
## 0 and of list 1; list entry r of list p: desc[(p * lcap + r) * DESC_WORDS + f] = start, len,
## hi (its bits [begin_bit, hi) are still to sort), where | SKIP, first block; its order bits'
## AND and OR as uint words dbits[(p * lcap + r) * 4 + f] = and lo, and hi, or lo, or hi;
## blkmap[p * bcap + g] = the list entry of block g; counts[g * RADIX + d]; runs[x * 3 + f] =
## start, len, bits | where << 8 (bits [begin_bit, bits) to sort; begin_bit: a copy).
## The capacities lcap, bcap and rcap are bounds the host computes (drivers/hybrid.py); reaching
## one sets info[1] and writes nothing past it.
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), wg, ipt, value_t (None for
## keys only), index_t, backend and sg_size (the ranking's subgroup primitives, common.mako), cap
## (CAP: the largest bucket sorted in local memory, at most the tile), tpb (the fewest tiles a
## block walks).
<%namespace name="common" file="common.mako"/>
<%namespace name="tile" file="tile_steps.mako"/>
<%
    RADIX = 256
    TILE = wg * ipt
    iota_ok = value_t in ("uint", "ulong")
    unroll = "    #pragma unroll" if backend == "ptx" else ""
    unroll_at = lambda pad: (" " * pad + "#pragma unroll") if backend == "ptx" else ""
    unroll_n = lambda n, pad: (" " * pad + f"#pragma unroll {n}") if backend == "ptx" else ""
    assert 1 <= cap <= TILE, "a run of CAP keys is sorted in one tile"
    assert tpb >= 1
%>
${tile.prelude()}
#define CAP ${cap}
#define TPB ${tpb}
#define DPW ${-(-RADIX // wg)}
#define INFO_WORDS 8
#define DESC_WORDS 5
#define SKIP 16u
#define WHERE(x) ((uint)(x) & 15u)

${tile.tile_fns()}

/* the tiles each block of a bucket of len keys walks: at least TPB, and no more blocks than maxb */
static inline INDEX_T bucket_tpb(INDEX_T len, uint maxb)
{
    const INDEX_T tiles = (len + TILE - 1) / TILE;
    return max((INDEX_T)TPB, (tiles + maxb - 1) / maxb);
}

static inline INDEX_T bucket_blocks(INDEX_T len, uint maxb)
{
    const INDEX_T tiles = (len + TILE - 1) / TILE;
    const INDEX_T tpb = bucket_tpb(len, maxb);
    return (tiles + tpb - 1) / tpb;
}

/* the lowest bit of the digit a bucket whose bits [begin_bit, hi) are unsorted is split by */
static inline uint digit_low(uint begin_bit, uint hi)
{
    return hi > begin_bit + 8 ? hi - 8 : begin_bit;
}

/* the buffer `where` of a stream */
#define PICK(where, b0, b1, b2) ((where) == 0 ? (b0) : (where) == 1 ? (b1) : (b2))

/* List entry x (= list * lcap + its row) of a bucket: its words, and its order bits' AND and
   OR made ready for hy_count to fold the keys into */
static inline void set_entry(__global INDEX_T* desc, __global uint* dbits, INDEX_T x,
                             INDEX_T start, INDEX_T len, uint hi, uint where, INDEX_T g0)
{
    __global INDEX_T* e = desc + x * DESC_WORDS;
    e[0] = start;
    e[1] = len;
    e[2] = hi;
    e[3] = where;
    e[4] = g0;
    __global uint* b = dbits + x * 4;
    b[0] = 0xffffffffu;
    b[1] = 0xffffffffu;
    b[2] = 0;
    b[3] = 0;
}

/* Run x of the local sort: keys [start, start + len) of buffer `where`, bits [begin_bit, bits)
   to sort */
static inline void set_run(__global INDEX_T* runs, INDEX_T x, INDEX_T start, INDEX_T len,
                           uint bits, uint where)
{
    runs[x * 3] = start;
    runs[x * 3 + 1] = len;
    runs[x * 3 + 2] = bits | (where << 8);
}

/* Appends a bucket to list q (its blocks too); the entry, or (INDEX_T)-1 past a capacity.
   *g0 is its first block. */
static inline INDEX_T push_bucket(__global INDEX_T* info, __global INDEX_T* desc,
                                  __global uint* dbits, uint q, INDEX_T lcap, INDEX_T bcap,
                                  uint maxb, INDEX_T start, INDEX_T len, uint hi, uint where,
                                  INDEX_T* g0)
{
    const INDEX_T nb = bucket_blocks(len, maxb);
    const INDEX_T r = COUNTER_ADD(&info[2 + 2 * q], 1);
    *g0 = COUNTER_ADD(&info[3 + 2 * q], nb);
    if (r >= lcap || *g0 + nb > bcap) {
        COUNTER_XCHG(&info[1], 1);
        return (INDEX_T)-1;
    }
    set_entry(desc, dbits, q * lcap + r, start, len, hi, where, *g0);
    return r;
}

/* Reserves m entries of the run list (work-item 0; *base for every work-item): the first, or
   m = 0 entries past the capacity. Every work-item must call it; it ends with a barrier. */
static inline void reserve_runs(__global INDEX_T* info, INDEX_T rcap, uint m,
                                __local INDEX_T* lbase, __local uint* lcount, uint lid)
{
    if (lid == 0) {
        INDEX_T base = m ? COUNTER_ADD(&info[0], m) : 0;
        uint got = m;
        if (base + m > rcap) {
            COUNTER_XCHG(&info[1], 1);
            got = 0;
        }
        *lbase = base;
        *lcount = got;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Runs that copy keys [start, start + len) of buffer `where` home, CAP keys each (no bit to
   sort). Every work-item must call it. */
static inline void copy_runs(__global INDEX_T* info, __global INDEX_T* runs, INDEX_T rcap,
                             INDEX_T start, INDEX_T len, uint where, uint begin_bit,
                             __local INDEX_T* lbase, __local uint* lcount, uint lid)
{
    reserve_runs(info, rcap, (uint)((len + CAP - 1) / CAP), lbase, lcount, lid);
    const INDEX_T base = *lbase;
    for (uint x = lid; x < *lcount; x += WG) {
        const INDEX_T s = start + (INDEX_T)x * CAP;
        set_run(runs, base + x, s, min((INDEX_T)CAP, start + len - s), begin_bit, where);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* blkmap[q * bcap + g0 + b] = r for the nb blocks of a bucket pushed to list q */
static inline void map_blocks(__global INDEX_T* blkmap, uint q, INDEX_T bcap, INDEX_T r,
                              INDEX_T g0, INDEX_T nb, uint lid)
{
    for (INDEX_T b = lid; b < nb; b += WG)
        blkmap[q * bcap + g0 + b] = r;
}

/* the order key's bits as a ulong (the AND and OR words) */
static inline ulong order_word(KEY_T k, KEY_T flip)
{
    return (ulong)order_key(k, flip);
}

/* lbits[0..3]: the AND (low, high word) and the OR of a work-group's order words, emptied by
   work-item 0 (a barrier must follow before fold_bits) */
static inline void clear_bits(__local uint* lbits, uint lid)
{
    if (lid == 0) {
        lbits[0] = lbits[1] = 0xffffffffu;
        lbits[2] = lbits[3] = 0;
    }
}

/* a work-item's AND a and OR o folded into lbits (a barrier must follow before they are read) */
static inline void fold_bits(__local uint* lbits, ulong a, ulong o)
{
    atomic_and(&lbits[0], (uint)a);
    atomic_and(&lbits[1], (uint)(a >> 32));
    atomic_or(&lbits[2], (uint)o);
    atomic_or(&lbits[3], (uint)(o >> 32));
}

/* The first list (gid 0 writes every info word): one bucket of every key, or one run. */
__kernel void hy_init(INDEX_T n, uint end_bit, INDEX_T nb0, __global INDEX_T* restrict info,
                      __global INDEX_T* restrict desc, __global uint* restrict dbits,
                      __global INDEX_T* restrict blkmap, __global INDEX_T* restrict runs)
{
    const INDEX_T gid = get_global_id(0);
    const uint large = n > CAP;
    if (gid == 0) {
        for (uint x = 0; x < INFO_WORDS; ++x)
            info[x] = 0;
        if (large) {
            set_entry(desc, dbits, 0, 0, n, end_bit, 0, 0);
            info[2] = 1;
            info[3] = nb0;
        } else if (n) {
            set_run(runs, 0, 0, n, end_bit, 0);
            info[0] = 1;
        }
    }
    if (large && gid < nb0)
        blkmap[gid] = 0;
}

/* Block g of list p: the counts of its keys' digit, counts[g * RADIX + d], and its keys' order
   bits folded into its bucket's AND and OR. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void hy_count(__global const KEY_T* keys0, ulong keys0_off, __global const KEY_T* keys1,
              __global const KEY_T* keys2, ulong keys2_off, __global INDEX_T* restrict info,
              __global const INDEX_T* restrict desc, __global uint* restrict dbits,
              __global const INDEX_T* restrict blkmap, __global INDEX_T* restrict counts,
              uint p, INDEX_T lcap, INDEX_T bcap, uint maxb, uint begin_bit, KEY_T flip)
{
    __local uint hist[RADIX];
    __local uint lbits[4];
    const uint lid = get_local_id(0);
    keys0 += keys0_off;
    keys2 += keys2_off;
    if (get_group_id(0) == 0 && lid == 0) {   /* the list hy_scan fills next */
        info[2 + 2 * (1 - p)] = 0;
        info[3 + 2 * (1 - p)] = 0;
    }
    const INDEX_T nblocks = info[3 + 2 * p];
    for (INDEX_T g = get_group_id(0); g < nblocks; g += get_num_groups(0)) {
        const INDEX_T r = blkmap[p * bcap + g];
        __global const INDEX_T* ent = desc + (p * lcap + r) * DESC_WORDS;
        const INDEX_T start = ent[0], len = ent[1];
        const uint hi = (uint)ent[2], where = WHERE(ent[3]);
        const INDEX_T span = bucket_tpb(len, maxb) * TILE;
        const INDEX_T lo = start + (g - ent[4]) * span;
        const INDEX_T end = min(lo + span, start + len);
        const uint shift = digit_low(begin_bit, hi);
        const uint mask = (1u << (hi - shift)) - 1u;
        __global const KEY_T* src = PICK(where, keys0, keys1, keys2);
        for (uint d = lid; d < RADIX; d += WG)
            hist[d] = 0;
        clear_bits(lbits, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        ulong a = ~(ulong)0, o = 0;
${unroll_n(4, 8)}
        for (INDEX_T i = lo + lid; i < end; i += WG) {
            const ulong b = order_word(src[i], flip);
            atomic_inc(&hist[(uint)(b >> shift) & mask]);
            a &= b;
            o |= b;
        }
        fold_bits(lbits, a, o);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint d = lid; d < RADIX; d += WG)
            counts[g * RADIX + d] = hist[d];
        if (lid < 4) {
            __global uint* word = dbits + (p * lcap + r) * 4 + lid;
            if (lid < 2)
                atomic_and(word, lbits[lid]);
            else
                atomic_or(word, lbits[lid]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Work-group per bucket r of list p: done, a constant digit skipped, or the count table scanned
   and the children planned (see the top of this file). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void hy_scan(__global INDEX_T* restrict info, __global INDEX_T* restrict desc,
             __global uint* restrict dbits, __global INDEX_T* restrict blkmap,
             __global INDEX_T* restrict counts, __global INDEX_T* restrict runs, uint p,
             INDEX_T lcap, INDEX_T bcap, INDEX_T rcap, uint maxb, uint begin_bit, uint home)
{
    __local INDEX_T scratch[WG];
    __local INDEX_T lstart[RADIX];
    __local INDEX_T lcnt[RADIX];
    __local uint lnxt[RADIX];          /* a small child's run's end (see below) */
    __local uint lrank[RADIX];         /* the small children below a digit */
    __local uint lfirst[RADIX];        /* the small children, in digit order */
    __local INDEX_T lrs[RADIX];        /* the runs of small children: start, len, bits */
    __local INDEX_T lrl[RADIX];
    __local uint lrb[RADIX];
    __local INDEX_T lbase;
    __local uint lnum;
    const uint lid = get_local_id(0);
    const uint q = 1 - p;
    const INDEX_T nbuckets = info[2 + 2 * p];
    for (INDEX_T r = get_group_id(0); r < nbuckets; r += get_num_groups(0)) {
        __global INDEX_T* ent = desc + (p * lcap + r) * DESC_WORDS;
        const INDEX_T start = ent[0], len = ent[1], g0 = ent[4];
        const uint hi = (uint)ent[2], where = WHERE(ent[3]);
        __global const uint* b = dbits + (p * lcap + r) * 4;
        const ulong a = (ulong)b[0] | ((ulong)b[1] << 32);
        const ulong o = (ulong)b[2] | ((ulong)b[3] << 32);
        const ulong below_hi = hi >= 64 ? ~(ulong)0 : (((ulong)1 << hi) - 1);
        const ulong diff = (a ^ o) & below_hi & ~(((ulong)1 << begin_bit) - 1);
        const uint lo_bit = digit_low(begin_bit, hi);
        const INDEX_T nblk = bucket_blocks(len, maxb);
        barrier(CLK_GLOBAL_MEM_FENCE);   /* (every work-item read the entry: lid 0 writes it) */
        if (diff == 0) {
            /* every key agrees in the bits left: done where it lies */
            if (lid == 0)
                ent[3] = where | SKIP;
            if (!((home >> where) & 1))
                copy_runs(info, runs, rcap, start, len, where, begin_bit, &lbase, &lnum, lid);
            barrier(CLK_LOCAL_MEM_FENCE);
            continue;
        }
        const uint h = 63 - (uint)clz(diff);
        if (h < lo_bit) {
            /* the counted digit is constant: no scatter; the next level counts the digit under
               bit h, the highest that differs */
            if (lid == 0) {
                ent[3] = where | SKIP;
                INDEX_T ng0;
                lrs[0] = push_bucket(info, desc, dbits, q, lcap, bcap, maxb, start, len, h + 1,
                                     where, &ng0);
                lrl[0] = ng0;   /* (the run arrays serve as its entry and first block) */
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lrs[0] != (INDEX_T)-1)
                map_blocks(blkmap, q, bcap, lrs[0], lrl[0], nblk, lid);
            barrier(CLK_LOCAL_MEM_FENCE);
            continue;
        }
        /* the scan: counts[(g0 + blk) * RADIX + d] becomes where block blk's keys of digit d go,
           lstart[d] and lcnt[d] digit d's child */
        const uint d0 = min(lid * DPW, (uint)RADIX), d1 = min(d0 + DPW, (uint)RADIX);
        INDEX_T sum = 0;
        for (uint d = d0; d < d1; ++d) {
${unroll_n(8, 12)}
            for (INDEX_T blk = 0; blk < nblk; ++blk)
                sum += counts[(g0 + blk) * RADIX + d];
        }
        INDEX_T total;
        INDEX_T run = start + wg_scan_index(sum, scratch, lid, &total);
        for (uint d = d0; d < d1; ++d) {
            lstart[d] = run;
${unroll_n(8, 12)}
            for (INDEX_T blk = 0; blk < nblk; ++blk) {
                const INDEX_T at = (g0 + blk) * RADIX + d;
                const INDEX_T c = counts[at];
                counts[at] = run;
                run += c;
            }
            lcnt[d] = run - lstart[d];
        }
        const uint dst = where == 1 ? 2 : 1;
        const uint dst_home = (home >> dst) & 1;
        /* children too large for a run, with bits left: the next list, each work-item its own
           digits' children and their blocks */
        uint copies = 0, smalls = 0;
        const uint copy_home = lo_bit == begin_bit && !dst_home;
        for (uint d = d0; d < d1; ++d) {
            const INDEX_T c = lcnt[d];
            if (c > CAP && lo_bit > begin_bit) {
                INDEX_T ng0;
                const INDEX_T e = push_bucket(info, desc, dbits, q, lcap, bcap, maxb, lstart[d],
                                              c, lo_bit, dst, &ng0);
                if (e != (INDEX_T)-1)
                    for (INDEX_T b = 0, nb = bucket_blocks(c, maxb); b < nb; ++b)
                        blkmap[q * bcap + ng0 + b] = e;
            }
            /* children too large for a run with no bit left: copied home in runs of CAP keys */
            copies += c > CAP && copy_home ? (uint)((c + CAP - 1) / CAP) : 0;
            smalls += c != 0 && c <= CAP;
        }
        /* consecutive small children (1 to CAP keys), at most CAP keys together, form a run,
           taken greedily in digit order. The run that starts at child d ends before lnxt[d],
           the first child that ends past lstart[d] + CAP (a child of more than CAP keys always
           does: runs never cross one); the next run starts at the first small child from
           lnxt[d] on. So each work-item finds its children's ends by a binary search over the
           children's ends (non-decreasing in the digit), the small children are listed in
           digit order (lfirst[i]: the i-th, lrank[x]: how many lie below digit x), and
           work-item 0 only walks the chain of runs. The copies home follow the small runs in
           one reservation, each work-item writing its own children's. (No branch here holds a
           barrier: PoCL 3.0 runs a work-item 0 block after such a branch for every work-item or
           for none, tests/test_barrier_branches.py.) */
        INDEX_T ncopies;
        const INDEX_T copy_at = wg_scan_index((INDEX_T)copies, scratch, lid, &ncopies);
        INDEX_T nsmall;
        uint rank = (uint)wg_scan_index((INDEX_T)smalls, scratch, lid, &nsmall);
        const INDEX_T bucket_end = start + len;
        for (uint d = d0; d < d1; ++d) {
            const INDEX_T c = lcnt[d];
            lrank[d] = rank;
            if (c != 0 && c <= CAP) {
                lfirst[rank++] = d;
                const INDEX_T lim = lstart[d] + CAP;
                uint a = d + 1, z = RADIX;
                while (a < z) {
                    const uint m = (a + z) / 2;
                    if (lstart[m] + lcnt[m] > lim)
                        z = m;
                    else
                        a = m + 1;
                }
                lnxt[d] = a;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            uint nr = 0;
            for (uint d = nsmall ? lfirst[0] : RADIX; d < RADIX;) {
                const uint x = lnxt[d];
                const INDEX_T rl = (x < RADIX ? lstart[x] : bucket_end) - lstart[d];
                /* a run of one child sorts the bits under the digit, of several the digit too */
                const uint bits = rl > lcnt[d] ? hi : lo_bit;
                if (bits > begin_bit || !dst_home) {
                    lrs[nr] = lstart[d];
                    lrl[nr] = rl;
                    lrb[nr] = bits;
                    ++nr;
                }
                d = x < RADIX && lrank[x] < nsmall ? lfirst[lrank[x]] : RADIX;
            }
            lnum = nr;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint nr = lnum;
        barrier(CLK_LOCAL_MEM_FENCE);
        reserve_runs(info, rcap, nr + (uint)ncopies, &lbase, &lnum, lid);
        const INDEX_T base = lbase;
        const uint granted = lnum != 0;   /* (0: past the capacity, nothing written) */
        for (uint x = lid; x < nr && granted; x += WG)
            set_run(runs, base + x, lrs[x], lrl[x], lrb[x], dst);
        INDEX_T at = base + nr + copy_at;
        for (uint d = d0; d < d1 && granted; ++d) {
            const INDEX_T c = lcnt[d];
            if (c > CAP && copy_home) {
                for (INDEX_T s0 = lstart[d]; s0 < lstart[d] + c; s0 += CAP, ++at)
                    set_run(runs, at, s0, min((INDEX_T)CAP, lstart[d] + c - s0), begin_bit, dst);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Block g of list p walks its tiles in order: each is ranked by the digit in local memory, then
   its digit runs are written, coalesced, at the block's running offsets in the other buffer. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) SG_ATTR
void hy_scatter(__global KEY_T* keys0, ulong keys0_off, __global KEY_T* keys1,
                __global KEY_T* keys2, ulong keys2_off,
% if value_t:
                __global VALUE_T* vals0, ulong vals0_off, __global VALUE_T* vals1,
                __global VALUE_T* vals2, ulong vals2_off, uint vals_iota,
% endif
                __global const INDEX_T* restrict info, __global const INDEX_T* restrict desc,
                __global const INDEX_T* restrict blkmap, __global const INDEX_T* restrict counts,
                uint p, INDEX_T lcap, INDEX_T bcap, uint maxb, uint begin_bit, KEY_T flip)
{
    __local KEY_T lkeys[TILE];
    __local ushort lsrc[TILE];
    __local uint lcount[NW * RADIX];
    __local uint lsg[${wg if backend == "local" else 1}];
    __local uint lscan[WG];
    __local INDEX_T lrun[RADIX];
    const uint lid = get_local_id(0);
    const uint w = sg_id(), lane = sg_lane();
    keys0 += keys0_off;
    keys2 += keys2_off;
% if value_t:
    vals0 += vals0_off;
    vals2 += vals2_off;
% endif
    const INDEX_T nblocks = info[3 + 2 * p];
    for (INDEX_T g = get_group_id(0); g < nblocks; g += get_num_groups(0)) {
        const INDEX_T r = blkmap[p * bcap + g];
        __global const INDEX_T* ent = desc + (p * lcap + r) * DESC_WORDS;
        if (ent[3] & SKIP)
            continue;
        const INDEX_T start = ent[0], len = ent[1];
        const uint hi = (uint)ent[2], where = WHERE(ent[3]);
        const INDEX_T span = bucket_tpb(len, maxb) * TILE;
        const INDEX_T lo = start + (g - ent[4]) * span;
        const INDEX_T end = min(lo + span, start + len);
        const uint shift = digit_low(begin_bit, hi);
        const uint mask = (1u << (hi - shift)) - 1u;
        __global const KEY_T* ksrc = PICK(where, keys0, keys1, keys2);
        __global KEY_T* kdst = where == 1 ? keys2 : keys1;
% if value_t:
        __global const VALUE_T* vsrc = PICK(where, vals0, vals1, vals2);
        __global VALUE_T* vdst = where == 1 ? vals2 : vals1;
%   if iota_ok:
        const uint iota = vals_iota && where == 0;
%   endif
% endif
        for (uint d = lid; d < RADIX; d += WG)
            lrun[d] = counts[g * RADIX + d];
        for (INDEX_T base = lo; base < end; base += TILE) {
            const uint valid = (uint)min((INDEX_T)TILE, end - base);
            KEY_T k[IPT];
            ushort src[IPT];
            uint dig[IPT];
            const uint e = (valid + WG - 1) / WG;
            load_slots(k, src, ksrc, base, valid, e, w, lane);
${unroll_at(12)}
            for (uint i = 0; i < IPT; ++i)
                dig[i] = HAS(i) ? digit_of(k[i], shift, mask, flip) : RADIX;
            place(k, src, dig, valid, e, ${1 if value_t else 0}, lkeys, lsrc, lcount, lsg, lscan,
                  w, lane, lid);
${unroll_at(12)}
            for (uint i = 0; i < IPT; ++i) {
                const uint j = i * WG + lid;
                if (j < valid) {
                    const KEY_T key = lkeys[j];
                    const uint d = digit_of(key, shift, mask, flip);
                    const INDEX_T pos = lrun[d] + (j - lcount[d]);
                    kdst[pos] = key;
% if value_t:
                    const INDEX_T from = base + lsrc[j];
%   if iota_ok:
                    vdst[pos] = iota ? (VALUE_T)from : vsrc[from];
%   else:
                    vdst[pos] = vsrc[from];
%   endif
% endif
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint d = lid; d < RADIX; d += WG)
                lrun[d] += (d + 1 < RADIX ? lcount[d + 1] : valid) - lcount[d];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}

/* Each run: its keys loaded once, ranked by each 8-bit digit of bits [begin_bit, bits) that is
   not constant in the run, written home once; values gathered through the source slots. Keys and
   values are read before anything is written, so a run may be sorted where it lies. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) SG_ATTR
void hy_local(__global KEY_T* keys0, ulong keys0_off, __global KEY_T* keys1,
              __global KEY_T* keys2, ulong keys2_off, __global KEY_T* keys_out,
              ulong keys_out_off,
% if value_t:
              __global VALUE_T* vals0, ulong vals0_off, __global VALUE_T* vals1,
              __global VALUE_T* vals2, ulong vals2_off, __global VALUE_T* vals_out,
              ulong vals_out_off, uint vals_iota,
% endif
              __global const INDEX_T* restrict info, __global const INDEX_T* restrict runs,
              uint begin_bit, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lsrc[TILE];
    __local uint lcount[NW * RADIX];
    __local uint lsg[${wg if backend == "local" else 1}];
    __local uint lscan[WG];
    __local uint lbits[4];
    const uint lid = get_local_id(0);
    const uint w = sg_id(), lane = sg_lane();
    keys0 += keys0_off;
    keys2 += keys2_off;
    keys_out += keys_out_off;
% if value_t:
    vals0 += vals0_off;
    vals2 += vals2_off;
    vals_out += vals_out_off;
% endif
    const uint track = ${1 if value_t else 0};
    const INDEX_T nruns = info[0];
    for (INDEX_T x = get_group_id(0); x < nruns; x += get_num_groups(0)) {
        const INDEX_T start = runs[x * 3];
        const uint valid = (uint)runs[x * 3 + 1];
        const uint bits = (uint)runs[x * 3 + 2] & 255u, where = (uint)runs[x * 3 + 2] >> 8;
        __global const KEY_T* ksrc = PICK(where, keys0, keys1, keys2);
        KEY_T k[IPT];
        ushort src[IPT];
        uint dig[IPT];
        const uint e = max(1u, (valid + WG - 1) / WG);
        load_slots(k, src, ksrc, start, valid, e, w, lane);
        /* the run's AND and OR of its order bits: digits that are constant in it are skipped */
        clear_bits(lbits, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        ulong a = ~(ulong)0, o = 0;
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i) {
            if (HAS(i)) {
                const ulong b = order_word(k[i], flip);
                a &= b;
                o |= b;
            }
        }
        fold_bits(lbits, a, o);
        barrier(CLK_LOCAL_MEM_FENCE);
        const ulong diff = ((ulong)lbits[0] | ((ulong)lbits[1] << 32))
                           ^ ((ulong)lbits[2] | ((ulong)lbits[3] << 32));
        uint placed = 0;
        for (uint shift = begin_bit; shift < bits; shift += 8) {
            const uint mask = (1u << min(8u, bits - shift)) - 1u;
            if (!((uint)(diff >> shift) & mask))
                continue;   /* (uniform: diff is the work-group's) */
            if (placed)
                reload_slots(k, src, lkeys, lsrc, valid, e, track, w, lane);
${unroll_at(12)}
            for (uint i = 0; i < IPT; ++i)
                dig[i] = HAS(i) ? digit_of(k[i], shift, mask, flip) : RADIX;
            place(k, src, dig, valid, e, track, lkeys, lsrc, lcount, lsg, lscan, w, lane, lid);
            placed = 1;
        }
        if (!placed) {   /* nothing to sort by: the run as it is */
${unroll_at(12)}
            for (uint i = 0; i < IPT; ++i) {
                if (HAS(i)) {
                    lkeys[SLOT(i)] = k[i];
                    lsrc[SLOT(i)] = src[i];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
% if value_t:
        __global const VALUE_T* vsrc = PICK(where, vals0, vals1, vals2);
%   if iota_ok:
        const uint iota = vals_iota && where == 0;
%   endif
        VALUE_T v[IPT];
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i) {
            const uint j = i * WG + lid;
            if (j < valid) {
                const INDEX_T from = start + lsrc[j];
%   if iota_ok:
                v[i] = iota ? (VALUE_T)from : vsrc[from];
%   else:
                v[i] = vsrc[from];
%   endif
            }
        }
% endif
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
${unroll_at(8)}
        for (uint i = 0; i < IPT; ++i) {
            const uint j = i * WG + lid;
            if (j < valid) {
                if (write_keys)
                    keys_out[start + j] = lkeys[j];
% if value_t:
                vals_out[start + j] = v[i];
% endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
% if iota_ok:

${common.iota_kernel(value_t, index_t)}
% endif
