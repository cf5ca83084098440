#!/usr/bin/env bash
# scripts/device/run.sh [--dry-run] [FOLDER]
#
# One non-interactive command that turns a short time on a GPU node into evidence, writing
# everything under FOLDER (default: $OUT). Bounded to DEVICE_BUDGET_SECONDS (480) by the
# timeouts of its own steps:
#   1. the environment record (as `infermeter bench` writes it: GPU model, driver, CUDA,
#      cores, memory);
#   2. nvidia-smi captures: `dmon -h`, 20 s of dmon with every -s group the help lists,
#      with --gpm-metrics where it is listed (alone, and together with every group, as the
#      collector runs it), `-q -x`, `--query-gpu` static facts, `-L`; saved as fixtures with
#      their SOURCES.md rows;
#   3. infermeter's GPU collector against that nvidia-smi for 30 s, /metrics saved, with the
#      GPU under load when something on the machine can load it without downloads;
#   4. bench:proxy's capacity section at --workers 1,2,4,8, the client and the upstream
#      pinned to their own CPUs with taskset and the proxies on the rest;
#   5. fixtures, parse checks, the scaling table and summary.md (scripts/device/report.ts).
# --dry-run does all of it against the fake nvidia-smi (bin/fake-nvidia-smi) on 2 CPUs with
# short durations, so that the script is tested where there is no GPU.
# Exit 0 when every step ran, 1 when one failed or was cut short (everything else is kept).
set -u -o pipefail

usage() {
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'

Settings (environment): DEVICE_BUDGET_SECONDS (480), DEVICE_DMON_SAMPLES (20),
DEVICE_COLLECT_SECONDS (30; dry run 4), DEVICE_WORKERS (1,2,4,8), DEVICE_CPUS (the CPUs to
use; default: this process's affinity, the first 2 in a dry run), DEVICE_CLIENT_CPUS,
DEVICE_UPSTREAM_CPUS, DEVICE_PROXY_CPUS (override the split), DEVICE_NVIDIA_SMI (nvidia-smi),
DEVICE_GPU_LOAD=0 (capture idle), DEVICE_BUILD=1 (rebuild dist/ first); BENCH_* as in
bench/proxy.ts and bench/capacity.ts.
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DRY=0
DIR=${OUT:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) DIR=$1 ;;
  esac
  shift
done
[ -n "$DIR" ] || { echo "run.sh: no output folder: set OUT or give one as the argument" >&2; exit 2; }
mkdir -p "$DIR" || exit 2
DIR=$(cd "$DIR" && pwd)
if [ -e "$DIR/steps.tsv" ]; then echo "run.sh: $DIR already holds a run (steps.tsv); give an empty folder" >&2; exit 2; fi
mkdir -p "$DIR/raw" "$DIR/collector" "$DIR/bench" "$DIR/fixtures"
cd "$ROOT" || exit 2

BUDGET=${DEVICE_BUDGET_SECONDS:-480}
T0=$(date +%s)
FAILED=0
PIDS=()

log() { printf '[device %3ss] %s\n' "$(($(date +%s) - T0))" "$*" | tee -a "$DIR/run.log" >&2; }
left() { echo $((T0 + BUDGET - $(date +%s))); }
# budget CAP RESERVE: seconds a step may take, leaving RESERVE for the steps after it.
budget() {
  local cap=$1 l
  l=$(($(left) - $2))
  [ "$l" -lt "$cap" ] && cap=$l
  [ "$cap" -lt 1 ] && cap=1
  echo "$cap"
}
# step NAME STATUS STARTED NOTE: one row of steps.tsv (ok, failed, skipped).
step() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(($(date +%s) - $3))" "$4" >>"$DIR/steps.tsv"
  [ "$2" = ok ] || FAILED=1
  log "$1: $2${4:+ ($4)}"
}
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# --- what runs where --------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  : >"$DIR/DRY_RUN"
  NVSMI="$ROOT/bin/fake-nvidia-smi"
  export FAKE_NVIDIA_SMI_GPUS=${FAKE_NVIDIA_SMI_GPUS:-2} FAKE_NVIDIA_SMI_MODEL=${FAKE_NVIDIA_SMI_MODEL:-NVIDIA H200}
  export FAKE_NVIDIA_SMI_PERIOD_MS=${FAKE_NVIDIA_SMI_PERIOD_MS:-100} FAKE_NVIDIA_SMI_LOAD=${FAKE_NVIDIA_SMI_LOAD:-0.6}
  COLLECT=${DEVICE_COLLECT_SECONDS:-4}
  : "${BENCH_SECONDS:=1}" "${BENCH_ROUNDS:=1}" "${BENCH_WARMUP_SECONDS:=0.5}" "${BENCH_CAPACITY_LOADS:=16x5}" "${BENCH_KNEE_STREAMS:=16,32}" "${BENCH_CAPACITY_API_LOADS:=16x5}"
else
  NVSMI=${DEVICE_NVIDIA_SMI:-nvidia-smi}
  COLLECT=${DEVICE_COLLECT_SECONDS:-30}
  : "${BENCH_SECONDS:=2}" "${BENCH_ROUNDS:=2}" "${BENCH_WARMUP_SECONDS:=1}" "${BENCH_CAPACITY_LOADS:=64x5,256x2}" "${BENCH_KNEE_STREAMS:=128,256,384,512,768,1024}" "${BENCH_CAPACITY_API_LOADS:=64x5,256x2}"
fi
# Whatever the mode, output of the fake is never named or described as a capture.
case "$NVSMI" in *fake-nvidia-smi*) : >"$DIR/DRY_RUN" ;; esac
SAMPLES=${DEVICE_DMON_SAMPLES:-20}
WORKERS=${DEVICE_WORKERS:-1,2,4,8}
export NVSMI_SHOW_ALL_DEVICES=1 # 535-series drivers show 4 GPUs in dmon without it
ulimit -n "$(ulimit -Hn)" 2>/dev/null # the knee steps hold thousands of sockets

# The CPUs this process may use ("0-3,8-11" → 0 1 2 3 8 9 10 11).
expand_cpus() {
  local part out=()
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
  done
  echo "${out[@]}"
}
join_cpus() { local IFS=,; echo "$*"; }
if command -v taskset >/dev/null; then
  read -r -a CPUS <<<"$(expand_cpus "${DEVICE_CPUS:-$(taskset -pc $$ | sed 's/.*: *//')}")"
  [ "$DRY" = 1 ] && [ -z "${DEVICE_CPUS:-}" ] && CPUS=("${CPUS[@]:0:2}")
  n=${#CPUS[@]}
  # Client and upstream get CPUs of their own (3 each from 16 up, 2 from 8), the proxies the
  # rest; under 4 CPUs client and upstream share the first.
  if [ "$n" -ge 16 ]; then c=("${CPUS[@]:0:3}") u=("${CPUS[@]:3:3}") p=("${CPUS[@]:6}")
  elif [ "$n" -ge 8 ]; then c=("${CPUS[@]:0:2}") u=("${CPUS[@]:2:2}") p=("${CPUS[@]:4}")
  elif [ "$n" -ge 4 ]; then c=("${CPUS[0]}") u=("${CPUS[1]}") p=("${CPUS[@]:2}")
  elif [ "$n" -ge 2 ]; then c=("${CPUS[0]}") u=("${CPUS[0]}") p=("${CPUS[@]:1}")
  else c=("${CPUS[@]}") u=("${CPUS[@]}") p=("${CPUS[@]}"); fi
  CLIENT_CPUS=${DEVICE_CLIENT_CPUS:-$(join_cpus "${c[@]}")}
  UPSTREAM_CPUS=${DEVICE_UPSTREAM_CPUS:-$(join_cpus "${u[@]}")}
  PROXY_CPUS=${DEVICE_PROXY_CPUS:-$(join_cpus "${p[@]}")}
  # One client thread and one upstream process per CPU they have (a dry run uses 2 of each so
  # that those paths run too).
  count_cpus() { local a; read -r -a a <<<"$(expand_cpus "$1")"; echo "${#a[@]}"; }
  CLIENT_THREADS=${BENCH_CLIENT_THREADS:-$([ "$DRY" = 1 ] && echo 2 || count_cpus "$CLIENT_CPUS")}
  UPSTREAM_PROCS=${BENCH_UPSTREAM_PROCS:-$([ "$DRY" = 1 ] && echo 2 || count_cpus "$UPSTREAM_CPUS")}
  PIN="client ($CLIENT_THREADS threads) on CPUs $CLIENT_CPUS, upstream ($UPSTREAM_PROCS processes) on $UPSTREAM_CPUS, proxies on $PROXY_CPUS (of ${#CPUS[@]})"
else
  CLIENT_CPUS='' UPSTREAM_CPUS='' PROXY_CPUS=''
  CLIENT_THREADS=${BENCH_CLIENT_THREADS:-2} UPSTREAM_PROCS=${BENCH_UPSTREAM_PROCS:-2}
  PIN="not pinned: taskset is not installed (client $CLIENT_THREADS threads, upstream $UPSTREAM_PROCS processes)"
fi
log "$([ "$DRY" = 1 ] && echo 'DRY RUN (fake nvidia-smi): ')output in $DIR; budget ${BUDGET}s; $PIN"

# --- 0. build (only what is missing: a copy of the repository may come without) ---------
t=$(date +%s)
note=''
if [ ! -d node_modules ]; then
  timeout -k 5 "$(budget 180 300)" npm ci --no-audit --no-fund >"$DIR/raw/npm-ci.log" 2>&1 && note='npm ci' || note="npm ci failed (raw/npm-ci.log)"
fi
if [ "${DEVICE_BUILD:-0}" = 1 ] || [ ! -f dist/src/cli.js ] || [ ! -f dist/scripts/device/report.js ] || [ ! -f dist/bench/proxy.js ]; then
  timeout -k 5 "$(budget 180 300)" npm run build >"$DIR/raw/build.log" 2>&1 && note="$note built" || note="$note build failed (raw/build.log)"
fi
if [ -f dist/src/cli.js ] && [ -f dist/scripts/device/report.js ]; then step build ok "$t" "${note:-dist/ present}"; else step build failed "$t" "$note"; fi

# capture ID SECONDS ARGS...: one nvidia-smi command, stdout to raw/ID.out, a row in raw/commands.tsv.
capture() {
  local id=$1 secs=$2 s rc
  shift 2
  s=$(date +%s)
  if [ "$secs" -le 0 ]; then echo "out of time" >"$DIR/raw/$id.err"; return 124; fi
  timeout -k 5 "$secs" "$NVSMI" "$@" >"$DIR/raw/$id.out" 2>"$DIR/raw/$id.err"
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$id" "$rc" "$(($(date +%s) - s))" "$*" >>"$DIR/raw/commands.tsv"
  return $rc
}

# --- 1. environment ------------------------------------------------------------------------
t=$(date +%s)
{
  echo "date: $(date -u +%FT%TZ)"; echo "uname: $(uname -a)"; echo "node: $(node --version 2>&1)"
  echo "nproc: $(nproc 2>&1)"; echo "affinity: $(taskset -pc $$ 2>&1)"; echo "pinning: $PIN"
  command -v lscpu >/dev/null && lscpu
  command -v free >/dev/null && free -b
} >"$DIR/raw/host.txt" 2>&1
timeout -k 5 20 "$NVSMI" >"$DIR/raw/banner.out" 2>&1
if timeout -k 5 "$(budget 30 400)" node dist/scripts/device/environment.js "$NVSMI" >"$DIR/environment.json" 2>"$DIR/raw/environment.err" &&
  node -e 'const e=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); process.exit(e.gpu.available ? 0 : 1)' "$DIR/environment.json"; then
  step environment ok "$t" "$(node -e 'const e=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log(`${e.gpu.count}x ${e.gpu.models.join(", ")}, driver ${e.gpu.driverVersion}, CUDA ${e.gpu.cudaVersion}, ${e.host.cpus} CPUs`)' "$DIR/environment.json")"
else
  step environment failed "$t" "no GPU seen (environment.json, raw/environment.err)"
fi

# --- 2. nvidia-smi captures ------------------------------------------------------------------
t=$(date +%s)
capture dmon-help 15 dmon -h
if [ -f dist/scripts/device/plan.js ] && node dist/scripts/device/plan.js "$DIR/raw/dmon-help.out" >"$DIR/raw/plan.txt" 2>>"$DIR/raw/plan.err"; then :; else
  printf 'DMON_GROUPS=pucvmet\nDMON_GROUPS_FALLBACK=1\nGPM_IDS=%s\nGPM_DEFAULT_IDS=\nGPM_OPTIONS=0\n' "$(grep -q -- --gpm-metrics "$DIR/raw/dmon-help.out" && echo 2,3,5,10)" >"$DIR/raw/plan.txt"
fi
eval "$(grep -E '^[A-Z_]+=[A-Za-z0-9,]*$' "$DIR/raw/plan.txt")"
GPM_OPT=()
[ "${GPM_OPTIONS:-0}" = 1 ] && GPM_OPT=(--gpm-options d)
FACTS=index,uuid,name,driver_version,pci.bus_id,memory.total
STATIC=index,name,count,compute_cap,vbios_version,power.limit,clocks.max.gr,clocks.max.mem,pcie.link.gen.max,pcie.link.width.max,ecc.mode.current,mig.mode.current,persistence_mode
dmon_secs=$(budget $((SAMPLES + 15)) 300)
capture dmon-all "$dmon_secs" dmon -s "$DMON_GROUPS" -o DT -d 1 -c "$SAMPLES" & PIDS+=($!)
if [ -n "${GPM_IDS:-}" ]; then
  capture dmon-gpm "$dmon_secs" dmon --gpm-metrics "$GPM_IDS" -o DT -d 1 -c "$SAMPLES" & PIDS+=($!)
  capture dmon-all-gpm "$dmon_secs" dmon -s "$DMON_GROUPS" --gpm-metrics "$GPM_IDS" "${GPM_OPT[@]}" -o DT -d 1 -c "$SAMPLES" & PIDS+=($!)
fi
capture q-x 60 -q -x
capture query-facts-csv 20 --query-gpu=$FACTS --format=csv
capture query-facts-plain 20 --query-gpu=$FACTS --format=csv,noheader,nounits
capture query-static-csv 20 --query-gpu=$STATIC --format=csv
capture list 15 -L
wait
PIDS=()
# A driver may refuse some listed GPM id on this board: then the collector's default ids alone.
if [ -n "${GPM_IDS:-}" ] && [ -n "${GPM_DEFAULT_IDS:-}" ] && [ "$GPM_DEFAULT_IDS" != "$GPM_IDS" ] && awk -F'\t' '$1 == "dmon-gpm" && $2 != 0 { f = 1 } END { exit !f }' "$DIR/raw/commands.tsv"; then
  capture dmon-gpm-default "$(budget $((SAMPLES + 15)) 280)" dmon --gpm-metrics "$GPM_DEFAULT_IDS" -o DT -d 1 -c "$SAMPLES"
fi
bad=$(awk -F'\t' '$2 != 0 { printf "%s%s(exit %s)", sep, $1, $2; sep=", " }' "$DIR/raw/commands.tsv")
gpm_note=$([ -n "${GPM_IDS:-}" ] && echo "--gpm-metrics $GPM_IDS" || echo 'no --gpm-metrics in dmon -h')
groups_note="-s $DMON_GROUPS$([ "${DMON_GROUPS_FALLBACK:-0}" = 1 ] && echo ' (help listed no groups: fallback)')"
if [ -z "$bad" ]; then step captures ok "$t" "$groups_note; $gpm_note"; else step captures failed "$t" "$groups_note; $gpm_note; failed: $bad"; fi

# --- 3. the GPU collector against this nvidia-smi ------------------------------------------------
# try_load DESC CMD...: starts CMD in the background and keeps it when it still runs 3 s later.
try_load() {
  local desc=$1 pid rc
  shift
  "$@" >>"$DIR/collector/gpu-load.log" 2>&1 &
  pid=$!
  sleep 3
  if kill -0 "$pid" 2>/dev/null; then
    PIDS+=($pid)
    LOAD_PID=$pid
    echo "$desc"
    return 0
  fi
  wait "$pid"
  rc=$?
  TRIED="$TRIED${TRIED:+; }$desc exited $rc within 3 s"
  return 1
}
# gpu_load SECONDS: starts something already on the machine that loads every GPU; prints what
# (called with its output redirected, never in $(...), so that PIDS keeps what it started).
gpu_load() {
  local secs=$1 tool
  TRIED=''
  LOAD_PID=''
  if [ "$DRY" = 1 ]; then echo "fake: FAKE_NVIDIA_SMI_LOAD=$FAKE_NVIDIA_SMI_LOAD (no real GPU)"; return; fi
  if [ "${DEVICE_GPU_LOAD:-1}" = 0 ]; then echo "idle (DEVICE_GPU_LOAD=0)"; return; fi
  for tool in gpu_burn gpu-burn; do
    command -v "$tool" >/dev/null && try_load "$tool $secs" timeout -k 5 "$secs" "$tool" "$secs" && return
  done
  for tool in dcgmproftester12 dcgmproftester11; do
    command -v "$tool" >/dev/null && try_load "$tool -t 1004 (tensor activity) for ${secs}s" timeout -k 5 "$secs" "$tool" --no-dcgm-validation -t 1004 -d "$secs" && return
  done
  for tool in torch cupy; do
    if command -v python3 >/dev/null && timeout 60 python3 "$ROOT/scripts/device/gpu-load.py" "$tool" 0 >/dev/null 2>&1; then
      try_load "python3 scripts/device/gpu-load.py $tool (fp16 matrix multiplies and copies on every GPU) for ${secs}s" timeout -k 5 "$secs" python3 "$ROOT/scripts/device/gpu-load.py" "$tool" "$secs" && return
    fi
  done
  if command -v nvcc >/dev/null && timeout 120 nvcc -O2 -o "$DIR/collector/gpu-load" "$ROOT/scripts/device/gpu-load.cu" >>"$DIR/collector/gpu-load.log" 2>&1; then
    try_load "scripts/device/gpu-load.cu built with nvcc (FMA loop and device copies on every GPU) for ${secs}s" timeout -k 5 "$secs" "$DIR/collector/gpu-load" "$secs" && return
  fi
  echo "idle: nothing on this machine loaded a GPU without downloads (looked for gpu_burn, dcgmproftester, python3 with torch or cupy, nvcc)${TRIED:+; tried: $TRIED}"
}
# wait_for FILE REGEX SECONDS: prints the first match's group 1 once it appears in FILE.
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if [[ -f $1 && $(<"$1") =~ $2 ]]; then
      echo "${BASH_REMATCH[1]}"
      return 0
    fi
    sleep 0.1
  done
  return 1
}
scrape() { timeout 15 node -e 'fetch(process.argv[1]).then(async (r) => { process.stdout.write(await r.text()); process.exit(r.ok ? 0 : 1) }, (e) => { console.error(e.message); process.exit(1) })' "$1"; }

t=$(date +%s)
if [ "$(left)" -lt $((COLLECT + 240)) ] && [ "$DRY" = 0 ]; then COLLECT=$(($(left) - 240)); fi
if [ "$COLLECT" -le 0 ] || [ ! -f dist/src/cli.js ]; then
  step collector skipped "$t" "out of time or no build"
else
  node dist/src/cli.js simulate --listen 127.0.0.1:0 >/dev/null 2>"$DIR/collector/simulator.log" & sim=$!
  PIDS+=($sim)
  sim_url=$(wait_for "$DIR/collector/simulator.log" ' at (http://[0-9.:]+) ' 15)
  gpu_load $((COLLECT + 10)) >"$DIR/collector/gpu-load.txt"
  load_desc=$(cat "$DIR/collector/gpu-load.txt")
  node dist/src/cli.js --upstream "${sim_url:-http://127.0.0.1:9}" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --nvidia-smi "$NVSMI" --gpu-source nvidia-smi --no-collector.engine --log-level info >"$DIR/collector/infermeter.log" 2>&1 & im=$!
  PIDS+=($im)
  port=$(wait_for "$DIR/collector/infermeter.log" '"metrics":"127\.0\.0\.1:([0-9]+)"' 20)
  if [ -z "$port" ]; then
    step collector failed "$t" "infermeter did not start (collector/infermeter.log)"
  else
    sleep $((COLLECT / 2))
    scrape "http://127.0.0.1:$port/metrics" >"$DIR/collector/metrics-half.prom" 2>>"$DIR/collector/scrape.err"
    sleep $((COLLECT - COLLECT / 2))
    # Whether the load outlived the collection: an exit mid-way shows up in the figures.
    if [ -n "$LOAD_PID" ] && ! kill -0 "$LOAD_PID" 2>/dev/null; then
      load_desc="$load_desc (but it had exited before the last scrape: collector/gpu-load.log)"
      echo "$load_desc" >"$DIR/collector/gpu-load.txt"
    fi
    if scrape "http://127.0.0.1:$port/metrics" >"$DIR/collector/metrics.prom" 2>>"$DIR/collector/scrape.err" &&
      grep -q '^infermeter_collector_up{collector="gpu"} 1' "$DIR/collector/metrics.prom" && grep -q '^infermeter_gpu_' "$DIR/collector/metrics.prom"; then
      step collector ok "$t" "${COLLECT}s; GPU load: $load_desc"
    else
      step collector failed "$t" "no GPU series or gpu collector down after ${COLLECT}s (collector/metrics.prom, infermeter.log)"
    fi
    command -v promtool >/dev/null && promtool check metrics <"$DIR/collector/metrics.prom" >"$DIR/collector/promtool.txt" 2>&1
  fi
  cleanup
  PIDS=()
fi

# --- 4. bench:proxy's capacity section at each worker count ---------------------------------------
t=$(date +%s)
secs=$(budget 330 20)
if [ "$secs" -le 30 ] || [ ! -f dist/bench/proxy.js ]; then
  step bench skipped "$t" "out of time or no build"
else
  # node dist/bench/proxy.js is what `npm run bench:proxy` runs after building.
  pin_client=()
  [ -n "$CLIENT_CPUS" ] && pin_client=(taskset -c "$CLIENT_CPUS")
  BENCH_SECTIONS=capacity BENCH_TRACING=0 BENCH_WORKERS=$WORKERS BENCH_RESULTS="$DIR/bench/proxy.json" \
    BENCH_UPSTREAM_CPUS=$UPSTREAM_CPUS BENCH_PROXY_CPUS=$PROXY_CPUS BENCH_CLIENT_THREADS=$CLIENT_THREADS BENCH_UPSTREAM_PROCS=$UPSTREAM_PROCS BENCH_SECONDS=$BENCH_SECONDS BENCH_ROUNDS=$BENCH_ROUNDS \
    BENCH_WARMUP_SECONDS=$BENCH_WARMUP_SECONDS BENCH_CAPACITY_LOADS=$BENCH_CAPACITY_LOADS BENCH_KNEE_STREAMS=$BENCH_KNEE_STREAMS BENCH_CAPACITY_API_LOADS=$BENCH_CAPACITY_API_LOADS \
    timeout -k 10 "$secs" "${pin_client[@]}" node dist/bench/proxy.js >"$DIR/bench/bench.log" 2>&1
  rc=$?
  if [ "$rc" = 0 ] && [ -f "$DIR/bench/proxy.json" ]; then
    step bench ok "$t" "--workers $WORKERS; loads $BENCH_CAPACITY_LOADS (by API $BENCH_CAPACITY_API_LOADS); knee steps $BENCH_KNEE_STREAMS streams; ${BENCH_SECONDS}s cells x $BENCH_ROUNDS rounds; $PIN"
  else
    step bench failed "$t" "exit $rc$([ "$rc" = 124 ] && echo ": cut at ${secs}s")$([ -f "$DIR/bench/proxy.json" ] && echo '; bench/proxy.json holds what was measured before') (bench/bench.log)"
  fi
fi

# --- 5. fixtures, checks, scaling table, summary ----------------------------------------------------
t=$(date +%s)
if timeout -k 5 60 node dist/scripts/device/report.js "$DIR" >"$DIR/raw/report.log" 2>&1; then
  step report ok "$t" "$(tail -1 "$DIR/raw/report.log")"
else
  step report failed "$t" "raw/report.log"
fi
# The summary was written before the report step's own row: add it.
[ -f "$DIR/summary.md" ] && tail -1 "$DIR/steps.tsv" | awk -F'\t' '{ printf "\nreport step: %s (%s s) %s\n", $2, $3, $4 }' >>"$DIR/summary.md"
log "done in $(($(date +%s) - T0))s; $([ "$FAILED" = 0 ] && echo 'every step ok' || echo 'some step failed'); see $DIR/summary.md"
exit "$FAILED"
