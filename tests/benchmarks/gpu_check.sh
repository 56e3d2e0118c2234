#!/usr/bin/env bash
# The GPU check: the engine tests on CuPy and the GPU benchmark, on the GPU test machine.
#
# Prepare once, here (needs the package index; hmmlearn is not on the GPU machine):
#     bash tests/benchmarks/gpu_check.sh --fetch-wheels      # -> .whl/ (git-ignored)
# Then on the GPU machine, from the repository root, with .whl carried along
# (device tool: command "bash tests/benchmarks/gpu_check.sh", carry [".whl"], timeout_s 480):
#     bash tests/benchmarks/gpu_check.sh [--quick]
# Output goes to $OUT (default ./gpu_check_out): env.txt, engine_tests.txt,
# bench_gpu.txt, bench_gpu.json.  The machine there has Python 3.12 with numpy,
# scipy, scikit-learn, CuPy (CUDA 13) and pytest, no TensorFlow, no network; the
# engine tests import no TensorFlow.  Worst case about 7.5 minutes (time limits below);
# expected about 4.
set -u -o pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}

if [ "${1:-}" = "--fetch-wheels" ]; then
    exec "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl "hmmlearn==0.3.3"
fi
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"

OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "installing the carried wheels failed" | tee "$OUT/env.txt"; exit 1; }
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi

{
    date -u; nvidia-smi 2>&1 | head -20
    "$PY" - <<'PYEOF'
import platform, numpy, scipy
print("python", platform.python_version(), "numpy", numpy.__version__, "scipy", scipy.__version__)
try:
    import hmmlearn; print("hmmlearn", hmmlearn.__version__)
except ImportError as e:
    print("hmmlearn missing:", e)
from densehmm_core.engine import available_engines
from densehmm_core.engine.backend import cupy_status
print("available engines:", available_engines(), "| cupy status:", cupy_status(0))
try:
    import cupy; print("cupy", cupy.__version__, "runtime", cupy.cuda.runtime.runtimeGetVersion(),
                       "driver", cupy.cuda.runtime.driverGetVersion())
except Exception as e:
    print("cupy:", type(e).__name__, e)
PYEOF
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== engine tests (CuPy variants included when CuPy works)"
timeout 240 "$PY" -m pytest -q -p no:cacheprovider -o addopts="-ra" --durations=8 tests/test_engine.py tests/test_dense_mstep.py tests/test_strict_device.py 2>&1 | tee "$OUT/engine_tests.txt" | tail -25
echo "== benchmark"
timeout 270 "$PY" tests/benchmarks/bench_gpu.py $QUICK --json "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/bench_gpu.txt"
echo "== done $(date -u)"
