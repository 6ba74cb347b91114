## Chunked LSD radix sort for CPU devices (chunks_steps.mako: one work-item a chunk of the keys).
## A digit pass is two launches, cc_count and cc_scatter (chunks_steps.mako, pass_kernels). Values
## follow their keys; argsort's first pass makes them (the indices).
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), radix_bits (2..12), lines
## (the scatter's write-combining lines), value_t (None for keys only), index_t ("uint" when
## every index fits 32 bits, else "ulong").
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="chunks_steps.mako"/>
${steps.prelude()}
${steps.chunk_fns()}
${steps.pass_kernels(False)}
% if value_t in ("uint", "ulong"):

${common.iota_kernel(value_t, index_t)}
% endif
