"""Loads every GPU for a while with fp16 matrix multiplies (tensor cores) and device copies
(DRAM), using torch or cupy when the machine already has one; run by scripts/device/run.sh.
Usage: python3 gpu-load.py torch|cupy SECONDS   (exits 3 when the library sees no GPU)"""
import sys
import time

lib, seconds = sys.argv[1], float(sys.argv[2])
end = time.time() + seconds
N = 8192

if lib == "torch":
    import torch

    if not torch.cuda.is_available():
        sys.exit(3)
    devices = [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]
    mats = [torch.randn(N, N, device=d, dtype=torch.float16) for d in devices]
    bufs = [torch.empty(256 * 1024 * 1024, device=d, dtype=torch.uint8) for d in devices]
    while time.time() < end:
        for m, b in zip(mats, bufs):
            m @ m
            b.clone()
        for d in devices:
            torch.cuda.synchronize(d)
elif lib == "cupy":
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if count == 0:
        sys.exit(3)
    mats, bufs = [], []
    for i in range(count):
        with cupy.cuda.Device(i):
            mats.append(cupy.random.standard_normal((N, N), dtype=cupy.float32).astype(cupy.float16))
            bufs.append(cupy.empty(256 * 1024 * 1024, dtype=cupy.uint8))
    while time.time() < end:
        for i in range(count):
            with cupy.cuda.Device(i):
                mats[i] @ mats[i]
                bufs[i].copy()
        for i in range(count):
            cupy.cuda.Device(i).synchronize()
else:
    sys.exit(f"gpu-load.py: unknown library {lib}")
print(f"gpu-load.py: {lib} load for {seconds:.0f}s done")
