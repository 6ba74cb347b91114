## Shared pieces of every kernel family: the key codec, the sort kernels' prelude (their #defines,
## a key's digit, a value's load), work-group scans and votes, subgroup primitives, counters and
## the release and acquire between work-groups. Each device primitive is defined here once.
## Each def emits OpenCL C; a kernel template imports them with
##   <%namespace name="common" file="common.mako"/>
##
## Device capabilities have one name each in every template: `ptx` (an NVIDIA GPU, whose OpenCL
## compiler takes inline PTX: warp votes, shuffles, fences and relaxed or acquire accesses) and
## `c11` (OpenCL C 2.0 atomics, the program built with -cl-std=CL2.0 or later). The host computes
## both (clradix.core.device.DeviceProfile.has_ptx; clradix.drivers.onesweep.status_atomics).
##
## Every function of every template is `static inline`: a plain (C99) inline function that the
## compiler leaves uninlined is a call to an external definition that no one provides, and clang
## leaves large ones (a ranking, a look-back) uninlined. Functions that take a tile's private
## arrays are STEPs (step_define: always inlined, so that the arrays stay in registers). Their
## pointer parameters are not restrict: an inlined restrict parameter leaves a call to
## llvm.experimental.noalias.scope.decl, which oclgrind cannot run (the kernels' own restrict
## parameters say what is not aliased).

## The order key (see clradix/keys.py): an unsigned integer whose order is numpy's order of the keys,
## with every NaN after +inf and -0.0 equal to +0.0. `flip` is all ones for a descending sort.
<%def name="order_key_fn(key_kind, key_bits, key_t, key_inf_bits)">
<%
    ones = (1 << key_bits) - 1
    sign = 1 << (key_bits - 1)
    skey_t = {"uchar": "char", "ushort": "short", "uint": "int", "ulong": "long"}[key_t]
    suffix = "UL" if key_bits == 64 else "U"
%>
/* The bits' order: a bijection (key_from_ordered inverts it) whose order is numpy's for every key
   but -0.0 and the NaNs (is_special), which ordered_canon puts in numpy's order; for floats two
   operations. A onesweep tile holds each key in this form, in the key's own register, from its
   load to its write (onesweep_steps.mako). */
static inline ${key_t} order_bits(${key_t} x, ${key_t} flip)
{
% if key_kind == "float":
    const ${key_t} neg = (${key_t})((${skey_t})x >> ${key_bits - 1});  /* all ones if negative */
    return (${key_t})(x ^ (neg | (${key_t})${hex(sign)}${suffix}) ^ flip);
% elif key_kind == "int":
    return (${key_t})(x ^ (${key_t})${hex(sign)}${suffix} ^ flip);
% else:
    return (${key_t})(x ^ flip);
% endif
}

/* the key whose order_bits (under the same flip) is y */
static inline ${key_t} key_from_ordered(${key_t} y, ${key_t} flip)
{
% if key_kind == "float":
    const ${key_t} z = (${key_t})(y ^ flip);
    /* all ones where z's top bit is set: the key was positive, only its sign bit flipped */
    const ${key_t} pos = (${key_t})((${skey_t})z >> ${key_bits - 1});
    return (${key_t})(z ^ ((${key_t})~pos | (${key_t})${hex(sign)}${suffix}));
% else:
    return order_bits(y, flip);   /* (an involution for integer keys) */
% endif
}

/* order_key from y = order_bits(x, flip): without branches (one select each: a branch per key
   costs more in an unrolled tile); integer keys are their own */
static inline ${key_t} ordered_canon(${key_t} y, ${key_t} flip)
{
% if key_kind == "float":
<%
    hi = key_inf_bits | sign          # +inf's order bits; beyond it, the positive NaNs
    lo = ones ^ hi                    # -inf's; below it, the negative NaNs
%>    const ${key_t} z = (${key_t})(y ^ flip);
    ${key_t} c = z == (${key_t})${hex(ones >> 1)}${suffix}
        ? (${key_t})${hex(sign)}${suffix} : z;        /* -0.0 == +0.0 */
    c = (${key_t})(z - (${key_t})${hex(lo)}${suffix}) > (${key_t})${hex(hi - lo)}${suffix}
        ? (${key_t})${hex(ones)}${suffix} : c;        /* every NaN: after +inf */
    return (${key_t})(c ^ flip);
% else:
    return y;
% endif
}

static inline ${key_t} order_key(${key_t} x, ${key_t} flip)
{
    return ordered_canon(order_bits(x, flip), flip);
}

/* whether order_key and order_bits differ for x: -0.0 or a NaN (never for integer keys) */
static inline uint is_special(${key_t} x)
{
% if key_kind == "float":
    return x == (${key_t})${hex(sign)}${suffix}
        || (${key_t})(x & (${key_t})${hex(ones >> 1)}${suffix}) > (${key_t})${hex(key_inf_bits)}${suffix};
% else:
    return 0;
% endif
}
</%def>

## Exclusive scan of one value per work-item across a work-group of `wg` items, through `scratch`
## (wg elements of local memory). Returns the exclusive prefix and stores the total in *total.
## With `with_max`, beside it and with the same barriers, the exclusive running largest of a
## second value w (0 before work-item 0: for unsigned types) into *before_max and the largest of
## all into *all_max; `scratch` then needs 2 * wg elements.
## Every work-item must call it; it ends with a barrier, so `scratch` may be reused at once.
<%def name="wg_scan_fn(name, t, wg, with_max=False)">
% if with_max:
static inline ${t} ${name}(${t} v, ${t} w, __local ${t}* scratch, uint lid, ${t}* total,
${' ' * (len(name) + len(t) + 16)}${t}* before_max, ${t}* all_max)
% else:
static inline ${t} ${name}(${t} v, __local ${t}* scratch, uint lid, ${t}* total)
% endif
{
% if wg == 1:
    /* one work-item: no barrier (Intel's CPU compiler builds this scan's barriers inside
       runs_write's loop into a kernel that writes outside its buffers) */
    *total = v;
% if with_max:
    *before_max = 0;
    *all_max = w;
% endif
    return 0;
% else:
    scratch[lid] = v;
% if with_max:
    __local ${t}* const high = scratch + ${wg};   /* the running largest of w */
    high[lid] = w;
% endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < ${wg}; off <<= 1) {
        ${t} other = lid >= off ? scratch[lid - off] : (${t})0;
% if with_max:
        const ${t} other_max = lid >= off ? high[lid - off] : (${t})0;
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] += other;
% if with_max:
        high[lid] = max(high[lid], other_max);
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    ${t} inclusive = scratch[lid];
    *total = scratch[${wg} - 1];
% if with_max:
    *before_max = lid ? high[lid - 1] : (${t})0;
    *all_max = high[${wg} - 1];
% endif
    barrier(CLK_LOCAL_MEM_FENCE);
    return inclusive - v;
% endif
}
</%def>

## The start of a sort kernel template (onesweep, reduce_then_scan): the #defines of the key, index
## and value types and of the tile's shape, the order key, a key's digit and (with values) a value's
## load. The template's own #defines follow it.
<%def name="sort_prelude(key_kind, key_bits, key_t, key_inf_bits, index_t, radix_bits, wg, ipt,
                         value_t)">
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define RADIX ${1 << radix_bits}
#define WG ${wg}
#define IPT ${ipt}
#define TILE ${wg * ipt}
% if value_t:
#define VALUE_T ${value_t}
% endif

${order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
/* the digit of ordered key y (order_bits or order_key) in a pass: bits [shift, shift +
   popcount(digit_mask)) */
static inline uint ordered_digit(KEY_T y, uint shift, uint digit_mask)
{
    return (uint)(y >> shift) & digit_mask;
}
/* the digit of key x in a pass: its order key's */
static inline uint digit_of(KEY_T x, uint shift, uint digit_mask, KEY_T flip)
{
    return ordered_digit(order_key(x, flip), shift, digit_mask);
}
/* whether some keys' order_key and order_bits differ (is_special): keys of a floating type */
#define KEY_SPECIALS ${int(key_kind == "float")}
% if value_t:

/* the value of the element at index i: vals[i], or with iota (argsort's indices, made by the
   sort) the index itself, counted from `first` */
static inline VALUE_T value_at(__global const VALUE_T* vals, INDEX_T i, INDEX_T first, uint iota)
{
%   if value_t in ("uint", "ulong"):
    if (iota)
        return (VALUE_T)(first + i);
%   endif
    return vals[i];
}
% endif
</%def>

## The first parameters of a sort kernel: the keys in and out and, with values, the values in and
## out (each a buffer and an element offset) and vals_iota (the values are the indices, made by
## the sort). `pad` spaces indent the lines after the first; a kernel writes
##   void name(${common.stream_params(value_t, pad) | trim}
<%def name="stream_params(value_t, pad, restrict=True)" buffered="True">
<% r = " restrict" if restrict else ""; sp = " " * pad %>
__global const KEY_T*${r} keys_in, ulong keys_in_off,
${sp}__global KEY_T*${r} keys_out, ulong keys_out_off,
% if value_t:
${sp}__global const VALUE_T*${r} vals_in, ulong vals_in_off,
${sp}__global VALUE_T*${r} vals_out, ulong vals_out_off, uint vals_iota,
% endif
</%def>

## Exclusive scan, in place, of m entries: entry x (0 <= x < m) is in[at] and out[at], `at` a C
## expression of x (the storage order of the entries); out[at] becomes the sum of the entries
## before x. Each work-item rakes a contiguous run of entries through `scan` (a wg_scan_fn, over
## `scratch`). in and out may be the same array. Every work-item must call it. With `per` (a C
## constant), m is per * WG and each work-item rakes exactly per entries (a loop of known length).
<%def name="rake_scan_fn(name, t, space, scan, at='x', per=None)">
static inline void ${name}(${space} const ${t}* in, ${space} ${t}* out, uint m,
${' ' * (len(name) + 19)}__local ${t}* scratch, uint lid)
{
% if per:
    const uint b = lid * ${per};
    const uint e = b + ${per};
% else:
    const uint per = (m + WG - 1) / WG;
    const uint b = min(lid * per, m);
    const uint e = min(b + per, m);
% endif
    ${t} sum = 0;
    for (uint x = b; x < e; ++x)
        sum += in[${at}];
    ${t} total;
    ${t} run = ${scan}(sum, scratch, lid, &total);
    for (uint x = b; x < e; ++x) {
        const uint a = ${at};
        const ${t} c = in[a];
        out[a] = run;
        run += c;
    }
}
</%def>

## Whether any work-item of the work-group passes a non-zero `mine`, through the local word *flag.
## Every work-item must call it; it ends with a barrier, so *flag may be used again at once.
<%def name="wg_any_fn()">
static inline uint wg_any(__local uint* flag, uint mine)
{
    if (get_local_id(0) == 0)
        *flag = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (mine)
        atomic_or(flag, 1u);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint any = *flag;
    barrier(CLK_LOCAL_MEM_FENCE);
    return any;
}
</%def>

## Subgroup primitives for ranking (SIMD digit counting, docs/algorithms.md), one back-end per device:
##   "ptx"    NVIDIA: inline PTX (vote.sync.ballot per digit bit, %lanemask_lt, bar.warp.sync); warps of 32
##   "khr"    cl_khr_subgroup_ballot: a ballot per digit bit builds the match mask
##   "intel"  cl_intel_subgroups: shuffles build the match mask
##   "local"  emulated through local memory (any OpenCL device): virtual subgroups of sg_size
##            consecutive work-items; sg_sync is a work-group barrier, so every work-item must call
##            these the same number of times.
## Each back-end defines: sg_lane(), sg_id(), sg_lt_mask(), sg_match(d, scratch), sg_sync().
## sg_match(d) is the mask of lanes holding the same d, for d < 2**match_bits.
## `scratch` is __local uint[wg] (only the "local" back-end uses it).
<%def name="sg_primitives(backend, sg_size, wg, match_bits)">
<% full = (1 << sg_size) - 1 %>
% if backend == "ptx":
static inline uint sg_lane(void) { uint r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }
static inline uint sg_id(void) { return get_local_id(0) >> 5; }
static inline uint sg_lt_mask(void) { uint r; asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(r)); return r; }
static inline void sg_sync(void) { asm volatile("bar.warp.sync -1;" ::: "memory"); }
/* the lanes whose d equals this lane's, from one vote.ballot per bit of d (CUB's util_ptx.cuh notes
   that match.any.sync is slower when matching few bits, and so it is for 8-bit digits here:
   BENCHMARKS_NOTES.md, "Onesweep on NVIDIA: ballots and tiles") */
${ballot_match_fn("sg_match", match_bits)}
/* (this back-end only) lane src's v, for every lane */
static inline uint sg_shuffle(uint v, uint src)
{
    uint r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, -1;" : "=r"(r) : "r"(v), "r"(src));
    return r;
}
/* (this back-end only) the warp's inclusive sum of v up to this lane */
static inline uint warp_scan_incl(uint v, uint lane)
{
    uint x = v;
    #pragma unroll
    for (uint off = 1; off < 32; off <<= 1) {
        uint y;
        asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, -1;" : "=r"(y) : "r"(x), "r"(off));
        if (lane >= off)
            x += y;
    }
    return x;
}
% elif backend == "khr":
static inline uint sg_lane(void) { return get_sub_group_local_id(); }
static inline uint sg_id(void) { return get_sub_group_id(); }
static inline uint sg_lt_mask(void) { return get_sub_group_lt_mask().x; }
static inline void sg_sync(void) { sub_group_barrier(CLK_LOCAL_MEM_FENCE); }
static inline uint sg_match(uint d, __local uint* scratch)
{
    uint m = ${hex(full)}u;
    for (uint b = 0; b < ${match_bits}; ++b) {
        const uint bit = (d >> b) & 1u;
        const uint bal = sub_group_ballot((int)bit).x;
        m &= bit ? bal : ~bal;
    }
    return m;
}
% elif backend == "intel":
static inline uint sg_lane(void) { return get_sub_group_local_id(); }
static inline uint sg_id(void) { return get_sub_group_id(); }
static inline uint sg_lt_mask(void) { return (1u << get_sub_group_local_id()) - 1u; }
static inline void sg_sync(void) { sub_group_barrier(CLK_LOCAL_MEM_FENCE); }
static inline uint sg_match(uint d, __local uint* scratch)
{
    uint m = 0;
    for (uint k = 0; k < ${sg_size}; ++k)
        m |= (intel_sub_group_shuffle(d, k) == d) ? (1u << k) : 0u;
    return m;
}
% else:
static inline uint sg_lane(void) { return get_local_id(0) % ${sg_size}; }
static inline uint sg_id(void) { return get_local_id(0) / ${sg_size}; }
static inline uint sg_lt_mask(void) { return (1u << sg_lane()) - 1u; }
static inline void sg_sync(void) { barrier(CLK_LOCAL_MEM_FENCE); }
static inline uint sg_match(uint d, __local uint* scratch)
{
    const uint lid = get_local_id(0);
    const uint first = lid - sg_lane();
    scratch[lid] = d;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint m = 0;
    for (uint k = 0; k < ${sg_size}; ++k)
        m |= (scratch[first + k] == d) ? (1u << k) : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}
% endif
</%def>

## The "ptx" back-end's match: `name`(d) is the mask of the lanes of the warp whose d equals this
## lane's, for d < 2**bits, from one vote.ballot per bit of d. sg_primitives' sg_match is one
## (its unused `scratch` parameter kept: scratch=True); segmented's sg_match_digits another, over
## fewer bits.
<%def name="ballot_match_fn(name, bits, scratch=True)">\
static inline uint ${name}(uint d${", __local uint* scratch" if scratch else ""})
{
    /* each bit's vote, its complement for a clear bit and the AND inside one asm statement: no
       predicate lives outside it (NVIDIA's ptxas cannot always allocate predicate registers
       for the selects of the C form in an unrolled ranking: "register count of '7'") */
    uint m = 0xffffffffu;
% for b in range(bits):
    asm("{ .reg .pred q; .reg .b32 t; setp.ne.u32 q, %1, 0; vote.sync.ballot.b32 t, q, -1;"
        " @!q not.b32 t, t; and.b32 %0, %2, t; }" : "=r"(m) : "r"(d & ${1 << b}u), "r"(m));
% endfor
    return m;
}
</%def>

## The ranking of a tile's items by digit inside their subgroups (tile_rank.mako's
## rank_in_subgroups, the block rank's first step): one round per item i, the lanes holding the same digit dig[i] (sg_match: its peers)
## ranked in lane order after the subgroup's count so far of that digit, lcount[w * RADIX + d],
## which grows by the peers; the rank shares the digit's register (dig[i] |= rank << 16). RADIX is
## padding: it matches only padding and is never counted. C names it uses: dig, lcount, lsg, w,
## lane (and valid); `unroll` is the template's unroll line. With `valid` (a C expression: the
## tile's items, in slot order SLOT(i) = w * SG * IPT + i * SG + lane), a subgroup stops at its
## first round of padding only (not on "local", whose sg_match has barriers for the whole
## work-group) and with `full_match` (a "ptx" ballot_match_fn) a round without padding matches
## through it. `stride` (a C expression, uniform in the work-group, at most IPT): the items a
## subgroup holds, SLOT(i) = w * SG * stride + i * SG + lane for i < stride (items from stride on
## are padding). Every work-item runs the loop; its caller ends it with a barrier.
<%def name="rank_rounds(backend, unroll, valid=None, full_match=None, stride='IPT')">\
${unroll}
    for (uint i = 0; i < IPT; ++i) {
% if valid and backend != "local":
        if (${"" if stride == "IPT" else f"i >= {stride} || "}w * (SG * ${stride}) + i * SG >= ${valid})
            break;   /* the subgroup's remaining items are padding (uniform in the subgroup) */
% endif
        const uint d = dig[i];
% if full_match and backend == "ptx":
        const uint peers = w * (SG * ${stride}) + i * SG + SG <= ${valid} ? ${full_match}(d)
                                                                 : sg_match(d, lsg);
% else:
        const uint peers = sg_match(d, lsg);
% endif
        const uint before = peers & sg_lt_mask();
% if backend == "ptx":
        /* the highest peer adds the group to the subgroup's count; the old count is shuffled */
        const uint leader = 31u - clz(peers);
        uint old = 0;
        if (d < RADIX && lane == leader)
            old = atomic_add(&lcount[w * RADIX + d], popcount(peers));
        const uint cnt = sg_shuffle(old, leader);
% else:
        const uint cnt = d < RADIX ? lcount[w * RADIX + d] : 0u;
        sg_sync();
        if (d < RADIX && before == 0)
            lcount[w * RADIX + d] = cnt + popcount(peers);
        sg_sync();
% endif
        dig[i] |= (cnt + popcount(before)) << 16;
    }
</%def>

## The write-out of a whole sort of one tile by one work-group (onesweep's os_small,
## reduce_then_scan's rts_small): the sorted keys are in lkeys[0..count), lperm[j] the source
## position of sorted key j; the values are read (value_at) before anything is written, so the
## output may be the input. `count` is a C expression; keys_out/vals_out are already offset;
## `key` the C expression of the key written from place j (os_small stages ordered keys).
<%def name="small_sort_write(value_t, count, key='lkeys[j]')">\
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
    VALUE_T v[IPT];
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < ${count})
            v[i] = value_at(vals_in, lperm[j], 0, vals_iota);
    }
% endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < ${count}) {
            if (write_keys)
                keys_out[j] = ${key};
% if value_t:
            vals_out[j] = v[i];
% endif
        }
    }
</%def>

## STEP, the qualifier of a kernel step that takes a tile's private arrays: always inlined, and
## static (see the top of this file for why static).
<%def name="step_define()">\
/* the steps that take the tile's private arrays: always inlined, so that the arrays stay in
   registers (clang leaves a large static inline function called from several places a call,
   and its arrays in memory) */
#define STEP static inline __attribute__((always_inline))
</%def>

## vals[i] = i: the indices of an argsort that sorts no bits.
<%def name="iota_kernel(value_t, index_t)">
__kernel void rts_iota(__global ${value_t}* restrict vals, ulong vals_off, ${index_t} n)
{
    const ${index_t} i = get_global_id(0);
    if (i < n)
        vals[vals_off + i] = (${value_t})i;
}
</%def>

## The same exclusive work-group scan for NVIDIA: warp scans (sg_primitives' "ptx" back-end's
## warp_scan_incl, emitted before it), one barrier pair. `scratch` needs wg / 32 elements.
<%def name="wg_scan_warp_fn(name, wg)">
static inline uint ${name}(uint v, __local uint* scratch, uint lid, uint* total)
{
    const uint lane = lid & 31u;
    const uint x = warp_scan_incl(v, lane);
    if (lane == 31)
        scratch[lid >> 5] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint before = 0, all = 0;
    #pragma unroll
    for (uint w = 0; w < ${wg // 32}; ++w) {
        const uint s = scratch[w];
        before += w < (lid >> 5) ? s : 0u;
        all += s;
    }
    *total = all;
    barrier(CLK_LOCAL_MEM_FENCE);
    return before + x - v;
}
</%def>

## Ballots for sg_primitives' "ptx" back-end (vote.sync.ballot over the full warp): the mask of the
## lanes whose pred is not zero, and of those whose a equals b (the compare inside the ballot).
<%def name="sg_ballot_fn(backend)">
<% assert backend == "ptx", "sg_ballot: only the ptx back-end" %>
static inline uint sg_ballot(uint pred)
{
    uint r;
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %1, 0; vote.sync.ballot.b32 %0, q, -1; }"
                 : "=r"(r) : "r"(pred));
    return r;
}
static inline uint sg_ballot_eq(uint a, uint b)
{
    uint r;
    asm volatile("{ .reg .pred q; setp.eq.u32 q, %1, %2; vote.sync.ballot.b32 %0, q, -1; }"
                 : "=r"(r) : "r"(a), "r"(b));
    return r;
}
</%def>

## A count of index_t in global memory that several work-groups change: COUNTER_ADD(p, v) and
## COUNTER_XCHG(p, v) return the old count, COUNTER_TAKE(p) returns it and zeroes it. 64-bit
## counts need cl_khr_int64_base_atomics, which the template enables.
<%def name="counter_fns(index_t)">\
% if index_t == "ulong":
#define COUNTER_ADD(p, v) atom_add((volatile __global ulong*)(p), (ulong)(v))
#define COUNTER_XCHG(p, v) atom_xchg((volatile __global ulong*)(p), (ulong)(v))
% else:
#define COUNTER_ADD(p, v) atomic_add((volatile __global uint*)(p), (uint)(v))
#define COUNTER_XCHG(p, v) atomic_xchg((volatile __global uint*)(p), (uint)(v))
% endif
#define COUNTER_TAKE(p) COUNTER_XCHG(p, 0)
</%def>

## Accesses to words that other work-groups of the same launch read or write. By OpenCL's rules a
## plain access to such a word is a data race, so every one is atomic:
##   status_load(p), status_store(p, v): relaxed (no order with other accesses);
##   arrive(p): adds one after everything this work-item (and, through a barrier before it, its
##              work-group) wrote, and returns the old count;
##   release_store(p, v): stores v after everything this work-item wrote;
##   load_acquire(p): reads p so that what was written before its arrive or release_store is
##              seen after;
##   global_fence(): orders this work-item's accesses to global memory before it against those
##              after it, for every work-group of the device.
## `ptx`: PTX's relaxed and acquire accesses and fences (as cheap as plain accesses); `c11`: OpenCL
## C 2.0's atomic_load_explicit and the like (plain moves on a CPU); else OpenCL 1.2, which has no
## atomic load or store: a read-modify-write that changes nothing, an exchange, and fences.
<%def name="cross_group_fns(ptx, c11)">
% if ptx:
static inline uint status_load(__global volatile uint* p)
{
    uint r;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
    return r;
}
static inline void status_store(__global volatile uint* p, uint v)
{
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
static inline uint arrive(__global volatile uint* p)
{
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    const uint old = atomic_inc(p);
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    return old;
}
static inline void release_store(__global volatile uint* p, uint v)
{
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    atomic_xchg(p, v);
}
static inline uint load_acquire(__global volatile uint* p)
{
    uint r;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
    return r;
}
% elif c11:
static inline uint status_load(__global volatile uint* p)
{
    return atomic_load_explicit((volatile __global atomic_uint*)p, memory_order_relaxed,
                                memory_scope_device);
}
static inline void status_store(__global volatile uint* p, uint v)
{
    atomic_store_explicit((volatile __global atomic_uint*)p, v, memory_order_relaxed,
                          memory_scope_device);
}
static inline uint arrive(__global volatile uint* p)
{
    return atomic_fetch_add_explicit((volatile __global atomic_uint*)p, 1u, memory_order_acq_rel,
                                     memory_scope_device);
}
static inline void release_store(__global volatile uint* p, uint v)
{
    atomic_store_explicit((volatile __global atomic_uint*)p, v, memory_order_release,
                          memory_scope_device);
}
static inline uint load_acquire(__global volatile uint* p)
{
    return atomic_load_explicit((volatile __global atomic_uint*)p, memory_order_acquire,
                                memory_scope_device);
}
% else:
static inline uint status_load(__global volatile uint* p) { return atomic_or(p, 0u); }
static inline void status_store(__global volatile uint* p, uint v) { atomic_xchg(p, v); }
static inline uint arrive(__global volatile uint* p)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    const uint old = atomic_inc(p);
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    return old;
}
static inline void release_store(__global volatile uint* p, uint v)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    atomic_xchg(p, v);
}
static inline uint load_acquire(__global volatile uint* p)
{
    const uint r = atomic_or(p, 0u);
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    return r;
}
% endif
% if ptx:
static inline void global_fence(void) { asm volatile("membar.gl;" ::: "memory"); }
% else:
static inline void global_fence(void) { mem_fence(CLK_GLOBAL_MEM_FENCE); }
% endif
</%def>

## Bitonic sort in local memory of `size` entries (a power of two) by key, ascending; with tie_t,
## equal keys by tie; with carry_t, carry's entries move with their keys. Every work-item of the
## work-group (WG of them) must call it; each step's size / 2 compare-exchanges are dealt to the
## work-items in rounds of WG, a loop of the same trip count in every work-item with an `if` on
## the exchange (a loop whose bounds depend on the work-item is unsafe after a barrier on PoCL:
## radix_select_steps.mako). Each step ends with a barrier.
<%def name="bitonic_sort_fn(name, key_t, tie_t=None, carry_t=None)">
<%
    params = f"__local {key_t}* key"
    params += f", __local {tie_t}* tie" if tie_t else ""
    params += f", __local {carry_t}* carry" if carry_t else ""
    order = "by key" + (", ties by tie" if tie_t else "")
    order += ", carry moving with them" if carry_t else ""
%>
/* bitonic sort of size (a power of two) entries in local memory ${order}: every work-item of the
   work-group calls it */
static inline void ${name}(${params}, uint size, uint lid)
{
    for (uint len = 2; len <= size; len <<= 1) {
        for (uint stride = len >> 1; stride > 0; stride >>= 1) {
            for (uint j = 0; j < (size / 2 + WG - 1) / WG; ++j) {
                const uint t = j * WG + lid;
                if (t < size / 2) {
                    const uint a = 2 * t - (t & (stride - 1));
                    const uint b = a + stride;
                    const ${key_t} ka = key[a], kb = key[b];
% if tie_t:
                    const ${tie_t} ta = tie[a], tb = tie[b];
                    const bool a_gt_b = ka > kb || (ka == kb && ta > tb);
% else:
                    const bool a_gt_b = ka > kb;
% endif
                    if (a_gt_b == ((a & len) == 0)) {
                        key[a] = kb;
                        key[b] = ka;
% if tie_t:
                        tie[a] = tb;
                        tie[b] = ta;
% endif
% if carry_t:
                        const ${carry_t} ca = carry[a];
                        carry[a] = carry[b];
                        carry[b] = ca;
% endif
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}
</%def>

## The pragmas of a program that ranks with subgroups: 64-bit atomic counters (index_t "ulong")
## and the ranking back-end's subgroup extensions (onesweep_steps.mako, tile_steps.mako).
<%def name="subgroup_pragmas(backend, index_t)">\
% if index_t == "ulong":
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
% if backend == "khr":
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_ballot : enable
% elif backend == "intel":
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
% endif
</%def>

## SG_ATTR: the subgroup width a kernel of the khr or intel back-end states (nothing elsewhere).
<%def name="sg_attr_define(backend)">\
% if backend in ("khr", "intel"):
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG)))
% else:
#define SG_ATTR
% endif
</%def>
