## What the programs that rank a tile of keys by subgroups share (onesweep_steps.mako: the
## onesweep programs; tile_steps.mako: the segmented sort). A Mako library of defs that emit C and
## read the program's template parameters (key codec, wg, ipt, value_t, index_t, backend, sg_size)
## from the render's context.
<%namespace name="common" file="common.mako"/>

## The head of such a program: the asserts on its tile, the pragmas, the keys' and the tile's
## #defines (`radix_bits`-bit digits), SG, NW, STEP, SG_ATTR, the subgroup primitives (sg_match
## over `match_bits`-bit digits), the index counters and the work-group scan of uints
## (wg_scan_uint).
<%def name="prelude(radix_bits, match_bits)">
<%
    assert wg % sg_size == 0 and sg_size <= 32
    assert wg * ipt < 1 << 16, "a key's rank shares a 32-bit word with its digit"
%>\
${common.subgroup_pragmas(backend, index_t)}
${common.sort_prelude(key_kind, key_bits, key_t, key_inf_bits, index_t, radix_bits, wg, ipt,
                      value_t)}
#define SG ${sg_size}
#define NW ${wg // sg_size}
${common.step_define()}
${common.sg_attr_define(backend)}

${common.sg_primitives(backend, sg_size, wg, match_bits)}
${common.counter_fns(index_t)}
% if backend == "ptx":
${common.wg_scan_warp_fn("wg_scan_uint", wg)}
% else:
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% endif
</%def>


## The block rank: a tile's keys in registers, each one's digit in dig[i] (`radix_bits` bits),
## ranked stably by digit in four steps (rank_in_subgroups, sum_subgroups, scan_digits, places)
## over the subgroup counters lcount (NW x RADIX words, zeroed by the caller) and a RankStorage.
## A caller may act between the steps (onesweep publishes the tile's digit counts before the
## scan). Two forms:
## - onesweep's (`segmented` False): padding holds a digit of its own (PAD_DIGIT), counted and
##   placed after every key; the digits' counts and places are in RankStorage.digits, apart from
##   the counters, which a onesweep pass's staging area overlays once the places are known.
## - the segmented sort's (`segmented` True): padding holds digit RADIX, outside the counters
##   (9-bit match), and rank_in_subgroups skips the rounds of padding (it takes the tile's `valid`
##   keys and its items per work-item `e`; `full_match`: the ballot match of a round without
##   padding, ptx); the digits' counts and places are kept in subgroup 0's counters (whose
##   exclusive sum over subgroups is 0), so that lcount[d] ends as the number of the tile's keys
##   whose digit is below d, and a key of subgroup 0 adds no subgroup count of its own.
<%def name="rank_fns(radix_bits, segmented, full_match=None)">
<%
    RADIX = 1 << radix_bits
    unroll = "    #pragma unroll" if backend == "ptx" else ""
    digits = "lcount" if segmented else "r->digits"
%>\
/* The ranking's local memory, but for the subgroup counters (NW x RADIX words) */
typedef struct {
% if not segmented:
    uint digits[RADIX];   /* the tile's digit counts, then (scan_digits) their first places */
% endif
    uint scan[WG];        /* scan_digits' scratch */
    uint sg[${wg if backend == "local" else 1}];  /* sg_match's scratch (the local back-end's) */
} RankStorage;

/* exclusive scan of the tile's digit counts, in place (digit-major: one run of digits a
   work-item) */
${common.rake_scan_fn("rake_scan_digits", "uint", "__local", "wg_scan_uint")}

% if not segmented:
/* Count (os_pass's early counts, as CUB's onesweep on sm90 ranks): lcount[w * RADIX + d] counts
   subgroup w's keys of digit d (zeroed by the caller), one local atomic a key, so that the
   tile's counts go out before its keys are ranked and the ranking runs while the predecessors
   publish theirs. Then sum_subgroups, scan_digits, rank_in_subgroups and places_ranked. No
   barrier: the caller's next barrier ends it. */
STEP void count_in_subgroups(__private const uint dig[IPT], __local uint* lcount, uint w)
{
${unroll}
    for (uint i = 0; i < IPT; ++i)
        atomic_inc(&lcount[w * RADIX + dig[i]]);
}

% endif
/* Rank 1, within subgroups: lcount[w * RADIX + d] counts subgroup w's keys of digit d (from 0,
   or after early counts from subgroup w's first rank in the digit); a key's rank among its
   subgroup's keys of its digit, in (round, lane) order, joins its digit: dig[i] |= rank << 16.
   No barrier: the caller's next barrier ends it. */
<% tile_args = "uint valid, uint e, " if segmented else "" %>\
STEP void rank_in_subgroups(__private uint dig[IPT], __local uint* lcount,
                            __local RankStorage* r, ${tile_args}uint w, uint lane)
{
    __local uint* lsg = r->sg;
% if segmented:
${common.rank_rounds(backend, unroll, valid="valid", full_match=full_match, stride="e")}
% else:
${common.rank_rounds(backend, unroll)}
% endif
}

/* Rank 2, across subgroups (after a barrier): for each of this work-item's digits, the
   subgroups' counts become their exclusive sum over subgroups (subgroup w's first rank within
   the digit) and the tile's count goes to cnt[q] and to ${digits}[d] */
STEP void sum_subgroups(__private uint cnt[DPI], __local uint* lcount, __local RankStorage* r,
                        uint lid)
{
    for (uint q = 0, d = lid; d < RADIX; d += WG, ++q) {
        uint run = 0;
        for (uint w = 0; w < NW; ++w) {
            const uint c = lcount[w * RADIX + d];
            lcount[w * RADIX + d] = run;
            run += c;
        }
        cnt[q] = run;
        ${digits}[d] = run;
    }
}

/* Rank 3: ${digits}[0 .. RADIX) (the tile's counts) becomes each digit's first place in the
   tile. Ends with a barrier: every work-item then reads every digit's place. */
STEP void scan_digits(__local uint* lcount, __local RankStorage* r, uint lid)
{
% if RADIX > wg:
    barrier(CLK_LOCAL_MEM_FENCE);   /* the rake's runs are not the digits this work-item summed */
% endif
    rake_scan_digits(${digits}, ${digits}, RADIX, r->scan, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Rank 4: dest[i], key k[i]'s place in the tile: its digit's first place, its subgroup's first
   rank within the digit, its rank within the subgroup${" (TILE for padding)" if segmented else ""} */
STEP void places(__private uint dest[IPT], __private const uint dig[IPT],
                 __local const uint* lcount, __local const RankStorage* r, uint w)
{
${unroll}
    for (uint i = 0; i < IPT; ++i) {
        const uint d = dig[i] & 0xffffu;
% if segmented:
        dest[i] = d < RADIX ? lcount[d] + (w ? lcount[w * RADIX + d] : 0u) + (dig[i] >> 16)
                            : TILE;
% else:
        dest[i] = r->digits[d] + lcount[w * RADIX + d] + (dig[i] >> 16);
% endif
    }
}
% if not segmented:

/* Rank 4 after early counts (the ranking's counters started at each subgroup's first rank in
   the digit, so a key's rank is its place among the tile's keys of its digit) */
STEP void places_ranked(__private uint dest[IPT], __private const uint dig[IPT],
                        __local const RankStorage* r)
{
${unroll}
    for (uint i = 0; i < IPT; ++i)
        dest[i] = r->digits[dig[i] & 0xffffu] + (dig[i] >> 16);
}
% endif
</%def>
