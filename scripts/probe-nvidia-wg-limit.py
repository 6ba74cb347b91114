"""NVIDIA: CL_KERNEL_WORK_GROUP_SIZE of minimal kernels with and without -cl-nv-maxrregcount (the
driver reported 256 for all of them on an H200; core/limits.py, capped_wg_limit)."""
import sys
import numpy as np, pyopencl as cl
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
dev = plat.get_devices()[0]
ctx = cl.Context([dev])
SRC = """
__kernel void k1(__global uint* a) { a[get_global_id(0)] += 1; }
__kernel void k2(__global uint* a) {
  __local uint s[1024]; uint r[24];
  for (int i = 0; i < 24; ++i) r[i] = a[get_global_id(0) * 24 + i];
  s[get_local_id(0)] = r[0]; barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = 0; i < 24; ++i) a[get_global_id(0) * 24 + i] = r[(i + s[get_local_id(0)]) % 24] + s[i];
}
"""
for opts in ([], ["-cl-nv-maxrregcount=64"], ["-cl-nv-maxrregcount=56"], ["-cl-nv-maxrregcount=128"]):
    p = cl.Program(ctx, SRC).build(options=opts + ["-cl-nv-verbose"])
    for name in ("k1", "k2"):
        k = cl.Kernel(p, name)
        print("minimal", opts, name, k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev), flush=True)
    log = p.get_build_info(dev, cl.program_build_info.LOG)
    print("   ", " | ".join(l.strip() for l in log.splitlines() if "Used" in l))
