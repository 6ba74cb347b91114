## Shared pieces of every kernel family: the key codec and work-group scans.
## Each def emits OpenCL C; a kernel template imports them with
##   <%namespace name="common" file="common.mako"/>

## The order key (see clradix/keys.py): an unsigned integer whose order is numpy's order of the keys,
## with every NaN after +inf and -0.0 equal to +0.0. `flip` is all ones for a descending sort.
<%def name="order_key_fn(key_kind, key_bits, key_t, key_inf_bits)">
<%
    ones = (1 << key_bits) - 1
    sign = 1 << (key_bits - 1)
    suffix = "UL" if key_bits == 64 else "U"
%>
inline ${key_t} order_key(${key_t} x, ${key_t} flip)
{
% if key_kind == "uint":
    return (${key_t})(x ^ flip);
% elif key_kind == "int":
    return (${key_t})(x ^ (${key_t})${hex(sign)}${suffix} ^ flip);
% else:
    const ${key_t} sign = (${key_t})${hex(sign)}${suffix};
    const ${key_t} ones = (${key_t})${hex(ones)}${suffix};
    if ((${key_t})(x & (${key_t})~sign) > (${key_t})${hex(key_inf_bits)}${suffix})
        return (${key_t})(ones ^ flip);          /* every NaN: after +inf */
    if (x == sign)
        x = (${key_t})0;                          /* -0.0 == +0.0 */
    x = (${key_t})(x ^ ((x & sign) ? ones : sign));
    return (${key_t})(x ^ flip);
% endif
}
</%def>

## Exclusive scan of one value per work-item across a work-group of `wg` items, through `scratch`
## (wg elements of local memory). Returns the exclusive prefix and stores the total in *total.
## Every work-item must call it; it ends with a barrier, so `scratch` may be reused at once.
<%def name="wg_scan_fn(name, t, wg)">
inline ${t} ${name}(${t} v, __local ${t}* scratch, uint lid, ${t}* total)
{
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < ${wg}; off <<= 1) {
        ${t} other = lid >= off ? scratch[lid - off] : (${t})0;
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] += other;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    ${t} inclusive = scratch[lid];
    *total = scratch[${wg} - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return inclusive - v;
}
</%def>
