"""Host side of onesweep (cl_templates/onesweep.cl.mako).

One histogram kernel reads the keys once for every pass; one small scan turns the counts into
digit starts; then one kernel launch per digit pass (and per portion of at most 2**28 keys, because
look-back words hold 29-bit counts). Temporary memory beyond the ping-pong buffers is constant: two
status rings (ring_slots x (2**radix_bits + 1) + 2 words each) and three small digit tables. A
launch reads one ring and zeroes the other for the next launch, so the sort enqueues no fills
beyond the histogram's.
"""

import re

import numpy as np

from .digit_passes import DigitPasses
from .reduce_then_scan import OneLaunch
from .policy import ONESWEEP_PORTION

# Keys per onesweep launch (a module global so that tests can make portions small).
PORTION = ONESWEEP_PORTION


class Onesweep(DigitPasses):
    template = "onesweep.cl.mako"
    kernel_names = ("os_histogram", "os_bins", "os_pass")

    def template_params(self, pol):
        return dict(backend=pol.ranking, sg_size=pol.sg_size, ring=pol.ring_slots,
                    lookback=pol.lookback, spin_limit=pol.spin_limit,
                    ring_guard=pol.ring_guard,
                    tail_bits=pol.tail_bits if pol.ring_guard == "tail" else 0,
                    force_fallback=bool(pol.force_fallback),
                    status_atomics=self._status_atomics(),
                    serial_claim="oclgrind" in self.profile.platform.lower())

    def _status_atomics(self):
        """How work-groups read and write the status words: PTX relaxed loads and stores on NVIDIA
        GPUs; OpenCL C 2.0 relaxed atomic loads and stores where the compiler has them (plain
        accesses on a CPU); else OpenCL 1.2 read-modify-writes (correct, but each is a locked
        instruction on a CPU)."""
        if self.profile.is_nvidia and self.profile.is_gpu:
            return "ptx"
        return "c11" if _c_version(self.device) >= (2, 0) else "cl12"

    def build_options(self):
        if self._status_atomics() == "c11":
            major, minor = _c_version(self.device)
            return ["-cl-std=CL3.0" if major >= 3 else "-cl-std=CL2.0"]
        return []

    def __init__(self, *args):
        super().__init__(*args)
        ulong, uint, idx = np.uint64, np.uint32, self.index_np
        key_np = self.codec.unsigned_dtype.type
        vals = [None, ulong, None, ulong, uint] if self.value_t else []
        self.arg_types = {
            "os_histogram": [None, ulong, idx, None, uint, uint, key_np, None, uint],
            "os_bins": [None, None],
            "os_pass": [None, ulong, None, ulong] + vals
                       + [None, uint, uint, None, None, uint, idx, uint, uint, uint, key_np, uint]}

    @staticmethod
    def status_bytes(policy):
        """Two rings (status and done words, counters): a launch uses one, zeroes the other."""
        return 2 * (policy.ring_slots * (policy.radix + 1) + 2) * 4

    @classmethod
    def extra_bytes(cls, policy, profile, index_bytes, n, passes):
        return 3 * len(passes) * policy.radix * index_bytes + cls.status_bytes(policy)

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        pol = self.policy
        wg, radix = pol.wg_size, pol.radix
        flip = self.codec.flip(descending)
        table = len(passes) * radix * self.index_bytes
        hist, bins_a, bins_b = seq.temp(table)[0], seq.temp(table)[0], seq.temp(table)[0]
        status = seq.temp(self.status_bytes(pol))[0]
        begin = passes[0][0]
        end = passes[-1][0] + passes[-1][1]
        (kin0, kin0_off), _ = key_io[0]
        # one launch per (pass, portion); launch k uses ring k % 2 and zeroes the other one for
        # launch k + 1 (the tiles it will use), os_histogram zeroes ring 0 for launch 0
        launches = [(p, start, min(PORTION, n - start)) for p in range(len(passes))
                    for start in range(0, n, PORTION)]
        slots = [min(pol.ring_slots, -(-length // pol.tile)) for _, _, length in launches] + [0]
        seq.fill("fill histogram", (hist, 0), self.index_np(0), table)
        hist_groups = max(1, min(-(-n // (wg * 16)), self.profile.compute_units * 8))
        seq.launch("os_histogram", "os_histogram", (hist_groups * wg,), (wg,),
                   [kin0, kin0_off, n, hist, begin, end, flip, status, slots[0]])
        seq.launch("os_bins", "os_bins", (len(passes) * wg,), (wg,), [hist, bins_a])
        for k, (p, start, length) in enumerate(launches):
            shift, bits = passes[p]
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            mask = (1 << bits) - 1
            portion = start // PORTION
            tiles = -(-length // pol.tile)
            b_in, b_out = (bins_a, bins_b) if portion % 2 == 0 else (bins_b, bins_a)
            seq.launch(f"os_pass {p}", "os_pass", (tiles * wg,), (wg,),
                       bufs + [status, k % 2, slots[k + 1], b_in, b_out, p * radix, start, length,
                               shift, mask, flip, write_keys])


def _c_version(device):
    """(major, minor) of the device's OpenCL C (CL_DEVICE_OPENCL_C_VERSION, "OpenCL C 3.1 ...")."""
    m = re.match(r"OpenCL C (\d+)\.(\d+)", getattr(device, "opencl_c_version", "") or "")
    return (int(m.group(1)), int(m.group(2))) if m else (1, 2)


class OnesweepSmall(OneLaunch, Onesweep):
    """A sort of at most one tile of keys by one work-group in one launch (os_small): every
    8-bit digit ranked as onesweep's passes rank them, in local memory."""

    kernel_names = ("os_small",)
