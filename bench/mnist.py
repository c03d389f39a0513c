"""One MNIST training epoch: minitorch vs PyTorch (when installed), same models, data order and
hyper-parameters. Prints seconds per epoch, peak RSS and test accuracy, with ratios.

  MLP 784-256-10 ReLU, SGD lr 0.1 momentum 0.9, batch 128
  CNN conv(1→16,3,p1)-ReLU-maxpool2-conv(16→32,3,p1)-ReLU-maxpool2-Linear(1568→10), Adam 1e-3,
      batch 128
  one epoch over the 50 000 training images of mnist.pkl.gz, then the 10 000 test images.

Each (framework, model) runs in its own child process so peak RSS is its own. The runs are
repeated (--repeats, default 3), the frameworks alternating, and the fastest run of each is
compared: on a shared machine a run can only be slowed down by other work, never sped up, so the
minimum is the most faithful figure (every run's time is printed too).
With --cuda-graph on a GPU the MLP also runs as "minitorch+graph" / "torch+graph": each full
batch is copied into static tensors and one captured training step (forward, loss, backward,
SGD step, zero_grad(set_to_none=False)) replayed; three eager warm-up steps on a side stream
come first and the last, partial batch runs eagerly (the same code for both frameworks). On a
machine without a GPU the graphed runs are skipped with a note.
Run: python bench/mnist.py [--models mlp cnn] [--data-dir DIR] [--device cpu|cuda] [--repeats N]
     [--cuda-graph]
"""
import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 128


def load_arrays(data_dir):
    """(x_train, y_train, x_test, y_test) as float32 (N,1,28,28) / int64, via minitorch's MNIST
    reader (the classic pickle's 50 000 training split and the 10 000 test images)."""
    from minitorch.datasets.mnist import read_pickle_splits
    (x_train, y_train), _, (x_test, y_test) = read_pickle_splits(data_dir)
    to_images = lambda x: (x.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0)  # noqa: E731
    return to_images(x_train), y_train.astype(np.int64), to_images(x_test), y_test.astype(np.int64)


def batches(n, seed=0):
    order = np.random.default_rng(seed).permutation(n)
    return [order[i:i + BATCH] for i in range(0, n, BATCH)]


def graphed_epoch(lib, model, opt, F, x_train, y_train, device):
    """One epoch of training steps replayed from one CUDA graph (see the module docstring)."""
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        return loss
    static, graph, warmup, loss = None, None, 3, None
    side = lib.cuda.Stream()
    for index in batches(len(y_train)):
        idx = lib.from_numpy(index.astype(np.int64)).to(device)
        x, y = x_train.index_select(0, idx), y_train.index_select(0, idx)
        if len(index) != BATCH:
            loss = step(x, y)
            continue
        if static is None:
            static = (x.clone(), y.clone())
        static[0].copy_(x)
        static[1].copy_(y)
        if graph is None and warmup:
            warmup -= 1
            side.wait_stream(lib.cuda.current_stream())
            with lib.cuda.stream(side):
                loss = step(*static)
            lib.cuda.current_stream().wait_stream(side)
            continue
        if graph is None:
            graph = lib.cuda.CUDAGraph()
            with lib.cuda.graph(graph):
                static_loss = step(*static)
        graph.replay()
        loss = static_loss
    return loss


def run(lib, model_kind, data, device, graphed=False):
    """One epoch with `lib` = minitorch or torch: the very same code drives both, since
    minitorch speaks torch's API. Returns (seconds, test accuracy)."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = (nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
             if model_kind == "mlp" else
             nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                           nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                           nn.Flatten(), nn.Linear(1568, 10)))
    model.to(device)
    opt = (lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if model_kind == "mlp"
           else lib.optim.Adam(model.parameters(), lr=1e-3))
    x_train, y_train, x_test, y_test = (lib.from_numpy(a).to(device) for a in data)
    start = time.perf_counter()
    if graphed:
        loss = graphed_epoch(lib, model, opt, F, x_train, y_train, device)
    for index in ([] if graphed else batches(len(y_train))):
        idx = lib.from_numpy(index.astype(np.int64)).to(device)
        loss = F.cross_entropy(model(x_train.index_select(0, idx)), y_train.index_select(0, idx))
        opt.zero_grad()
        loss.backward()
        opt.step()
    loss.item()     # waits for the device to finish
    seconds = time.perf_counter() - start
    with lib.no_grad():
        model.eval()
        correct = sum(int((model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum())
                      for i in range(0, len(y_test), 1000))
    return seconds, correct / len(y_test)


def child(framework, model_kind, data_dir, device):
    """Runs in a subprocess: one epoch, prints a JSON line with time, accuracy and peak RSS."""
    data = load_arrays(data_dir)
    name, _, variant = framework.partition("+")
    lib = importlib.import_module(name)
    seconds, accuracy = run(lib, model_kind, data, device, graphed=variant == "graph")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "accuracy": accuracy, "peak_rss_mb": peak_mb}))


def measure(framework, model_kind, data_dir, device):
    command = [sys.executable, __file__, "--child", framework, model_kind, "--device", device]
    if data_dir:
        command += ["--data-dir", data_dir]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:     # reported, and the other runs go on (one call on a lent GPU)
        print(f"{model_kind:4s} {framework:15s} FAILED:\n{done.stderr}", file=sys.stderr,
              flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def cuda_available():
    try:
        import minitorch
        return minitorch.cuda.is_available()
    except ImportError:
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cuda-graph", action="store_true",
                        help="also time the MLP with its training step replayed as a CUDA graph")
    parser.add_argument("--child", nargs=2, metavar=("FRAMEWORK", "MODEL"))
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.data_dir, args.device)
        return
    frameworks = ["minitorch"] + (["torch"] if torch_available() else [])
    print(f"MNIST on {args.device}, 1 epoch of 50 000 images, batch {BATCH}, "
          f"{os.cpu_count()} CPU cores"
          + ("" if len(frameworks) > 1 else " (PyTorch not installed)"))
    graph_frameworks = []
    if args.cuda_graph:
        if args.device.startswith("cuda") and cuda_available():
            graph_frameworks = [fw + "+graph" for fw in frameworks]
        else:
            print("--cuda-graph: skipped (needs --device cuda and a GPU)")
    for model_kind in args.models:
        kinds = frameworks + (graph_frameworks if model_kind == "mlp" else [])
        runs = {fw: [] for fw in kinds}
        for repeat in range(args.repeats):
            for fw in (kinds if repeat % 2 == 0 else kinds[::-1]):
                runs[fw].append(measure(fw, model_kind, args.data_dir, args.device))
        results = {fw: min(rs, key=lambda r: r["seconds"]) for fw, rs in
                   ((fw, [r for r in rs if r is not None]) for fw, rs in runs.items()) if rs}
        for fw, r in results.items():
            times = " ".join(f"{run['seconds']:.2f}" if run else "failed" for run in runs[fw])
            line = (f"{model_kind:4s} {fw:15s} {r['seconds']:7.2f} s/epoch  test acc "
                    f"{r['accuracy']:.4f}  peak RSS {r['peak_rss_mb']:7.1f} MB  (runs: {times})")
            twin = fw.replace("minitorch", "torch")
            if fw.startswith("minitorch") and twin in results:
                t = results[twin]
                line += (f"   time ratio {r['seconds'] / t['seconds']:.2f}x  RSS ratio "
                         f"{r['peak_rss_mb'] / t['peak_rss_mb']:.2f}x")
            base = fw.partition("+")[0]
            if fw.endswith("+graph") and base in results:
                line += f"   graph vs eager {results[base]['seconds'] / r['seconds']:.2f}x faster"
            print(line, flush=True)


if __name__ == "__main__":
    main()
