#!/usr/bin/env bash
# One GPU session: the paper-10m benchmark, then as much of the paper-10m central sweep
# (4 variants x 8 seeds, fused on the GPU) as the time limit allows. Needs only torch,
# pandas and tiktoken (no papermill: --no-notebooks). Records go to $OUT/results, the
# benchmark to $OUT/bench-paper-10m.json; copy the records under results/paper-10m/.
#   OUT=/some/dir SWEEP_SECONDS=420 bash scripts/device_check.sh
set -euo pipefail
OUT=${OUT:?set OUT to a folder for the results}
SWEEP_SECONDS=${SWEEP_SECONDS:-420}
mkdir -p "$OUT/results"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt" || true
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"
python -m residual_lib bench --profile paper-10m --fuse 8 --steps 20 --json "$OUT/bench-paper-10m.json" \
    2>&1 | tee "$OUT/bench.log"
# a killed sweep keeps every finished group's records; rerunning resumes
timeout --signal=INT "$SWEEP_SECONDS" python -m residual_lib sweep notebooks/06_central.py --profile paper-10m \
    --device cuda --seeds 1337 42 123 1 2 3 4 5 --no-notebooks --out "$OUT/results" 2>&1 | tee "$OUT/sweep.log" \
    || echo "sweep stopped after ${SWEEP_SECONDS}s; finished records are under $OUT/results"
python -m residual_lib summary "$OUT/results" --profile paper-10m | tee "$OUT/summary.txt" || true
