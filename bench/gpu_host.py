"""Host cost of the GPU backend without a GPU: minitorch's "cuda" path run against a stand-in
`cupy` whose launches do nothing and whose buffers are bare Python objects, beside the CPU path.

What it prints is the Python time minitorch spends per op on its way to the GPU (checks, launch
planning, buffer bookkeeping, autograd), the part that makes small ops host-bound on a real GPU.
The stand-in's own calls (allocation, device entry, launch) cost next to nothing, so CuPy's
real costs (about 8 us a RawKernel launch, 5 us a cupy.empty on an H200) come on top. It is
not tests/cuda_emulator: nothing is compiled and nothing runs.

  10-element add, plain and with requires_grad; (a * b).exp().sum() forward + backward;
  one training step (batch 128) of bench/mnist.py's MLP (SGD, momentum) and CNN (Adam),
  each with the number of kernel launches it issues and of buffers it asks CuPy for (with
  MINITORCH_CUDA_BUFFER_CACHE=1 a steady step takes them from minitorch's buffer cache).

Run: python bench/gpu_host.py [--timer cpu|wall] [--cases ...] [--profile CASE]
  --profile CASE (add, add_grad, graph, mlp, cnn): the top of a cProfile of that case instead
  (with --real: on the GPU);
  --real: on a GPU machine, the same cases through the real CuPy (wall time, the device waited
  for), beside PyTorch on the GPU.
"""
import argparse
import os
import sys
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 128


# ---------------------------------------------------------------------------------------------
# the stand-in: the part of CuPy's API that minitorch._gpu touches, doing nothing

class _Memory:
    """CuPy's memory object: what every pointer into one allocation holds."""
    __slots__ = ()


class _Pointer:
    """A buffer's `.data` (CuPy's MemoryPointer): the memory, a pointer, an async memset."""
    __slots__ = ("mem", "ptr")

    def __init__(self, mem, ptr=0):
        self.mem, self.ptr = mem, ptr

    def __add__(self, offset):
        return _Pointer(self.mem, self.ptr + offset)

    def memset_async(self, value, nbytes):
        pass


_FLAGS = types.SimpleNamespace(c_contiguous=True)


class FakeArray:
    """A 1-D buffer with no memory behind it: the attributes the backend reads, and CuPy's
    references (a view holds its base and the memory) so that the buffer cache can work."""
    __slots__ = ("size", "dtype", "nbytes", "shape", "data", "base")
    ndim = 1
    flags = _FLAGS

    def __init__(self, n, dtype, data=None, base=None):
        self.size, self.dtype = n, dtype
        self.nbytes = n * dtype.itemsize
        self.shape = (n,)
        self.data = _Pointer(_Memory()) if data is None else data
        self.base = base

    strides = property(lambda self: (self.dtype.itemsize,))

    def __len__(self):
        return self.size

    def __getitem__(self, key):
        start, stop, _ = key.indices(self.size)
        return FakeArray(max(0, stop - start), self.dtype, self.data + start * self.dtype.itemsize,
                         self.base if self.base is not None else self)

    def view(self, dtype):
        dtype = np.dtype(dtype)
        return FakeArray(self.nbytes // dtype.itemsize, dtype, self.data,
                         self.base if self.base is not None else self)

    def get(self):
        READBACKS[0] += 1                           # a device-to-host copy: the host waits
        return np.zeros(self.size, self.dtype)      # zeros: every index check passes


_DTYPES = {}
READBACKS = [0]     # FakeArray.get calls: each is a wait for the device on a real GPU


def _dtype(dtype):
    found = _DTYPES.get(dtype)
    if found is None:
        found = _DTYPES[dtype] = np.dtype(dtype)
    return found


class FakeDevice:
    def __init__(self, index=0):
        self.id, self.attributes = index, {"MultiProcessorCount": 132}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass

    def synchronize(self):
        pass


class FakeFunction:
    __slots__ = ("counter",)

    def __init__(self, counter):
        self.counter = counter

    def __call__(self, grid, block, args):
        self.counter[0] += 1


class FakeModule:
    def __init__(self, counter):
        self.counter = counter

    def get_function(self, name):
        return FakeFunction(self.counter)


def fake_cupy():
    """The stand-in module; `launches[0]` counts kernel launches, `allocations[0]` buffers,
    `uploads[0]` host-to-device copies."""
    launches, allocations, uploads = [0], [0], [0]

    def empty(n, dtype):
        allocations[0] += 1
        return FakeArray(n, _dtype(dtype))

    def asarray(host):
        uploads[0] += 1
        host = np.asarray(host)
        return FakeArray(host.size, host.dtype)

    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1, getDevice=lambda: 0, setDevice=lambda index: None,
        getDeviceProperties=lambda index: {"name": b"no-op CuPy stand-in"})
    # the memory statistics' pool and allocator hook (minitorch/_gpu/memory.py): the stand-in's
    # empty() does not go through them, as CuPy's does not when its pool has a free block
    pool = types.SimpleNamespace(used_bytes=lambda: 0, total_bytes=lambda: 0)
    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=FakeDevice, runtime=runtime,
                                   get_allocator=lambda: None,
                                   set_allocator=lambda allocate: None),
        get_default_memory_pool=lambda: pool,
        empty=empty, zeros=empty,
        asarray=asarray,
        RawModule=lambda code, options, name_expressions: FakeModule(launches),
        launches=launches, allocations=allocations, uploads=uploads, host_only=True,
        __version__="stand-in")


REAL = "--real" in sys.argv     # the real CuPy and GPU: decided before minitorch is imported
CUPY = None if REAL else fake_cupy()
if not REAL:
    sys.modules["cupy"] = CUPY
sys.path.insert(0, ROOT)
import minitorch as mt  # noqa: E402  (after the stand-in is in place)


# ---------------------------------------------------------------------------------------------
# the cases: each builds its state on a device and returns the callable to time

def case_add(device, lib=mt):
    a, b = lib.randn(10, device=device), lib.randn(10, device=device)
    return lambda: a + b


def case_add_grad(device, lib=mt):
    a = lib.randn(10, device=device, requires_grad=True)
    b = lib.randn(10, device=device, requires_grad=True)
    return lambda: a + b


def case_graph(device, lib=mt):
    a = lib.randn(10, device=device, requires_grad=True)
    b = lib.randn(10, device=device, requires_grad=True)
    return lambda: (a * b).exp().sum().backward()


def _training_step(lib, model, opt, device, images=1024):
    """bench/mnist.py's step: a batch picked on the host, index_select on the device."""
    model.to(device)
    x_all = lib.randn(images, 1, 28, 28).to(device)
    y_all = lib.randint(0, 10, (images,)).to(device)
    order = np.random.default_rng(0).permutation(images)
    F, position = lib.nn.functional, [0]

    def step():
        start = position[0] = (position[0] + BATCH) % (images - BATCH)
        idx = lib.from_numpy(order[start:start + BATCH].astype(np.int64)).to(device)
        loss = F.cross_entropy(model(x_all.index_select(0, idx)), y_all.index_select(0, idx))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def case_mlp(device, lib=mt):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return _training_step(lib, model, lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                          device)


def case_cnn(device, lib=mt):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(1568, 10))
    return _training_step(lib, model, lib.optim.Adam(model.parameters(), lr=1e-3), device)


CASES = {"add": ("add (10 elements)", case_add),
         "add_grad": ("add, requires_grad", case_add_grad),
         "graph": ("3-op graph fwd+bwd", case_graph),
         "mlp": ("MNIST MLP step (batch 128)", case_mlp),
         "cnn": ("MNIST CNN step (batch 128)", case_cnn)}


# ---------------------------------------------------------------------------------------------
# timing

TIMERS = {"cpu": time.process_time, "wall": time.perf_counter}


def best_us(fn, min_seconds=0.2, repeat=5, timer=time.process_time, sync=lambda: None):
    """Best microseconds per call over `repeat` timings of about min_seconds / repeat each;
    `sync` waits for the device at the end of each timing."""
    fn()
    sync()
    count, start = 0, timer()
    while timer() - start < min_seconds / repeat / 4:
        fn()
        count += 1
    sync()
    loops = max(1, 4 * count)
    best = float("inf")
    for _ in range(repeat):
        start = timer()
        for _ in range(loops):
            fn()
        sync()
        best = min(best, (timer() - start) / loops)
    return best * 1e6


def real_gpu(args):
    """--real: the same cases on the GPU with the real CuPy, wall time with the device waited
    for, beside PyTorch on the GPU when it has one."""
    if not mt.cuda.is_available():
        sys.exit("--real needs CuPy and a GPU")
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    print(f"minitorch on {mt.cuda.get_device_name()} (real CuPy), wall time per call, the "
          "device waited for after each timing" + ("" if torch else "; no CUDA PyTorch here"))
    print(f"{'case':<30}{'minitorch':>12}" + (f"{'torch':>12}{'mt/torch':>10}" if torch else ""))
    for case in args.cases:
        label, build = CASES[case]
        ours = best_us(build("cuda"), args.seconds, timer=time.perf_counter,
                       sync=mt.cuda.synchronize)
        row = f"{label:<30}{ours:>10.1f}us"
        if torch:
            theirs = best_us(build("cuda", torch), args.seconds, timer=time.perf_counter,
                             sync=torch.cuda.synchronize)
            row += f"{theirs:>10.1f}us{ours / theirs:>9.2f}x"
        print(row, flush=True)


def counts_per_call(fn):
    """(kernel launches, buffers asked of CuPy, device-to-host reads, host-to-device copies) in
    one call, after a warm-up call."""
    counters = (CUPY.launches, CUPY.allocations, READBACKS, CUPY.uploads)
    fn()
    before = [c[0] for c in counters]
    fn()
    return tuple(c[0] - b for c, b in zip(counters, before))


def profile(case):
    """The top of a cProfile of the case (with --real: on the GPU, the device waited for at
    the end, so time spent waiting inside readbacks shows where it happens)."""
    import cProfile
    import pstats
    fn = CASES[case][1]("cuda")
    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(200 if case in ("mlp", "cnn") else 20000):
        fn()
    mt.cuda.synchronize()
    profiler.disable()
    print(f"cProfile of {CASES[case][0]} on {'the GPU' if REAL else 'the no-op stand-in'}")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", choices=sorted(CASES))
    parser.add_argument("--seconds", type=float, default=0.5, help="timing budget per figure")
    parser.add_argument("--timer", choices=sorted(TIMERS), default="cpu",
                        help="cpu: process CPU time (steady on a busy machine; the CPU path's "
                        "OpenMP threads add up), wall: elapsed time")
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--real", action="store_true",
                        help="time the real GPU path (CuPy and a GPU needed), PyTorch beside")
    args = parser.parse_args()
    if args.profile:
        profile(args.profile)
        return
    if args.real:
        real_gpu(args)
        return
    print("GPU backend host path against a no-op CuPy stand-in (no GPU), beside the CPU path; "
          "CuPy's own launch/allocation costs come on top on a real GPU")
    timer = TIMERS[args.timer]
    cache = "on" if os.environ.get("MINITORCH_CUDA_BUFFER_CACHE") == "1" else "off"
    print(f"timer: {args.timer}; buffer cache (MINITORCH_CUDA_BUFFER_CACHE=1): {cache}")
    print(f"{'case':<30}{'cuda host':>12}{'cpu':>12}{'cuda/cpu':>10}{'launches':>10}"
          f"{'host us/launch':>16}{'new buffers':>13}{'readbacks':>11}{'uploads':>9}")
    for case in args.cases:
        label, build = CASES[case]
        cuda_fn, cpu_fn = build("cuda"), build("cpu")
        cuda_us = best_us(cuda_fn, args.seconds, timer=timer)
        cpu_us = best_us(cpu_fn, args.seconds, timer=timer)
        launches, allocations, readbacks, uploads = counts_per_call(cuda_fn)
        print(f"{label:<30}{cuda_us:>10.1f}us{cpu_us:>10.1f}us{cuda_us / cpu_us:>9.2f}x"
              f"{launches:>10d}{cuda_us / max(launches, 1):>14.1f}us{allocations:>13d}"
              f"{readbacks:>11d}{uploads:>9d}", flush=True)


if __name__ == "__main__":
    main()
