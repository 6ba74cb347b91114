"""NVIDIA: single commands and single selection calls behind an unset user event, each in a process
of its own (faulthandler prints a crash's Python stack; a call that waits on the event inside
itself times out): which one crashes or hangs."""
import subprocess
import sys
import textwrap

HEAD = """
import faulthandler, numpy as np, pyopencl as cl, pyopencl.array as cla, clradix
faulthandler.enable()
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
ctx = cl.Context(plat.get_devices()[:1]); q = cl.CommandQueue(ctx)
x = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
d = cla.to_device(q, x); ue = cl.UserEvent(ctx); C = cl.command_execution_status.COMPLETE
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096); out = np.empty(1024, np.uint32)
prg = cl.Program(ctx, "__kernel void k(__global uint* p) { p[get_global_id(0)] = 7u; }").build()
"""
VARIANTS = {
    "fill": "cl.enqueue_fill_buffer(q, buf, np.uint32(3), 0, 4096, wait_for=[ue])\n"
            "ue.set_status(C); cl.enqueue_copy(q, out, buf); print(out[:2])",
    "kernel": "prg.k(q, (1024,), None, buf, wait_for=[ue])\n"
              "ue.set_status(C); cl.enqueue_copy(q, out, buf); print(out[:2])",
    "copy": "b2 = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)\n"
            "cl.enqueue_copy(q, b2, buf, wait_for=[ue])\n"
            "ue.set_status(C); cl.enqueue_copy(q, out, b2); print(out[:2])",
    "fill_then_kernel": "e = cl.enqueue_fill_buffer(q, buf, np.uint32(3), 0, 4096, wait_for=[ue])\n"
                        "prg.k(q, (1024,), None, buf, wait_for=[e])\n"
                        "ue.set_status(C); cl.enqueue_copy(q, out, buf); print(out[:2])",
    "median": "m = clradix.median(d, axis=1, wait_for=[ue]); ue.set_status(C); print(m.get())",
    "partition": "p = clradix.partition(d, 11, wait_for=[ue]); ue.set_status(C); "
                 "print(p.get()[:, 11])",
    "kthvalue": "k = clradix.kthvalue(d, 3, wait_for=[ue]); ue.set_status(C); print(k.values.get())",
    "sort": "s = clradix.sort(d, wait_for=[ue]); ue.set_status(C); print(s.get()[:, :2])",
    "median_after_event_wait": "m = clradix.median(d, axis=1, wait_for=[ue]); ue.set_status(C); "
                               "q.finish(); print(m.get())",
}
for name, body in VARIANTS.items():
    try:
        p = subprocess.run([sys.executable, "-c", HEAD + body], capture_output=True, text=True,
                           timeout=12)
        print(f"== {name}: rc {p.returncode}")
        print(textwrap.indent((p.stdout + p.stderr)[-600:], "   "))
    except subprocess.TimeoutExpired:
        print(f"== {name}: no end in 12 s")
