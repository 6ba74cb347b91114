"""NVIDIA: how many commands may wait behind one unset user event, and do they still run in the
in-order queue's order? N launches of a small kernel, the first only or every one waiting for
the event, each case in a fresh process (unbuffered; a crash or a hang is reported with the last
step). "migrate": after each launch a new Buffer from pyopencl's ImmediateAllocator (which
enqueues its migration to the queue, as a memory pool's new block does) and a launch into it.
"first", "all", "objects": each launch writes its index into its own word (a kernel object
each for "objects"); "order_first", "order_all": launch i moves one shared word from i to i + 1
only when it finds i there and sleeps a while first, so the word ends at N only when every launch
ran after the one before it."""
import subprocess
import sys

if len(sys.argv) > 1:
    import faulthandler
    import numpy as np
    import pyopencl as cl
    faulthandler.enable()
    n, mode = int(sys.argv[1]), sys.argv[2]
    plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name or "Portable" in p.name][0]
    ctx = cl.Context(plat.get_devices()[:1])
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, "__kernel void k(__global uint* p, uint i) "
                          "{ if (get_global_id(0) == 0) p[i] = i + 1; }\n"
                          "__kernel void o(__global volatile uint* p, uint i) {"
                          "  if (get_global_id(0) != 0) return;"
                          "  uint s = 0; for (uint j = 0; j < 200000u; ++j) s += j * i;"
                          "  if (p[0] == i) p[0] = i + 1 + (s & 0u); }").build()
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
    cl.enqueue_fill_buffer(q, buf, np.uint32(0), 0, 4 * n).wait()
    ue = cl.UserEvent(ctx)
    name = "o" if mode.startswith("order") else "k"
    knl = cl.Kernel(prg, name)
    for i in range(n):
        k = knl if mode != "objects" else cl.Kernel(prg, name)
        k.set_args(buf, np.uint32(i))
        wait = [ue] if (i == 0 or not mode.endswith("first")) else None
        cl.enqueue_nd_range_kernel(q, k, (256 * 132,), (256,), wait_for=wait)
        if mode == "migrate":   # a pool's new block: ImmediateAllocator migrates it to the queue
            import pyopencl.tools as cl_tools
            extra = cl_tools.ImmediateAllocator(q)(1 << 20)
            k.set_args(extra, np.uint32(i))
            cl.enqueue_nd_range_kernel(q, k, (256 * 132,), (256,))
    print("enqueued", flush=True)
    ue.set_status(cl.command_execution_status.COMPLETE)
    print("set", flush=True)
    q.finish()
    out = np.zeros(n, np.uint32)
    cl.enqueue_copy(q, out, buf)
    if mode.startswith("order"):
        print("ok" if out[0] == n else f"OUT OF ORDER: the word is {out[0]}, not {n}", flush=True)
    else:
        print("ok" if (out == np.arange(1, n + 1)).all() else f"WRONG {out}", flush=True)
    sys.exit(0)

for mode in ("migrate", "order_first", "order_all", "first", "all", "objects"):
    for n in (4, 16, 64):
        try:
            p = subprocess.run([sys.executable, "-u", __file__, str(n), mode], capture_output=True,
                               text=True, timeout=15)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc = "no end in 15 s"
        last = [s for s in out.splitlines() if s.strip()][-1:] or ["(nothing)"]
        print(f"{mode:8s} n={n:3d}: rc {rc}, last step: {last[0]}", flush=True)
