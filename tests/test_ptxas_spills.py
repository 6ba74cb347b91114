"""NVIDIA only: the planner's onesweep pass for a large sort spills no register, for every key type
and for keys with values. ptxas's report (-cl-nv-verbose) of the pass's program, rebuilt from the
driver's own source and options, must say 0 bytes of spill stores and loads for every function.

A spill is a local-memory round trip in the pass's inner loops. The shapes of
sort_defaults.NVIDIA_PASS_TILES measured fastest so far all spill a little (MEASURED_SPILLING: the
bytes ptxas reported for them, BENCHMARKS.md): their cases are expected to fail (xfail, not
strict) and report what they spill, so a spill-free shape shows as XPASS; any other shape the
planner takes must spill nothing. Skipped on every other device."""

import re
import uuid

import numpy as np
import pyopencl as cl
import pytest

import clradix
from clradix.core.device import DeviceProfile
from clradix.core.keys import KEY_DTYPES, key_codec
from clradix.core.render import render
from clradix.drivers.onesweep import Onesweep

# beyond NVIDIA_FUSED_MAX (separate passes, the capped tiles); no memory is allocated
N = 1 << 28
CASES = ([(np.dtype(d), None) for d in KEY_DTYPES]
         + [(np.dtype(d), 4) for d in (np.uint32, np.float32, np.uint64, np.float64)])
# (wg_size, items_per_thread, max_registers) of the planner's passes measured on the H200 to spill:
# 384 x 24 under 56 registers (uint32 144 B), 384 x 20 under 56 (float32 200 B), 256 x 16 under
# 64 for 64-bit keys (uint64 120 B, float64 60 B), 512 x 15 under 64 with values (uint32 24 B)
MEASURED_SPILLING = {(384, 24, 56), (384, 20, 56), (256, 16, 64), (512, 15, 64)}
_PROPS = re.compile(r"Function properties for (\S+)\s*\n\s*ptxas\s+\.\s+(\d+) bytes stack frame, "
                    r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", re.S)


def ptxas_report(ctx, driver):
    """{function: (stack bytes, spill store bytes, spill load bytes)} and {kernel: registers} of
    the driver's pass program, from a fresh build with -cl-nv-verbose (a kernel of its own with a
    unique name makes the source new to every cache, which would otherwise leave no report)."""
    probe = f"ptxas_probe_{uuid.uuid4().hex}"
    source = render(driver.template, **driver.render_params) + (
        f"\n__kernel void {probe}(__global uint* p) {{ p[0] = 1u; }}\n")
    prg = cl.Program(ctx, source).build(options=list(driver.build_opts) + ["-cl-nv-verbose"])
    log = prg.get_build_info(ctx.devices[0], cl.program_build_info.LOG)
    props = {m.group(1): tuple(int(g) for g in m.groups()[1:]) for m in _PROPS.finditer(log)}
    used = {m.group(1): int(m.group(2)) for m in _USED.finditer(log)}
    return props, used, log


@pytest.mark.parametrize("dtype,values", CASES,
                         ids=[f"{d}{'+values' if v else ''}" for d, v in CASES])
def test_planner_pass_spills_nothing(ctx, dtype, values, request):
    dev = ctx.devices[0]
    prof = DeviceProfile.from_device(dev)
    if not prof.has_ptx:
        pytest.skip(f"ptxas's report is NVIDIA's: {prof.describe()}")
    driver = clradix.Sorter(ctx).planner.sort_driver(dev, key_codec(dtype), values, N)
    assert isinstance(driver, Onesweep), driver
    pol = driver.policy
    shape = (pol.wg_size, pol.items_per_thread, pol.max_registers)
    if shape in MEASURED_SPILLING:
        request.node.add_marker(pytest.mark.xfail(
            reason=f"the pass {shape} was measured to spill (MEASURED_SPILLING)", strict=False))
    props, used, log = ptxas_report(ctx, driver)
    assert "os_pass" in props, f"ptxas reported nothing for os_pass:\n{log}"
    spilled = {f: p for f, p in props.items() if p[1] or p[2]}
    assert not spilled, (f"{dtype}{' + values' if values else ''}: the pass "
                         f"{pol.wg_size} x {pol.items_per_thread} under max_registers="
                         f"{pol.max_registers} ({used.get('os_pass')} registers) spills "
                         f"(function: stack, spill stores, spill loads bytes): {spilled}")
