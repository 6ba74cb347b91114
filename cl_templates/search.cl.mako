## searchsorted (clradix.drivers.search): a binary search per value in its row of sorted keys.
<%namespace name="common" file="common.mako"/>
/* search_rows - out[out_off + i] = the insertion point of values[values_off + i] in its row of
                 `sorted`, for every i < total: the number of the row's keys whose order key is
                 below the value's (`right`: at most the value's). Value i belongs to row
                 i / per_row, the row r being sorted[sorted_off + r * row_stride ...] of row_len
                 keys (row_stride 0: one row for every value, numpy's 1-D searchsorted). With a
                 sorter (numpy's sorter=), the row's k-th smallest key is
                 sorted[row + sorter[sorter_off + r * row_stride + k]]; a sorter index at or past
                 row_len is taken as row_len - 1 (never read outside the row).
   The order is the sort's (common.mako's order_key): NaN after +inf, -0.0 == +0.0, so the
   results are numpy's for numpy's sort order. Both sides are one count: the keys whose order key
   is below a bound, the value's order key (left) or the next one (right; when the value's is
   the largest order key, every key is at most it: the row's length). The bound is made once per
   value, so a step of the search is a key's order key and one compare.
   With LEVELS (one row, row_stride 0, of at least 2^LEVELS keys): each work-group first keeps
   the order keys of the row's SPLITS = 2^LEVELS - 1 splitters in local memory, splitter j - 1
   being the key at position edge(j) = j * row_len / 2^LEVELS (j = 1 .. SPLITS). A value's first
   LEVELS steps search them there: with c splitters below the bound, the insertion point lies in
   [edge(c), edge(c + 1)] (edge(0) = 0, edge(2^LEVELS) = row_len), and only the steps within that
   bucket read the row in global memory. Random values make the top steps of their searches
   read scattered keys; in local memory those reads cost a bank access each, not a cache line.

   Parameters: the key codec's (key_kind, key_bits, key_t, key_inf_bits), index_t (uint when
   every position and count fits 32 bits, else ulong), out_t (the results' unsigned type of
   their width), sorter_t (None, or the sorter's unsigned type of its width), levels (0, or the
   splitters' levels). */
<% assert index_t in ("uint", "ulong") and out_t in ("uint", "ulong") and 0 <= levels <= 16 %>
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define OUT_T ${out_t}
% if sorter_t:
#define SORTER_T ${sorter_t}
% endif
% if levels:
#define LEVELS ${levels}
#define SPLITS ${(1 << levels) - 1}
% endif
${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
<%
    order_arg = ", order" if sorter_t else ""
    order_param = ", __global const SORTER_T* order" if sorter_t else ""
%>
/* the order key of the row's k-th smallest key (k < len) */
static inline KEY_T key_at(__global const KEY_T* row, INDEX_T k, INDEX_T len${order_param})
{
% if sorter_t:
    return order_key(row[min((ulong)order[k], (ulong)(len - 1))], 0);
% else:
    return order_key(row[k], 0);
% endif
}

/* the first position in [lo, hi) whose order key is not below bound, hi if none (the row's keys
   below bound come first) */
static inline INDEX_T search_row(__global const KEY_T* row, INDEX_T lo, INDEX_T hi, KEY_T bound,
                                 INDEX_T len${order_param})
{
    INDEX_T size = hi - lo;
    while (size > 0) {
        const INDEX_T step = size / 2;
        const uint below = key_at(row, lo + step, len${order_arg}) < bound;
        lo = below ? lo + step + 1 : lo;
        size = below ? size - step - 1 : step;
    }
    return lo;
}
% if levels:

/* position j * len / 2^LEVELS, rounded down (j <= 2^LEVELS), without overflow */
static inline INDEX_T edge(uint j, INDEX_T len)
{
    return (len >> LEVELS) * j + (INDEX_T)(((len & ((1u << LEVELS) - 1u)) * j) >> LEVELS);
}

/* the splitters below bound (of the SPLITS ascending ones): LEVELS steps, each halving a
   span of 2^k - 1 */
static inline uint search_splits(__local const KEY_T* split, KEY_T bound)
{
    uint lo = 0;
    for (uint size = SPLITS; size > 0; size >>= 1) {
        const uint step = size >> 1;
        lo = split[lo + step] < bound ? lo + step + 1 : lo;
    }
    return lo;
}
% endif

__kernel void search_rows(__global const KEY_T* restrict sorted, ulong sorted_off, ulong row_len,
                          ulong row_stride, __global const KEY_T* restrict values,
                          ulong values_off, ulong per_row, ulong total,
% if sorter_t:
                          __global const SORTER_T* restrict sorter, ulong sorter_off,
% endif
                          __global OUT_T* restrict out, ulong out_off, uint right)
{
    const INDEX_T len = (INDEX_T)row_len;
% if levels:
    __local KEY_T split[SPLITS];
    /* the splitters of the one row */
    for (uint j = get_local_id(0); j < SPLITS; j += get_local_size(0))
        split[j] = key_at(sorted + sorted_off, edge(j + 1, len), len
% if sorter_t:
                          , sorter + sorter_off
% endif
                          );
    barrier(CLK_LOCAL_MEM_FENCE);
% endif
    for (size_t i = get_global_id(0); i < total; i += get_global_size(0)) {
        const ulong row = row_stride ? (ulong)i / per_row * row_stride : 0;
        const KEY_T key = order_key(values[values_off + i], 0);
        const KEY_T bound = (KEY_T)(key + (KEY_T)right);
% if levels:
        const uint c = search_splits(split, bound);
        const INDEX_T lo = edge(c, len), hi = edge(c + 1, len);
% else:
        const INDEX_T lo = 0, hi = len;
% endif
        const INDEX_T at = search_row(sorted + sorted_off + row, lo, hi, bound, len
% if sorter_t:
                                      , sorter + sorter_off + row
% endif
                                      );
        /* (right with the largest order key: bound wrapped to 0, and every key is at most it) */
        out[out_off + i] = (OUT_T)(right && key == (KEY_T)~(KEY_T)0 ? len : at);
    }
}
