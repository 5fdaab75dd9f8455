#!/usr/bin/env bash
# One lent accelerator, one call: what the machine is, the device checks, the benchmark, then
# as much of the paper-10m central sweep as fits before a deadline, packed for the trip back.
#
#   COMMIT=<sha of HEAD> DEVICE=cuda PROFILE=paper-10m SECONDS=540 OUT=/some/dir bash scripts/device_check.sh
#   DEVICE=cpu  PROFILE=smoke     SECONDS=120 OUT=/tmp/dc   bash scripts/device_check.sh   # the rehearsal
#
# Settings: DEVICE (cuda), PROFILE (paper-10m), SECONDS (the script's whole budget, default
# 540), OUT (required), SEEDS (1337 42 123 1 2 3 4 5), SECTIONS (notebooks/06_central.py),
# FUSE (runs trained together, default 1), WORK (scratch folder outside OUT), PYTHON
# (python; the GPU image's is python3), COMMIT (the commit of the files, written into every
# record: a lent machine's copy of .git can be an older one than the files it gets, as on
# 2026-12-04, when it reported the previous commit; pass the sha of HEAD as typed here).
# Needs only what the GPU image has (torch, pandas, numpy, tqdm): no pytest, papermill or
# jupytext; the corpus ships with the package. tests/test_device.py runs this very script on
# CPU at smoke, so it cannot break unnoticed.
#
# Under OUT, at most 8 files, none in a sub-folder:
#   env.txt            python, torch, CUDA, GPU, git commit
#   checks.json/.log   python -m residual_lib device-check (bf16 smoke run, fused = single in
#                      fp32, dropout under vmap, gradient accumulation, the attention
#                      kernel fused training uses, torch.compile)
#   bench.json/.log    tokens/s and MFU: one model, 8 fused, the sweep layout
#   sweep.log          the sweep's progress; it stops at the deadline, keeping finished groups
#   records.tar.gz     results/<PROFILE>/*.json: unpack at the repository root and commit
#   summary.txt        python -m residual_lib summary of those records
#
# Time plan for a 15-minute lease (every second of it counted: start-up, commands, idle):
#   start-up 0.5-2 min | env 5 s | checks ~45 s (compile ~25 s of it) | bench <= 90 s
#   (--steps 20 --repeats 1) | sweep until SECONDS minus 30 s | pack ~5 s.
# Measured on an H200 (torch 2.11, 2026-12-04, bench.json): paper-10m trains at 539,000
# tokens/s alone (5.8% MFU) and 829,000 fused by 8 (9.0%; under vmap only the math attention
# kernel works there, see residual_lib.fused). A paper-10m run is 5,000 steps of 16,384
# tokens (82M) plus 21 evaluations of 200 batches: about 3.5 min alone, about 17 min for a
# group of 8. A group that is cut off at the deadline is lost, so the sweep trains FUSE
# runs at a time (default 1): with SECONDS=550 it has about 6 minutes, one or two runs a
# lease, each record kept as it lands; the sweep goes seed by seed (full, attn_only,
# ffn_only, no_residual of seed 1337 first). A later lease, on a checkout with those
# records committed, skips them and trains the next. FUSE=8 is the faster layout once a
# lease can hold a 17-minute group.
set -euo pipefail
budget=$SECONDS  # bash counts SECONDS up from the value given in the environment (0 when unset)
(( budget > 1 )) || budget=540
started=$(date +%s)
deadline=$(( started + budget - 30 ))
DEVICE=${DEVICE:-cuda}
PROFILE=${PROFILE:-paper-10m}
SEEDS=${SEEDS:-1337 42 123 1 2 3 4 5}
SECTIONS=${SECTIONS:-notebooks/06_central.py}
FUSE=${FUSE:-1}
if [[ -n ${COMMIT:-} ]]; then export RESIDUAL_CODE_COMMIT=$COMMIT; fi
OUT=${OUT:?set OUT to the folder that comes back}
WORK=${WORK:-$(mktemp -d)}
PYTHON=${PYTHON:-python}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd) WORK=$(cd "$WORK" && pwd)
cd "$(dirname "$0")/.."
left() { echo $(( deadline - $(date +%s) )); }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${COMMIT:-not given}  (this copy's git: $(git rev-parse HEAD 2>/dev/null || echo none))"
  echo "device: $DEVICE  profile: $PROFILE  budget: ${budget}s  seeds: $SEEDS  fuse: $FUSE  sections: $SECTIONS"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "$PYTHON" -c "import platform, torch; print('python', platform.python_version(), 'torch', torch.__version__,
      'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
} > "$OUT/env.txt" 2>&1

"$PYTHON" -m residual_lib device-check --device "$DEVICE" --json "$OUT/checks.json" > "$OUT/checks.log" 2>&1 \
  || echo "some device checks failed: see checks.log" >> "$OUT/env.txt"

bench_steps=20
[[ $DEVICE == cpu ]] && bench_steps=2
timeout --signal=TERM "$(( $(left) > 90 ? 90 : $(left) ))" \
  "$PYTHON" -m residual_lib bench --profile "$PROFILE" --device "$DEVICE" --fuse 8 --steps "$bench_steps" \
    --warmup 1 --repeats 1 --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1 \
  || echo "bench stopped or failed: see bench.log" >> "$OUT/env.txt"

# SIGTERM stops the sweep as Ctrl-C does: finished records stay, runs in flight are stopped
remaining=$(left)
if (( remaining > 10 )); then
  # shellcheck disable=SC2086
  timeout --signal=TERM "$remaining" "$PYTHON" -m residual_lib sweep $SECTIONS \
      --profile "$PROFILE" --device "$DEVICE" --seeds $SEEDS --fuse "$FUSE" --no-notebooks --results "$WORK/results" \
      > "$OUT/sweep.log" 2>&1 || echo "sweep stopped at the deadline or failed: see sweep.log" >> "$OUT/env.txt"
else
  echo "no time left for the sweep" > "$OUT/sweep.log"
fi

mkdir -p "$WORK/results/$PROFILE"
(cd "$WORK" && find "results/$PROFILE" -maxdepth 1 -name '*.json' -print0 | sort -z \
  | tar --null -czf "$OUT/records.tar.gz" -T -)
"$PYTHON" -m residual_lib summary "$WORK/results" --profile "$PROFILE" > "$OUT/summary.txt" 2>&1 \
  || echo "no records to summarise yet" >> "$OUT/summary.txt"
echo "done in $(( $(date +%s) - started ))s: $(n=$(tar -tzf "$OUT/records.tar.gz" | wc -l); echo "$n record$([ "$n" = 1 ] || echo s)") in records.tar.gz" \
  | tee -a "$OUT/env.txt"
