"""The routes between pageable numpy memory and a GPU, 1 GiB each, best and median of 4, and
(with two GPUs of one platform) a copy between them inside one two-device context:

    python -m benchmarks.upload_routes --platform NVIDIA

pageable ``enqueue_copy`` each way; clradix.dask's staged upload; a ``CL_MEM_USE_HOST_PTR``
buffer over the numpy array (made and copied, and copied again once made); a mapped device
buffer filled by ``memcpy``; a download into a ``USE_HOST_PTR`` buffer then mapped; and a
buffer written on one GPU then copied (or migrated) on the other.
"""

import argparse
import time

import numpy as np
import pyopencl as cl


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="NVIDIA", help="a substring of the platform's name")
    ap.add_argument("--log2n", type=int, default=28, help="float32 keys moved (28: 1 GiB)")
    args = ap.parse_args(argv)
    from clradix.dask.memory import HostCopies, aligned_empty
    plat = [p for p in cl.get_platforms() if args.platform.lower() in p.name.lower()][0]
    devs = plat.get_devices()
    ctx = cl.Context(devs[:1])
    q = cl.CommandQueue(ctx)
    n = 1 << args.log2n
    x = aligned_empty(n, np.dtype(np.float32))
    x[:] = np.random.default_rng(0).random(n, np.float32)
    d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, x.nbytes)

    def t(name, f, rep=4, before=None, queue=q):
        ts = []
        for r in range(rep):
            if before:
                before(r)
            queue.finish()
            t0 = time.perf_counter()
            f()
            queue.finish()
            ts.append(time.perf_counter() - t0)
        print(f"{name}: best {x.nbytes / min(ts) / 1e9:.1f} GB/s median "
              f"{x.nbytes / np.median(ts) / 1e9:.1f}", flush=True)

    t("pageable enqueue_copy", lambda: cl.enqueue_copy(q, d, x, is_blocking=True))
    hc = HostCopies(ctx, devs[0], in_place=False)   # (a CPU device staged as a GPU is)
    t("staging (clradix.dask)", lambda: hc.staging.write(d, 0, x))

    def use_host_ptr():
        b = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=x)
        cl.enqueue_copy(q, d, b, byte_count=x.nbytes)
        q.finish()
    t("USE_HOST_PTR buffer made + copied", use_host_ptr)
    b = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=x)
    t("USE_HOST_PTR buffer copied (made once)",
      lambda: cl.enqueue_copy(q, d, b, byte_count=x.nbytes))

    def map_write():
        m, _ = cl.enqueue_map_buffer(q, d, cl.map_flags.WRITE_INVALIDATE_REGION, 0, (n,),
                                     np.float32)
        np.copyto(m, x)
        del m
    t("map device buffer + memcpy", map_write)
    y = np.empty_like(x)
    t("pageable down", lambda: cl.enqueue_copy(q, y, d, is_blocking=True))
    bw = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=y)

    def down_mapped():
        cl.enqueue_copy(q, bw, d, byte_count=x.nbytes)
        cl.enqueue_map_buffer(q, bw, cl.map_flags.READ, 0, (n,), np.float32)[1].wait()
    t("USE_HOST_PTR down + map", down_mapped)
    if len(devs) > 1:
        ctx2 = cl.Context(devs[:2])
        q0, q1 = cl.CommandQueue(ctx2, devs[0]), cl.CommandQueue(ctx2, devs[1])
        a = cl.Buffer(ctx2, cl.mem_flags.READ_WRITE, x.nbytes)
        b2 = cl.Buffer(ctx2, cl.mem_flags.READ_WRITE, x.nbytes)

        def write_on_0(r):
            cl.enqueue_fill_buffer(q0, a, np.float32(r), 0, x.nbytes)
            q0.finish()
        t("copy on GPU1 of a buffer written on GPU0",
          lambda: cl.enqueue_copy(q1, b2, a, byte_count=x.nbytes), before=write_on_0, queue=q1)
        t("migrate to GPU1 of a buffer written on GPU0",
          lambda: cl.enqueue_migrate_mem_objects(q1, [a]), before=write_on_0, queue=q1)
        check = np.empty(16, np.float32)
        cl.enqueue_copy(q1, check, b2, is_blocking=True)
        print("check (3 expected):", check[:2])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
