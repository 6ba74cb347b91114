"""The benchmark tool: ``python -m benchmarks <command> [options]``, and
``python -m benchmarks <command> --help`` for a command's options. The commands, listed below,
are modules of this package; each one's summary is the first paragraph of its docstring.

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


def plain(text):
    """Docstring text as help shows it: without reST's literal quotes."""
    return text.replace("``", "")


def summary(module):
    """The first paragraph of ``module``'s docstring on one line: a command's summary, whole
    (its first line alone stops mid-sentence)."""
    return plain(" ".join(module.__doc__.strip().split("\n\n")[0].split()))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=plain(__doc__),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", metavar="command", required=True)
    for name, module in COMMANDS.items():
        p = sub.add_parser(name, help=summary(module), description=plain(module.__doc__),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
    args = ap.parse_args(argv)
    return COMMANDS[args.command].main(args)


if __name__ == "__main__":
    sys.exit(main())
