/* Layout copies: a strided view of an array gathered into C order in one kernel, and indices
   widened.
     gather - dst[dst_off + i] = src[src_off + sum_d c_d * stride_d] for every i < n, where
              (c_0, ..., c_{ndim-1}) are the C-order coordinates of i in the view's shape.
     widen  - dst[dst_off + i] = (ulong)src[i] for every i < n: 32-bit indices made 64-bit in
              one pass after a sort that carried 4 bytes a key through its passes instead of 8.
   A view with its axes permuted (numpy's moveaxis / transpose) is a shape and strides like any
   other, so one kernel makes a view contiguous, moves the sorted axis last and moves it back.
   Strides are in elements and may be negative or zero (the view's bytes need not be distinct);
   the writes are distinct and in order, so dst may not overlap src.

   Parameters: elem_t (the element as an unsigned type of its width: uchar, ushort, uint, ulong),
   index_t (uint when every index and offset fits 32 bits, else ulong), ndim (1 to MAX_DIMS). */
<% assert 1 <= ndim <= 8 %>
#define ELEM_T ${elem_t}
#define INDEX_T ${index_t}

__kernel void gather(__global const ELEM_T* restrict src, ulong src_off,
                     __global ELEM_T* restrict dst, ulong dst_off, ulong n,
% for d in range(ndim):
                     ulong shape${d}, long stride${d}${"," if d < ndim - 1 else ")"}
% endfor
{
    for (INDEX_T i = (INDEX_T)get_global_id(0); i < (INDEX_T)n;
         i += (INDEX_T)get_global_size(0)) {
        /* the coordinates of i, last axis first; at: the element of the view they address */
        INDEX_T rest = i;
        long at = (long)src_off;
% for d in reversed(range(ndim)):
%   if d:
        at += (long)(rest % (INDEX_T)shape${d}) * stride${d};
        rest /= (INDEX_T)shape${d};
%   else:
        at += (long)rest * stride${d};
%   endif
% endfor
        dst[dst_off + i] = src[at];
    }
}

__kernel void widen(__global const uint* restrict src, __global ulong* restrict dst,
                    ulong dst_off, ulong n)
{
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        dst[dst_off + i] = (ulong)src[i];
}
