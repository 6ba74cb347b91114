## What the programs that rank a tile of keys by subgroups share (onesweep_steps.mako: the
## onesweep programs; tile_steps.mako: the segmented sort). A Mako library of defs that emit C and
## read the program's template parameters (key codec, wg, ipt, value_t, index_t, backend, sg_size)
## from the render's context.
<%namespace name="common" file="common.mako"/>

## The head of such a program: the asserts on its tile, the pragmas, the keys' and the tile's
## #defines (`radix_bits`-bit digits), SG, NW, SG_ATTR, the subgroup primitives (sg_match over
## `match_bits`-bit digits), the index counters and the work-group scan of uints (wg_scan_uint).
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
${common.sg_attr_define(backend)}

${common.sg_primitives(backend, sg_size, wg, match_bits)}
${common.counter_fns(index_t)}
% if backend == "ptx":
${common.wg_scan_warp_fn("wg_scan_uint", wg)}
% else:
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% endif
</%def>

