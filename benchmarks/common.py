"""What every benchmark command shares: its common options, the choice of OpenCL device, one
record per case (device, driver, date, implementation, case, dtype, size, ``device_ms`` and
``wall_ms``), failures and the exit status, the ``--json`` file and the ``--compare`` table.

A case that gives a wrong result or raises is a failure: it is printed with its case (and the
traceback), recorded in the JSON, the other cases still run, and the command exits with 1.
"""

import contextlib
import datetime
import json
import platform
import sys
import traceback

import numpy as np
import pyopencl as cl

import clradix
from clradix import bench
from clradix.core.device import DeviceProfile, all_devices, can_build

from . import impls, report


def add_common_options(ap, repeat):
    """--device, --repeat (unless ``repeat`` is None), --quick, --json, --compare."""
    ap.add_argument("--device", action="append",
                    help="OpenCL device: its index in `python -m clradix info` or a substring of "
                         "'platform name' (PoCL, NVIDIA, Intel, ...; repeatable; commands of one "
                         "device take the first match; default: every usable device for "
                         "matrix, else the first GPU)")
    if repeat is not None:
        ap.add_argument("--repeat", type=int, default=repeat,
                        help=f"timed runs per case after a warm-up; the median is reported "
                             f"({repeat})")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes and 2 repeats: checks that the command works")
    ap.add_argument("--json", help="write every case (samples, device, driver, date) here")
    ap.add_argument("--compare", metavar="OLD.json",
                    help="a previous --json run of this command: old / new time per case")


def add_peer_options(ap):
    """--no-peers, --require-peers."""
    peers = ap.add_mutually_exclusive_group()
    peers.add_argument("--no-peers", action="store_true", help="clradix only")
    peers.add_argument("--require-peers", action="store_true",
                       help="a CUDA peer (CuPy, torch) missing or without a CUDA device is a "
                            "failure")


def _matches(spec, index, device):
    if spec.isdigit():
        return int(spec) == index
    plat = device.platform.name
    return spec.lower() in f"{plat} {_PLATFORM_SHORT.get(plat, '')} {device.name}".lower()


def select_devices(specs):
    """The usable devices (those that build kernels) ``--device`` specs match, in platform
    order; every usable one without specs."""
    return [d for i, d in enumerate(all_devices())
            if (not specs or any(_matches(s, i, d) for s in specs)) and can_build(d)]


def select_device(specs):
    """One device: the first ``--device`` matches, without specs the first GPU; its index in
    all_devices() too (a --device spec that names exactly it)."""
    devices = select_devices(specs)
    if not specs:
        devices = [d for d in devices if d.type & cl.device_type.GPU]
    if not devices:
        raise SystemExit("no usable OpenCL device matches " +
                         (f"--device {' '.join(specs)}" if specs else "(no GPU: name one with "
                                                                      "--device)"))
    return devices[0], [d.int_ptr for d in all_devices()].index(devices[0].int_ptr)


#: the contexts of profiling_queue's queues, kept for the process's lifetime: Intel's CPU runtime
#: lets a queue's context go with the last Python reference to it (``queue.context`` then fails
#: with INVALID_CONTEXT), though a queue should retain its context
_CONTEXTS: list = []


def profiling_queue(device):
    ctx = cl.Context([device])
    _CONTEXTS.append(ctx)
    return cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)


_PLATFORM_SHORT = {"Portable Computing Language": "PoCL", "Intel(R) OpenCL": "Intel CPU RT",
                   "NVIDIA CUDA": "NVIDIA OpenCL"}


def opencl_device_fields(device):
    """The record fields naming an OpenCL device: a short label, the full name, the driver."""
    prof = DeviceProfile.from_device(device)
    plat = _PLATFORM_SHORT.get(prof.platform, prof.platform)
    return dict(device=f"{prof.name} ({plat} {prof.driver_version[:12]})",
                device_full=prof.describe(), driver=prof.driver_version)


def host_fields():
    return dict(device="host CPU", device_full=platform.processor() or platform.machine(),
                driver="")


def cuda_peers(args, out, libraries=("cupy", "torch")):
    """The CUDA peers of impls.cuda_peers from ``libraries``: none with --no-peers; each absent
    one is logged, and is a failure with --require-peers."""
    if args.no_peers:
        return []
    peers, absent = impls.cuda_peers()
    for line in absent:
        if line.split(":")[0] in libraries:
            if args.require_peers:
                out.fail("peers", line)
            else:
                out.log(f"peer skipped: {line}")
    return [p for p in peers if p.library in libraries]


def random_keys(rng, dtype, n):
    """The demo's random keys (clradix.bench.random_keys), floats of normal values: every
    implementation agrees on NaN-free input (the check suites cover NaN and -0.0)."""
    return bench.random_keys(rng, dtype, n, floats="normal")


def skewed_keys(rng, dtype, n, dist):
    """``n`` keys of ``dtype`` from distribution ``dist`` (SKEWED_DISTS): "uniform" is
    random_keys; the others are adversarial for most-significant-digit sorts: "two_values" (two
    random keys), "one_percent_equal" (1 % of the keys one value, the rest random bits),
    "power_law" (the leading byte Zipf-distributed: bucket sizes by a power law, the other bits
    random), "one_huge_bucket" (90 % of the keys share their leading 16 bits), "all_equal"."""
    if dist == "uniform":
        return random_keys(rng, dtype, n)
    d = np.dtype(dtype)
    ut = np.dtype(f"u{d.itemsize}")
    bits = 8 * d.itemsize

    def raw(m):
        return rng.integers(0, 256, m * d.itemsize, dtype=np.uint8).view(ut)
    if dist == "two_values":
        u = raw(2)[rng.integers(0, 2, n)]
    elif dist == "all_equal":
        u = np.full(n, raw(1)[0])
    elif dist == "one_percent_equal":
        u = raw(n)
        u[rng.random(n) < 0.01] = raw(1)[0]
    elif dist == "power_law":
        u = raw(n)
        shift = ut.type(bits - 8)
        top = np.minimum(rng.zipf(1.3, n) - 1, 255).astype(ut)
        u = (u & ut.type((1 << (bits - 8)) - 1)) | (top << shift)
    elif dist == "one_huge_bucket":
        u = raw(n)
        keep = max(8, bits - 16)
        low = ut.type((1 << keep) - 1)
        prefix = raw(1)[0] & ~low
        pick = rng.random(n) < 0.9
        u[pick] = (u[pick] & low) | prefix
    else:
        raise ValueError(f"unknown distribution {dist!r}: expected one of "
                         f"{', '.join(SKEWED_DISTS)}")
    if d.kind == "f":
        # finite floats only (every implementation orders NaN the same only up to payloads):
        # the exponent's top bit cleared keeps every key finite and the buckets as skewed
        u = u & ~ut.type(1 << (bits - 2))
    return u.view(d)


SKEWED_DISTS = ("uniform", "two_values", "one_percent_equal", "power_law", "one_huge_bucket",
                "all_equal")


def _brief(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


class Run:
    """The records and failures of one command's run."""

    def __init__(self, command, args, echo=True):
        self.command, self.args, self.echo = command, args, echo
        self.rows, self.failures = [], []
        self.meta = dict(command=command, date=datetime.date.today().isoformat(),
                         clradix=clradix.__version__, host=platform.node(),
                         numpy=np.__version__, pyopencl=cl.VERSION_TEXT)

    def log(self, msg):
        """A progress line: stdout, or stderr for a command whose stdout is its report."""
        print(msg, file=sys.stdout if self.echo else sys.stderr, flush=True)

    def fail(self, case, message):
        """A failure of ``case``: printed now, listed again at the end, exit status 1."""
        self.failures.append(f"{case}: {message}")
        # (on a line of its own: the matrix draws a progress bar on stderr)
        print(f"{'' if self.echo else chr(10)}FAILED {case}: {message}", file=sys.stderr,
              flush=True)

    @staticmethod
    def attempt(fn):
        """``(fn(), None)``, or ``(None, the error in one line)`` when it raises: the traceback
        is printed, and the caller records the error (``record(error=...)``)."""
        try:
            return fn(), None
        except Exception as exc:
            traceback.print_exc()
            return None, _brief(exc)

    @contextlib.contextmanager
    def guard(self, case):
        """Runs the block; an exception in it is a failure of ``case`` (a string, or a function
        that names the case when it failed; the traceback is printed) and the command goes on
        with the next case."""
        try:
            yield
        except Exception as exc:
            traceback.print_exc()
            self.fail(case() if callable(case) else case, _brief(exc))

    def record(self, where, impl, case, dtype, n, timing=None, ok=True, error=None, **extra):
        """One case's row. ``where``: the device fields; ``timing``: a timing.Timing; ``ok``
        False (a wrong result) and ``error`` are failures; ``extra`` fields are stored (``note``
        is also printed)."""
        row = dict(self.meta, **where, impl=impl, case=case,
                   dtype="mixed" if dtype is None else str(np.dtype(dtype)), n=n,
                   device_ms=timing.median_device_ms if timing else None,
                   wall_ms=timing.median_wall_ms if timing else None,
                   samples_device_ms=timing.device_ms if timing else None,
                   samples_wall_ms=timing.wall_ms if timing else None,
                   ok=bool(ok) and error is None, error=error, **extra)
        self.rows.append(row)
        name = f"{impl} {case} {row['dtype']} n={report.size_label(n)} on {where['device']}"
        if error is not None:
            self.fail(name, error)
        elif not ok:
            self.fail(name, "WRONG result")
        if self.echo:
            times = "".join(f" {k} {row[k]:9.3f} ms" for k in ("device_ms", "wall_ms")
                            if row[k] is not None)
            self.log(f"{where['device'][:24]:24s} {impl[:24]:24s} {case[:40]:40s} "
                     f"{row['dtype']:8s} {report.size_label(n):>8s}{times} "
                     f"{'ok' if row['ok'] else 'FAILED'}  {extra.get('note', '')}")
        self.save()
        return row

    def save(self):
        """Writes --json (after every case, so that a run cut short keeps what it measured)."""
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(dict(self.meta, ok=not self.failures, failures=self.failures,
                               rows=self.rows), f, indent=1)

    def finish(self):
        """--json, the --compare table, the failures again; the exit status."""
        self.save()
        if self.args.compare:
            print(report.compare(report.load(self.args.compare), self.rows))
        if self.failures:
            print(f"{len(self.failures)} failure(s):\n" +
                  "\n".join(f"  {f}" for f in self.failures), file=sys.stderr)
            return 1
        print(f"{self.command}: {len(self.rows)} case(s), no failures", file=sys.stderr)
        return 0
