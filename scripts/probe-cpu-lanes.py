"""Does PoCL run a per-bucket LSD pass in vector lanes when the buckets are the
work-items of one work-group and the loop over keys holds a barrier (so that PoCL's work-item
loop is the innermost one)? Counting and scattering an 8-bit digit of 2^22 uint32 keys in 256
buckets of 16384, three shapes, time per key."""
import sys, time
import numpy as np, pyopencl as cl

SRC = r"""
#define L %(L)d
#define W %(W)d
/* A: a work-item per bucket (today's CPU shape): count, then scatter within the bucket */
__kernel __attribute__((reqd_work_group_size(1,1,1)))
void a_pass(__global const uint* keys, __global uint* out, uint shift)
{
    const uint b = get_group_id(0);
    uint cnt[256];
    for (int d = 0; d < 256; ++d) cnt[d] = 0;
    __global const uint* k = keys + (size_t)b * L;
    for (int i = 0; i < L; ++i) cnt[(k[i] >> shift) & 255u]++;
    uint run = 0;
    for (int d = 0; d < 256; ++d) { uint c = cnt[d]; cnt[d] = run; run += c; }
    __global uint* o = out + (size_t)b * L;
    for (int i = 0; i < L; ++i) { uint x = k[i]; o[cnt[(x >> shift) & 255u]++] = x; }
}
/* B: W buckets a work-group, a work-item each, a barrier per step of the key loop */
__kernel __attribute__((reqd_work_group_size(W,1,1)))
void b_pass(__global const uint* keys, __global uint* out, uint shift)
{
    __local uint cnt[256 * W];
    const uint lid = get_local_id(0);
    const uint b = get_global_id(0);
    for (int d = 0; d < 256; ++d) cnt[d * W + lid] = 0;
    __global const uint* k = keys + (size_t)b * L;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < L; ++i) {
        cnt[((k[i] >> shift) & 255u) * W + lid]++;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint run = 0;
    for (int d = 0; d < 256; ++d) { uint c = cnt[d * W + lid]; cnt[d * W + lid] = run; run += c; }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint* o = out + (size_t)b * L;
    for (int i = 0; i < L; ++i) {
        uint x = k[i];
        uint at = ((x >> shift) & 255u) * W + lid;
        o[cnt[at]++] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
/* C: as B, the keys of the W buckets interleaved (key i of lane j at i * W + j): loads are
   one vector, the counts and the scatter still lane-private */
__kernel __attribute__((reqd_work_group_size(W,1,1)))
void c_pass(__global const uint* keys, __global uint* out, uint shift)
{
    __local uint cnt[256 * W];
    const uint lid = get_local_id(0);
    const uint g = get_group_id(0);
    for (int d = 0; d < 256; ++d) cnt[d * W + lid] = 0;
    __global const uint* k = keys + (size_t)g * L * W;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < L; ++i) {
        cnt[((k[i * W + lid] >> shift) & 255u) * W + lid]++;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint run = 0;
    for (int d = 0; d < 256; ++d) { uint c = cnt[d * W + lid]; cnt[d * W + lid] = run; run += c; }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint* o = out + (size_t)g * L * W;
    for (int i = 0; i < L; ++i) {
        uint x = k[i * W + lid];
        uint at = ((x >> shift) & 255u) * W + lid;
        o[cnt[at]++ * W + lid] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
"""
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
N, L = 1 << 22, 1 << 14
B = N // L
rng = np.random.default_rng(0)
x = rng.integers(0, 2**32, N, dtype=np.uint32)
mf = cl.mem_flags
kb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
ob = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
for W in (8, 16):
    prg = cl.Program(ctx, SRC % dict(L=L, W=W)).build()
    for name, gsize, lsize in (("a_pass", B, 1), ("b_pass", B, W), ("c_pass", B, W)):
        if name == "a_pass" and W != 8:
            continue
        knl = getattr(prg, name)
        knl.set_args(kb, ob, np.uint32(8))
        cl.enqueue_nd_range_kernel(q, knl, (gsize,), (lsize,)).wait()   # compile + warm
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            cl.enqueue_nd_range_kernel(q, knl, (gsize,), (lsize,)).wait()
            ts.append(time.perf_counter() - t)
        got = np.empty_like(x)
        cl.enqueue_copy(q, got, ob)
        # check: each bucket (A, B) or lane (C) holds its keys stably by the digit
        if name == "c_pass":
            xs = x.reshape(-1, L, W).transpose(0, 2, 1).reshape(-1, L)
            gs = got.reshape(-1, L, W).transpose(0, 2, 1).reshape(-1, L)
        else:
            xs, gs = x.reshape(-1, L), got.reshape(-1, L)
        d = (xs >> 8) & 255
        want = np.take_along_axis(xs, np.argsort(d, axis=1, kind="stable"), axis=1)
        ok = np.array_equal(want, gs)
        print(f"W={W:2d} {name}: {min(ts)*1e3:7.2f} ms (median {sorted(ts)[2]*1e3:7.2f}), "
              f"{min(ts)*1e9/N:5.2f} ns/key, {'ok' if ok else 'WRONG'}", flush=True)
