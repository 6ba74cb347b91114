"""The benchmark tool: ``python -m benchmarks <command> [options]``.

Commands (``python -m benchmarks <command> --help`` for each one's options):

    matrix   every device, operation, dtype and size: clradix beside pyopencl, numpy, CuPy, torch
    gpu      clradix's sorts on one device beside CUB (CuPy) and torch: check suite, key types,
             onesweep variants, size sweep, per-kernel breakdown
    topk     top-k on one device beside torch.topk
    segmented  batched rows and segments on one device beside torch.sort(dim=-1), cupy.sort
    large    sorts too large for CI (2^31 keys), checked in full on the host
    stress   onesweep's ring-wrapping cases many times in fresh processes with a time limit
    dask     clradix.dask (sort, top-k) on 1 worker and device vs 2, beside numpy chunk functions
    latency  per-call cost of small and mid sorts (single call, stream, host enqueue time)
             beside CuPy, torch and numpy
    cpu      CPU devices beside numpy's default and stable kinds, per call (sort, argsort,
             top-k, rows)
    api      the numpy-like functions per call (pooled results, int64 and uint32 indices)
             beside torch, CuPy and numpy
    after    what comes after a sort (searchsorted, unique, run lengths, lexsort, several
             value arrays) beside CuPy, torch and numpy
    selection  median, quantiles, medians of rows and partition beside torch, CuPy and numpy

Common options: --device, --repeat, --quick (small sizes, 2 repeats: proves the command works),
--json FILE, --compare OLD.json. Times (benchmarks/timing.py) are ``device_ms`` (profiling events
or CUDA events) and ``wall_ms`` (host wall time per call, enqueue included). The exit status is 1
when any case gave a wrong result or raised; each failure is printed with its case.
"""

import argparse
import sys

from . import (after_sort, api, cpu, dask_scaling, gpu, large, latency, matrix, segmented,
               selection, stress, topk)

COMMANDS = {"matrix": matrix, "gpu": gpu, "topk": topk, "segmented": segmented, "large": large,
            "stress": stress, "dask": dask_scaling, "latency": latency, "cpu": cpu, "api": api,
            "after": after_sort, "selection": selection}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", metavar="command", required=True)
    for name, module in COMMANDS.items():
        p = sub.add_parser(name, help=module.__doc__.splitlines()[0], description=module.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
    args = ap.parse_args(argv)
    return COMMANDS[args.command].main(args)


if __name__ == "__main__":
    sys.exit(main())
