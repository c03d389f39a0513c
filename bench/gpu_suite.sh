#!/usr/bin/env bash
# The GPU check in one call, for a machine with an NVIDIA GPU, CuPy and nvcc (see
# docs/gpu_check.md): build in place, NCCL (world size 1) and DLPack, the CUDA tests, the kernel
# benchmark and one launch's pieces (bench/gpu_launch.py), the host-path benchmark (stand-in
# and real, then a cProfile of the MNIST steps on the GPU), and MNIST on cuda (eager, and the
# MLP's training step replayed as a CUDA graph: "+graph" lines); then a summary. Each stage has
# its own time limit (560 s in all; an H200 needed about 6 minutes); logs go to $OUT when it is
# set (the device tool brings that folder back), else ./gpu_logs.
# Run from the repository root: bash bench/gpu_suite.sh
set -u
cd "$(dirname "$0")/.."
LOGS="${OUT:-$PWD/gpu_logs}"
mkdir -p "$LOGS"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
# the build is in place, not installed: scripts that start Python children (bench/mnist.py,
# the NCCL test) must find minitorch from anywhere
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export MINITORCH_DATA="${MINITORCH_DATA:-$PWD/.mnist}"
JOBS="${JOBS:-16}"
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
START=$(date +%s)

note() { echo "$*" | tee -a "$SUMMARY"; }

# stage NAME SECONDS COMMAND...: run with a time limit, log to $LOGS/NAME.log, note rc and time
stage() {
    local name=$1 limit=$2
    shift 2
    local t0 rc
    t0=$(date +%s)
    echo "=== $name: $* (limit ${limit}s)"
    timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
    rc=$?
    note "--- $name: rc $rc$([ $rc -eq 124 ] && echo ' (timed out)') in $(( $(date +%s) - t0 ))s"
    return $rc
}

note "GPU check of $(git rev-parse --short HEAD 2>/dev/null || echo '?') on $(hostname)," \
     "$(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 \
    | sed 's/^/GPU: /' | tee -a "$SUMMARY"
"$PY" -c "import sys, cupy; print('python', sys.version.split()[0], '| cupy', cupy.__version__)" \
    2>&1 | tee -a "$SUMMARY"

if ! stage build 60 "$PY" setup.py build_ext --inplace -j "$JOBS"; then
    tail -n 30 "$LOGS/build.log" | tee -a "$SUMMARY"
    note "build failed: nothing else runs"
    exit 1
fi

# NCCL and DLPack first (the open issues' GPU checks), with skip reasons. CuPy finds NCCL in
# pip's nvidia-nccl wheel (torch's dependency); where it cannot, that wheel's folder is put on
# LD_LIBRARY_PATH for the rest of the suite and the summary says so.
if ! "$PY" -c "from cupy.cuda import nccl; nccl.get_version()" 2>/dev/null; then
    NCCL_DIR=$("$PY" -c "import glob, site; print(next(iter(sorted(glob.glob(site.getsitepackages()[0] + '/nvidia/nccl*/lib'))), ''))" 2>/dev/null)
    if [ -n "$NCCL_DIR" ]; then
        export LD_LIBRARY_PATH="$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        note "NCCL: CuPy did not load it alone; LD_LIBRARY_PATH=$NCCL_DIR"
    fi
fi
"$PY" -c "from cupy.cuda import nccl; print('NCCL', nccl.get_version())" 2>&1 | tail -n 1 \
    | tee -a "$SUMMARY"
stage interop 60 "$PY" -m pytest -v -p no:cacheprovider -rs tests/test_nccl_gpu.py \
    tests/test_dlpack.py
grep -E "passed|failed|error|SKIPPED" "$LOGS/interop.log" | tail -n 6 | sed 's/^/interop: /' \
    | tee -a "$SUMMARY"

XDIST=()
if "$PY" -c "import xdist" 2>/dev/null; then
    XDIST=(-n "$JOBS")
fi
# -v -v: a line per test as it ends, so the failures are known even when the limit cuts the
# run short (4,100 tests took 175 s on 16 workers on the H200)
stage tests 220 "$PY" -m pytest -v -v -p no:cacheprovider "${XDIST[@]}" -k "cuda or gpu" \
    --deselect tests/test_nccl_gpu.py tests/
grep -E "passed|failed|error" "$LOGS/tests.log" | tail -n 1 | sed 's/^/tests: /' \
    | tee -a "$SUMMARY"
grep -E " (FAILED|ERROR) " "$LOGS/tests.log" | head -n 25 | tee -a "$SUMMARY"
# minitorch/_gpu/compile.py fell back to RawModule (subnormals flushed): say so at the top
grep -m 1 -o "compiling through CuPy's NVRTC binding failed.*" "$LOGS/tests.log" \
    | sed 's/^/COMPILE FALLBACK: /' | tee -a "$SUMMARY"

stage gpu 45 bash -c "'$PY' bench/gpu.py && '$PY' bench/gpu_launch.py"
grep -E "^(GPU|matmul|add|compact|sum|one launch|cupy|launch|8-byte|backend|mt add|torch add)" \
    "$LOGS/gpu.log" | tee -a "$SUMMARY"

# the real-GPU table twice: our buffer cache off (the default), then on (it stays opt-in until
# these figures and its tests have been seen on a GPU: minitorch/_gpu/buffers.py)
stage gpu_host 75 bash -c "'$PY' bench/gpu_host.py --timer wall --seconds 0.2 \
    && '$PY' bench/gpu_host.py --real --seconds 0.3 \
    && echo 'with MINITORCH_CUDA_BUFFER_CACHE=1:' \
    && MINITORCH_CUDA_BUFFER_CACHE=1 '$PY' bench/gpu_host.py --real --seconds 0.3 \
    && '$PY' bench/gpu_host.py --real --profile mlp && '$PY' bench/gpu_host.py --real --profile cnn"
# the tables (the profiles after them stay in the log)
grep -vE "^(Traceback|  )" "$LOGS/gpu_host.log" | sed '/^cProfile/,$d' | tail -n 26 \
    | tee -a "$SUMMARY"

if [ -f "$MINITORCH_DATA/mnist.pkl.gz" ]; then
    stage mnist 100 "$PY" bench/mnist.py --device cuda --repeats 1 --cuda-graph
    grep -E "^(MNIST|mlp|cnn|--cuda-graph)" "$LOGS/mnist.log" | tee -a "$SUMMARY"
    grep -E "Error|error" "$LOGS/mnist.log" | tail -n 5 | tee -a "$SUMMARY"
else
    note "--- mnist: skipped, no $MINITORCH_DATA/mnist.pkl.gz (carry .mnist/, docs/gpu_check.md)"
fi

note "=== done in $(( $(date +%s) - START ))s; logs in $LOGS"
