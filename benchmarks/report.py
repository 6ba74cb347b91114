"""Reports of a benchmark run: reading a --json file, the comparison with an earlier run, the
matrix's Markdown tables and PNG plots."""

import json
import os
from collections import defaultdict


def load(path):
    """The rows of a --json file (a list of rows in files written before 2026-11-24)."""
    with open(path) as f:
        data = json.load(f)
    return data["rows"] if isinstance(data, dict) else data


def _failed(row):
    return row.get("error") or not row.get("ok", True)


def _which(row):
    """The time a case is judged by: device time where measured, else (host code) wall time."""
    return "device_ms" if row.get("device_ms") is not None else "wall_ms"


def _ms(row):
    return row[_which(row)]


def _log2(n):
    return n.bit_length() - 1


def size_label(n):
    """2^k for powers of two, else the number."""
    return f"2^{_log2(n)}" if n > 0 and n & (n - 1) == 0 else str(n)


def markdown(rows):
    """One table per (operation, dtype): a row per size, a column per (device, implementation),
    Mkeys/s from device time (wall time for host code)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["op"], r["dtype"])].append(r)
    out = []
    if rows:
        r0 = rows[0]
        out.append(f"clradix {r0['clradix']}, {r0['date']}; Mkeys/s (median; device time, wall "
                   f"time for host numpy); '-' = not run, 'err' = failed (see the JSON)\n")
    for (op, dtype), rs in groups.items():
        cols = []
        for r in rs:
            c = (r["device"], r["impl"])
            if c not in cols:
                cols.append(c)
        sizes = sorted({r["n"] for r in rs})
        cell = {(r["device"], r["impl"], r["n"]): r for r in rs}
        out.append(f"### {op} {dtype}\n")
        out.append("| n | " + " | ".join(f"{i} on {d}" for d, i in cols) + " |")
        out.append("| --- |" + " ---: |" * len(cols))
        for n in sizes:
            vals = []
            for d, i in cols:
                r = cell.get((d, i, n))
                if r is None:
                    vals.append("-")
                elif _failed(r):
                    vals.append("err")
                else:
                    vals.append(f"{n / _ms(r) / 1e3:.1f}")
            out.append(f"| 2^{_log2(n)} | " + " | ".join(vals) + " |")
        out.append("")
    return "\n".join(out)


def _key(r):
    return (r.get("command", "matrix"), r["device"], r["impl"], r.get("case", r.get("op")),
            r["dtype"], r["n"])


def compare(old_rows, new_rows):
    """Speed-up (old time / new time) of every case both runs measured without failing; the
    time column says which time is compared (device_ms, or wall_ms for host code)."""
    old = {_key(r): r for r in old_rows if not _failed(r)}
    lines = ["| device | impl | case | dtype | n | time | old ms | new ms | speed-up |",
             "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |"]
    for r in new_rows:
        k = _key(r)
        if k in old and not _failed(r) and _which(old[k]) == _which(r):
            a, b = _ms(old[k]), _ms(r)
            flag = "" if 0.95 <= a / b <= 1.05 else (" faster" if a > b else " SLOWER")
            lines.append(f"| {r['device']} | {r['impl']} | {k[3]} | {r['dtype']} | "
                         f"{size_label(r['n'])} | "
                         f"{_which(r)} | {a:.3f} | {b:.3f} | {a / b:.2f}x{flag} |")
    lines.append(f"({len(lines) - 2} of {len(new_rows)} cases compared)")
    return "\n".join(lines)


def plots(rows, folder):
    """Throughput against n (one figure per operation and dtype, a line per device and
    implementation), and the speed-up over pyopencl's RadixSort at the largest common size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    written = []
    groups = defaultdict(list)
    for r in rows:
        if not _failed(r):
            groups[(r["op"], r["dtype"])].append(r)
    for (op, dtype), rs in groups.items():
        fig, ax = plt.subplots(figsize=(8, 5))
        lines = defaultdict(list)
        for r in rs:
            lines[(r["device"], r["impl"])].append((r["n"], r["n"] / _ms(r) / 1e6))
        for (dev, impl), pts in sorted(lines.items()):
            pts.sort()
            style = "-" if impl.startswith("clradix") else "--"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3,
                    label=f"{impl} / {dev[:40]}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("keys")
        ax.set_ylabel("GKeys/s")
        ax.set_title(f"{op}, {dtype}: {rs[0]['date']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        path = os.path.join(folder, f"throughput_{op}_{dtype}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    # speed-up over pyopencl RadixSort, per device and dtype, sort op, largest size both ran
    bars = []
    for (op, dtype), rs in groups.items():
        if op != "sort":
            continue
        by = defaultdict(dict)
        for r in rs:
            by[r["device"]][(r["impl"], r["n"])] = r
        for dev, cells in by.items():
            common = [n for (impl, n) in cells if impl == "clradix"
                      and ("pyopencl RadixSort", n) in cells]
            if common:
                n = max(common)
                bars.append((f"{dtype}\n{dev[:22]}", _ms(cells[("pyopencl RadixSort", n)])
                             / _ms(cells[("clradix", n)]), n))
    if bars:
        fig, ax = plt.subplots(figsize=(max(6, len(bars) * 1.2), 4.5))
        ax.bar(range(len(bars)), [b[1] for b in bars])
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([f"{b[0]}\n2^{_log2(b[2])}" for b in bars], fontsize=7)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel("speed-up of clradix over pyopencl RadixSort (sort)")
        fig.tight_layout()
        path = os.path.join(folder, "speedup_over_pyopencl.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
