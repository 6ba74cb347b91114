"""NVIDIA: selection calls behind one unset user event (or none), on the main thread or another,
then their results read; each case in a process of its own (faulthandler prints a crash's
stack; a case that does not end in 20 s is reported so). Which sequence crashes or hangs."""
import subprocess, sys, textwrap
HEAD = """
import faulthandler, threading, numpy as np, pyopencl as cl, pyopencl.array as cla, clradix
faulthandler.enable()
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
ctx = cl.Context(plat.get_devices()[:1]); q = cl.CommandQueue(ctx)
x = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
d = cla.to_device(q, x); ue = cl.UserEvent(ctx); C = cl.command_execution_status.COMPLETE
box = {}
def thr(f):
    t = threading.Thread(target=f); t.start(); t.join(5); print("thread done", not t.is_alive())
"""
V = {
 "three_main": "m = clradix.median(d, axis=1, wait_for=[ue]); p = clradix.partition(d, 11, wait_for=[ue]); k = clradix.kthvalue(d, 3, wait_for=[ue]); ue.set_status(C); print(m.get()[:1], p.get()[0,11]); print(k.values.get()); print(k.indices.get())",
 "kth_thread": "def f(): box['k'] = clradix.kthvalue(d, 3, wait_for=[ue])\nthr(f); ue.set_status(C); print(box['k'].values.get()); print(box['k'].indices.get())",
 "kth_main": "k = clradix.kthvalue(d, 3, wait_for=[ue]); ue.set_status(C); print(k.values.get()); print(k.indices.get())",
 "kth_noevent_thread": "def f(): box['k'] = clradix.kthvalue(d, 3)\nthr(f); print(box['k'].values.get()); print(box['k'].indices.get())",
 "three_thread_noevent": "def f():\n    box['m'] = clradix.median(d, axis=1); box['p'] = clradix.partition(d, 11); box['k'] = clradix.kthvalue(d, 3)\nthr(f); print(box['k'].values.get()); print(box['k'].indices.get())",
 "three_thread": "def f():\n    box['m'] = clradix.median(d, axis=1, wait_for=[ue]); box['p'] = clradix.partition(d, 11, wait_for=[ue]); box['k'] = clradix.kthvalue(d, 3, wait_for=[ue])\nthr(f); ue.set_status(C); print(box['m'].get()[:1]); print(box['k'].values.get()); print(box['k'].indices.get())",
 "kth_idx_first": "k = clradix.kthvalue(d, 3, wait_for=[ue]); ue.set_status(C); print(k.indices.get()); print(k.values.get())",
}
for name, body in V.items():
    try:
        p = subprocess.run([sys.executable, "-c", HEAD + body], capture_output=True, text=True, timeout=20)
        out = "\n".join(l for l in (p.stdout + p.stderr).splitlines() if "Warning" not in l and "lambda: self" not in l and "building" not in l and "site-packages" not in l and "clsite" not in l)
        print(f"== {name}: rc {p.returncode}"); print(textwrap.indent(out[-700:], "   "))
    except subprocess.TimeoutExpired:
        print(f"== {name}: no end in 20 s")
