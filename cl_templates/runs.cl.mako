## Runs of equal keys (clradix.drivers.runs): the run-length encoding of an array, which on a
## sorted array is its unique values, their first positions and their counts.
<%namespace name="common" file="common.mako"/>
/* Position i starts a run when i == 0 or its key differs from key i - 1 in the sort's order
   (common.mako's order_key: -0.0 == +0.0, every NaN equal to every NaN), or, with nan_distinct
   (the Array API's unique_*), when its key is a NaN. The keys are cut into `blocks` blocks of
   `chunk` positions (a multiple of ROUND = WG x IPT), one work-group each; two launches number
   the runs:
     runs_count - table[b] = the run starts in block b, table[blocks + b] = the last of them (0
                  when none: position 0 starts run 0, so the largest over blocks is the last
                  start before any block but the first). The host reads table[0 .. blocks) and
                  sums it: the number of runs m, which sizes the results (the call's one wait);
     runs_write - each block first sums the counts of the blocks before it (its first run
                  number) and takes the largest of their last starts (where the run that
                  reaches into it began): no scan launch between the two. The block goes in
                  rounds of ROUND positions, IPT consecutive ones a work-item, in four phases:
                  load (the work-item's keys and the one before them), mark (which of its
                  positions start a run: bits of a word), number (one work-group scan a round
                  of the work-items' start counts, and beside it of their last starts' largest:
                  the start before each work-item's first) and write. For run r starting at
                  position i: values[r] = keys[i]; with STARTS starts[r] = i; with LENGTHS
                  lengths[r] = starts[r + 1] - starts[r] (n - starts[m - 1] for the last),
                  written by the work-item at the start of run r + 1; with a permutation (perm:
                  the sort's payload, the position each sorted key came from) also index[r] =
                  perm[i] and, for every position i of run r, inverse[perm[i]] = r.
   Parameters: the key codec's (key_kind, key_bits, key_t, key_inf_bits), index_t (uint when
   every position and count fits 32 bits, else ulong), out_t (the starts', index', inverse's
   and lengths' unsigned type of their width), perm_t (None, or the permutation's unsigned
   type), starts and lengths (whether runs_write writes them), wg (work-items per group) and ipt
   (consecutive positions a work-item takes a round, 1 to 32: the bits of the mark's word). */
<% assert index_t in ("uint", "ulong") and out_t in ("uint", "ulong") and wg & (wg - 1) == 0 %>
<% assert 1 <= ipt <= 32 %>
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define OUT_T ${out_t}
#define WG ${wg}
#define IPT ${ipt}
#define ROUND (WG * IPT)
% if perm_t:
#define PERM_T ${perm_t}
% endif
/* the run starts that a mark word holds, and the bit of its last (of a word not 0): with one
   position a work-item, no builtin call (PoCL 3.0 calls its popcount and clz: on a CPU, where
   that is the default, a call a position) */
% if ipt == 1:
#define STARTS_IN(first) ((INDEX_T)(first))
#define LAST_BIT(first) 0u
% else:
#define STARTS_IN(first) ((INDEX_T)popcount(first))
#define LAST_BIT(first) (31u - clz(first))
% endif
${common.step_define()}
${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
${common.wg_scan_fn("wg_scan", "INDEX_T", wg)}
${common.wg_scan_fn("wg_scan_max", "INDEX_T", wg, with_max=True)}

/* whether a position whose key is b starts a run after one whose key is a */
static inline uint starts_after(KEY_T a, KEY_T b, uint nan_distinct)
{
    uint s = order_key(a, 0) != order_key(b, 0);
% if key_kind == "float":
<% sign = 1 << (key_bits - 1); suffix = "UL" if key_bits == 64 else "U" %>
    s |= nan_distinct && (KEY_T)(b & (KEY_T)~(KEY_T)${hex(sign)}${suffix}) > (KEY_T)${hex(key_inf_bits)}${suffix};
% endif
    return s;
}

/* whether position i (< n) starts a run */
static inline uint starts_run(__global const KEY_T* keys, INDEX_T i, uint nan_distinct)
{
    return i == 0 || starts_after(keys[i - 1], keys[i], nan_distinct);
}

/* The runs that start before block b (the counts of blocks 0 .. b - 1 summed) and, in *last,
   the last of their starts (the largest of those blocks' last starts). */
static inline INDEX_T block_origin(__global const INDEX_T* table, uint blocks, uint b,
                                   __local INDEX_T* scratch, uint lid, INDEX_T* last)
{
    INDEX_T runs = 0, at = 0;
    for (uint c = lid; c < b; c += WG) {
        runs += table[c];
        at = max(at, table[blocks + c]);
    }
    INDEX_T total, unused;
    wg_scan_max(runs, at, scratch, lid, &total, &unused, last);
    return total;
}

/* load: k[j] = keys[i0 + j] and *a = the key before i0 (k[0] when i0 is 0), straight from
   global memory, positions from end on read as end - 1 (the mark phase drops them). A warp's
   j-th load touches 32 keys IPT apart; its IPT loads together IPT x 32 consecutive keys (cache
   lines that the first loads bring and the later ones hit). */
STEP void load_round(__private KEY_T* k, KEY_T* a, __global const KEY_T* keys, INDEX_T base,
                     INDEX_T end, uint lid)
{
    const INDEX_T i0 = base + (INDEX_T)lid * IPT;
    const INDEX_T last = end - 1;   /* base < end: a position of the block */
    *a = keys[i0 ? (i0 <= last ? i0 : end) - 1 : 0];
    #pragma unroll
    for (uint j = 0; j < IPT; ++j)
        k[j] = keys[i0 + j <= last ? i0 + j : last];
}

/* mark: bit j of the result says that position i0 + j starts a run: i0 + j is below end, and
   is 0 or its key k[j] starts a run after the one before it (`a` before k[0]) */
STEP uint mark_starts(const __private KEY_T* k, KEY_T a, INDEX_T i0, INDEX_T end,
                      uint nan_distinct)
{
    uint first = 0;
    #pragma unroll
    for (uint j = 0; j < IPT; ++j) {
        first |= starts_after(a, k[j], nan_distinct) << j;
        a = k[j];
    }
    first |= i0 == 0;
    /* the positions below end: all IPT, some or none */
    const uint below = i0 >= end ? 0u : end - i0 >= IPT ? ${hex((1 << ipt) - 1)}u
                                                          : (1u << (uint)(end - i0)) - 1u;
    return first & below;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void runs_count(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n, INDEX_T chunk,
                uint nan_distinct, __global INDEX_T* restrict table)
{
    __local INDEX_T scratch[2 * WG];
    keys += keys_off;
    const uint lid = get_local_id(0);
    const uint b = get_group_id(0);
    const INDEX_T begin = b * chunk;
    const INDEX_T end = min(begin + chunk, n);
    /* one position a work-item an iteration: a warp's loads are 32 consecutive keys */
    INDEX_T mine = 0, last = 0;
    for (INDEX_T i = begin + lid; i < end; i += WG) {
        const uint s = starts_run(keys, i, nan_distinct);
        mine += s;
        last = s ? i : last;
    }
    INDEX_T total, unused, latest;
    wg_scan_max(mine, last, scratch, lid, &total, &unused, &latest);
    if (lid == 0) {
        table[b] = total;
        table[get_num_groups(0) + b] = latest;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void runs_write(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n, INDEX_T chunk,
                uint nan_distinct, __global const INDEX_T* restrict table, INDEX_T m,
                __global KEY_T* restrict values, ulong values_off
% if starts:
                , __global OUT_T* restrict starts, ulong starts_off
% endif
% if lengths:
                , __global OUT_T* restrict lengths, ulong lengths_off
% endif
% if perm_t:
                , __global const PERM_T* restrict perm, ulong perm_off,
                __global OUT_T* restrict index, ulong index_off,
                __global OUT_T* restrict inverse, ulong inverse_off
% endif
                )
{
    __local INDEX_T scratch[2 * WG];
    keys += keys_off;
    const uint lid = get_local_id(0);
    const uint b = get_group_id(0);
    const INDEX_T begin = b * chunk;
    const INDEX_T end = min(begin + chunk, n);
    INDEX_T prev;   /* the last run start before the round */
    INDEX_T run = block_origin(table, get_num_groups(0), b, scratch, lid, &prev);
    /* (begin and end are uniform in the work-group: every work-item runs each round's scan and
       barriers) */
    for (INDEX_T base = begin; base < end; base += ROUND) {
        /* this work-item's positions: i0 .. i0 + IPT - 1, those below end */
        const INDEX_T i0 = base + (INDEX_T)lid * IPT;
        KEY_T k[IPT], a;
        load_round(k, &a, keys, base, end, lid);
        const uint first = mark_starts(k, a, i0, end, nan_distinct);

        /* number: r = the run of the work-item's first start (the runs before the round and
           the starts of the work-items before it); p = the start before that one (the last
           start of those work-items, or before the round when they have none) */
        INDEX_T round;
% if lengths:
        const INDEX_T last = first ? i0 + LAST_BIT(first) : 0;   /* its last start */
        INDEX_T before_last, round_last;
        const INDEX_T before = wg_scan_max(STARTS_IN(first), last, scratch, lid, &round,
                                           &before_last, &round_last);
        INDEX_T p = before ? before_last : prev;
% else:
        const INDEX_T before = wg_scan(STARTS_IN(first), scratch, lid, &round);
% endif
        INDEX_T r = run + before;

        /* write: r counts the runs started up to the position at hand, which is in run
           r - 1 (position 0 starts run 0: r >= 1 from there on) */
        #pragma unroll
        for (uint j = 0; j < IPT; ++j) {
            const INDEX_T i = i0 + j;
% if perm_t:
            if (i >= end)
                break;
            const PERM_T from = perm[perm_off + i];
% endif
            if ((first >> j) & 1u) {
                values[values_off + r] = k[j];
% if starts:
                starts[starts_off + r] = (OUT_T)i;
% endif
% if perm_t:
                index[index_off + r] = (OUT_T)from;
% endif
% if lengths:
                if (r > 0)   /* run r - 1 ends where run r starts */
                    lengths[lengths_off + r - 1] = (OUT_T)(i - p);
                if (r == m - 1)
                    lengths[lengths_off + r] = (OUT_T)(n - i);
                p = i;
% endif
                ++r;
            }
% if perm_t:
            inverse[inverse_off + from] = (OUT_T)(r - 1);
% endif
        }
        run += round;
% if lengths:
        prev = round ? round_last : prev;
% endif
    }
}
