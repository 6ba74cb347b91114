"""Host side of onesweep (cl_templates/onesweep.cl.mako, onesweep_fused.cl.mako and
onesweep_small.cl.mako, over the steps of onesweep_steps.mako).

One histogram kernel reads the keys once for every pass; one small scan turns the counts into
digit starts; then one kernel launch per digit pass (and per portion of at most 2**28 keys, because
look-back words hold 29-bit counts). Temporary memory beyond the ping-pong buffers is constant: two
status rings (ring_slots x (2**radix_bits + 1) + 1 words each) and three small digit tables. A
launch reads one ring and zeroes the other for the next launch, so the sort enqueues no fills
beyond the histogram's.
"""

import re
from typing import Tuple

import numpy as np
import pyopencl as cl

from ..core.keys import VALUE_BYTES
from ..core.limits import check_work_groups
from ..core.sizes import index_bytes
from ..policies.sort import NO_DEBUG, ONESWEEP_PORTION
from .base import Build
from .digit_passes import DigitPasses

# Keys per onesweep launch (a module global so that tests can make portions small).
PORTION = ONESWEEP_PORTION


class Onesweep(DigitPasses):
    template = "onesweep.cl.mako"
    kernel_names: Tuple[str, ...] = ("os_histogram", "os_bins", "os_pass")

    def template_params(self, policy, profile, device):
        return onesweep_params(policy, profile, device, self.codec, self.value_t,
                               self.index_bytes, self.debug)

    def build_options(self, profile, device):
        return onesweep_options(profile, device)

    @classmethod
    def local_bytes(cls, policy, key_bytes, index_bytes, value_bytes=0, debug=NO_DEBUG):
        """The local arrays of a tile (onesweep_steps.mako, TileStorage): the staging area over
        the per-subgroup counters (16-byte aligned), the scan and match scratch, the digit tables
        and words."""
        counters = (policy.wg_size // policy.sg_size) * policy.radix * 4
        stage = stage_bytes(policy, key_bytes, index_bytes, value_bytes)
        return (-(-max(stage, counters) // 16) * 16          # staging over the counters
                + policy.wg_size * 8                          # scan + match scratch
                + policy.radix * (8 + index_bytes) + 32)      # digit tables, words

    # the work-group of os_histogram and os_bins when they are a program of their own (builds)
    PREP_WG = 256

    def builds(self, params, options, iota):
        """Under a register cap (capped_registers) two programs of the template: os_histogram and
        os_bins of work-groups of at most PREP_WG (stated, and without the cap), then os_pass
        under the cap, which the histogram and the bins do not need. (NVIDIA reports 256
        work-items a group for every kernel that does not state its size, whatever it runs:
        core/limits.py, capped_wg_limit, gives a capped kernel its real limit.) Otherwise one
        program of the three, every kernel of the policy's work-group."""
        self.prep_wg = params["wg"]
        if params["reqd_wg"]:
            return super().builds(params, options, iota)
        self.prep_wg = min(self.PREP_WG, params["wg"])
        cap = [o for o in options if o.startswith("-cl-nv-maxrregcount=")]
        prep = [o for o in options if o not in cap]
        return [Build(self.template, dict(params, part="prep", reqd_wg=True, wg=self.prep_wg),
                      prep, (), ("os_histogram", "os_bins")),
                Build(self.template, dict(params, part="pass"), options, ("os_pass",), iota)]

    def __init__(self, programs, device, profile, policy, *args):
        super().__init__(programs, device, profile, policy, *args)
        if self.prep_wg != policy.wg_size:
            check_work_groups({name: cl.Kernel(self._programs[name], name)
                               for name in ("os_histogram", "os_bins")}, device, self.prep_wg,
                              profile.describe())

    def hist_groups(self, n, wg):
        """Work-groups of ``wg`` that count the digits of n keys (each reads 16 keys per work-item
        at least; at most 8 per compute unit, grid-stride beyond)."""
        return max(1, min(-(-n // (wg * 16)), self.profile.compute_units * 8))

    @staticmethod
    def status_bytes(policy):
        """Two rings: a launch uses one, zeroes the other."""
        return 2 * ring_words(policy) * 4

    @classmethod
    def extra_bytes(cls, policy, profile, index_bytes, n, passes):
        return (3 * len(passes) * policy.radix + 1) * index_bytes + cls.status_bytes(policy)

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        pol = self.policy
        wg, radix = pol.wg_size, pol.radix
        flip = self.codec.flip(descending)
        table = len(passes) * radix * self.index_bytes
        # hist: every pass's digit counts, then the count of special keys (count_all_digits)
        hist = seq.temp(table + self.index_bytes)[0]
        bins_a, bins_b = seq.temp(table)[0], seq.temp(table)[0]
        status = seq.temp(self.status_bytes(pol))[0]
        begin = passes[0][0]
        end = passes[-1][0] + passes[-1][1]
        (kin0, kin0_off), _ = key_io[0]
        # one launch per (pass, portion); launch k uses ring k % 2 and zeroes the other one for
        # launch k + 1 (the tiles it will use), os_histogram zeroes ring 0 for launch 0
        launches = [(p, start, min(PORTION, n - start)) for p in range(len(passes))
                    for start in range(0, n, PORTION)]
        slots = [min(pol.ring_slots, -(-length // pol.tile)) for _, _, length in launches] + [0]
        seq.fill("fill histogram", (hist, 0), self.index_np(0), table + self.index_bytes)
        pwg = self.prep_wg
        hist_groups = self.hist_groups(n, pwg)
        seq.launch("os_histogram", "os_histogram", (hist_groups * pwg,), (pwg,),
                   [kin0, kin0_off, n, hist, begin, end, flip, status, slots[0]])
        seq.launch("os_bins", "os_bins", (len(passes) * pwg,), (pwg,), [hist, bins_a])
        for k, (p, start, length) in enumerate(launches):
            shift, bits = passes[p]
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            mask = (1 << bits) - 1
            portion = start // PORTION
            tiles = -(-length // pol.tile)
            b_in, b_out = (bins_a, bins_b) if portion % 2 == 0 else (bins_b, bins_a)
            seq.launch(f"os_pass {p}", "os_pass", (tiles * wg,), (wg,),
                       bufs + [status, k % 2, slots[k + 1], b_in, b_out, p * radix, hist,
                               len(passes) * radix, start, length, shift, mask, flip,
                               write_keys])


def ranking_params(pol, profile, device):
    """The template parameters of a program that ranks as onesweep does (onesweep_steps.mako's
    prelude and ranking steps: os_small's, and every onesweep program's)."""
    return dict(backend=pol.ranking, sg_size=pol.sg_size, ptx=profile.has_ptx,
                c11=status_atomics(profile, device) == "c11",
                reqd_wg=not capped_registers(pol, profile))


def onesweep_params(pol, profile, device, codec, value_t, index_bytes_, debug=NO_DEBUG):
    """The template parameters of the onesweep programs beyond the keys', values' and tile's:
    ranking_params, the status ring, os_fused's head, the staging area (stage_bytes, the one
    computation of it) and ``debug``'s force_fallback."""
    head, hist = fused_words(pol, index_bytes_, codec.bits)
    return dict(ranking_params(pol, profile, device), ring=pol.ring_slots,
                ring_words=ring_words(pol), fused_head=head, fused_hist_words=hist,
                lookback=pol.lookback, spin_limit=pol.spin_limit,
                force_fallback=bool(debug.force_fallback),
                stage_bytes=stage_bytes(pol, codec.itemsize, index_bytes_, VALUE_BYTES[value_t]),
                part="all")


def stage_bytes(pol, key_bytes, index_bytes, value_bytes=0):
    """Onesweep's staging area in local memory: a tile of keys, then of values; os_fused also
    counts every pass's digits (MAXP x RADIX words) and scans (wg_size indices) there. The
    template sizes its staging array by it (its parameter ``stage_bytes``)."""
    raw = pol.tile * max(key_bytes, value_bytes or 0)
    if pol.fused_passes:
        raw = max(raw, -(-8 * key_bytes // pol.radix_bits) * pol.radix * 4,
                  pol.wg_size * index_bytes)
    return raw


def capped_registers(pol, profile):
    """Whether the kernels are built under a register cap (-cl-nv-maxrregcount): NVIDIA's
    compiler ignores the cap on a kernel that carries reqd_work_group_size, so those kernels
    are rendered without the attribute (their launches keep the policy's work-group size)."""
    return bool(pol.max_registers) and profile.is_nvidia


def ring_words(policy):
    """32-bit words of one status ring: ring_slots x radix status words, ring_slots done words and
    the tile counter (the template's RING_WORDS)."""
    return policy.ring_slots * (policy.radix + 1) + 1


def fused_words(policy, index_bytes, key_bits):
    """(counter words, histogram words) at the start of os_fused's ``work``: the virtual ids,
    the histogram groups done, the digit starts ready and one counter per pass (padded to 16
    words), then every pass's digit counts and the count of special keys (count_all_digits)
    (the template's FUSED_HEAD, FUSED_HIST_WORDS)."""
    maxp = -(-key_bits // policy.radix_bits)
    return -(-(3 + maxp) // 16) * 16, (maxp * policy.radix + 1) * index_bytes // 4


def status_atomics(profile, device):
    """How work-groups read and write the status words: PTX relaxed loads and stores on NVIDIA
    GPUs; OpenCL C 2.0 relaxed atomic loads and stores where the compiler has them (plain
    accesses on a CPU); else OpenCL 1.2 read-modify-writes (correct, but each is a locked
    instruction on a CPU)."""
    if profile.has_ptx:
        return "ptx"
    return "c11" if _c_version(device) >= (2, 0) else "cl12"


def onesweep_options(profile, device):
    """The compiler options of the onesweep programs on ``device``: the OpenCL C version of the c11
    status atomics."""
    if status_atomics(profile, device) == "c11":
        major, minor = _c_version(device)
        return ["-cl-std=CL3.0" if major >= 3 else "-cl-std=CL2.0"]
    return []


def _c_version(device):
    """(major, minor) of the device's OpenCL C (CL_DEVICE_OPENCL_C_VERSION, "OpenCL C 3.1 ...")."""
    m = re.match(r"OpenCL C (\d+)\.(\d+)", getattr(device, "opencl_c_version", "") or "")
    return (int(m.group(1)), int(m.group(2))) if m else (1, 2)


class OnesweepFused(Onesweep):
    """Onesweep in one launch (os_fused): the histogram work-groups, the scan and the tiles of
    every pass take virtual ids from one counter, and a pass's tiles wait until the one before
    has written its keys. The counters and the histogram are a state block (LaunchSequence.state)
    that the launch finds zero and leaves zero, so on an in-order queue a call is one command
    (the queue's kept block) and elsewhere a fill and the launch. Temporary memory beyond the
    ping-pong buffers: one status ring per pass, the digit starts, and the state block where the
    queue keeps none."""

    template = "onesweep_fused.cl.mako"
    kernel_names = ("os_fused",)

    def builds(self, params, options, iota):
        """One kernel: one program, under the cap if there is one."""
        self.prep_wg = params["wg"]
        return DigitPasses.builds(self, params, options, iota)

    @classmethod
    def _layout(cls, policy, index_bytes, key_bits, npasses):
        """(bytes of the state block: the counters and the histogram, bytes of the rings: one a
        pass, bytes of the digit starts) as os_fused lays them out."""
        return (sum(fused_words(policy, index_bytes, key_bits)) * 4,
                npasses * ring_words(policy) * 4, 2 * npasses * policy.radix * index_bytes)

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        """The ping-pong buffers, the rings and the digit starts: what a call on an in-order
        queue asks its allocator for (the state block is the queue's, kept by the Sorter; an
        out-of-order queue's call asks for that block too, the first size of _layout)."""
        _, rings, bins = cls._layout(policy, index_bytes(n), 8 * key_bytes, len(passes))
        return n * (key_bytes + value_bytes) + rings + bins

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        pol = self.policy
        wg = pol.wg_size
        state_bytes, ring_bytes, bins_bytes = self._layout(pol, self.index_bytes,
                                                           self.codec.bits, len(passes))
        state = seq.state("fill counters", state_bytes)[0]
        rings, bins = seq.temp(ring_bytes)[0], seq.temp(bins_bytes)[0]
        tiles = -(-n // pol.tile)
        hist_groups = self.hist_groups(n, wg)
        begin, end = passes[0][0], passes[-1][0] + passes[-1][1]
        keys = _first_and_pingpong(key_io)
        args = [a for pair in keys for a in pair]
        if val_io is not None:
            vfirst, va, vb = _first_and_pingpong(val_io)
            if iota:
                vfirst = va          # (not read: the first pass makes the indices)
            args += [*vfirst, *va, *vb, int(bool(iota))]
        write_last = int(key_io[-1][1] is not None)
        seq.launch("os_fused", "os_fused", ((hist_groups + len(passes) * tiles) * wg,), (wg,),
                   args + [state, rings, bins, n, begin, end, self.codec.flip(descending),
                           write_last, hist_groups, tiles, min(pol.ring_slots, tiles)])


def _first_and_pingpong(io):
    """(first input, output of even passes, output of odd passes) of a stream's (in, out) pairs,
    checked: os_fused can only alternate between two outputs after the first input."""
    first, a = io[0]
    b = io[1][1] if len(io) > 1 else a
    a = a if a is not None else b
    b = b if b is not None else a
    if a is None:     # one pass that writes no keys (argsort): nothing is written through them
        a = b = first
    for p, (src, dst) in enumerate(io):
        want_dst = a if p % 2 == 0 else b
        if (p > 0 and src != (io[p - 1][1])) or (dst is not None and dst != want_dst):
            raise AssertionError(f"os_fused: pass {p} of {io} does not alternate")
    return first, a, b
