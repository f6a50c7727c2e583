#!/usr/bin/env bash
# Runs each libFuzzer harness of test/fuzz for a set time and prints, per
# harness, the inputs run and the crashes found (a benchmark, not a test;
# docs/robustness.md).
#
#   test/fuzz/run-fuzzers.sh FUZZ_BUILD SEEDS WORK SECONDS [HARNESS...]
#
# FUZZ_BUILD: a -DUQ_FUZZ=ON build (`ninja -C FUZZ_BUILD uq-fuzzers`);
# SEEDS: the output of test/fuzz/collect-seeds.py; WORK: where the growing
# corpora (WORK/corpus-H) and the crashing inputs (WORK/crashes-H/) go;
# SECONDS: per harness; HARNESS: some of ir codeobject npy policy (default:
# all). Harnesses run one after the other, each in libFuzzer's fork mode
# (one job at a time) so that it goes on after a crash; a crash, an
# ASan/UBSan report, a timeout (-timeout, default 60 s per input) or an
# out-of-memory (-rss_limit_mb, default 4096) is saved under WORK/crashes-H/.
# Extra libFuzzer flags: UQ_FUZZ_FLAGS. The IR harness's GPU stage:
# UQ_FUZZ_GPU_STAGE (lanes by default).
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
build=$1 seeds=$2 work=$3 seconds=$4
shift 4
harnesses=${*:-ir codeobject npy policy}
mkdir -p "$work"
printf '%-11s %10s %8s %8s %9s %s\n' harness inputs crashes timeouts seconds \
  "crash inputs"
for h in $harnesses; do
  bin=$build/bin/uq-fuzz-$h
  [ -x "$bin" ] || { echo "no $bin (build with -DUQ_FUZZ=ON: ninja uq-fuzzers)" >&2; exit 1; }
  corpus=$work/corpus-$h crashes=$work/crashes-$h
  mkdir -p "$corpus" "$crashes"
  log=$work/fuzz-$h.log
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
    -artifact_prefix="$crashes/" ${UQ_FUZZ_FLAGS:-} \
    "$corpus" "$seeds/$h" > "$log" 2>&1 || true
  took=$(( $(date +%s) - start ))
  # Fork mode's status lines: "#RUNS: cov: ... oom/timeout/crash: O/T/C ...".
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)
  runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  found=$(find "$crashes" -type f -name 'crash-*' -o -type f -name 'leak-*' | wc -l)
  slow=$(find "$crashes" -type f -name 'timeout-*' -o -type f -name 'oom-*' | wc -l)
  printf '%-11s %10s %8s %8s %9s %s\n' "$h" "${runs:-0}" "$found" "$slow" \
    "$took" "$crashes"
done
