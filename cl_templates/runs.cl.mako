## Runs of equal keys (clradix.drivers.runs): the run-length encoding of an array, which on a
## sorted array is its unique values, their first positions and their counts.
<%namespace name="common" file="common.mako"/>
/* Position i starts a run when i == 0 or its key differs from key i - 1 in the sort's order
   (common.mako's order_key: -0.0 == +0.0, every NaN equal to every NaN), or, with nan_distinct
   (the Array API's unique_*), when its key is a NaN. The keys are cut into `blocks` blocks of
   `chunk` positions (a multiple of WG); the runs are numbered in one reduce-then-scan:
     runs_count  - counts[b] = the run starts in block b; the last block also sets
                   counts[blocks] = 0;
     runs_scan   - one work-group: counts[0..blocks] becomes its exclusive prefix sum, so
                   counts[b] is the first run number of block b and counts[blocks] the number of
                   runs (which the host reads to size the results);
     runs_write  - for run r starting at position i: starts[r] = i, values[r] = keys[i]; with a
                   permutation (perm: the sort's payload, the position each sorted key came
                   from) also index[r] = perm[i] and, for every position i of run r,
                   inverse[perm[i]] = r;
     runs_lengths - lengths[r] = starts[r + 1] - starts[r] (n - starts[r] for the last run),
                   for r < m.
   Parameters: the key codec's (key_kind, key_bits, key_t, key_inf_bits), index_t (uint when
   every position and count fits 32 bits, else ulong), out_t (the starts', index', inverse's
   and lengths' unsigned type of their width), perm_t (None, or the permutation's unsigned
   type), wg (work-items per group). */
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
${common.rake_scan_fn("scan_counts", "INDEX_T", "__global", "wg_scan")}

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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void runs_count(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n, INDEX_T chunk,
                uint nan_distinct, __global INDEX_T* restrict counts)
{
    __local INDEX_T scratch[WG];
    keys += keys_off;
    const uint lid = get_local_id(0);
    const INDEX_T b = get_group_id(0);
    const INDEX_T begin = b * chunk;
    const INDEX_T end = min(begin + chunk, n);
    INDEX_T mine = 0;
    for (INDEX_T i = begin + lid; i < end; i += WG)
        mine += starts_run(keys, i, nan_distinct);
    INDEX_T total;
    wg_scan(mine, scratch, lid, &total);
    if (lid == 0) {
        counts[b] = total;
        if (b == get_num_groups(0) - 1)
            counts[b + 1] = 0;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void runs_scan(__global INDEX_T* restrict counts, uint blocks)
{
    __local INDEX_T scratch[WG];
    scan_counts(counts, counts, blocks + 1, scratch, get_local_id(0));
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void runs_write(__global const KEY_T* restrict keys, ulong keys_off, INDEX_T n, INDEX_T chunk,
                uint nan_distinct, __global const INDEX_T* restrict counts,
                __global OUT_T* restrict starts, ulong starts_off,
                __global KEY_T* restrict values, ulong values_off
% if perm_t:
                , __global const PERM_T* restrict perm, ulong perm_off,
                __global OUT_T* restrict index, ulong index_off,
                __global OUT_T* restrict inverse, ulong inverse_off
% endif
                )
{
    __local INDEX_T scratch[WG];
    keys += keys_off;
    const uint lid = get_local_id(0);
    const INDEX_T b = get_group_id(0);
    const INDEX_T begin = b * chunk;
    const INDEX_T end = min(begin + chunk, n);
    INDEX_T run = counts[b];   /* the runs that start before this block */
    /* (begin and end are uniform in the work-group: every work-item runs each round's scan) */
    for (INDEX_T base = begin; base < end; base += WG) {
        const INDEX_T i = base + lid;
        const INDEX_T first = i < end ? starts_run(keys, i, nan_distinct) : 0;
        INDEX_T round;
        const INDEX_T before = wg_scan(first, scratch, lid, &round);
        if (i < end) {
            const INDEX_T r = run + before + first - 1;   /* the run of position i */
% if perm_t:
            const PERM_T from = perm[perm_off + i];
% endif
            if (first) {
                starts[starts_off + r] = (OUT_T)i;
                values[values_off + r] = keys[i];
% if perm_t:
                index[index_off + r] = (OUT_T)from;
% endif
            }
% if perm_t:
            inverse[inverse_off + from] = (OUT_T)r;
% endif
        }
        run += round;
    }
}

__kernel void runs_lengths(__global const OUT_T* restrict starts, ulong starts_off, ulong n,
                           ulong m, __global OUT_T* restrict lengths, ulong lengths_off)
{
    for (size_t r = get_global_id(0); r < m; r += get_global_size(0)) {
        const ulong next = r + 1 < m ? (ulong)starts[starts_off + r + 1] : n;
        lengths[lengths_off + r] = (OUT_T)(next - (ulong)starts[starts_off + r]);
    }
}
