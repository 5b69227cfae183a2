#!/usr/bin/env bash
# What only a real GPU can check (issue 20), as one run on a lent GPU machine:
#
#   run(command="timeout 560 bash perf/gpu_device_check.sh", timeout_s=600)
#
# Each step has its own time limit and the whole run stays under ten minutes, so that the
# 15 minutes of a lent device hold two runs at most. Everything lands under $OUT (default
# ./var/gpu-device-check): nvidia-smi's view, this host's NVML recording (for
# tests/data/nvml/), `make gpu-check`'s report and JSON, the training probe on NCCL, the GPU
# probe, and the CUDA-only tests. steps.txt lists each step's exit status and seconds.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-var/gpu-device-check}
mkdir -p "$OUT"
: > "$OUT/steps.txt"

step() {  # step NAME LIMIT_S COMMAND...: run with a time limit, log to $OUT/NAME.txt
  local name=$1 limit=$2 start rc
  shift 2
  start=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  echo "$name rc=$rc $(( $(date +%s) - start ))s" | tee -a "$OUT/steps.txt"
  return $rc
}

cuda_python() {  # a python whose torch sees a GPU, with this project's host-side imports
  "$1" -c 'import torch, yaml, pynvml; assert torch.cuda.is_available()' >/dev/null 2>&1
}

step nvidia-smi 30 bash -c 'nvidia-smi; nvidia-smi -q; nvidia-smi topo -m; nvidia-smi nvlink -s'

# make setup with the CUDA build of torch (requirements.txt pins the version; TORCH_INDEX_URL
# names the index of the CUDA wheels). Its `tools` part needs a package mirror: when it
# fails, the venv alone (gpu-check needs no Debian tool).
step setup 240 env PIP_EXTRA_INDEX_URL="${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cu124}" \
  bash -c 'make setup || make venv'
PY=""
for candidate in .venv/bin/python python3; do
  if cuda_python "$candidate"; then PY=$candidate; break; fi
done
if [ -z "$PY" ]; then
  echo "no python with a CUDA torch, PyYAML and nvidia-ml-py: see setup.txt" | tee -a "$OUT/steps.txt"
  exit 1
fi
echo "python: $PY ($("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)'))" \
  | tee -a "$OUT/steps.txt"
export PYTHONPATH=$PWD

step nvml-recording 30 "$PY" -m benchmarks.nvml_recording -o "$OUT/nvml-recording.json"

# make gpu-check itself when the venv is the CUDA one (make's venv target is then up to date);
# otherwise the same module with the python that has CUDA.
if [ "$PY" = .venv/bin/python ]; then
  step gpu-check 320 make gpu-check GPU_CHECK_ARGS="--json $OUT/gpu-check.json"
else
  step gpu-check 320 "$PY" -m benchmarks.gpu_check --json "$OUT/gpu-check.json"
fi

step training-probe-nccl 150 "$PY" - "$OUT/training-probe.json" <<'PYEOF'
import json, sys
from benchmarks.probes.base import ProbeContext
from benchmarks.probes.training import TrainingProbe
from contract.suites import PARAMS

params = {name: float(p.default) for name, p in PARAMS.items()}
probe = TrainingProbe(ProbeContext(params=params))
probe.prepare()
samples = [s.as_dict() for s in probe.run()]
backend = samples[0]["metadata"].get("backend")
print("backend:", backend)
for s in samples:
    print(f"{s['metric']:40} {s['value']:12.4g} {s['unit']}")
json.dump(samples, open(sys.argv[1], "w"), indent=1)
sys.exit(0 if backend == "nccl" else 1)
PYEOF

step gpu-probe 120 "$PY" - "$OUT/gpu-probe.json" <<'PYEOF'
import json, sys
from benchmarks.probes.base import ProbeContext
from benchmarks.probes.gpu import GpuProbe
from contract.suites import PARAMS

params = {name: float(p.default) for name, p in PARAMS.items()}
probe = GpuProbe(ProbeContext(params=params))
probe.prepare()
samples = [s.as_dict() for s in probe.run()]
for s in samples:
    print(f"{s['metric']:28} {s['value']:10.4g} {s['unit']}  device={s['metadata'].get('device_name')}")
json.dump(samples, open(sys.argv[1], "w"), indent=1)
PYEOF

# The CUDA-only tests (the whole-check test repeats gpu-check: left out here for time).
if "$PY" -c 'import django, pytest, pytest_django' >/dev/null 2>&1; then
  step pytest-gpu 150 "$PY" -m pytest -q -p no:cacheprovider -rs \
    tests/benchmarks/test_gpu_probe.py tests/benchmarks/test_nvml_inventory.py \
    tests/benchmarks/test_nvml_sampler.py tests/benchmarks/test_gpu_check.py \
    -k "not whole_check"
else
  echo "pytest-gpu skipped: no Django/pytest in $PY (make setup did not finish)" | tee -a "$OUT/steps.txt"
fi
cat "$OUT/steps.txt"
