#!/bin/sh
# `make bench-pg`: Rebound's distributed mode beside the PostgreSQL job queues
# people run (issue 17), all on one throwaway PostgreSQL cluster (default
# settings: fsync and synchronous_commit on), each run in a fresh database of
# that cluster, the same job count, 4 producers and 8 workers:
#   rebound   one node: PUSH one at a time, and PUSHB 500 (build/bench/loadgen)
#   rebound2  two nodes on one database: producers on node A, workers split
#             over A and B; then the probe: one worker on B waiting in FETCH,
#             one producer on A at 50 jobs/s, push -> fetch p50/p99
#   graphile  graphile-worker: addJobs(500) and addJob (bench/pg/peer.js)
#   pgboss    pg-boss: send + work(batch 100) (bench/pg/peer.js)
# each in lifecycle (push, fetch, ack) and retries (10 % fail once, retried
# at once), every run checked exactly-once (each job completed once: no
# duplicate, none missing, none left in the database) or the run fails.
# Prints jobs/s and ratios, what PostgreSQL did per job (commits, WAL
# flushes and bytes, from its statistics), the probe, issue 17's targets.
# The npm packages (bench/pg/package-lock.json) are installed into
# bench/pg/node_modules the first time.
# Usage: O=build bench/pg/run.sh [--jobs N] [--probe N] [--systems "rebound rebound2 graphile pgboss"]
#        [--raw FILE]      (BENCH_PG_JOBS sets the default job count, 10000)
set -u
O=${O:-build}
here=$(cd "$(dirname "$0")" && pwd)
LG=$O/bench/loadgen
REBOUND=$O/rebound
jobs=${BENCH_PG_JOBS:-10000}
probe=200
systems="rebound rebound2 graphile pgboss"
raw=""
dup=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift ;;
    --probe) probe=$2; shift ;;
    --systems) systems=$2; shift ;;
    --raw) raw=$2; shift ;;
    --dup-seq) dup=$2; shift ;; # job N pushed twice: every run must fail
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench-pg: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
case "$jobs$probe$dup" in *[!0-9]*) echo "bench-pg: --jobs and --probe take numbers" >&2; exit 2 ;; esac

. "$here/../../scripts/pg_cluster.sh"
[ -x "$pg_cluster_bin/initdb" ] || { echo "bench-pg: PostgreSQL is not installed (scripts/deps.sh bench-pg)" >&2; exit 1; }
for bin in "$LG" "$REBOUND"; do
  [ -x "$bin" ] || { echo "bench-pg: $bin is missing; run 'make O=$O bench-bin all' first" >&2; exit 1; }
done
case " $systems " in *" graphile "*|*" pgboss "*)
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    { echo "bench-pg: node and npm are needed for the peers (scripts/deps.sh bench-pg)" >&2; exit 1; }
  # The pinned packages, installed once (again when the lock file changes).
  if [ ! -f "$here/node_modules/.package-lock.json" ] ||
     [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
    echo "bench-pg: npm ci in bench/pg" >&2
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2) ||
      { echo "bench-pg: npm ci failed" >&2; exit 1; }
  fi ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-bench-pg.XXXXXX")
[ "$(id -u)" = 0 ] && chmod 755 "$tmp"
mkdir "$tmp/c"
node_pids=""
stop_nodes() {
  for p in $node_pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  node_pids=""
}
cleanup() { stop_nodes; pg_cluster_stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
failures=0

pg_cluster_start "$tmp/c" "$tmp/pg.out" ||
  { echo "bench-pg: PostgreSQL did not start:" >&2; cat "$tmp/pg.out" >&2; exit 1; }
pgport=$_port
psqlc() { pg_cluster_as "$pg_cluster_bin/psql" -X -q -At -h "$tmp/c" -p "$pgport" -U rebound -d "$1" -c "$2"; }
pgversion=$(psqlc postgres "SHOW server_version" | cut -d' ' -f1)
ndb=0
# A fresh database of the cluster for the next run; sets db and url.
newdb() {
  ndb=$((ndb + 1)); db=bench$ndb
  psqlc postgres "CREATE DATABASE $db" >>"$tmp/pg.out" 2>&1 || return 1
  url="postgresql://rebound@/$db?host=$tmp/c&port=$pgport"
}

# Starts $1 Rebound nodes on the database url (after migrate); sets ports
# ("P1 P2") and node_pids, the first node's pid in lead.
start_nodes() {
  "$REBOUND" migrate --url "$url" >"$dir/server.log" 2>&1 || return 1
  ports=""; lead=""
  for k in $(seq 1 "$1"); do
    "$REBOUND" serve --listen 127.0.0.1:0 --http-listen off --db "$url" \
      --port-file "$dir/port$k" >>"$dir/server.log" 2>&1 &
    p=$!; node_pids="$node_pids $p"; lead=${lead:-$p}
    i=0
    while [ ! -s "$dir/port$k" ] && kill -0 "$p" 2>/dev/null && [ $i -lt 200 ]; do
      sleep 0.05; i=$((i + 1))
    done
    [ -s "$dir/port$k" ] || return 1
    ports="$ports $(cat "$dir/port$k")"
  done
}

# What PostgreSQL did for a run, from its statistics (every run has the
# cluster to itself): walsnap before, pgwork WORKLOAD after (all of the run's
# connections closed, so their counts are in), appended to $dir/out as
# commits, WAL flushes and WAL bytes per job (the run's database; WAL
# cluster-wide, so it includes a checkpoint's share when one falls in).
walsnap() { w0=$(psqlc postgres "SELECT wal_sync || ' ' || wal_bytes FROM pg_stat_wal" 2>/dev/null); }
pgwork() {
  w1=$(psqlc postgres "SELECT wal_sync || ' ' || wal_bytes FROM pg_stat_wal" 2>/dev/null)
  c=$(psqlc postgres "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'" 2>/dev/null)
  echo "$w0 $w1 $c" | awk -v wl="$1" -v n="$jobs" 'NF == 5 {
    printf "%s.pg_commits_per_job %.3f\n%s.pg_wal_flushes_per_job %.3f\n%s.pg_wal_bytes_per_job %.0f\n",
      wl, $5 / n, wl, ($3 - $1) / n, wl, ($4 - $2) / n }' >>"$dir/out"
}

# record NAME: appends NAME's figures ("NAME workload.metric value") to results.
record() { awk -v s="$1" 'NF == 2 { print s, $1, $2 }' "$dir/out" >>"$tmp/results"; }

# report NAME WORKLOAD RC: one progress line, or the failure and its logs.
report() {
  printf '  %-22s %-9s' "$1" "$2" >&2
  if [ "$3" = 0 ]; then
    awk '/\.(jobs_per_s|lat_p50_ms|lat_p99_ms|duplicates|missing|left_in_db) / { sub(/^[a-z]+\./, "", $1); printf " %s=%s", $1, $2 }' "$dir/out" >&2
    echo >&2
  else
    echo " FAILED" >&2
    sed 's/^/    /' "$dir/err" >&2
    awk '/\.(duplicates|missing|completed|left_in_db) / { printf "    %s %s\n", $1, $2 }' "$dir/out" >&2
    tail -5 "$dir/server.log" 2>/dev/null | sed 's/^/    server: /' >&2
    failures=$((failures + 1))
  fi
}

# rebound NAME NODES WORKLOAD loadgen-options...: one Rebound run on a fresh
# database; "@A" / "@AB" / "@B" in the options stand for node ports.
rebound() {
  name=$1; nodes=$2; wl=$3; shift 3
  dir="$tmp/$name-$wl"; rm -rf "$dir"; mkdir -p "$dir" # (a system listed twice runs twice)
  if ! newdb || ! start_nodes "$nodes"; then
    echo "bench-pg: $name: Rebound did not start:" >&2; cat "$dir/server.log" >&2
    stop_nodes; failures=$((failures + 1)); return 1
  fi
  a=$(echo $ports | awk '{ print $1 }'); b=$(echo $ports | awk '{ print $NF }')
  args=""
  for x in "$@"; do
    case "$x" in @A) x=$a ;; @B) x=$b ;; @AB) x=$a,$b ;; esac
    args="$args $x"
  done
  walsnap
  # shellcheck disable=SC2086
  "$LG" --proto faktory --workload "$wl" --jobs "$jobs" --server-pid "$lead" \
    --drain-ms 1000 --timeout 600 ${dup:+--dup-seq "$dup"} $args >"$dir/out" 2>"$dir/err"
  rc=$?
  # Exactly-once in the database too: every job ACKed is gone from rb_jobs.
  left=$(psqlc "$db" "SELECT count(*) FROM rb_jobs WHERE queue = 'bench'" 2>>"$dir/err")
  echo "$wl.left_in_db ${left:-unknown}" >>"$dir/out"
  [ "$rc" = 0 ] && [ "$left" != 0 ] && rc=1
  awk -v wl="$wl" '$1 == wl ".duplicates" && $2 != 0 { bad = 1 } $1 == wl ".missing" && $2 != 0 { bad = 1 }
                   END { exit bad }' "$dir/out" || rc=1
  stop_nodes
  pgwork "$wl"
  report "$name" "$wl" "$rc"
  [ "$rc" = 0 ] && record "$name"
}

# peer NAME SYSTEM WORKLOAD peer.js-options...: one peer run on a fresh database.
peer() {
  name=$1; sys=$2; wl=$3; shift 3
  dir="$tmp/$name-$wl"; rm -rf "$dir"; mkdir -p "$dir" # (a system listed twice runs twice)
  newdb || { echo "bench-pg: cannot create a database" >&2; failures=$((failures + 1)); return 1; }
  walsnap
  PGHOST="$tmp/c" PGPORT=$pgport PGUSER=rebound PGDATABASE=$db PEER_DUP_SEQ=$dup \
    node "$here/peer.js" --system "$sys" --workload "$wl" --jobs "$jobs" "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
  pgwork "$wl"
  report "$name" "$wl" "$rc"
  [ "$rc" = 0 ] && record "$name"
}

: >"$tmp/results"
start=$(date +%s)
echo "bench-pg: $(uname -srm), $(nproc) cores, PostgreSQL $pgversion, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "bench-pg: $jobs jobs a run, 4 producers, 8 workers; probe $probe jobs" >&2
for s in $systems; do
  case "$s" in
    rebound)
      rebound rebound-push 1 lifecycle --port @A
      rebound rebound-push 1 retries --port @A
      rebound rebound-pushb500 1 lifecycle --port @A --push-batch 500
      rebound rebound-pushb500 1 retries --port @A --push-batch 500 ;;
    rebound2)
      rebound rebound2-push 2 lifecycle --port @A --worker-port @AB
      rebound rebound2-push 2 retries --port @A --worker-port @AB
      rebound rebound2-probe 2 latency --port @A --worker-port @B --producers 1 --workers 1 \
        --rate 50 --jobs "$probe" ;;
    graphile)
      peer graphile-addJobs500 graphile lifecycle --batch 500
      peer graphile-addJobs500 graphile retries --batch 500
      peer graphile-addJob graphile lifecycle --batch 1
      peer graphile-addJob graphile retries --batch 1 ;;
    pgboss)
      peer pgboss-send pgboss lifecycle
      peer pgboss-send pgboss retries ;;
    *) echo "bench-pg: unknown system '$s'" >&2; failures=$((failures + 1)) ;;
  esac
done
[ -n "$raw" ] && cp "$tmp/results" "$raw"

# The table: one row per system and mode; ratios to graphile-worker's
# batched addJobs (lifecycle) and to each peer's retries figure.
echo
awk '
  { v[$1, $2] = $3 }
  function f(x) { return x == "" ? "–" : x }
  function r(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f", a / b) }
  function row(name, sys, mode,   l, t, d) {
    l = v[name, "lifecycle.jobs_per_s"]; t = v[name, "retries.jobs_per_s"]
    if (l == "" && t == "") return
    d = v[name, "lifecycle.duplicates"] + v[name, "retries.duplicates"] "/" v[name, "lifecycle.missing"] + v[name, "retries.missing"]
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sys, mode, f(l), r(l, gl), f(t),
      r(t, gt), r(t, g1t), r(t, bt), d
  }
  function pg(name, sys, mode) {
    if (v[name, "lifecycle.pg_commits_per_job"] == "" && v[name, "retries.pg_commits_per_job"] == "") return
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", sys, mode,
      f(v[name, "lifecycle.pg_commits_per_job"]), f(v[name, "lifecycle.pg_wal_flushes_per_job"]), f(v[name, "lifecycle.pg_wal_bytes_per_job"]),
      f(v[name, "retries.pg_commits_per_job"]), f(v[name, "retries.pg_wal_flushes_per_job"]), f(v[name, "retries.pg_wal_bytes_per_job"])
  }
  END {
    gl = v["graphile-addJobs500", "lifecycle.jobs_per_s"]; gt = v["graphile-addJobs500", "retries.jobs_per_s"]
    g1t = v["graphile-addJob", "retries.jobs_per_s"]; bt = v["pgboss-send", "retries.jobs_per_s"]
    print "| system | mode | lifecycle jobs/s | ÷ graphile addJobs | retries jobs/s | ÷ graphile addJobs | ÷ graphile addJob | ÷ pg-boss | duplicates/missing |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    row("rebound-push", "Rebound, one node", "PUSH one at a time")
    row("rebound-pushb500", "Rebound, one node", "PUSHB 500")
    row("rebound2-push", "Rebound, two nodes", "PUSH on A, workers on A and B")
    row("graphile-addJobs500", "graphile-worker", "addJobs(500)")
    row("graphile-addJob", "graphile-worker", "addJob")
    row("pgboss-send", "pg-boss", "send + work(batch 100)")
    print "\nWhat PostgreSQL did per job (its statistics; lifecycle, then retries):\n"
    print "| system | mode | commits/job | WAL flushes/job | WAL bytes/job | retries: commits/job | WAL flushes/job | WAL bytes/job |"
    print "|---|---|---:|---:|---:|---:|---:|---:|"
    pg("rebound-push", "Rebound, one node", "PUSH one at a time")
    pg("rebound-pushb500", "Rebound, one node", "PUSHB 500")
    pg("rebound2-push", "Rebound, two nodes", "PUSH on A, workers on A and B")
    pg("graphile-addJobs500", "graphile-worker", "addJobs(500)")
    pg("graphile-addJob", "graphile-worker", "addJob")
    pg("pgboss-send", "pg-boss", "send + work(batch 100)")
    if (v["rebound2-probe", "latency.lat_p50_ms"] != "")
      printf "\nprobe (push on node A, FETCH waiting on node B, %s jobs): p50 %s ms, p99 %s ms, max %s ms\n",
        v["rebound2-probe", "latency.jobs"], v["rebound2-probe", "latency.lat_p50_ms"],
        v["rebound2-probe", "latency.lat_p99_ms"], v["rebound2-probe", "latency.lat_max_ms"]
  }' "$tmp/results"

# Issue 17's targets, judged on this run.
val() { awk -v s="$1" -v m="$2" '$1 == s && $2 == m { print $3; exit }' "$tmp/results"; }
judge() { # expression over a b, a, b -> PASS/MISS, or "not measured"
  if [ -z "$2" ] || [ -z "$3" ]; then echo "not measured"; return; fi
  awk -v a="$2" -v b="$3" "BEGIN { print (($1) ? \"PASS\" : \"MISS\") }"
}
check() { printf '%-66s %s\n' "$1" "$2"; }
rl=$(val rebound-push lifecycle.jobs_per_s); rt=$(val rebound-push retries.jobs_per_s)
r2=$(val rebound2-push lifecycle.jobs_per_s); p99=$(val rebound2-probe latency.lat_p99_ms)
gl=$(val graphile-addJobs500 lifecycle.jobs_per_s); gt=$(val graphile-addJobs500 retries.jobs_per_s)
g1t=$(val graphile-addJob retries.jobs_per_s); bt=$(val pgboss-send retries.jobs_per_s)
echo
check "lifecycle (PUSH) >= 2 x graphile addJobs ($rl vs ${gl:-–})" "$(judge 'a >= 2 * b' "$rl" "$gl")"
check "retries >= 2 x graphile addJobs retries ($rt vs ${gt:-–})" "$(judge 'a >= 2 * b' "$rt" "$gt")"
check "retries >= 2 x graphile addJob retries ($rt vs ${g1t:-–})" "$(judge 'a >= 2 * b' "$rt" "$g1t")"
check "retries >= 2 x pg-boss retries ($rt vs ${bt:-–})" "$(judge 'a >= 2 * b' "$rt" "$bt")"
check "two nodes >= one node, lifecycle ($r2 vs ${rl:-–})" "$(judge 'a >= b' "$r2" "$rl")"
check "push on A -> FETCH on B p99 <= 10 ms (${p99:-–} ms)" "$(judge 'a <= 10' "$p99" 0)"
echo "bench-pg: done in $(( $(date +%s) - start )) s, $failures failure(s)" >&2
[ "$failures" -eq 0 ]
