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
   results are numpy's for numpy's sort order.

   Parameters: the key codec's (key_kind, key_bits, key_t, key_inf_bits), index_t (uint when
   every position and count fits 32 bits, else ulong), out_t (the results' unsigned type of
   their width), sorter_t (None, or the sorter's unsigned type of its width). */
<% assert index_t in ("uint", "ulong") and out_t in ("uint", "ulong") %>
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define OUT_T ${out_t}
% if sorter_t:
#define SORTER_T ${sorter_t}
% endif
${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}

/* the first position in [0, len) whose key is not below v (right: is above v), len if none */
static inline INDEX_T insertion_point(__global const KEY_T* row, INDEX_T len, KEY_T v, uint right
% if sorter_t:
                                      , __global const SORTER_T* order
% endif
                                      )
{
    const KEY_T key = order_key(v, 0);
    INDEX_T lo = 0, hi = len;
    while (lo < hi) {
        const INDEX_T mid = lo + (hi - lo) / 2;
% if sorter_t:
        const ulong at = min((ulong)order[mid], (ulong)(len - 1));
        const KEY_T k = order_key(row[at], 0);
% else:
        const KEY_T k = order_key(row[mid], 0);
% endif
        if (right ? k <= key : k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__kernel void search_rows(__global const KEY_T* restrict sorted, ulong sorted_off, ulong row_len,
                          ulong row_stride, __global const KEY_T* restrict values,
                          ulong values_off, ulong per_row, ulong total,
% if sorter_t:
                          __global const SORTER_T* restrict sorter, ulong sorter_off,
% endif
                          __global OUT_T* restrict out, ulong out_off, uint right)
{
    for (size_t i = get_global_id(0); i < total; i += get_global_size(0)) {
        const ulong row = (ulong)i / per_row * row_stride;
        out[out_off + i] = (OUT_T)insertion_point(sorted + sorted_off + row, (INDEX_T)row_len,
                                                  values[values_off + i], right
% if sorter_t:
                                                  , sorter + sorter_off + row
% endif
                                                  );
    }
}
