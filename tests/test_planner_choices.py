"""The sort planner's choices for made-up NVIDIA, AMD, Intel, small-GPU and CPU devices
(scripts/render-all.py's profiles), every key width, with and without values, sizes from 2^8 to
2^31 keys, with no override and with the overrides the tests and benchmarks set, against the
table in planner_choices.txt: a change to how policies are organised must leave every choice as
it was. Each line holds the knobs the chosen algorithm takes (or "refused" where the planned
policy does not validate), for each run of sizes with the same choice.

After a change meant to alter a choice, regenerate the table
(``python tests/test_planner_choices.py > tests/planner_choices.txt``) and read its diff."""

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np

if __name__ == "__main__":   # (the checkout's clradix, not an installed one)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clradix.core.errors import PolicyError
from clradix.core.keys import key_codec
from clradix.core.sizes import index_bytes

ROOT = Path(__file__).resolve().parents[1]
TABLE = Path(__file__).resolve().parent / "planner_choices.txt"

# the knobs each algorithm takes (the single work-group sort of 8-bit digits also its ranking)
KNOBS = {
    "onesweep": ("radix_bits", "wg_size", "items_per_thread", "ranking", "sg_size", "ring_slots",
                 "lookback", "spin_limit", "max_registers", "fused_passes"),
    "reduce_then_scan": ("radix_bits", "wg_size", "items_per_thread", "blocks_per_cu",
                         "max_registers"),
    "chunks": ("radix_bits", "wg_size", "items_per_thread", "blocks_per_cu", "bucket_keys"),
    "single_wg": ("radix_bits", "wg_size", "items_per_thread", "max_registers"),
}
# knob values left out of the table (the policies' defaults)
QUIET = {"ranking": "local", "sg_size": 32, "ring_slots": 1024, "lookback": 256,
         "spin_limit": 4096, "max_registers": 0, "fused_passes": False, "blocks_per_cu": 4,
         "bucket_keys": 0}
DTYPES = ("uint8", "uint16", "uint32", "float32", "uint64", "float64")
SIZES = [1 << s for s in (8, 12, 13, 14, 16, 18, 20, 21, 22, 24, 28, 31)]
OVERRIDES = (
    [{}, {"algorithm": "onesweep"}, {"algorithm": "reduce_then_scan"},
     {"algorithm": "single_wg"}, {"algorithm": "single_wg", "radix_bits": 8},
     {"algorithm": "onesweep", "fused_passes": True}, {"algorithm": "onesweep", "fused_passes": False},
     {"algorithm": "onesweep", "radix_bits": 4}, {"algorithm": "chunks"},
     {"wg_size": 128}, {"items_per_thread": 8}, {"radix_bits": 4}, {"ranking": "local"},
     {"algorithm": "onesweep", "ring_slots": 48, "lookback": 16},
     {"algorithm": "chunks", "radix_bits": 11}, {"bucket_keys": 0}, {"max_registers": 64},
     {"blocks_per_cu": 8}]
    + [{"algorithm": "onesweep", "ranking": r} for r in ("local", "ptx", "khr", "intel")]
    + [{"algorithm": "single_wg", "radix_bits": 8, "ranking": r} for r in ("local", "khr")])


def _profiles():
    spec = importlib.util.spec_from_file_location("render_all", ROOT / "scripts" / "render-all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(name, profile) for name, profile, _ in module.PROFILES]


def _choice(plan_sort, validate, profile, codec, vb, n, over):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pol = plan_sort(profile, codec, vb or None, n, None, **over)
            validate(pol, profile, codec.itemsize, index_bytes(n), vb, n)
    except PolicyError:
        return "refused"
    knobs = KNOBS[pol.algorithm][3:]
    if pol.algorithm == "single_wg" and pol.radix_bits == 8:
        knobs += ("ranking", "sg_size")
    return " ".join([f"{pol.algorithm} {pol.radix_bits}b {pol.wg_size}x{pol.items_per_thread}"]
                    + [f"{k}={getattr(pol, k)}" for k in knobs
                       if QUIET.get(k, None) != getattr(pol, k)])


def choices():
    """The table's lines: profile, overrides, key dtype, value bytes, then the choice of each
    run of sizes."""
    from clradix.planning.sort_plan import plan_sort, validate
    lines = []
    for pname, profile in _profiles():
        for over in OVERRIDES:
            for dtype in DTYPES:
                codec = key_codec(np.dtype(dtype))
                for vb in (0, 4, 8):
                    if over and (dtype not in ("uint32", "float64") or vb == 8):
                        continue
                    runs = []
                    for n in SIZES:
                        c = _choice(plan_sort, validate, profile, codec, vb, n, over)
                        if runs and runs[-1][2] == c:
                            runs[-1][1] = n
                        else:
                            runs.append([n, n, c])
                    text = "; ".join(f"2^{lo.bit_length() - 1}"
                                     + (f"..2^{hi.bit_length() - 1}" if hi != lo else "")
                                     + f": {c}" for lo, hi, c in runs)
                    lines.append(f"{pname} {over} {dtype} v{vb} | {text}")
    return lines


def test_planner_choices_are_the_table():
    want = TABLE.read_text().splitlines()
    got = choices()
    changed = [f"- {w}\n+ {g}" for w, g in zip(want, got) if w != g]
    assert len(want) == len(got) and not changed, "\n".join(changed[:20])


if __name__ == "__main__":
    print("\n".join(choices()))
