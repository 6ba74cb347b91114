"""Does PoCL run a loop over the min() builtin in vector lanes? One work-item per work-group
takes the least order key of a chunk of 2^22 float32 keys (their bits) three ways: the min()
builtin, a select (`s < least ? s : least`), and uint8 vectors with min(); each result checked
against numpy; device ms (profiling events), median and min of 9, for 2, 8 and 32 chunks.
With POCL_VECTORIZER_REMARKS=1 (and a fresh POCL_CACHE_DIR) the compiler's remarks say why:
on pip's PoCL 3.0-rc2 "_Z7_cl_minjj not inlined ... because it should never be inlined"."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

SRC = """
#define ORD(x) ((x) ^ ((uint)((int)(x) >> 31) | 0x80000000u))
#define ONE __attribute__((reqd_work_group_size(1, 1, 1)))
__kernel ONE void by_min(__global const uint* restrict k, uint chunk, __global uint* out) {
    const __global uint* p = k + (size_t)get_global_id(0) * chunk;
    uint least = 0xFFFFFFFFu;
    for (uint i = 0; i < chunk; ++i) least = min(least, ORD(p[i]));
    out[get_global_id(0)] = least;
}
__kernel ONE void by_select(__global const uint* restrict k, uint chunk, __global uint* out) {
    const __global uint* p = k + (size_t)get_global_id(0) * chunk;
    uint least = 0xFFFFFFFFu;
    for (uint i = 0; i < chunk; ++i) { const uint s = ORD(p[i]); least = s < least ? s : least; }
    out[get_global_id(0)] = least;
}
__kernel ONE void by_vectors(__global const uint* restrict k, uint chunk, __global uint* out) {
    const __global uint* p = k + (size_t)get_global_id(0) * chunk;
    uint8 least = (uint8)(0xFFFFFFFFu);
    for (uint i = 0; i < chunk; i += 8) {
        const uint8 x = vload8(0, p + i);
        least = min(least, x ^ (as_uint8(as_int8(x) >> 31) | (uint8)(0x80000000u)));
    }
    const uint4 a = min(least.lo, least.hi);
    const uint2 b = min(a.lo, a.hi);
    out[get_global_id(0)] = min(b.x, b.y);
}
"""


def main():
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    n = 1 << 22
    h = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    u = h.view(np.uint32)
    order = u ^ ((u.view(np.int32) >> 31).view(np.uint32) | np.uint32(0x80000000))
    d = cla.to_device(q, u)
    out = cla.zeros(q, 64, np.uint32)
    prg = cl.Program(ctx, SRC).build()
    kernels = {name: cl.Kernel(prg, name) for name in ("by_min", "by_select", "by_vectors")}
    print(f"device: {ctx.devices[0].name} ({ctx.devices[0].platform.name}, "
          f"{ctx.devices[0].driver_version})")
    for groups in (2, 8, 32):
        chunk = n // groups
        row = []
        for name, knl in kernels.items():
            times = []
            for _ in range(9):
                evt = knl(q, (groups,), (1,), d.data, np.uint32(chunk), out.data)
                evt.wait()
                times.append((evt.profile.end - evt.profile.start) / 1e6)
            ok = np.array_equal(out.get()[:groups], order.reshape(groups, -1).min(axis=1))
            row.append(f"{name} {np.median(times):.2f} (min {min(times):.2f}){'' if ok else ' WRONG'}")
        print(f"{groups:3} chunks: " + "   ".join(row))


if __name__ == "__main__":
    main()
