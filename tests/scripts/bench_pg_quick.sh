#!/bin/sh
# tier: full
# Runs `make bench-pg` small (bench/pg/run.sh --jobs 300 --probe 50) to prove
# the harness works end to end: Rebound with one and two nodes (each without
# and with prefetch; one node also with PUSHB 500, without and with
# prefetch; two nodes also forwarding to a leader), graphile-worker
# and pg-boss each finish lifecycle and retries on one PostgreSQL cluster with
# every job completed exactly once, and the table, the probe and the targets
# are printed with the CPU split per job; --repeat 2 runs the systems in two
# rounds, prints medians and judges the CPU targets on the rounds' ratios; the commit ceiling (pgbench, 1 s a step) prints its figures and
# is set beside the lifecycle target; bench/pg/floor.sh prints its two
# mixes' figures; and a job pushed twice fails the runs.
# Asserts no timings. The peers' npm packages are installed into
# bench/pg/node_modules on the first run.
# Environment: O (build dir, default build), REBOUND_TOP (checkout).
set -u
top=${REBOUND_TOP:-$(pwd)}
cd "$top" || exit 1
O=${O:-build}
export O
jobs=300
raw=$(mktemp "${TMPDIR:-/tmp}/bench-pg-quick.XXXXXX")
out=$(mktemp "${TMPDIR:-/tmp}/bench-pg-quick.XXXXXX")
trap 'rm -f "$raw" "$out" "$out.dup" "$out.floor" "$raw.rep" "$out.rep"' EXIT

if ! bench/pg/run.sh --jobs $jobs --probe 50 --ceiling-secs 1 --raw "$raw" >"$out" 2>&1; then
  cat "$out"
  echo "bench_pg_quick: bench/pg/run.sh failed"
  exit 1
fi

fail=0
v() { awk -v s="$1" -v m="$2" '$1 == s && $2 == m { print $3 }' "$raw"; }
for s in rebound-push rebound-pushb500 rebound-prefetch rebound-pushb500-prefetch rebound2-push rebound2-prefetch rebound2-fwd graphile-addJobs500 graphile-addJob pgboss-send; do
  for wl in lifecycle retries; do
    # Exactly once: every job completed, none twice, none left behind.
    for m in completed:$jobs duplicates:0 missing:0 left_in_db:0; do
      got=$(v "$s" "$wl.${m%%:*}")
      [ "$got" = "${m#*:}" ] || { echo "bench_pg_quick: $s $wl: ${m%%:*} is '$got', not ${m#*:}"; fail=1; }
    done
    for m in jobs_per_s pg_commits_per_job pg_wal_flushes_per_job cpu_pg_us_per_job cpu_clients_us_per_job; do
      r=$(v "$s" "$wl.$m")
      case "$r" in ''|*[!0-9.]*) echo "bench_pg_quick: $s $wl: no $m ('$r')"; fail=1 ;; esac
    done
  done
  # retries: the first attempt of every tenth job failed, once.
  f=$(v "$s" retries.fails)
  [ "$f" = $((jobs / 10)) ] || { echo "bench_pg_quick: $s: $f planned failures, not $((jobs / 10))"; fail=1; }
done
[ "$(v rebound2-probe latency.duplicates)" = 0 ] && [ "$(v rebound2-probe latency.missing)" = 0 ] ||
  { echo "bench_pg_quick: the probe did not complete its jobs exactly once"; fail=1; }
grep -q '^probe (push on node A, FETCH waiting on node B, 50 jobs): p50 [0-9.]* ms, p99 [0-9.]* ms' "$out" ||
  { echo "bench_pg_quick: no probe line"; fail=1; }
grep -q '^| Rebound, one node | PUSH one at a time | [0-9]' "$out" || { echo "bench_pg_quick: no table"; fail=1; }
grep -q '^| pg-boss | send + work(batch 100) | [0-9]' "$out" || { echo "bench_pg_quick: no pg-boss row"; fail=1; }
# The CPU split: Rebound's row has the nodes' share, a peer's has none.
grep -q '^| Rebound, two nodes | PUSH on A, workers on A and B | [0-9]* | [0-9]* | [0-9]* | -*[0-9]* | [0-9]* |' "$out" ||
  { echo "bench_pg_quick: no CPU row for two nodes"; fail=1; }
grep -q '^| pg-boss | send + work(batch 100) | [0-9]* | – | [0-9]* | -*[0-9]* | [0-9]* | – |' "$out" ||
  { echo "bench_pg_quick: no CPU row for pg-boss"; fail=1; }
[ "$(grep -c '^| graphile-worker | addJob | [0-9.]* | [0-9.]* | [0-9]* | [0-9.]* | [0-9.]* | [0-9]* |$' "$out")" = 1 ] ||
  { echo "bench_pg_quick: no PostgreSQL-per-job row for graphile-worker addJob"; fail=1; }
[ "$(v rebound2-fwd-probe latency.duplicates)" = 0 ] && [ "$(v rebound2-fwd-probe latency.missing)" = 0 ] ||
  { echo "bench_pg_quick: the forwarding probe did not complete its jobs exactly once"; fail=1; }
# six of issue 17; issue 29's nine: PUSH and PUSHB 500 (without and with
# prefetch) against graphile-worker, two nodes forwarding against one node
# (lifecycle and retries each) and the forwarding probe
[ "$(grep -c ' \(PASS\|MISS\)$' "$out")" = 15 ] || { echo "bench_pg_quick: not fifteen targets judged"; fail=1; }
grep -q '^two nodes forwarding: PostgreSQL CPU/job <= 1.1 x one node ([0-9]* vs [0-9]* µs), ratio [0-9.]* *\(PASS\|MISS\)$' "$out" ||
  { echo "bench_pg_quick: no two-node forwarding check"; fail=1; }
# --repeat: the rounds alternate the systems, the figures are medians, the
# CPU targets are judged on the median of the rounds' ratios.
if ! bench/pg/run.sh --jobs 100 --probe 20 --systems "rebound rebound2fwd" --repeat 2 --raw "$raw.rep" >"$out.rep" 2>&1; then
  cat "$out.rep"; echo "bench_pg_quick: bench/pg/run.sh --repeat 2 failed"; fail=1
fi
[ "$(grep -c '^bench-pg: round [12] of 2, load ' "$out.rep")" = 2 ] || { echo "bench_pg_quick: not two rounds"; fail=1; }
[ "$(grep -c '^  rebound2-fwd  *lifecycle .*duplicates=0.*missing=0' "$out.rep")" = 2 ] ||
  { echo "bench_pg_quick: two nodes forwarding did not run once a round"; fail=1; }
[ "$(awk '$1 == "rebound2-fwd" && $2 == "lifecycle.completed" { n++ } END { print n + 0 }' "$raw.rep")" = 1 ] ||
  { echo "bench_pg_quick: the repeated figures are not one median each"; fail=1; }
grep -q '^two nodes forwarding: PostgreSQL CPU/job <= 1.1 x one node ([0-9]* vs [0-9]* µs), median ratio [0-9.]* of rounds ([0-9.]* [0-9.]*) *\(PASS\|MISS\)$' "$out.rep" ||
  { cat "$out.rep"; echo "bench_pg_quick: the two-node check is not judged on the rounds"; fail=1; }
rm -f "$raw.rep" "$out.rep"
# --pin: PostgreSQL alone on the last core, the rest on the others; the
# runs complete as before (nothing is timed).
if [ "$(nproc)" -ge 2 ]; then
  if ! bench/pg/run.sh --jobs 100 --probe 20 --systems rebound2fwd --pin >"$out.rep" 2>&1; then
    cat "$out.rep"; echo "bench_pg_quick: bench/pg/run.sh --pin failed"; fail=1
  fi
  grep -q "^bench-pg: 100 jobs a run, .*; PostgreSQL pinned to core $(($(nproc) - 1)), the rest to the others$" "$out.rep" ||
    { cat "$out.rep"; echo "bench_pg_quick: --pin did not say where PostgreSQL runs"; fail=1; }
  [ "$(grep -c '^  rebound2-fwd  *\(lifecycle\|retries\) .*duplicates=0.*missing=0' "$out.rep")" = 2 ] ||
    { cat "$out.rep"; echo "bench_pg_quick: the pinned runs did not complete"; fail=1; }
  rm -f "$out.rep"
fi
# The ceiling: pgbench's figures in the raw results, its two lines, and the
# lifecycle target set against it.
for m in insert_c1.commit_ms insert_c1.commits_per_s insert_c1.pg_cpu_us_per_commit insert_c4.commit_ms insert_c12.commit_ms \
         select_c1.rtt_ms ceiling.pushes_per_s; do
  r=$(v ceiling "$m")
  case "$r" in ''|*[!0-9.]*) echo "bench_pg_quick: ceiling: no $m ('$r')"; fail=1 ;; esac
done
grep -q '^commits on this cluster (pgbench -M prepared, one-row INSERT per transaction, 1 s each): 1 client [0-9.]* ms ([0-9]*/s, [0-9.]* WAL flushes and [0-9]* µs of PostgreSQL CPU each), 4 clients [0-9.]* ms .*; other processes meanwhile -*[0-9.]*, -*[0-9.]*, -*[0-9.]*, -*[0-9.]* cores$' "$out" ||
  { echo "bench_pg_quick: no pgbench line"; fail=1; }
grep -q '^ceiling for 4 producers, each PUSH answered after a COMMIT: 4 x 1 / [0-9.]* ms = [0-9][0-9]* pushes/s$' "$out" ||
  { echo "bench_pg_quick: no ceiling line"; fail=1; }
grep -q '^  the target, 2 x [0-9.]* = [0-9]* jobs/s, vs the commit ceiling ([0-9]*) *\(ABOVE\|below\) ([0-9.]* x the ceiling)$' "$out" ||
  { echo "bench_pg_quick: the lifecycle target is not set against the ceiling"; fail=1; }
# The floor under the PUSHB target (bench/pg/floor.sh): one round prints
# both mixes' CPU per job and their medians.
if ! bench/pg/floor.sh --rounds 1 >"$out.floor" 2>&1; then
  cat "$out.floor"; echo "bench_pg_quick: bench/pg/floor.sh failed"; fail=1
else
  for mix in bare schema; do
    grep -q "^round 1  $mix *[1-9][0-9]* jobs *[1-9][0-9]* us per job$" "$out.floor" &&
      grep -q "^median  $mix *[1-9][0-9]* us per job ( [0-9]* )$" "$out.floor" ||
      { cat "$out.floor"; echo "bench_pg_quick: floor.sh printed no $mix figure"; fail=1; }
  done
fi
rm -f "$out.floor"
# The check itself: job 7 pushed twice (as if the queue ran it twice) must
# fail every run with one duplicate, for Rebound and for a peer.
if bench/pg/run.sh --jobs 100 --systems "rebound pgboss" --dup-seq 7 >"$out.dup" 2>&1; then
  echo "bench_pg_quick: a job pushed twice did not fail the run"; fail=1
fi
n=$(grep -c '^    \(lifecycle\|retries\)\.duplicates 1$' "$out.dup")
[ "$n" = 10 ] || { cat "$out.dup"; echo "bench_pg_quick: $n of 10 runs reported the duplicate"; fail=1; }
rm -f "$out.dup"
if [ $fail -ne 0 ]; then
  cat "$out"
  exit 1
fi
echo "bench_pg_quick: ok ($(wc -l <"$raw") figures, every run exactly once)"
