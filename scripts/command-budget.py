"""The commands each public operation enqueues on the default device (CLRADIX_DEVICE chooses
it), at the command budget's sizes: a call after a first one that builds, counted by kind;
prints the Markdown table of docs/commands.md and the dict of tests/test_command_budget.py."""

import numpy as np
import pyopencl as cl

from clradix.bench import BUDGET_SIZES, budget_calls, count_commands, device_kind
from clradix.core.device import default_device


def measure(queue):
    """{operation: {n: (total, {kind: count})}}."""
    out = {}
    for n in BUDGET_SIZES:
        for name, call in budget_calls(queue, n, np.random.default_rng(0)).items():
            call()
            queue.finish()
            with count_commands() as counted:
                call()
            queue.finish()
            out.setdefault(name, {})[n] = (counted.total, dict(counted.counts))
    return out


def main():
    device = default_device()
    context = cl.Context([device])   # held: a queue alone does not keep it alive everywhere
    queue = cl.CommandQueue(context)
    got = measure(queue)
    kind = device_kind(device)
    print(f"{kind}: {device.name.strip()} ({device.platform.name.strip()})\n")
    print("| operation | " + " | ".join(f"2^{n.bit_length() - 1}" for n in BUDGET_SIZES) + " |")
    print("| --- |" + " ---: |" * len(BUDGET_SIZES))
    for name, per_n in got.items():
        cells = []
        for n in BUDGET_SIZES:
            total, kinds = per_n[n]
            detail = ", ".join(f"{v} {k.replace('enqueue_', '').replace('nd_range_kernel', 'kernel')}"
                               for k, v in sorted(kinds.items()))
            cells.append(f"{total} ({detail})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{kind!r}: " + repr({name: {n: per_n[n][0] for n in BUDGET_SIZES}
                                 for name, per_n in got.items()}))


if __name__ == "__main__":
    main()
