## Permutations by an index array (clradix.drivers.permute): records of any width taken in the
## order an argsort gave, and the identity permutation a sort carries as its values.
<%namespace name="common" file="common.mako"/>
/* Records moved by index.
     take   - record i of dst = record idx[idx_off + i] of src, for every i < n, a record being
              `words` words of WORD_T (a record of any width: a key, a 12-byte float3, a row of
              an (n, d) array, a structured element; the host picks the widest word that divides
              the record and both offsets, src_off and dst_off, which count words). An index at
              or past `limit` (the source's records) is not read: its record is left unwritten.
     rts_iota - vals[vals_off + i] = i (common.mako's iota_kernel): the indices a sort carries as
              its values, to be taken by afterwards.
   dst may not overlap src (each record is read once, written once, in any order).

   Parameters: word_t (uchar, ushort, uint, ulong or uint4), idx_t (the indices' unsigned type
   of their width: uint or ulong). */
<% assert word_t in ("uchar", "ushort", "uint", "ulong", "uint4") and idx_t in ("uint", "ulong") %>
#define WORD_T ${word_t}
#define IDX_T ${idx_t}

__kernel void take(__global const WORD_T* restrict src, ulong src_off,
                   __global const IDX_T* restrict idx, ulong idx_off,
                   __global WORD_T* restrict dst, ulong dst_off, ulong n, ulong limit, uint words)
{
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
        const ulong j = (ulong)idx[idx_off + i];
        if (j >= limit)
            continue;
        __global const WORD_T* from = src + src_off + j * words;
        __global WORD_T* to = dst + dst_off + (ulong)i * words;
        for (uint w = 0; w < words; ++w)
            to[w] = from[w];
    }
}
${common.iota_kernel(idx_t, "ulong")}
