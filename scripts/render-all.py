#!/usr/bin/env python
"""Render every kernel program the planners can choose, without an OpenCL device.

    python scripts/render-all.py OUT              # render into OUT (OUT/index.tsv, OUT/<program>)
    python scripts/render-all.py --compare A B    # compare two renders, configuration by configuration

The configurations: made-up device profiles (an NVIDIA GPU with and without its PTX ranking, an
AMD-like GPU without subgroups, an Intel GPU with subgroups, a GPU with 16 KiB of local memory, PoCL,
Intel's CPU runtime, oclgrind), every key dtype, every value width (argsort's indices are values
of the index type), sizes from one work-group's tile to 2^31 keys (64-bit indices), the overrides
the tests and autotune set (each algorithm, ranking, digit width, fused or not); the segmented
sort's rows and offsets; top-k's routes (one work-group, the passes with and without the
threshold pass, fused or not, sorted in local memory or by the radix sort). Each configuration is
planned by the package's own planners and its driver constructed with the program cache replaced
by a recorder, so a program is rendered from exactly the parameters a call would build it with.

Programs are written once per (template, parameters, options), named after the first
configuration that asks for them; ``index.tsv`` maps every configuration to its programs.
``--compare`` pairs the programs of each configuration in both renders and reports those that
differ: raw, or only once C comments and blank space are removed (exit status 1 when any
kernel text differs beyond comments and blank space), with each distinct change's diff or
(``--lines N``) the N most frequent changed lines.
"""

import argparse
import difflib
import hashlib
import itertools
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from clradix.core.device import DeviceProfile  # noqa: E402
from clradix.core.errors import PolicyError  # noqa: E402
from clradix.core.keys import KEY_DTYPES, key_codec, value_type_of  # noqa: E402
from clradix.core import render as _render  # noqa: E402
from clradix.core.render import render  # noqa: E402
from clradix.core.sizes import index_bytes, index_type  # noqa: E402
from clradix.drivers import base  # noqa: E402

_GPU_EXT = frozenset({"cl_khr_int64_base_atomics", "cl_khr_global_int32_base_atomics",
                      "cl_khr_local_int32_base_atomics"})
_INTEL_SG = frozenset({"cl_intel_required_subgroup_size", "cl_intel_subgroups",
                       "cl_khr_subgroup_ballot", "cl_khr_subgroups"})


class FakeDevice:
    """What the drivers read of a device beyond its profile."""

    def __init__(self, opencl_c_version):
        self.opencl_c_version = opencl_c_version
        self.int_ptr = 0


def _profile(**kw):
    fields = dict(name="GPU", vendor="Vendor", platform="Platform", driver_version="1.0",
                  device_type="gpu", compute_units=16, local_mem_bytes=48 * 1024,
                  max_wg_size=1024, max_alloc_bytes=2 ** 32, extensions=_GPU_EXT)
    fields.update(kw)
    return DeviceProfile(**fields)


# (name, profile, OpenCL C version the device reports)
PROFILES = [
    ("nvidia", _profile(name="NVIDIA H100", vendor="NVIDIA Corporation", platform="NVIDIA CUDA",
                        driver_version="580.159", compute_units=132), "OpenCL C 3.0"),
    ("nvidia-noptx", _profile(name="NVIDIA H100", vendor="NVIDIA Corporation",
                              platform="NVIDIA CUDA", driver_version="580.159",
                              compute_units=132, disabled_rankings=frozenset({"ptx"})),
     "OpenCL C 3.0"),
    ("amd", _profile(name="gfx1100", vendor="Advanced Micro Devices, Inc.",
                     platform="AMD Accelerated Parallel Processing", compute_units=48,
                     local_mem_bytes=64 * 1024, max_wg_size=256), "OpenCL C 2.0"),
    ("intel-gpu", _profile(name="Intel(R) Arc(TM) A770", vendor="Intel(R) Corporation",
                           platform="Intel(R) OpenCL Graphics", compute_units=512,
                           local_mem_bytes=64 * 1024, max_wg_size=512,
                           extensions=_GPU_EXT | _INTEL_SG), "OpenCL C 3.0"),
    ("gpu-16k", _profile(name="Small GPU", local_mem_bytes=16 * 1024, max_wg_size=256),
     "OpenCL C 1.2"),
    ("pocl", _profile(name="pthread-AMD EPYC", vendor="AuthenticAMD",
                      platform="Portable Computing Language", device_type="cpu",
                      compute_units=2, local_mem_bytes=1 << 20, max_wg_size=4096),
     "OpenCL C 1.2 PoCL"),
    ("intel-cpu", _profile(name="AMD EPYC", vendor="Intel(R) Corporation",
                           platform="Intel(R) OpenCL", device_type="cpu", compute_units=2,
                           local_mem_bytes=32 * 1024, max_wg_size=8192,
                           extensions=_GPU_EXT | _INTEL_SG), "OpenCL C 3.0"),
    ("oclgrind", _profile(name="Oclgrind Simulator", vendor="University of Bristol",
                          platform="Oclgrind", device_type="cpu", compute_units=1,
                          local_mem_bytes=32 * 1024, max_wg_size=1024), "OpenCL C 1.2"),
]

SIZES = [1 << 8, 1 << 12, 1 << 13, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 21, 1 << 22,
         1 << 24, 1 << 28, 1 << 31]
VALUE_BYTES = (0, 1, 2, 4, 8, 16)
DTYPES = list(KEY_DTYPES) + [np.dtype(np.bool_)]
SORT_OVERRIDES = (
    [{}, {"algorithm": "onesweep"}, {"algorithm": "reduce_then_scan"},
     {"algorithm": "reduce_then_scan", "fused_scan": True}, {"algorithm": "single_wg"},
     {"algorithm": "single_wg", "radix_bits": 8}, {"algorithm": "onesweep", "fused_passes": True},
     {"algorithm": "onesweep", "fused_passes": False}, {"algorithm": "onesweep", "radix_bits": 4},
     {"algorithm": "onesweep", "force_fallback": True}, {"algorithm": "chunks"}]
    + [{"algorithm": "onesweep", "ranking": r} for r in ("local", "ptx", "khr", "intel")]
    + [{"algorithm": "single_wg", "radix_bits": 8, "ranking": r} for r in ("local", "khr", "intel")]
)
TOPK_SHAPES = [(1, 1 << 10), (1, 1 << 16), (1, (1 << 16) + 1), (1, 1 << 20), (1, 1 << 24),
               (64, 1 << 12), (64, 1 << 16), (4096, 1 << 12), (8, 1 << 20)]
TOPK_K = (1, 10, 100, 1000, 4096)
TOPK_OVERRIDES = [{}, {"fused": False}, {"sample_size": 0}, {"wg_size": 256},
                  {"wg_size": 256, "fused": False}, {"single_max": 0}]


class _Recorded(Exception):
    pass


def _record_init(self, programs, device, profile, wg_size, builds):
    """Driver.__init__ that keeps the builds instead of building them."""
    self.device, self.profile = device, profile
    raise _Recorded(self, builds)


def planned_programs():
    """(configuration name, driver, [Build]) of every configuration the planners choose; the
    driver is constructed up to its programs' build (its policy or plan set, no kernel)."""
    init = base.Driver.__init__
    base.Driver.__init__ = _record_init
    try:
        done = set()
        for config, make in configurations():
            if config in done:
                continue
            done.add(config)
            try:
                make()
            except _Recorded as rec:
                driver, builds = rec.args
                yield config, driver, list(builds)
    finally:
        base.Driver.__init__ = init


def configurations():
    """(configuration name, constructor of its driver) of everything the planners choose."""
    from clradix.planning.planner import topk_driver_class
    from clradix.planning.sort_plan import driver_class, plan_sort, validate
    from clradix.policies.segment import SegmentPolicy, plan_segments
    from clradix.policies.sort import split_debug
    from clradix.policies.topk import plan_topk
    from clradix.drivers.segmented import SegmentedSort
    from clradix.drivers.segmented_chunks import SegmentChunks

    for pname, profile, cver in PROFILES:
        device = FakeDevice(cver)
        for dtype in DTYPES:
            codec = key_codec(dtype)
            seen = set()
            for vb, n, keywords in itertools.product(VALUE_BYTES, SIZES, SORT_OVERRIDES):
                over, debug = split_debug(keywords)
                try:
                    pol = plan_sort(profile, codec, vb or None, n, None, debug, **over)
                    validate(pol, profile, codec.itemsize, index_bytes(n), vb, n, debug)
                except PolicyError:
                    continue
                index_name, index_np = index_type(n)
                key = (pol, debug, vb, index_name)
                if key in seen:
                    continue
                seen.add(key)
                cls = driver_class(pol)
                # (the knobs an algorithm does not take named by their defaults)
                name = (f"sort/{pname}/{codec.dtype}/v{vb}-i{index_name}-{pol.algorithm}"
                        f"-{pol.radix_bits}b-{pol.wg_size}x{pol.items_per_thread}"
                        f"-{getattr(pol, 'ranking', 'local')}"
                        f"{'-fused' if getattr(pol, 'fused_passes', False) else ''}"
                        f"{'-fscan' if debug.fused_scan else ''}"
                        f"{'-fallback' if debug.force_fallback else ''}"
                        f"-r{getattr(pol, 'ring_slots', 1024)}")
                yield name, (lambda cls=cls, pol=pol, codec=codec, vb=vb, index_name=index_name,
                             index_np=index_np, device=device, profile=profile, debug=debug:
                             cls(None, device, profile, pol, codec, value_type_of(vb),
                                 index_name, index_np, debug))
            for ib, off_t, over in itertools.product(
                    (4, 8), ("int", "long"),
                    [None, SegmentPolicy(ranking="local"), SegmentPolicy(algorithm="workgroups")]):
                try:
                    pol = plan_segments(profile, codec, ib, over)
                except PolicyError:
                    continue
                cls = SegmentChunks if pol.algorithm == "chunks" else SegmentedSort
                index_name, index_np = ("uint", np.uint32) if ib == 4 else ("ulong", np.uint64)
                for vb in VALUE_BYTES:
                    name = (f"segments/{pname}/{codec.dtype}/v{vb}-i{index_name}-{off_t}-"
                            f"{pol.algorithm}-{pol.wg_size}x{pol.items_per_thread}-{pol.ranking}")
                    yield name, (lambda cls=cls, pol=pol, codec=codec, vb=vb, ix=index_name,
                                 inp=index_np, off_t=off_t, device=device, profile=profile:
                                 cls(None, device, profile, pol, codec, value_type_of(vb), ix,
                                     inp, off_t))
            for (rows, row_len), k, srt, over in itertools.product(
                    TOPK_SHAPES, TOPK_K, (True, False), TOPK_OVERRIDES):
                if k > row_len:
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        plan = plan_topk(profile, codec, rows, row_len, k, srt, **over)
                except (PolicyError, ValueError):
                    continue
                cls = topk_driver_class(plan)
                name = (f"topk/{pname}/{codec.dtype}/{plan.route}-i{plan.index_name}"
                        f"-o{np.dtype(plan.out_index_np)}-x{np.dtype(plan.idx_np)}"
                        f"-{plan.wg}x{plan.ipt}-s{plan.sort_size}-t{plan.sample}"
                        f"{'-fused' if plan.fused else ''}{'-single' if plan.single else ''}")
                yield name, (lambda cls=cls, plan=plan, codec=codec, device=device:
                             cls(None, device, plan, codec))


def _program_key(build):
    return (build.template, tuple(sorted(build.params.items())), tuple(build.options))


def render_all(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # the templates of this checkout, wherever an installed clradix would find them
    _render.template_dir = lambda: ROOT / "cl_templates"
    names = {}      # program key -> file name
    index = []
    for config, _, builds in planned_programs():
        files = []
        for b in builds:
            key = _program_key(b)
            fname = names.get(key)
            if fname is None:
                stem = b.template.replace(".cl.mako", "")
                fname = f"{config}.{stem}.cl"
                names[key] = fname
                path = out / fname
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(b.template, **b.params))
                params = "\n".join(f"{k}={v!r}" for k, v in sorted(b.params.items()))
                (out / (fname + ".params")).write_text(
                    f"template={b.template}\n{params}\noptions={list(b.options)!r}\n"
                    f"kernels={list(b.kernels) + list(b.other_kernels)!r}\n")
            files.append(fname)
        index.append(f"{config}\t{' '.join(files)}")
    (out / "index.tsv").write_text("\n".join(index) + "\n")
    print(f"{len(index)} configurations, {len(names)} programs in {out}")


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def normalized(text):
    """The source without C comments, blank lines and runs of blank space."""
    text = _COMMENT.sub("", text)
    lines = (re.sub(r"\s+", " ", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def compare(a, b, lines=0):
    a, b = Path(a), Path(b)

    def read_index(d):
        return dict(line.split("\t") for line in (d / "index.tsv").read_text().splitlines())
    ia, ib = read_index(a), read_index(b)
    only_a, only_b = sorted(set(ia) - set(ib)), sorted(set(ib) - set(ia))
    pairs = {}
    for config in sorted(set(ia) & set(ib)):
        fa, fb = ia[config].split(), ib[config].split()
        if len(fa) != len(fb):
            print(f"{config}: {len(fa)} programs before, {len(fb)} after")
        for x, y in zip(fa, fb):
            pairs.setdefault((x, y), config)
    raw_same = text_same = 0
    differ = {}
    for (x, y), config in pairs.items():
        ta, tb = (a / x).read_text(), (b / y).read_text()
        if ta == tb:
            raw_same += 1
            continue
        na, nb = normalized(ta), normalized(tb)
        if na == nb:
            text_same += 1
            continue
        diff = list(difflib.unified_diff(na, nb, x, y, n=1, lineterm=""))
        digest = hashlib.sha1("\n".join(line for line in diff
                                        if line[:1] in "+-" and line[:3] not in ("+++", "---"))
                              .encode()).hexdigest()[:10]
        differ.setdefault(digest, []).append((x, y, diff))
    print(f"configurations: {len(ia)} before, {len(ib)} after; only before {len(only_a)}, "
          f"only after {len(only_b)}")
    for c in only_a[:20]:
        print(f"  only before: {c}")
    for c in only_b[:20]:
        print(f"  only after: {c}")
    print(f"program pairs: {len(pairs)}; identical {raw_same}; identical but for comments and "
          f"blank space {text_same}; different {sum(len(v) for v in differ.values())} "
          f"({len(differ)} distinct changes)")
    if lines:
        # each removed (-) and added (+) line, with the number of programs it changes in
        counts = {}
        for group in differ.values():
            for _, _, diff in group:
                for line in set(diff[2:]):
                    if line[:1] in "+-":
                        counts[line] = counts.get(line, 0) + 1
        print(f"\nchanged lines, the {lines} most frequent (programs):")
        for line, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:lines]:
            print(f"{n:6d} {line}")
        return 1 if differ or only_a or only_b else 0
    for digest, group in sorted(differ.items(), key=lambda kv: -len(kv[1])):
        x, y, diff = group[0]
        print(f"\n=== change {digest}: {len(group)} programs, e.g. {x}")
        body = diff[2:]
        print("\n".join(body[:200]))
        if len(body) > 200:
            print(f"... ({len(body) - 200} more lines)")
    return 1 if differ or only_a or only_b else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="OUT, or with --compare the two renders")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--lines", type=int, default=0, metavar="N",
                    help="with --compare: the N most frequent changed lines instead of each "
                         "distinct change's diff")
    args = ap.parse_args(argv)
    if args.compare:
        if len(args.dirs) != 2:
            ap.error("--compare takes two folders")
        return compare(*args.dirs, lines=args.lines)
    if len(args.dirs) != 1:
        ap.error("one output folder")
    render_all(args.dirs[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
