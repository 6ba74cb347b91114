"""NVIDIA: calls behind an unset user event, each case in a fresh process (unbuffered; a crash
prints its step). First, whether a kernel's arguments are taken when the launch is enqueued (one
kernel object launched twice behind the event, its arguments set anew between the launches).
Then two library calls behind one event, with their temporaries from: the library's pools
(as they are), plain Buffers kept to the end ("_plain") or released when the call drops them
("_plainfree"), pyopencl's ImmediateAllocator, which migrates each new Buffer to the queue, kept
("_immkept"), a pool of its DeferredAllocator ("_deferredpool"). A migration behind the waiting
commands crashed the runtime (core/memory.py, block_allocator)."""
import subprocess
import sys

import numpy as np
import pyopencl as cl

if len(sys.argv) > 1:   # a child: one library case, its steps printed as they happen
    import faulthandler
    import pyopencl.array as cla
    import clradix
    faulthandler.enable()
    # the temporaries' allocator: "_plain" Buffers of the context kept to the end, "_plainfree"
    # the same released when the call drops them, "_immkept" pyopencl's ImmediateAllocator (which
    # migrates each new Buffer to the queue) kept to the end, "_deferredpool" a memory pool of
    # pyopencl's DeferredAllocator (no migration); otherwise the library's pool of
    # ImmediateAllocator blocks
    from clradix.core import memory
    import pyopencl.tools as cl_tools
    KEEP = []
    class _Alloc:
        def __init__(self, queue, make, keep):
            self.make, self.keep = make, keep
        def __call__(self, nbytes):
            buf = self.make(nbytes)
            if self.keep:
                KEEP.append(buf)
            return buf
        allocate = __call__
    variant = sys.argv[1].rsplit("_", 1)[-1]
    if variant in ("plain", "plainfree", "immkept"):
        def _pick(self, queue, variant=variant):
            make = (cl_tools.ImmediateAllocator(queue) if variant == "immkept" else
                    (lambda n: cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, n)))
            return _Alloc(queue, make, variant != "plainfree")
        memory.QueuePools.allocator = _pick
    elif variant == "deferredpool":
        POOLS = {}
        def _pool(self, queue):
            if queue not in POOLS:
                POOLS[queue] = cl_tools.MemoryPool(cl_tools.DeferredAllocator(queue.context))
            return POOLS[queue]
        memory.QueuePools.allocator = _pool
    if "fresh" in sys.argv[1]:   # every launch of every sequence a kernel object of its own
        from clradix.drivers.base import Driver
        from clradix.core.launches import KernelSlot
        Driver.kernel_slot = lambda self, name, position: KernelSlot(
            cl.Kernel(self._programs[name], name))
    plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
    ctx = cl.Context(plat.get_devices()[:1])
    q = cl.CommandQueue(ctx)
    x = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
    d = cla.to_device(q, x)
    print("start", flush=True)
    if sys.argv[1] == "kthvalue_no_wait":
        k = clradix.kthvalue(d, 3)
    elif sys.argv[1] == "median_kthvalue_no_event":
        m = clradix.median(d, axis=1)
        k = clradix.kthvalue(d, 3)
    elif sys.argv[1] == "median_finish_kthvalue_behind_event":
        ue = cl.UserEvent(ctx)
        m = clradix.median(d, axis=1, wait_for=[ue])
        ue.set_status(cl.command_execution_status.COMPLETE)
        q.finish()
        print("median done", flush=True)
        ue = cl.UserEvent(ctx)
        k = clradix.kthvalue(d, 3, wait_for=[ue])
        ue.set_status(cl.command_execution_status.COMPLETE)
    else:   # two or three calls behind one unset event (_fresh, _plain ...: see above)
        ue = cl.UserEvent(ctx)
        if sys.argv[1].startswith("sort_kthvalue_sort"):
            s0 = clradix.sort(d, wait_for=[ue])
            k0 = clradix.kthvalue(d, 3, wait_for=[s0.events[0]])
            k = clradix.sort(d, wait_for=[ue])
        elif sys.argv[1].startswith("median_twice"):
            m0 = clradix.median(d, axis=1, wait_for=[ue])
            k = clradix.median(d, axis=1, wait_for=[ue])
        elif "median" in sys.argv[1]:
            m = clradix.median(d, axis=1, wait_for=[ue])
            k = clradix.kthvalue(d, 3, wait_for=[ue])
        else:
            k0 = clradix.kthvalue(d, 2, wait_for=[ue])
            k = clradix.kthvalue(d, 3, wait_for=[ue])
        print("enqueued behind the event", flush=True)
        ue.set_status(cl.command_execution_status.COMPLETE)
        print("event set", flush=True)
    print("enqueued", flush=True)
    q.finish()
    print("finished", flush=True)
    print(*(k.get().ravel()[:4] for k in (k if isinstance(k, tuple) else (k,))), flush=True)
    sys.exit(0)

plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name or "Portable" in p.name][0]
ctx = cl.Context(plat.get_devices()[:1])
q = cl.CommandQueue(ctx)
prg = cl.Program(ctx, "__kernel void k(__global uint* p, uint v) { p[get_global_id(0)] = v; }"
                 ).build()
C = cl.command_execution_status.COMPLETE
for shared in (True, False):
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
    cl.enqueue_fill_buffer(q, a, np.uint32(0), 0, 4)
    cl.enqueue_fill_buffer(q, b, np.uint32(0), 0, 4).wait()
    ue = cl.UserEvent(ctx)
    k1 = cl.Kernel(prg, "k")
    k2 = k1 if shared else cl.Kernel(prg, "k")
    k1.set_args(a, np.uint32(1))
    cl.enqueue_nd_range_kernel(q, k1, (1,), None, wait_for=[ue])
    k2.set_args(b, np.uint32(2))
    cl.enqueue_nd_range_kernel(q, k2, (1,), None, wait_for=[ue])
    ue.set_status(C)
    q.finish()
    ha, hb = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    cl.enqueue_copy(q, ha, a)
    cl.enqueue_copy(q, hb, b)
    print(f"{'one kernel object' if shared else 'two kernel objects'}: a = {ha[0]} (1 when the "
          f"first launch kept its arguments), b = {hb[0]} (2)", flush=True)

for case in ("median_twice_behind_event_plain", "median_twice_behind_event_plainfree",
             "median_twice_behind_event_immkept", "median_twice_behind_event_deferredpool",
             "sort_kthvalue_sort_behind_event_deferredpool",
             "sort_kthvalue_sort_behind_event_plainfree",
             "median_twice_behind_event"):
    try:
        p = subprocess.run([sys.executable, "-u", __file__, case], capture_output=True, text=True,
                           timeout=30)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = "no end in 30 s"
    lines = [s for s in out.splitlines() if "Warning" not in s and "lambda: self" not in s]
    print(f"== {case}: {rc}")
    print("\n".join("   " + s for s in lines[-12:]))
