"""Command line: ``python -m clradix [-v] [demo|info|plan|autotune] ...``.

``demo`` (the default) sorts, argsorts or selects the top k of random keys, or of the keys of a
``.npy`` file, on one device and prints the device, clradix's time per call beside what a numpy
user would call instead (numpy's default kind and its stable sort, warm, median of the same
repeats) and a bit-exact check against numpy. ``info`` lists the devices.

Parsing the command line imports neither numpy nor pyopencl (``--help`` answers at once): each
command, and each argument type that needs them, imports them when it runs.
"""

import argparse
import logging
import math
import sys

from . import __version__
from .bench import median_ms, random_keys

DESCRIPTION = ("Sort, plan and autotune with clradix on OpenCL devices: demo (the default "
               "command) sorts random keys or a .npy file and checks the result against numpy.")
EPILOG = ("'python -m clradix COMMAND --help' shows a command's options; options without a "
          "command go to demo.")


class CommandLineError(Exception):
    """A command line that cannot run; main prints the message (no traceback) and exits with 2."""


def _pick_device(spec):
    from .core.device import default_device, device_for
    try:
        return default_device() if spec is None else device_for(spec)
    except RuntimeError as exc:  # no usable device, or a spec (CLRADIX_DEVICE too) matching none
        raise CommandLineError(str(exc)) from None


# ---------------------------------------------------------------- argument types (argparse type=)

def key_dtype(text):
    """A key dtype from a name such as ``u32``, ``float32`` or ``bool`` (the one parser, and the
    one list of key dtypes, of every command: :func:`clradix.core.keys.parse_dtype`)."""
    from .core.keys import parse_dtype
    try:
        return parse_dtype(text)
    except TypeError as exc:   # names the key dtypes (bfloat16 without ml_dtypes: what to install)
        raise argparse.ArgumentTypeError(str(exc)) from None


def key_dtypes(text):
    """A comma-separated list of key dtypes, such as ``u32,float32``."""
    names = text.split(",")
    if not all(name.strip() for name in names):
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated key dtypes, such as "
                                         f"uint32,float32")
    return [key_dtype(name) for name in names]


def _integer(text, low, what):
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def non_negative(text):
    """An integer of at least 0."""
    return _integer(text, 0, "an integer of at least 0")


def positive(text):
    """An integer of at least 1."""
    return _integer(text, 1, "a positive integer")


def seconds(text):
    """A finite number of seconds, at least 0."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (at least 0)")
    return value


MAX_LOG2_SIZE = 40


def log2_sizes(text):
    """A comma-separated list of log2 sizes, such as ``16,20,24``."""
    out = []
    for part in text.split(","):
        try:
            lg = int(part)
        except ValueError:
            lg = None
        if lg is None or not 1 <= lg <= MAX_LOG2_SIZE:
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is not a log2 size: expected comma-separated integers from 1 "
                f"to {MAX_LOG2_SIZE}, such as 16,20,24")
        out.append(lg)
    return out


_NPY_MAGIC = b"\x93NUMPY"


def keys_file(path):
    """The keys of a ``.npy`` file: a 1-D array of a key dtype, in native byte order (big-endian
    keys are converted)."""
    import numpy as np
    from .core.keys import KEY_DTYPES
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_NPY_MAGIC))
            if magic != _NPY_MAGIC:
                what = "an .npz archive" if magic.startswith(b"PK") else "not a .npy file"
                raise argparse.ArgumentTypeError(f"{path}: {what}; expected a .npy file of keys "
                                                 f"(numpy.save)")
            f.seek(0)
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                dtype = np.lib.format.read_array_header_1_0(f)[2]
            else:
                dtype = np.lib.format.read_array_header_2_0(f)[2]
        if dtype.hasobject:
            raise argparse.ArgumentTypeError(f"{path} holds Python objects (dtype {dtype}), not "
                                             f"keys clradix sorts")
        keys = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise argparse.ArgumentTypeError(f"cannot load {path}: {exc}") from None
    if keys.ndim != 1:
        raise argparse.ArgumentTypeError(f"{path} holds an array of shape {keys.shape}: expected "
                                         f"a 1-D array of keys")
    native = keys.dtype.newbyteorder("=")
    if keys.dtype != native and native in KEY_DTYPES:
        keys = keys.astype(native)  # big-endian keys: the same values in this machine's order
    if keys.dtype not in KEY_DTYPES and keys.dtype != np.bool_:
        raise argparse.ArgumentTypeError(
            f"{path} holds {keys.dtype} keys ({keys.dtype.str}), which clradix does not sort: "
            f"expected one of {', '.join(str(d) for d in KEY_DTYPES)} or bool")
    return keys


def _order(keys, descending):
    """numpy's stable order of the keys by clradix's order key (NaN last, -0.0 == +0.0)."""
    import numpy as np
    from .core.keys import key_codec
    okey = key_codec(keys.dtype).order_key(keys)
    return np.argsort(~okey if descending else okey, kind="stable")


def _numpy_calls(keys, op, k, descending):
    """(label, call) of what a numpy user would call instead: the default kind and the stable
    one; top-k: argpartition, then sorting the k."""
    import numpy as np
    if op == "topk":
        def topk():
            if k == 0:   # argpartition takes no kth of n: nothing to select
                return np.empty(0, np.intp)
            part = np.argpartition(keys, keys.size - k)[keys.size - k:]
            return part[np.argsort(keys[part], kind="stable")[::-1]]
        return [("np.argpartition + sort of the k", topk)]
    fn = np.sort if op == "sort" else np.argsort
    name = "np.sort" if op == "sort" else "np.argsort"
    return [(f"{name} (default kind)", lambda: fn(keys)),
            (f"{name}(kind='stable')", lambda: fn(keys, kind="stable"))]


def cmd_demo(args):
    import numpy as np
    import pyopencl as cl
    import pyopencl.array as cl_array
    from .core.device import DeviceProfile
    from .core.keys import key_codec
    from .dispatch.selector import Selector
    from .dispatch.sorter import Sorter
    dev = _pick_device(args.device)
    if args.file is not None:
        keys = args.file
    else:
        keys = random_keys(np.random.default_rng(args.seed), args.dtype, args.n)
    codec = key_codec(keys.dtype)
    keys = np.ascontiguousarray(keys)
    op = args.op
    print(f"clradix {__version__} on {DeviceProfile.from_device(dev).describe()}")
    if keys.size == 0:
        print(f"nothing to {op}: 0 {keys.dtype} keys")
        return 0
    k = args.k
    if op == "topk" and k > keys.size:
        print(f"error: --k {k} exceeds the {keys.size} keys (top-k needs k <= n, as "
              f"clradix.topk does)", file=sys.stderr)
        return 2
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    sorter = Sorter(ctx)
    selector = Selector(ctx, sorter=sorter)
    d_keys = cl_array.to_device(queue, keys)
    work = cl_array.empty_like(d_keys)
    result = {}

    def run():
        if op == "sort":
            cl.enqueue_copy(queue, work.data, d_keys.data)
            sorter.sort(queue, work, descending=args.descending).wait()
            result["out"] = work
        elif op == "argsort":
            idx, evt = sorter.argsort(queue, d_keys, descending=args.descending)
            evt.wait()
            result["out"] = idx
        else:
            vals, idx, evt = selector.topk(queue, d_keys, k, largest=not args.descending)
            evt.wait()
            result["out"] = idx
    ms = median_ms(run, args.repeat)   # (the warm-up builds the kernels)
    got = result["out"].get()
    order = _order(keys, args.descending if op != "topk" else not args.descending)
    if op == "sort":
        want = keys[order]
        ok = np.array_equal(got.view(codec.unsigned_dtype), want.view(codec.unsigned_dtype))
        check = "bit-exact equal to numpy's stable sort"
    elif op == "argsort":
        ok = np.array_equal(got.astype(np.int64), order)
        check = "equal to numpy's stable argsort"
    else:
        ok = np.array_equal(got.astype(np.int64), order[:k])
        check = f"the {k} {'smallest' if args.descending else 'largest'}, ranked, ties by position"
    if op != "topk":
        print(f"policy  {sorter.plan(dev, keys.dtype, keys.size).label}")
    what = f"{op} of {keys.size} {keys.dtype} keys" + (f", k={k}" if op == "topk" else "") + \
        (" descending" if args.descending and op != "topk" else "") + \
        (" smallest" if args.descending and op == "topk" else "")
    if ms is None:
        print(f"{what}: not timed (--repeat 0)")
    else:
        print(f"{what}, wall ms per call (the call and its wait; median of {args.repeat} after "
              f"a warm-up):")
        print(f"  {'':38s} {'ms':>10s}   clradix's time / this one's (below 1: clradix faster)")
        print(f"  clradix{'':31s} {ms:10.2f}")
        if not args.descending:   # numpy's calls sort ascending (top-k: the largest)
            for label, fn in _numpy_calls(keys, op, k, args.descending):
                t = median_ms(fn, args.repeat)
                print(f"  {label:38s} {t:10.2f}   {ms / t if t else float('inf'):.2f}")
    print(f"check   {'OK: ' + check if ok else 'MISMATCH: not ' + check}")
    return 0 if ok else 1


def cmd_info(args):
    from .core.device import DeviceProfile, all_devices, can_build, default_device
    devices = all_devices()
    if not devices:
        print("no OpenCL platforms found")
        return 1
    for i, d in enumerate(devices):
        p = DeviceProfile.from_device(d)
        status = "builds kernels" if can_build(d) else "CANNOT build kernels (unusable)"
        print(f"[{i}] {p.describe()}")
        print(f"    {p.device_type}, {p.compute_units} compute units, max work-group "
              f"{p.max_wg_size}, local memory {p.local_mem_bytes // 1024} KiB: {status}")
    try:
        print(f"default device: {default_device().name}")
    except RuntimeError as exc:
        print(exc)
        return 1
    return 0


def _devices(spec):
    from .core.device import all_devices, can_build
    if spec:
        return [_pick_device(spec)]
    return [d for d in all_devices() if can_build(d)]


def cmd_plan(args):
    import pyopencl as cl
    from .core.device import DeviceProfile
    from .dispatch.sorter import Sorter
    from .policies.tuning import tuned_table
    for dev in _devices(args.device):
        prof = DeviceProfile.from_device(dev)
        sorter = Sorter(cl.Context([dev]))
        tuned = tuned_table(prof)
        print(f"{prof.describe()}: {'autotuned' if tuned else 'built-in'} policies")
        for dtype in args.dtypes:
            for lg in (10, 16, 20, 24, 28):
                print(f"  {str(dtype):8s} 2^{lg:<3d} {sorter.plan(dev, dtype, 1 << lg).label}")
    return 0


def cmd_autotune(args):
    import json
    from .autotune import autotune, report
    from .core.device import DeviceProfile
    from .policies.tuning import cache_path, save
    everything = []
    for dev in _devices(args.device):
        prof = DeviceProfile.from_device(dev)
        print(f"autotuning {prof.describe()}")
        winners, rows = autotune(dev, [str(d) for d in args.dtypes], args.sizes, args.repeat,
                                 seconds=args.seconds)
        if winners:
            save(prof, winners)
        print(report(rows, prof.describe()))
        everything.append(dict(device=prof.describe(), rows=rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)
    print(f"saved to {cache_path()}")
    return 0


COMMANDS = ("demo", "info", "plan", "autotune")


def build_parser():
    """(the argument parser, {command: its subparser}). Plain-text help; building it, and
    parsing ``--help``, imports nothing heavy (the argument types import what they need)."""
    ap = argparse.ArgumentParser(prog="python -m clradix", description=DESCRIPTION, epilog=EPILOG)
    verbose_help = "log each kernel build (template, parameters, device, seconds) on stderr"
    ap.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    # the same option after the command; SUPPRESS: left out there, it keeps the value given before
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help=verbose_help)
    sub = ap.add_subparsers(dest="cmd")
    # every key dtype (clradix.core.keys.KEY_DTYPE_NAMES; written out: help imports no numpy)
    dtype_names = "uint8 ... float64, bool or bfloat16, or short: u8 ... f64, bf16"
    device_help = "device index or name substring, as `info` lists them"

    def command(name, what):
        return sub.add_parser(name, help=what, description=what[0].upper() + what[1:] + ".",
                              parents=[common])

    demo = command("demo", "sort random keys or a .npy file and check against numpy")
    demo.add_argument("--n", type=non_negative, default=1 << 22,
                      help="number of random keys (2^22)")
    demo.add_argument("--dtype", type=key_dtype, default="uint32",
                      help=f"key dtype (uint32): {dtype_names}")
    demo.add_argument("--file", type=keys_file, metavar="FILE",
                      help="a .npy file of keys (1-D) to sort instead of random ones")
    demo.add_argument("--device", help=f"{device_help} (default: the one `info` names)")
    demo.add_argument("--op", choices=("sort", "argsort", "topk"), default="sort",
                      help="what to time and check (sort)")
    demo.add_argument("--k", type=non_negative, default=100, help="top-k's k (100)")
    demo.add_argument("--descending", action="store_true",
                      help="descending order (top-k: the smallest k)")
    demo.add_argument("--repeat", type=non_negative, default=5,
                      help="timed runs after one warm-up (5)")
    demo.add_argument("--seed", type=non_negative, default=0,
                      help="seed of the random keys (0): the same seed, the same keys")
    info = command("info", "list OpenCL devices and which one clradix uses by default")
    plan = command("plan", "print the policy the planner picks per device and size")
    plan.add_argument("--device", help=f"{device_help} (default: every device that builds "
                                       f"kernels)")
    plan.add_argument("--dtypes", type=key_dtypes, default="uint32,float32,uint64",
                      help=f"comma-separated key dtypes (uint32,float32,uint64): {dtype_names}")
    tune = command("autotune", "time candidate policies and remember the fastest")
    tune.add_argument("--device", help=f"{device_help} (default: every device that builds "
                                       f"kernels)")
    tune.add_argument("--dtypes", type=key_dtypes, default="uint32,float32",
                      help=f"comma-separated key dtypes (uint32,float32): {dtype_names}")
    tune.add_argument("--sizes", type=log2_sizes, default="16,20,24",
                      help="log2 sizes (16,20,24)")
    tune.add_argument("--repeat", type=positive, default=5,
                      help="timed pairs per candidate, at least (5)")
    tune.add_argument("--seconds", type=seconds, default=0.25,
                      help="more pairs for short sorts: as many as fit in this many seconds "
                           "of the default's time (0.25)")
    tune.add_argument("--json", help="also write every timing here")
    return ap, {"demo": demo, "info": info, "plan": plan, "autotune": tune}


def _with_command(argv):
    """``argv`` with ``demo`` (the default command) inserted after the leading -v / --verbose when
    nothing, or an option other than -h / --help, follows them."""
    at = 0
    while at < len(argv) and argv[at] in ("-v", "--verbose"):
        at += 1
    if at == len(argv) or (argv[at].startswith("-") and argv[at] not in ("-h", "--help")):
        return argv[:at] + ["demo"] + argv[at:]
    return argv


_stderr_handler = None


def _log_to_stderr():
    """Show clradix's INFO records (the kernel builds) on the current stderr; other loggers are
    left as they are. Called again, it replaces its handler rather than adding one."""
    global _stderr_handler
    logger = logging.getLogger("clradix")
    if _stderr_handler is not None:
        logger.removeHandler(_stderr_handler)
    _stderr_handler = logging.StreamHandler(sys.stderr)
    _stderr_handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger.addHandler(_stderr_handler)
    logger.setLevel(logging.INFO)


def main(argv=None):
    """Run the command line ``argv`` (default: sys.argv[1:]); return the exit status. A command line
    that cannot run prints one message on stderr and exits with 2 (SystemExit, as argparse does)."""
    ap, parsers = build_parser()
    argv = _with_command(list(sys.argv[1:] if argv is None else argv))
    args = ap.parse_args(argv)
    if args.verbose:
        _log_to_stderr()
    try:
        return {"demo": cmd_demo, "info": cmd_info, "plan": cmd_plan,
                "autotune": cmd_autotune}[args.cmd](args)
    except CommandLineError as exc:
        parsers[args.cmd].error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
