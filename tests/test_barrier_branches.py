"""A work-item 0 block after a branch that holds barriers, in a kernel that also returns early:
PoCL 3.0's work-item loops run it for every work-item of the work-group, or for none. The reduced
kernel is here; topk_fused had that shape (its last group's hand-off: the next pass's state,
counter resets and ready word), and with several PoCL threads the repeated counter resets, made
after the ready word, undid the next pass's counts: the waits that never ended
(BENCHMARKS_NOTES.md, "topk_fused's waits on PoCL, found"); the hybrid sort, since removed, had
it too (BENCHMARKS_NOTES.md, "the hybrid sort on PoCL 3.0 with two threads"). The kernels keep
the shape that every device runs as written: a branch's work-item 0 block before the branch's
closing barrier, nothing after it (radix_select.cl.mako, finish_pass)."""

import numpy as np
import pyopencl as cl
import pytest

# out[0]: the early-return flag (1: every work-group returns at once), out[1]: the branch's flag;
# out[2], out[3], out[4]: how often the early block, the branch's block and the tail ran
_REDUCED = """
__kernel void reduced(__global volatile uint* out)
{
    __local uint l_go;
    const uint lid = get_local_id(0);
    if (out[0]) {                      /* uniform: one word for the whole launch */
        if (lid == 0)
            atomic_inc(&out[2]);
        return;
    }
    if (lid == 0)
        l_go = out[1];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l_go) {                        /* uniform: one local word */
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0)
            atomic_inc(&out[3]);
%(inside)s
        barrier(CLK_LOCAL_MEM_FENCE);
    }
%(after)s
}
"""
# the shape PoCL 3.0 miscompiles: the second work-item 0 block after the branch
FAULTY = _REDUCED % dict(inside="", after="    if (lid == 0 && l_go)\n        atomic_inc(&out[4]);")
# the shape the kernels use: both blocks before the branch's closing barrier
KEPT = _REDUCED % dict(inside="        if (lid == 0)\n            atomic_inc(&out[4]);", after="")

GROUPS, WG = 3, 64


def run_reduced(ctx, queue, source, early):
    """How often each work-item 0 block ran over GROUPS work-groups of WG work-items:
    (early block, branch block, tail)."""
    prg = cl.Program(ctx, source).build()
    out = np.array([early, 1, 0, 0, 0], np.uint32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
    prg.reduced(queue, (GROUPS * WG,), (WG,), buf)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return tuple(int(x) for x in out[2:])


def _pocl_release(dev):
    """PoCL's release ("3.0-rc2") on a PoCL device, else None."""
    if "portable computing language" not in dev.platform.name.lower():
        return None
    return dev.driver_version.strip()


@pytest.mark.parametrize("early", [0, 1], ids=["branch", "early-return"])
def test_kept_shape_runs_each_block_once(ctx, queue, early):
    """The shape the kernels keep: each work-item 0 block runs once per work-group, on every
    device (PoCL 3.0 included)."""
    want = (GROUPS, 0, 0) if early else (0, GROUPS, GROUPS)
    assert run_reduced(ctx, queue, KEPT, early) == want


def test_faulty_shape(ctx, queue):
    """The reduced shape of topk_fused's old end. Exact on every device but PoCL, where release
    3.0 runs the tail (the work-item 0 block after the branch) for every work-item: WG times per
    work-group (a fault that shows without threads: one work-group after another, each run
    wrongly). Other PoCL releases run it either way; a 3.0 build that runs it exactly fails here
    (the fault's description names the release)."""
    dev = ctx.devices[0]
    got = run_reduced(ctx, queue, FAULTY, 0)
    exact, fault = (0, GROUPS, GROUPS), (0, GROUPS, GROUPS * WG)
    release = _pocl_release(dev)
    if release is None:
        assert got == exact
    elif release.startswith("3.0"):
        assert got == fault, f"PoCL {release}: {got} (the fault seen on 3.0-rc2: {fault})"
    else:
        assert got in (exact, fault), got
