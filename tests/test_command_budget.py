"""The command budget: how many commands (kernels, fills, copies, markers, maps) each public
operation enqueues, counted at 2^10, 2^16 and 2^20 float32 keys on a call after the one that
builds (clradix.bench.count_commands). Every enqueued command costs host time (about 8.5 us each
on NVIDIA's OpenCL, which has no command buffers), so a change that adds one fails here; one that
removes one updates BUDGET and docs/commands.md (``python scripts/command-budget.py`` prints
both). Device kinds without a recorded budget skip (the script records one)."""

import numpy as np
import pytest

from clradix.bench import BUDGET_SIZES, budget_calls, count_commands, device_kind

# (2^10, 2^16, 2^20) commands per call, by device kind (clradix.bench.device_kind). The CPUs
# (PoCL and Intel's runtime) take the same routes.
CPU = {
    'sort': (7, 7, 7),
    'argsort': (7, 7, 8),
    'Sorter.sort with values': (7, 7, 7),
    'topk k=10': (2, 2, 2),
    'searchsorted (n/16 values)': (1, 1, 1),
    'unique': (10, 10, 10),
    'unique_counts': (10, 10, 10),
    'unique_inverse': (10, 10, 10),
    'run_lengths': (3, 3, 3),
    'median': (4, 4, 4),
    'partition (n/2)': (5, 5, 5),
    'quantile (3 q)': (4, 4, 4),
}
# NVIDIA H200 (driver 580.159.04): the one-launch sorts (their counters a block the queue keeps,
# no fill), the fused top-k passes (this test passed there with these counts)
NVIDIA = {
    'sort': (1, 1, 1),
    'argsort': (1, 1, 2),
    'Sorter.sort with values': (1, 1, 1),
    'topk k=10': (1, 3, 3),
    'searchsorted (n/16 values)': (1, 1, 1),
    'unique': (4, 4, 4),
    'unique_counts': (4, 4, 4),
    'unique_inverse': (4, 4, 4),
    'run_lengths': (3, 3, 3),
    'median': (6, 6, 6),
    'partition (n/2)': (7, 7, 7),
    'quantile (3 q)': (6, 6, 6),
}
BUDGET = {"pocl-cpu": CPU, "intel-cpu": CPU, "nvidia-gpu": NVIDIA}


@pytest.mark.parametrize("n", BUDGET_SIZES, ids=lambda n: f"2^{n.bit_length() - 1}")
def test_commands_per_call(queue, n):
    kind = device_kind(queue.device)
    if kind not in BUDGET:
        pytest.skip(f"no command budget recorded for {kind}: python scripts/command-budget.py "
                    f"measures one")
    budget = BUDGET[kind]
    calls = budget_calls(queue, n, np.random.default_rng(7))
    assert set(calls) == set(budget), "a budgeted operation without a recorded budget"
    got = {}
    for name, call in calls.items():
        call()
        queue.finish()
        with count_commands() as counted:
            call()
        queue.finish()
        got[name] = (counted.total, counted.counts)
    at = BUDGET_SIZES.index(n)
    over = {name: got[name] for name in calls if got[name][0] > budget[name][at]}
    under = {name: got[name] for name in calls if got[name][0] < budget[name][at]}
    assert not over, f"{kind} at n={n}: more commands than the budget: {over}"
    assert not under, (f"{kind} at n={n}: fewer commands than the budget (update BUDGET and "
                       f"docs/commands.md): {under}")
