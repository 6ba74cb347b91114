"""The single work-group sorts: at most one tile of keys sorted by one work-group in one launch,
every pass in local memory, so no temporary memory. rts_small (reduce_then_scan.cl.mako: 4-bit
split passes) and os_small (onesweep_small.cl.mako: 8-bit digits ranked as onesweep ranks them) take
the same parameters."""

from ..core.launches import VALS_IN, VALS_OUT, Buf, Off
from ..policies.sort import NO_DEBUG
from .digit_passes import DigitPasses
from .onesweep import onesweep_options, ranking_params
from .reduce_then_scan import tile_bytes


class SingleWorkGroup(DigitPasses):
    """A sort of at most one tile of keys by one work-group in one launch (rts_small): every
    split pass happens in local memory, so a small sort costs one kernel launch."""

    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_small",)

    def template_params(self, policy, profile, device):
        return dict(fused_scan=False)

    @classmethod
    def local_bytes(cls, policy, key_bytes, index_bytes, value_bytes=0, debug=NO_DEBUG):
        """rts_small's: one tile ranked by split passes (reduce_then_scan.tile_bytes)."""
        return tile_bytes(policy, key_bytes)

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return 0   # the keys stay in local memory

    def build_sequence(self, seq, job):
        """keys_in to keys_out (or only read, argsort), values from vals_in (or the indices) to
        vals_out, in one launch."""
        keys, dst = self.key_operands(job)
        args = [*keys, *(dst or keys)]
        if job.argsort:
            out = [Buf(VALS_OUT), Off(VALS_OUT)]
            args += out + out + [1]
        elif job.values:
            vals = [Buf(VALS_IN), Off(VALS_IN)]
            args += vals + vals + [0]
        args += [job.n, job.begin_bit, job.end_bit, self.codec.flip(job.descending),
                 int(dst is not None)]
        wg = self.policy.wg_size
        kernel = self.kernel_names[0]
        seq.launch(kernel, kernel, (wg,), (wg,), args)


class OnesweepSmall(SingleWorkGroup):
    """A sort of at most one tile of keys by one work-group in one launch (os_small): every
    8-bit digit ranked as onesweep's passes rank them, in local memory."""

    template = "onesweep_small.cl.mako"
    kernel_names = ("os_small",)

    def template_params(self, policy, profile, device):
        return ranking_params(policy, profile, device)

    def build_options(self, profile, device):
        return onesweep_options(profile, device)

    @classmethod
    def local_bytes(cls, policy, key_bytes, index_bytes, value_bytes=0, debug=NO_DEBUG):
        """os_small's local arrays (onesweep_small.cl.mako): the tile's keys (and their source
        positions), the per-subgroup counters, the digit places, the scan and match scratch."""
        counters = (policy.wg_size // policy.sg_size) * policy.radix * 4
        return (policy.tile * (key_bytes + (2 if value_bytes else 0))   # keys (+ positions)
                + counters + policy.radix * 4                             # digit places
                + policy.wg_size * 8)                                     # scan + match scratch
