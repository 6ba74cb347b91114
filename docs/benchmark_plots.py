"""Draw BENCHMARKS.md's plots from the saved runs under benchmarks/results/ (matplotlib: the
``bench`` extra). Run from the checkout's root:

    python docs/benchmark_plots.py [OUT_DIR]        # default benchmarks/plots

Line plots (throughput against size, a line per implementation) are drawn by the benchmark tool's
own plotting code, ``benchmarks.report.plots``, from the rows of a saved run (the matrix runs need
no script: ``python -m benchmarks matrix --plot-from RUN.json --plots DIR``).
Runs whose cases are shapes rather than sizes (top-k, segmented rows) get a bar chart per case.
Every number drawn is a median from the run's JSON file, which the figure's title names.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import report  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def _run(name):
    return report.load(os.path.join(RESULTS, name + ".json"))


def _device(rows):
    r = next(r for r in rows if r.get("impl", "").startswith("clradix"))
    return r["device"].split(" (")[0], r.get("driver", "")


def sort_keys(out):
    """Sort of keys (run E, H200): clradix's planner policy beside CUB and torch, 2^24-2^30."""
    rows = []
    for r in _run("h200_os_keys_2026-11-23"):
        if not r.get("ok", True) or r["case"] not in ("planner", "sort"):
            continue
        impl, dtype = r["impl"], r["dtype"]
        if impl == "torch" and dtype in ("int32", "int64"):   # torch has no unsigned sort
            impl, dtype = f"torch ({dtype})", {"int32": "uint32", "int64": "uint64"}[dtype]
        if dtype not in ("uint32", "float32"):
            continue
        rows.append(dict(r, op="sort", impl=impl, dtype=dtype, device="NVIDIA H200"))
    return report.plots(rows, os.path.join(out, "sort"))


def argsort_per_call(out):
    """argsort per call (H100): one call and its wait, 2^10-2^22, beside CuPy and torch."""
    rows = []
    for r in _run("h100_latency_argsort_out_2026-11-23"):
        if not r.get("ok", True) or r.get("single_us") is None:
            continue
        if r["case"] not in ("argsort", "argsort_out") or r["dtype"] != "uint32" and \
                not r["impl"].startswith("torch"):
            continue
        impl = r["impl"] if r["case"] == "argsort" else r["impl"] + " out="
        if r["impl"].startswith("torch"):
            impl += " (float32)"
        rows.append(dict(r, op="argsort_call_and_wait", dtype="uint32", impl=impl,
                         device="NVIDIA H100", device_ms=r["single_us"] / 1000.0))
    return report.plots(rows, os.path.join(out, "argsort"))


def bars(rows, title, path, label):
    """A bar per (case, implementation): milliseconds, log scale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cases, impls = [], []
    ms = {}
    for r in rows:
        if not r.get("ok", True):
            continue
        case, impl = label(r), r["impl"]
        if case not in cases:
            cases.append(case)
        if impl not in impls:
            impls.append(impl)
        ms[(case, impl)] = r["device_ms"] if r.get("device_ms") is not None else r["wall_ms"]
    width = 0.8 / len(impls)
    fig, ax = plt.subplots(figsize=(max(8, len(cases) * 0.9), 5))
    for i, impl in enumerate(impls):
        xs = [j + i * width for j, c in enumerate(cases) if (c, impl) in ms]
        ys = [ms[(c, impl)] for c in cases if (c, impl) in ms]
        ax.bar(xs, ys, width, label=impl)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cases))])
    ax.set_xticklabels(cases, fontsize=7, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("ms (device time, median; lower is better)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def topk(out):
    rows = _run("h100_topk_warp_chunks_2026-11-23")
    dev, drv = _device(rows)
    return bars(rows, f"top-k beside torch.topk: {dev}, driver {drv}, 2026-11-23 "
                "(h100_topk_warp_chunks_2026-11-23.json)",
                os.path.join(out, "topk", "topk_h100.png"),
                lambda r: r["case"].replace("268435456", "2^28").replace("1048576", "2^20")
                .replace("16777216", "2^24").replace("65536", "2^16"))


def segmented(out):
    rows = _run("h100_segmented_2026-11-23")
    dev, drv = _device(rows)
    # the clradix variants (rows, rows argsort, pairs, segments, the plain sort) are cases
    rows = [dict(r, case=r["case"] + (" " + r["impl"][len("clradix "):]
                                      if r["impl"].startswith("clradix ") else ""),
                 impl="clradix" if r["impl"].startswith("clradix") else r["impl"])
            for r in rows]
    return bars(rows, f"segmented sort (float32) beside torch and CuPy: {dev}, driver {drv}, "
                "2026-11-23 (h100_segmented_2026-11-23.json)",
                os.path.join(out, "segmented", "segmented_h100.png"),
                lambda r: r["case"])


def main(argv):
    out = argv[0] if argv else os.path.join(ROOT, "benchmarks", "plots")
    for make in (sort_keys, argsort_per_call, topk, segmented):
        for path in make(out):
            print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
