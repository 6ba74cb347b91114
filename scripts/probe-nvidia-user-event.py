"""NVIDIA: which selection calls behind an unset user event return, crash or wait; each variant in
a process of its own (faulthandler prints the Python stack of a crash)."""
import subprocess, sys, textwrap
VARIANTS = {
 "three_calls_thread": """
import threading
box = {}
def calls():
    box["m"] = clradix.median(d, axis=1, wait_for=[ue])
    box["p"] = clradix.partition(d, 11, wait_for=[ue])
    box["k"] = clradix.kthvalue(d, 3, wait_for=[ue])
t = threading.Thread(target=calls, daemon=True); t.start(); t.join(60)
ue.set_status(C)
print("m", box["m"].get(), flush=True); print("k", box["k"].indices.get(), flush=True)
""",
 "three_calls_main": """
box = {}
box["m"] = clradix.median(d, axis=1, wait_for=[ue])
box["p"] = clradix.partition(d, 11, wait_for=[ue])
box["k"] = clradix.kthvalue(d, 3, wait_for=[ue])
ue.set_status(C)
print("m", box["m"].get(), flush=True); print("k", box["k"].indices.get(), flush=True)
""",
 "median_then_partition": """
m = clradix.median(d, axis=1, wait_for=[ue]); p = clradix.partition(d, 11, wait_for=[ue])
ue.set_status(C); print("m", m.get(), flush=True); print("p", p.get()[:, 11], flush=True)
""",
 "partition_then_kth": """
p = clradix.partition(d, 11, wait_for=[ue]); k = clradix.kthvalue(d, 3, wait_for=[ue])
ue.set_status(C); print("p", p.get()[:, 11], flush=True); print("k", k.values.get(), flush=True)
""",
 "median_then_kth": """
m = clradix.median(d, axis=1, wait_for=[ue]); k = clradix.kthvalue(d, 3, wait_for=[ue])
ue.set_status(C); print("m", m.get(), flush=True); print("k", k.values.get(), flush=True)
""",
}
HEAD = """
import faulthandler, numpy as np, pyopencl as cl, pyopencl.array as cla, clradix
faulthandler.enable()
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
ctx = cl.Context(plat.get_devices()[:1]); q = cl.CommandQueue(ctx)
clradix.set_default_queue(q) if hasattr(clradix, "set_default_queue") else None
x = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
d = cla.to_device(q, x); ue = cl.UserEvent(ctx); C = cl.command_execution_status.COMPLETE
"""
for name, body in VARIANTS.items():
    p = subprocess.run([sys.executable, "-c", HEAD + body], capture_output=True, text=True, timeout=120)
    print(f"== {name}: rc {p.returncode}")
    print(textwrap.indent((p.stdout + p.stderr)[-1500:], "   "))
