#!/usr/bin/env bash
# One lent accelerator, one call: what the machine is, the device checks, the benchmark, then
# as much of the paper-10m central sweep as fits before a deadline, packed for the trip back.
#
#   COMMIT=$(git rev-parse HEAD) DEVICE=cuda PROFILE=paper-10m SECONDS=540 OUT=/some/dir bash scripts/device_check.sh
#   DEVICE=cpu  PROFILE=smoke     SECONDS=120 OUT=/tmp/dc   bash scripts/device_check.sh   # the rehearsal
#
# Settings: DEVICE (cuda), PROFILE (paper-10m), SECONDS (the script's whole budget, default
# 540), OUT (required), SKIP ("checks", "bench" or both: their time goes to training), CHECKS
# (the device checks to run; default every one that applies but compile, which the sweep
# does not use), SEEDS (1337 42 123 1 2 3 4 5 6 7 8 9), SECTIONS (notebooks/06_central.py),
# FUSE (runs trained together; default: planned from the benchmark, see below), WORK (scratch
# folder outside OUT), PYTHON (python3, else python), COMMIT (the full 40-character sha of the
# files, written into every record: a lent machine's copy of .git can be an older one than the
# files it gets, as on 2026-12-04, when it reported the previous commit; pass `git rev-parse
# HEAD` as run here). Nothing needs carrying: the corpus ships with the package. Give the call
# a timeout of at least SECONDS + 30.
# Needs only what the GPU image has (torch, pandas, numpy, tqdm): no pytest, papermill or
# jupytext; the corpus ships with the package. tests/test_device.py runs this very script on
# CPU at smoke, so it cannot break unnoticed.
#
# Under OUT, at most 8 files, none in a sub-folder:
#   env.txt            python, torch, CUDA, GPU, git commit, the plan
#   checks.json/.log   python -m residual_lib device-check (bf16 smoke run, fused = single in
#                      fp32, dropout in a fused group, gradient accumulation, attention on the
#                      folded batch; torch.compile where CHECKS names compile)
#   bench.json/.log    tokens/s and MFU: one model, groups of 4, 8, 16 and 32, the sweep layout
#   sweep.log          the sweep's progress; it stops at the deadline, keeping finished groups
#   records.tar.gz     results/<PROFILE>/*.json: unpack at the repository root and commit;
#                      packed again every PACK_EVERY (20) s while the sweep runs, so a call killed at its
#                      timeout still brings back every record finished by then
#   summary.txt        python -m residual_lib summary of those records
#
# Time plan for a 15-minute lease (every second of it counted: start-up, commands, idle):
#   start-up 0.5-2 min | env 5 s | checks ~20 s (compile took ~25 s more; at most 150 s) | bench
#   <= 120 s (--steps 20 --repeats 1, groups of 4, 8, 16 and 32; a size that fails, as a group too
#   large for the GPU's memory does, ends the sizes, and the rates measured so far are kept in
#   bench.json as they come) | sweep until SECONDS minus 30 s | pack ~5 s.
# The group size: `device-check --plan bench.json --seconds <time left>` takes the benchmark's
# rates and picks the size (1, or 4, 8, 16, 32: whole seeds of the four central variants) that
# records the most runs in whole groups within 80% of the time left, so no group is cut off
# at the deadline (of sizes that record as many, the smallest); the sweep then trains that many seeds (SEEDS, in order), FUSE at a time.
# Without a plan (the benchmark failed before its single rate) it trains the first seed's runs
# one at a time until the deadline; so it does where fewer runs than a seed's four fit.
# Fused groups compute on weights with a model axis (residual_lib.training.batched): attention runs on
# the folded batch with the flash kernel, where the earlier vmap path had to use math.
# Measured on an H200 before that change (torch 2.11, 2026-12-04): paper-10m at 539,000
# tokens/s alone (5.8% MFU), 829,000 fused by 8 under vmap (9.0%).
set -euo pipefail
if [[ -n ${COMMIT:-} && ! ${COMMIT} =~ ^[0-9a-f]{40}$ ]]; then
  echo "COMMIT must be the full 40-character sha: pass COMMIT=\$(git rev-parse HEAD)" >&2
  exit 2
fi
budget=$SECONDS  # bash counts SECONDS up from the value given in the environment (0 when unset)
(( budget > 1 )) || budget=540
started=$(date +%s)
deadline=$(( started + budget - 30 ))
DEVICE=${DEVICE:-cuda}
PROFILE=${PROFILE:-paper-10m}
SEEDS=${SEEDS:-1337 42 123 1 2 3 4 5 6 7 8 9}
SECTIONS=${SECTIONS:-notebooks/06_central.py}
FUSE=${FUSE:-}
JOBS=""  # set for the run-at-a-time fallback below
SKIP=" ${SKIP:-} "
for word in $SKIP; do
  [[ $word == checks || $word == bench ]] || { echo "SKIP takes checks and/or bench, separated by spaces, not $word" >&2; exit 2; }
done
PACK_EVERY=${PACK_EVERY:-20}
if [[ -n ${COMMIT:-} ]]; then export RESIDUAL_CODE_COMMIT=$COMMIT; fi
# no checkpoints: they cannot outlive the lease, and a fused group's take seconds each to save
export RESIDUAL_CHECKPOINT_EVERY=${RESIDUAL_CHECKPOINT_EVERY:-0}
OUT=${OUT:?set OUT to the folder that comes back}
WORK=${WORK:-$(mktemp -d)}
PYTHON=${PYTHON:-$(command -v python3 || echo python)}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd) WORK=$(cd "$WORK" && pwd)
cd "$(dirname "$0")/.."
left() { echo $(( deadline - $(date +%s) )); }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${COMMIT:-not given}  (this copy's git: $(git rev-parse HEAD 2>/dev/null || echo none))"
  echo "device: $DEVICE  profile: $PROFILE  budget: ${budget}s  seeds: $SEEDS  fuse: ${FUSE:-planned}  sections: $SECTIONS"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "$PYTHON" -c "import platform, torch; print('python', platform.python_version(), 'torch', torch.__version__,
      'cuda', torch.version.cuda, 'available', torch.cuda.is_available())" || echo "$PYTHON cannot import torch"
} > "$OUT/env.txt" 2>&1
# at most $1 seconds, never past the deadline (0 when it has passed)
limit() { local t; t=$(left); (( t > $1 )) && t=$1; (( t > 0 )) || t=0; echo "$t"; }

# the checks that apply to the device, but compile (residual_lib.commands.devicecheck.applicable)
CHECKS=${CHECKS:-$("$PYTHON" -c "from residual_lib.commands.devicecheck import applicable
print(*applicable('$DEVICE', leave_out=('compile',)))" 2>> "$OUT/env.txt" || true)}
check_cap=150  # ~45 s on a GPU; a CPU rehearsal's compile check takes longer
[[ $DEVICE == cpu ]] && check_cap=600
if [[ $SKIP == *" checks "* ]]; then
  echo "checks skipped" >> "$OUT/env.txt"
elif (( $(limit $check_cap) > 10 )); then
  # shellcheck disable=SC2086
  timeout -k 10 "$(limit $check_cap)" "$PYTHON" -m residual_lib device-check --device "$DEVICE" --checks $CHECKS \
    --json "$OUT/checks.json" > "$OUT/checks.log" 2>&1 || echo "some device checks failed or ran out of time: see checks.log" >> "$OUT/env.txt"
else
  echo "no time left for the checks" >> "$OUT/env.txt"
fi

bench_steps=20
[[ $DEVICE == cpu ]] && bench_steps=2
if [[ $SKIP == *" bench "* ]]; then
  echo "bench skipped" >> "$OUT/env.txt"
elif (( $(limit 120) > 30 )); then
  timeout -k 10 "$(limit 120)" \
    "$PYTHON" -m residual_lib bench --profile "$PROFILE" --device "$DEVICE" --fuse 8 --steps "$bench_steps" \
      --warmup 1 --repeats 1 --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1 \
    || echo "bench stopped or failed: see bench.log" >> "$OUT/env.txt"
else
  echo "no time left for the bench" >> "$OUT/env.txt"
fi

# the records this checkout holds already: the sweep reuses them, and only seeds with a run
# still missing are trained (a lease goes on where the last one stopped)
mkdir -p "$WORK/results/$PROFILE"
cp results/"$PROFILE"/*.json "$WORK/results/$PROFILE/" 2>/dev/null || true
section=$(basename "${SECTIONS%% *}" .py)
# shellcheck disable=SC2086
if missing=$("$PYTHON" - "$section" "$PROFILE" "$WORK/results" $SEEDS <<'PY'
import sys
from residual_lib.storage.records import find_record
from residual_lib.study.sections import plan
section, profile, results, seeds = sys.argv[1], sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4:]]
print(" ".join(str(s) for s in seeds
               if any(find_record(results, r.profile.name, r.key) is None for r in plan(section, profile, [s]))))
PY
); then
  SEEDS=$missing
else
  echo "could not tell which seeds are recorded: training the seeds as given" >> "$OUT/env.txt"
fi
# the group size and the number of seeds: whole groups that finish before the deadline
skip=""
if [[ -z ${SEEDS// /} ]]; then
  skip="every run of these seeds is recorded already"
elif [[ -z $FUSE ]]; then
  plan=$("$PYTHON" -m residual_lib device-check --plan "$OUT/bench.json" --seconds "$(left)" --profile "$PROFILE" \
         2>> "$OUT/env.txt") || plan=""
  echo "plan: ${plan:-none (see above)}" >> "$OUT/env.txt"
  FUSE=$(sed -n 's/.*fuse=\([0-9]*\).*/\1/p' <<< "$plan")
  runs=$(sed -n 's/.*runs=\([0-9]*\).*/\1/p' <<< "$plan")
  if [[ -z $plan ]]; then  # no rate to plan from: one seed, a run at a time, until the deadline
    read -r first _ <<< "$SEEDS"
    FUSE=1 SEEDS=$first JOBS=1
    echo "training seed $SEEDS one run at a time, without a plan" >> "$OUT/env.txt"
  elif [[ ${runs:-0} == 0 ]]; then
    skip="no whole run fits the time left (plan: $plan)"
  else
    n_seeds=$(( runs / 4 > 0 ? runs / 4 : 1 ))
    SEEDS=$(tr ' ' '\n' <<< "$SEEDS" | grep . | head -n "$n_seeds" | tr '\n' ' ')
    echo "training seeds $SEEDS($FUSE runs at a time; the plan has room for $runs runs)" >> "$OUT/env.txt"
  fi
fi
FUSE=${FUSE:-1}

# the finished records (written whole, then renamed: *.json is never half a file), packed
# under a temporary name and renamed, so OUT always holds a whole archive
pack() {
  (cd "$WORK" && find "results/$PROFILE" -maxdepth 1 -name '*.json' -print0 | sort -z \
    | tar --null -czf "$OUT/.records.tar.gz.tmp" -T -) && mv -f "$OUT/.records.tar.gz.tmp" "$OUT/records.tar.gz"
}

# SIGTERM stops the sweep as Ctrl-C does: finished records stay, runs in flight are stopped
remaining=$(left)
if [[ -n $skip ]]; then
  echo "$skip" > "$OUT/sweep.log"
elif (( remaining > 10 )); then
  # a TERM lets the pack under way finish (never two at once on one temporary file), then ends the loop
  ( stop=0; trap 'stop=1' TERM
    while (( ! stop )); do sleep "$PACK_EVERY" & wait $! || true; (( stop )) || pack || true; done
  ) </dev/null >/dev/null 2>&1 &
  packer=$!
  # shellcheck disable=SC2086
  timeout -k 15 "$remaining" "$PYTHON" -m residual_lib sweep $SECTIONS \
      --profile "$PROFILE" --device "$DEVICE" --seeds $SEEDS --fuse "$FUSE" ${JOBS:+--jobs "$JOBS"} --no-notebooks \
      --results "$WORK/results" \
      > "$OUT/sweep.log" 2>&1 || echo "sweep stopped at the deadline or failed: see sweep.log" >> "$OUT/env.txt"
  kill "$packer" 2>/dev/null || true
  wait "$packer" 2>/dev/null || true
  for log in "$WORK/results/$PROFILE/logs"/*.log; do  # each worker's last lines: why a run failed
    [[ -e $log ]] && { echo "--- $(basename "$log"), last lines"; tail -n 15 "$log"; } >> "$OUT/sweep.log"
  done
else
  echo "no time left for the sweep" > "$OUT/sweep.log"
fi

pack || echo "packing the records failed" >> "$OUT/env.txt"
rm -f "$OUT/.records.tar.gz.tmp"
"$PYTHON" -m residual_lib summary "$WORK/results" --profile "$PROFILE" > "$OUT/summary.txt" 2>&1 \
  || echo "no records to summarise yet" >> "$OUT/summary.txt"
echo "done in $(( $(date +%s) - started ))s: $(n=$(tar -tzf "$OUT/records.tar.gz" | wc -l); echo "$n record$([ "$n" = 1 ] || echo s)") in records.tar.gz" \
  | tee -a "$OUT/env.txt"
