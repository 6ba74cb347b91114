"""Top-k on CPU devices (cl_templates/topk_chunks.cl.mako): one work-item per chunk of a row
reads it once, keeping its best candidates behind a rising threshold (tc_chunk), then one
work-item per row merges the chunks' ranked lists (tc_merge). Two launches, whatever k; the
results are ranked (a superset of an unsorted answer) and equal the radix select's bit for bit.

Temporary memory per call (``temp_bytes``): a buffer of ``plan.cap`` (key, position) pairs and a
list of k pairs per chunk, a count per chunk, and a merge scratch of 2k pairs per row; one
allocation, its parts at 4 KiB-aligned byte offsets (no sub-buffers), as the radix select's.
"""

from ..core.launches import Buf, LaunchSequence, Off
from ..core.sizes import cl_index_name
from .base import Build, Driver
from .radix_select import INDICES, KEYS, VALUES, TopkOperands, carve_offsets


class TopkChunks(Driver):
    template = "topk_chunks.cl.mako"
    Operands = TopkOperands

    def __init__(self, programs, device, plan, codec):
        self.codec = codec
        params = dict(codec.template_args(), index_t=plan.index_name,
                      idx_t=cl_index_name(plan.idx_np))
        super().__init__(programs, device, plan.profile, 1,
                         [Build(self.template, params, (), ("tc_chunk", "tc_merge"))])

    @staticmethod
    def _parts(plan, codec, rows, k):
        """Bytes of each temporary: buffer keys, positions; candidate keys, positions; counts;
        merge scratch keys, positions."""
        items, kb, ib = rows * plan.groups, codec.itemsize, plan.index_bytes
        return [items * plan.cap * kb, items * plan.cap * ib, items * k * kb, items * k * ib,
                items * ib, rows * 2 * k * kb, rows * 2 * k * ib]

    @classmethod
    def temp_bytes(cls, plan, codec, rows, k):
        return carve_offsets(cls._parts(plan, codec, rows, k))[1]

    def sequence(self, job):
        seq = LaunchSequence(self)
        plan, k = job.plan, job.k
        off, total = carve_offsets(self._parts(plan, self.codec, job.rows, k))
        block = seq.temp(total)[0]
        chunk_len = -(-job.row_len // plan.groups)
        keys = (Buf(KEYS), Off(KEYS))
        seq.launch("tc_chunk", "tc_chunk", (plan.groups, job.rows), (1, 1),
                   [*keys, job.row_len, k, chunk_len, plan.groups, plan.cap,
                    self.codec.flip(job.largest), block, *off[:5]])
        seq.launch("tc_merge", "tc_merge", (job.rows,), (1,),
                   [*keys, job.row_len, k, plan.groups, block, *off[2:],
                    Buf(VALUES), Off(VALUES), Buf(INDICES), Off(INDICES)])
        return seq
