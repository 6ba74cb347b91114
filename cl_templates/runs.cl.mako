## Runs of equal keys (clradix.drivers.runs): the run-length encoding of an array, which on a
## sorted array is its unique values, their first positions and their counts.
<%namespace name="common" file="common.mako"/>
/* Position i starts a run when i == 0 or its key differs from key i - 1 in the sort's order
   (common.mako's order_key: -0.0 == +0.0, every NaN equal to every NaN), or, with nan_distinct
   (the Array API's unique_*), when its key is a NaN. The keys are cut into `blocks` blocks of
   `chunk` positions (a multiple of WG), one work-group each; two launches number the runs:
     runs_count - table[b] = the run starts in block b, table[blocks + b] = the last of them (0
                  when none: position 0 starts run 0, so the largest over blocks is the last
                  start before any block but the first). The host reads table[0 .. blocks) and
                  sums it: the number of runs m, which sizes the results (the call's one wait);
     runs_write - each block first sums the counts of the blocks before it (its first run
                  number) and takes the largest of their last starts (where the run that
                  reaches into it began): no scan launch between the two. Then for run r
                  starting at position i: values[r] = keys[i]; with STARTS starts[r] = i; with
                  LENGTHS lengths[r] = starts[r + 1] - starts[r] (n - starts[m - 1] for the
                  last), written by the work-item at the start of run r + 1 from the starts of
                  its round kept in local memory; with a permutation (perm: the sort's payload,
                  the position each sorted key came from) also index[r] = perm[i] and, for every
                  position i of run r, inverse[perm[i]] = r.
   Parameters: the key codec's (key_kind, key_bits, key_t, key_inf_bits), index_t (uint when
   every position and count fits 32 bits, else ulong), out_t (the starts', index', inverse's
   and lengths' unsigned type of their width), perm_t (None, or the permutation's unsigned
   type), starts and lengths (whether runs_write writes them), wg (work-items per group). */
<% assert index_t in ("uint", "ulong") and out_t in ("uint", "ulong") and wg & (wg - 1) == 0 %>
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define OUT_T ${out_t}
#define WG ${wg}
% if perm_t:
#define PERM_T ${perm_t}
% endif
${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
${common.wg_scan_fn("wg_scan", "INDEX_T", wg)}
${common.wg_max_fn("wg_max", "INDEX_T", wg)}

/* whether position i (< n) starts a run */
static inline uint starts_run(__global const KEY_T* keys, INDEX_T i, uint nan_distinct)
{
    if (i == 0)
        return 1u;
    const KEY_T b = keys[i];
    uint s = order_key(keys[i - 1], 0) != order_key(b, 0);
% if key_kind == "float":
<% sign = 1 << (key_bits - 1); suffix = "UL" if key_bits == 64 else "U" %>
    s |= nan_distinct && (KEY_T)(b & (KEY_T)~(KEY_T)${hex(sign)}${suffix}) > (KEY_T)${hex(key_inf_bits)}${suffix};
% endif
    return s;
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
    INDEX_T total;
    wg_scan(runs, scratch, lid, &total);
    *last = wg_max(at, scratch, lid);
    return total;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void runs_count(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n, INDEX_T chunk,
                uint nan_distinct, __global INDEX_T* restrict table)
{
    __local INDEX_T scratch[WG];
    keys += keys_off;
    const uint lid = get_local_id(0);
    const uint b = get_group_id(0);
    const INDEX_T begin = b * chunk;
    const INDEX_T end = min(begin + chunk, n);
    INDEX_T mine = 0, last = 0;
    for (INDEX_T i = begin + lid; i < end; i += WG) {
        const uint s = starts_run(keys, i, nan_distinct);
        mine += s;
        last = s ? i : last;
    }
    INDEX_T total;
    wg_scan(mine, scratch, lid, &total);
    const INDEX_T latest = wg_max(last, scratch, lid);
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
    __local INDEX_T scratch[WG];
% if lengths:
    __local INDEX_T round_starts[WG];   /* the run starts of a round, in their order */
% endif
    keys += keys_off;
    const uint lid = get_local_id(0);
    const uint b = get_group_id(0);
    const INDEX_T begin = b * chunk;
    const INDEX_T end = min(begin + chunk, n);
    INDEX_T prev;   /* the last run start before the round */
    INDEX_T run = block_origin(table, get_num_groups(0), b, scratch, lid, &prev);
    /* (begin and end are uniform in the work-group: every work-item runs each round's scan and
       barriers) */
    for (INDEX_T base = begin; base < end; base += WG) {
        const INDEX_T i = base + lid;
        const INDEX_T first = i < end ? starts_run(keys, i, nan_distinct) : 0;
        INDEX_T round;
        const INDEX_T before = wg_scan(first, scratch, lid, &round);
        const INDEX_T r = run + before + first - 1;   /* the run of position i */
        if (i < end) {
% if perm_t:
            const PERM_T from = perm[perm_off + i];
% endif
            if (first) {
                values[values_off + r] = keys[i];
% if starts:
                starts[starts_off + r] = (OUT_T)i;
% endif
% if perm_t:
                index[index_off + r] = (OUT_T)from;
% endif
% if lengths:
                round_starts[before] = i;
% endif
            }
% if perm_t:
            inverse[inverse_off + from] = (OUT_T)r;
% endif
        }
% if lengths:
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i < end && first) {
            if (r > 0)   /* run r - 1 ends where run r starts */
                lengths[lengths_off + r - 1] =
                    (OUT_T)(i - (before ? round_starts[before - 1] : prev));
            if (r == m - 1)
                lengths[lengths_off + r] = (OUT_T)(n - i);
        }
        if (round)
            prev = round_starts[round - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
        run += round;
    }
}
