#!/bin/sh
# tier: full
# Runs `make bench`'s quick mode once (bench/run.sh --quick) to prove the
# benchmark still works end to end: every workload completes against every
# server and yields its figures. Asserts no timings.
# Environment: O (build dir, default build), REBOUND_TOP (checkout).
set -u
top=${REBOUND_TOP:-$(pwd)}
cd "$top" || exit 1
O=${O:-build}
export O
servers="rebound"
if command -v beanstalkd >/dev/null 2>&1; then
  servers="rebound bs-mem bs-binlog bs-fsync"
else
  echo "bench_quick: beanstalkd is not installed (scripts/deps.sh bench): Rebound only"
fi
raw=$(mktemp "${TMPDIR:-/tmp}/bench-quick.XXXXXX")
out=$(mktemp "${TMPDIR:-/tmp}/bench-quick.XXXXXX")
trap 'rm -f "$raw" "$out"' EXIT

if ! bench/run.sh --quick --servers "$servers" --raw "$raw" >"$out" 2>&1; then
  cat "$out"
  echo "bench_quick: bench/run.sh --quick failed"
  exit 1
fi

fail=0
# Each figure every workload must produce, per server (a number).
for s in $servers; do
  for m in lifecycle.jobs_per_s lifecycle.lat_p99_ms retries.jobs_per_s retries.fails \
           latency.lat_p50_ms sched.late_p99_ms sched.samples depth.jobs_per_s \
           footprint.rss_bytes_per_job footprint.disk_bytes_per_job; do
    v=$(awk -v s="$s" -v m="$m" '$1 == s && $2 == m { print $3 }' "$raw")
    case "$v" in
      ''|*[!0-9.-]*) echo "bench_quick: $s: no figure for $m ('$v')"; fail=1 ;;
    esac
  done
  # Every job was done: the retries run failed exactly 10% of first attempts.
  jobs=$(awk -v s="$s" '$1 == s && $2 == "retries.jobs" { print $3 }' "$raw")
  fails=$(awk -v s="$s" '$1 == s && $2 == "retries.fails" { print $3 }' "$raw")
  [ -n "$jobs" ] && [ "$fails" = "$((jobs / 10))" ] ||
    { echo "bench_quick: $s: $fails failures for $jobs jobs, not 10%"; fail=1; }
  # The scheduler run saw every job come due.
  n=$(awk -v s="$s" '$1 == s && $2 == "sched.jobs" { print $3 }' "$raw")
  k=$(awk -v s="$s" '$1 == s && $2 == "sched.samples" { print $3 }' "$raw")
  [ -n "$n" ] && [ "$n" = "$k" ] || { echo "bench_quick: $s: $k lateness samples for $n jobs"; fail=1; }
done
# Issue 30's rows: both fairness runs drained backlog and small tenant
# alike, and the 1,000-group lifecycle ran (Rebound only).
for m in fair_off.lat_p99_ms fair_on.lat_p99_ms fair_off.duplicates groups1000.jobs_per_s; do
  v=$(awk -v m="$m" '$1 == "rebound" && $2 == m { print $3 }' "$raw")
  case "$v" in
    ''|*[!0-9.-]*) echo "bench_quick: rebound: no figure for $m ('$v')"; fail=1 ;;
  esac
done
grep -q 'lifecycle with 1,000 groups' "$out" || { echo "bench_quick: no groups target"; fail=1; }
# The table, the targets and the micro-benchmarks were printed.
grep -q '^| lifecycle.jobs_per_s |' "$out" || { echo "bench_quick: no table"; fail=1; }
grep -q 'scheduler lateness p99' "$out" || { echo "bench_quick: no targets"; fail=1; }
grep -q '^micro.policy_decide_faktory_per_s [0-9]' "$out" || { echo "bench_quick: no micro figures"; fail=1; }
for m in fsync.t1.per_s fsync.t1.cpu_us_per_sync fsync.t4.wait_us; do
  grep -q "^$m [0-9]" "$out" || { echo "bench_quick: no $m (bench/fsync_probe)"; fail=1; }
done
# The CPU split of the lifecycle run: both programs' share per job.
for s in $servers; do
  for m in lifecycle.loadgen_cpu_us_per_job lifecycle.cores_busy; do
    v=$(awk -v s="$s" -v m="$m" '$1 == s && $2 == m { print $3 }' "$raw")
    case "$v" in
      ''|*[!0-9.]*) echo "bench_quick: $s: no figure for $m ('$v')"; fail=1 ;;
    esac
  done
done
# --repeat: the lifecycle and groups1000 rows twice, alternating, each
# pair's figures and the median ratio the target is judged on.
rep=$(mktemp "${TMPDIR:-/tmp}/bench-quick.XXXXXX")
if bench/run.sh --quick --servers rebound --jobs 300 --rows "lifecycle groups1000" --repeat 2 \
     >"$rep" 2>&1; then
  [ "$(grep -c '^| rebound | [12] | ' "$rep")" = 2 ] || { echo "bench_quick: --repeat 2: not two pairs"; fail=1; }
  grep -q '^rebound: groups1000 / lifecycle over 2 pairs: median [0-9]' "$rep" ||
    { echo "bench_quick: --repeat 2: no median"; fail=1; }
  grep -q 'lifecycle with 1,000 groups >= 0.8 x without (median of 2 pairs' "$rep" ||
    { echo "bench_quick: --repeat 2: the target not judged on the median"; fail=1; }
  [ $fail -eq 0 ] || cat "$rep"
else
  cat "$rep"; echo "bench_quick: bench/run.sh --repeat 2 failed"; fail=1
fi
rm -f "$rep"
if [ $fail -ne 0 ]; then
  cat "$out"
  exit 1
fi
echo "bench_quick: ok ($servers; $(wc -l <"$raw") figures)"
