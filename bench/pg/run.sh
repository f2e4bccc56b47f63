#!/bin/sh
# `make bench-pg`: Rebound's distributed mode beside the PostgreSQL job queues
# people run (issue 17), all on one throwaway PostgreSQL cluster (default
# settings: fsync and synchronous_commit on), each run in a fresh database of
# that cluster, the same job count, 4 producers and 8 workers:
#   rebound   one node: PUSH one at a time, PUSHB 500, and PUSH one at a time
#             and PUSHB 500 with [storage] prefetch = true (build/bench/loadgen)
#   pushb     one node: PUSHB 500 without and with prefetch alone (issue 29's
#             PUSHB target; beside graphile500)
#   rebound2  two nodes on one database: producers on node A, workers split
#             over A and B, without and with prefetch; then the probe: one
#             worker on B waiting in FETCH, one producer on A at 50 jobs/s,
#             push -> fetch p50/p99
#   rebound2fwd  the same two nodes with [storage] forward = true: node B
#             relays its clients to node A (the leader), so one node batches
#             every request (docs/distributed.md, "Forwarding to a leader");
#             lifecycle, retries and the probe (its FETCH relayed by B)
#   graphile  graphile-worker: addJobs(500) and addJob (bench/pg/peer.js);
#             graphile500: addJobs(500) alone (its best setup)
#   pgboss    pg-boss: send + work(batch 100) (bench/pg/peer.js)
#   ceiling   what the cluster can commit, for the lifecycle target: pgbench
#             (the server package's, -M prepared), one-row INSERT per
#             transaction, 1, 4 and 12 clients, and SELECT 1 with 1 client,
#             --ceiling-secs each (default 4): latency, commits/s, WAL
#             flushes and PostgreSQL CPU per commit. A
#             producer that waits for a COMMIT per PUSH pushes at most
#             1 / (1-client commit latency) per second, so 4 producers at most
#             4 / that latency, even with their inserts merged into one
#             commit and nothing else running: printed as the ceiling, and
#             beside the lifecycle target whether the target is above it
#             (with the CPU other processes took meanwhile: the machine is
#             shared). About 4 x --ceiling-secs + 1 s.
# The job systems each in lifecycle (push, fetch, ack) and retries (10 %
# fail once, retried at once), every run checked exactly-once (each job
# completed once: no duplicate, none missing, none left in the database) or
# the run fails. Prints jobs/s and ratios, what PostgreSQL did per job
# (commits, WAL flushes and bytes, from its statistics), CPU per job split
# into PostgreSQL's processes, the Rebound nodes, the clients (load
# generator or Node) and the rest of the machine (/proc; the whole run: a
# peer's Node start included; its schema is installed before, as Rebound's
# nodes are started and migrated before it), the probe, the ceiling, the
# targets. Every run starts on a clean cluster (the previous run's database
# dropped, a checkpoint written: newdb).
# The npm packages (bench/pg/package-lock.json) are installed into
# bench/pg/node_modules the first time.
# Usage: O=build bench/pg/run.sh [--jobs N] [--probe N] [--ceiling-secs N]
#        [--systems "rebound pushb rebound2 rebound2fwd graphile pgboss ceiling"]
#        [--repeat N] [--pin] [--raw FILE]
#        (BENCH_PG_JOBS sets the default job count, 10000; REBOUND=path runs
#        another rebound binary). --repeat N runs every system N times in
#        rounds (each round the whole list, so the systems alternate); the
#        tables show each figure's median over the rounds, and the database
#        CPU targets, ratios of two systems, are judged on the median of the
#        rounds' own ratios (printed round by round): on a shared machine one
#        run's CPU per job moves by a third between runs of the same build.
#        --pin: PostgreSQL on the last core alone, everything else (nodes,
#        load generator, Node) on the others, as a database host of its own
#        would be: its CPU per job then counts its own work, not what the
#        other processes' scheduling and interrupts cost it on shared cores.
set -u
O=${O:-build}
here=$(cd "$(dirname "$0")" && pwd)
LG=$O/bench/loadgen
REBOUND=${REBOUND:-$O/rebound} # REBOUND=path: another build
jobs=${BENCH_PG_JOBS:-10000}
probe=200
csecs=4
systems="rebound rebound2 rebound2fwd graphile pgboss ceiling"
repeat=1
pin=""
raw=""
dup=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift ;;
    --probe) probe=$2; shift ;;
    --ceiling-secs) csecs=$2; shift ;;
    --systems) systems=$2; shift ;;
    --raw) raw=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --pin) pin=1 ;;
    --dup-seq) dup=$2; shift ;; # job N pushed twice: every run must fail
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "bench-pg: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
case "$jobs$probe$dup$csecs$repeat" in *[!0-9]*)
  echo "bench-pg: --jobs, --probe, --repeat and --ceiling-secs take numbers" >&2; exit 2 ;; esac
[ "$repeat" -ge 1 ] || { echo "bench-pg: --repeat takes 1 or more" >&2; exit 2; }
[ "$csecs" -ge 1 ] || { echo "bench-pg: --ceiling-secs takes 1 or more" >&2; exit 2; }

. "$here/../../scripts/pg_cluster.sh"
[ -x "$pg_cluster_bin/initdb" ] || { echo "bench-pg: PostgreSQL is not installed (scripts/deps.sh bench-pg)" >&2; exit 1; }
case " $systems " in *" rebound "*|*" rebound2 "*)
  for bin in "$LG" "$REBOUND"; do
    [ -x "$bin" ] || { echo "bench-pg: $bin is missing; run 'make O=$O bench-bin all' first" >&2; exit 1; }
  done ;;
esac
case " $systems " in *" ceiling "*)
  # pgbench comes with the server (Debian's postgresql-NN, as initdb).
  [ -x "$pg_cluster_bin/pgbench" ] ||
    { echo "bench-pg: $pg_cluster_bin/pgbench is missing (scripts/deps.sh bench-pg)" >&2; exit 1; } ;;
esac
case " $systems " in *" graphile "*|*" graphile500 "*|*" pgboss "*)
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
# --pin: the cluster's processes (and the backends the postmaster forks
# later, which inherit it) on the last core; the rest on the others.
others=""
if [ -n "$pin" ]; then
  ncpu=$(nproc)
  [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null 2>&1 ||
    { echo "bench-pg: --pin needs taskset and 2 or more cores" >&2; exit 2; }
  pm=$(head -1 "$tmp/c/pg/postmaster.pid")
  kids=$(cat /proc/[0-9]*/stat 2>/dev/null |
    awk -v pm="$pm" '{ pid = $1; st = $0; sub(/^.*\) /, "", st); split(st, f, " "); if (f[2] == pm) print pid }')
  for p in $pm $kids; do taskset -pc $((ncpu - 1)) "$p" >/dev/null || exit 1; done
  others="taskset -c 0-$((ncpu - 2))"
fi
psqlc() { pg_cluster_as "$pg_cluster_bin/psql" -X -q -At -h "$tmp/c" -p "$pgport" -U rebound -d "$1" -c "$2"; }
pgversion=$(psqlc postgres "SHOW server_version" | cut -d' ' -f1)
ndb=0
# A fresh database of the cluster for the next run; sets db and url. The
# previous run's database is dropped first and a checkpoint written, so
# that no run pays for another's leftovers (autovacuum visiting an old
# database's dead rows, a checkpoint of its dirty pages): each starts on a
# clean cluster, with none of that inside its CPU figures.
newdb() {
  if [ "$ndb" -gt 0 ]; then
    psqlc postgres "DROP DATABASE IF EXISTS bench$ndb WITH (FORCE)" >>"$tmp/pg.out" 2>&1
    psqlc postgres "CHECKPOINT" >>"$tmp/pg.out" 2>&1
  fi
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
    $others "$REBOUND" serve ${nodecfg:+--config "$nodecfg"} --listen 127.0.0.1:0 --http-listen off --db "$url" \
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

# The run's CPU split: cpusnap prints the machine's busy clock ticks
# (/proc/stat), PostgreSQL's (the postmaster, its live processes and those
# it has reaped) and the Rebound nodes' (node_pids); cpu0 before a run, cpu1
# after it, the clients' own (load generator or Node) from `times` in the
# subshell that ran them ($dir/times). cpusplit WORKLOAD NODES (1 for a
# Rebound run, "" for a peer's) appends per job:
# PostgreSQL, Rebound nodes, clients, and the rest of the machine (the
# harness's psql calls and anything else running: other users' load).
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
cpusnap() {
  pm=$(head -1 "$tmp/c/pg/postmaster.pid" 2>/dev/null)
  { head -1 /proc/stat; echo "nodes $node_pids"; cat /proc/[0-9]*/stat 2>/dev/null; } | awk -v pm="$pm" '
    NR == 1 { busy = $2 + $3 + $4 + $7 + $8 + $9; next }
    NR == 2 { for (i = 2; i <= NF; i++) node[$i] = 1; next }
    { pid = $1; st = $0; sub(/^.*\) /, "", st); split(st, f, " ")
      if (pid == pm) pg += f[12] + f[13] + f[14] + f[15]
      else if (f[2] == pm) pg += f[12] + f[13]
      if (pid in node) nd += f[12] + f[13] }
    END { print busy, pg + 0, nd + 0 }'
}
cpusplit() {
  times=$(awk 'NR == 2 { split($1 " " $2, t, /[ms]/); print t[1] * 60 + t[2] + t[3] * 60 + t[4] }' "$dir/times" 2>/dev/null)
  echo "$cpu0 $cpu1 ${times:-}" | awk -v wl="$1" -v nodes="$2" -v n="$jobs" -v hz="$hz" 'NF == 7 {
    u = 1e6 / hz / n; pg = ($5 - $2) * u; nd = ($6 - $3) * u; cl = $7 * 1e6 / n
    printf "%s.cpu_pg_us_per_job %.0f\n", wl, pg
    if (nodes) printf "%s.cpu_nodes_us_per_job %.0f\n", wl, nd
    printf "%s.cpu_clients_us_per_job %.0f\n%s.cpu_rest_us_per_job %.0f\n", wl, cl, wl, ($4 - $1) * u - pg - nd - cl }' >>"$dir/out"
}

# record NAME: appends NAME's figures ("NAME workload.metric value") to the
# round's results.
record() { awk -v s="$1" 'NF == 2 { print s, $1, $2 }' "$dir/out" >>"$tmp/results.$round"; }
# allrounds: every round's figures, each line led by its round's number.
allrounds() { for r in $(seq 1 "$repeat"); do awk -v r="$r" '{ print r, $0 }' "$tmp/results.$r"; done; }
# val NAME METRIC [FILE]: one figure from FILE (default: the medians).
val() { awk -v s="$1" -v m="$2" '$1 == s && $2 == m { print $3; exit }' "${3:-$tmp/results}"; }

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
  case "$name" in # the nodes' [storage] prefetch (docs/distributed.md)
    *-prefetch) nodecfg=$tmp/prefetch.toml; printf '[storage]\nprefetch = true\n' >"$nodecfg" ;;
    *-fwd|*-fwd-probe) nodecfg=$tmp/forward.toml; printf '[storage]\nforward = true\n' >"$nodecfg" ;;
    *) nodecfg="" ;;
  esac
  if ! newdb || ! start_nodes "$nodes"; then
    echo "bench-pg: $name: Rebound did not start:" >&2; cat "$dir/server.log" >&2
    stop_nodes; failures=$((failures + 1)); return 1
  fi
  a=$(echo $ports | awk '{ print $1 }'); b=$(echo $ports | awk '{ print $NF }')
  case "$name" in *-fwd|*-fwd-probe) # node 2 relays once it has read node 1's lease
    i=0
    while ! grep -q "at 127.0.0.1:$a leads the cluster" "$dir/server.log" && [ $i -lt 200 ]; do
      sleep 0.05; i=$((i + 1))
    done
    grep -q "at 127.0.0.1:$a leads the cluster" "$dir/server.log" ||
      echo "bench-pg: $name: node B never saw node A lead (runs unforwarded)" >&2 ;;
  esac
  args=""
  for x in "$@"; do
    case "$x" in @A) x=$a ;; @B) x=$b ;; @AB) x=$a,$b ;; esac
    args="$args $x"
  done
  walsnap; cpu0=$(cpusnap)
  # shellcheck disable=SC2086
  ($others "$LG" --proto faktory --workload "$wl" --jobs "$jobs" --server-pid "$lead" \
    --drain-ms 1000 --timeout 600 ${dup:+--dup-seq "$dup"} $args >"$dir/out" 2>"$dir/err"
   st=$?; times >"$dir/times"; exit $st)
  rc=$?
  cpu1=$(cpusnap)
  # Exactly-once in the database too: every job ACKed is gone from rb_jobs.
  left=$(psqlc "$db" "SELECT count(*) FROM rb_jobs WHERE queue = 'bench'" 2>>"$dir/err")
  echo "$wl.left_in_db ${left:-unknown}" >>"$dir/out"
  [ "$rc" = 0 ] && [ "$left" != 0 ] && rc=1
  awk -v wl="$wl" '$1 == wl ".duplicates" && $2 != 0 { bad = 1 } $1 == wl ".missing" && $2 != 0 { bad = 1 }
                   END { exit bad }' "$dir/out" || rc=1
  stop_nodes
  pgwork "$wl"
  cpusplit "$wl" 1
  report "$name" "$wl" "$rc"
  [ "$rc" = 0 ] && record "$name"
}

# peer NAME SYSTEM WORKLOAD peer.js-options...: one peer run on a fresh database.
peer() {
  name=$1; sys=$2; wl=$3; shift 3
  dir="$tmp/$name-$wl"; rm -rf "$dir"; mkdir -p "$dir" # (a system listed twice runs twice)
  newdb || { echo "bench-pg: cannot create a database" >&2; failures=$((failures + 1)); return 1; }
  # its schema first, outside the measured window (as Rebound's migrate)
  if ! PGHOST="$tmp/c" PGPORT=$pgport PGUSER=rebound PGDATABASE=$db \
      $others node "$here/peer.js" --system "$sys" --workload "$wl" --jobs "$jobs" --role setup >"$dir/err" 2>&1; then
    echo "bench-pg: $name: its schema could not be installed:" >&2; cat "$dir/err" >&2
    failures=$((failures + 1)); return 1
  fi
  walsnap; cpu0=$(cpusnap)
  (PGHOST="$tmp/c" PGPORT=$pgport PGUSER=rebound PGDATABASE=$db PEER_DUP_SEQ=$dup \
    $others node "$here/peer.js" --system "$sys" --workload "$wl" --jobs "$jobs" "$@" >"$dir/out" 2>"$dir/err"
   st=$?; times >"$dir/times"; exit $st)
  rc=$?
  cpu1=$(cpusnap)
  pgwork "$wl"
  cpusplit "$wl" ""
  report "$name" "$wl" "$rc"
  [ "$rc" = 0 ] && record "$name"
}

# ceiling: pgbench on a fresh database, one-row INSERT per transaction
# (autocommit: one round trip and one commit each) with 1, 4 and 12
# clients, then SELECT 1 with 1 client (the round trip alone), $csecs s each;
# beside each, the CPU the machine's other processes took meanwhile (cores).
ceiling() {
  dir="$tmp/ceiling"; rm -rf "$dir"; mkdir -p "$dir"; : >"$dir/out"; : >"$dir/err"
  rc=0
  if newdb && psqlc "$db" "CREATE TABLE ceiling (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                                                 payload text NOT NULL)" >>"$dir/err" 2>&1; then
    echo "INSERT INTO ceiling (payload) VALUES ('x');" >"$dir/insert.sql"
    echo "SELECT 1;" >"$dir/select.sql"
    for run in insert:1 insert:4 insert:12 select:1; do
      sql=${run%%:*}; c=${run#*:}; th=$c; [ "$th" -gt 2 ] && th=2
      walsnap; cpu0=$(cpusnap); : >"$dir/times"
      (pg_cluster_as "$pg_cluster_bin/pgbench" -n -M prepared -f "$dir/$sql.sql" -c "$c" -j "$th" \
        -T "$csecs" -h "$tmp/c" -p "$pgport" -U rebound "$db" >"$dir/pgbench" 2>>"$dir/err"
       st=$?; times >"$dir/times"; exit $st) || { rc=1; break; }
      cpu1=$(cpusnap)
      w1=$(psqlc postgres "SELECT wal_sync FROM pg_stat_wal" 2>/dev/null)
      # The other processes' CPU meanwhile (not PostgreSQL's, not pgbench's), in cores.
      others=$(echo "$cpu0 $cpu1 $(awk 'NR == 2 { split($1 " " $2, t, /[ms]/); print t[1] * 60 + t[2] + t[3] * 60 + t[4] }' "$dir/times")" |
        awk -v hz="$hz" -v s="$csecs" 'NF == 7 { printf "%.2f", (($4 - $1) - ($5 - $2)) / hz / s - $7 / s }')
      # "latency average = 0.289 ms", "tps = 3454.1 (...)", "... processed: N"
      awk -v k="${sql}_c$c" -v w="${w0%% *} $w1" -v o="$others" -v hz="$hz" \
          -v pgt="$(echo "$cpu0 $cpu1" | awk 'NF == 6 { print $5 - $2 }')" '
        /^latency average = / { lat = $4 } /^tps = / { tps = $3 }
        /^number of transactions actually processed: / { n = $6 }
        END {
          if (lat == "" || tps == "") exit 1
          if (o != "") printf "%s.others_cores %s\n", k, o
          split(w, f, " ")
          if (k ~ /^select/) { printf "%s.rtt_ms %.3f\n", k, lat; exit }
          printf "%s.commit_ms %.3f\n%s.commits_per_s %.0f\n", k, lat, k, tps
          if (n > 0 && f[2] != "") printf "%s.wal_flushes_per_commit %.2f\n", k, (f[2] - f[1]) / n
          if (n > 0 && pgt != "") printf "%s.pg_cpu_us_per_commit %.0f\n", k, pgt * 1e6 / hz / n
          if (k == "insert_c1") printf "ceiling.pushes_per_s %.0f\n", 4 * 1000 / lat
        }' "$dir/pgbench" >>"$dir/out" || { cat "$dir/pgbench" >>"$dir/err"; rc=1; break; }
    done
  else
    rc=1
  fi
  printf '  %-22s %-9s' ceiling commits >&2
  if [ "$rc" = 0 ]; then
    awk '/^insert_c[0-9]+\.commit_ms |^select_c1\.rtt_ms |^ceiling\./ { printf " %s=%s", $1, $2 }' "$dir/out" >&2
    echo >&2
    record ceiling
  else
    echo " FAILED" >&2; sed 's/^/    /' "$dir/err" >&2
    failures=$((failures + 1))
  fi
}

: >"$tmp/results"
start=$(date +%s)
echo "bench-pg: $(uname -srm), $(nproc) cores, PostgreSQL $pgversion, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "bench-pg: $jobs jobs a run, 4 producers, 8 workers; probe $probe jobs${pin:+; PostgreSQL pinned to core $((ncpu - 1)), the rest to the others}" >&2
round=0
while [ "$round" -lt "$repeat" ]; do
round=$((round + 1)); : >"$tmp/results.$round"
[ "$repeat" -gt 1 ] && echo "bench-pg: round $round of $repeat, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for s in $systems; do
  case "$s" in
    rebound)
      rebound rebound-push 1 lifecycle --port @A
      rebound rebound-push 1 retries --port @A
      rebound rebound-pushb500 1 lifecycle --port @A --push-batch 500
      rebound rebound-pushb500 1 retries --port @A --push-batch 500
      rebound rebound-prefetch 1 lifecycle --port @A
      rebound rebound-prefetch 1 retries --port @A
      rebound rebound-pushb500-prefetch 1 lifecycle --port @A --push-batch 500
      rebound rebound-pushb500-prefetch 1 retries --port @A --push-batch 500 ;;
    pushb)
      rebound rebound-pushb500 1 lifecycle --port @A --push-batch 500
      rebound rebound-pushb500 1 retries --port @A --push-batch 500
      rebound rebound-pushb500-prefetch 1 lifecycle --port @A --push-batch 500
      rebound rebound-pushb500-prefetch 1 retries --port @A --push-batch 500 ;;
    rebound2)
      rebound rebound2-push 2 lifecycle --port @A --worker-port @AB
      rebound rebound2-push 2 retries --port @A --worker-port @AB
      rebound rebound2-prefetch 2 lifecycle --port @A --worker-port @AB
      rebound rebound2-prefetch 2 retries --port @A --worker-port @AB
      rebound rebound2-probe 2 latency --port @A --worker-port @B --producers 1 --workers 1 \
        --rate 50 --jobs "$probe" ;;
    rebound2fwd)
      rebound rebound2-fwd 2 lifecycle --port @A --worker-port @AB
      rebound rebound2-fwd 2 retries --port @A --worker-port @AB
      rebound rebound2-fwd-probe 2 latency --port @A --worker-port @B --producers 1 --workers 1 \
        --rate 50 --jobs "$probe" ;;
    graphile|graphile500)
      peer graphile-addJobs500 graphile lifecycle --batch 500
      peer graphile-addJobs500 graphile retries --batch 500
      [ "$s" = graphile500 ] && continue # its best setup only
      peer graphile-addJob graphile lifecycle --batch 1
      peer graphile-addJob graphile retries --batch 1 ;;
    pgboss)
      peer pgboss-send pgboss lifecycle
      peer pgboss-send pgboss retries ;;
    ceiling) ceiling ;;
    *) echo "bench-pg: unknown system '$s'" >&2; failures=$((failures + 1)) ;;
  esac
done
done
# Each figure's median over the rounds (the only value with one round; a
# run that failed in a round is left out of it).
allrounds |
  awk '{ k = $2 " " $3; if (!(k in n)) order[++nk] = k; v[k, ++n[k]] = $4 }
       END {
         for (i = 1; i <= nk; i++) {
           k = order[i]; m = n[k]
           if (v[k, 1] !~ /^-?[0-9.]+$/) { print k, v[k, 1]; continue }
           for (a = 1; a <= m; a++) x[a] = v[k, a] + 0
           for (a = 2; a <= m; a++) for (b = a; b > 1 && x[b - 1] > x[b]; b--) { t = x[b]; x[b] = x[b - 1]; x[b - 1] = t }
           med = m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
           print k, (med == int(med) ? sprintf("%d", med) : sprintf("%.3f", med))
         }
       }' >"$tmp/results"
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
  function ceil(name, sys, mode,   l, t) {
    l = v[name, "lifecycle.cpu_pg_us_per_job"]; t = v[name, "retries.cpu_pg_us_per_job"]
    if (l == "" && t == "") return
    printf "cluster ceiling: %s, %s: %s jobs/s per PostgreSQL core (lifecycle), %s (retries)\n", sys, mode,
      (l + 0 > 0 ? sprintf("%.0f", 1e6 / l) : "–"), (t + 0 > 0 ? sprintf("%.0f", 1e6 / t) : "–")
  }
  function cpu(name, sys, mode,   i, w, m, line) {
    if (v[name, "lifecycle.cpu_pg_us_per_job"] == "" && v[name, "retries.cpu_pg_us_per_job"] == "") return
    split("pg nodes clients rest", m, " "); line = "| " sys " | " mode " |"
    for (w = 0; w < 2; w++)
      for (i = 1; i <= 4; i++)
        line = line " " f(v[name, (w ? "retries" : "lifecycle") ".cpu_" m[i] "_us_per_job"]) " |"
    print line
  }
  END {
    # the rows, in order: run name, system, mode
    ns = split("rebound-push|rebound-pushb500|rebound2-push|rebound2-fwd|rebound-prefetch|rebound-pushb500-prefetch|" \
               "rebound2-prefetch|graphile-addJobs500|graphile-addJob|pgboss-send", id, "|")
    split("Rebound, one node|Rebound, one node|Rebound, two nodes|Rebound, two nodes, forwarding|" \
          "Rebound, one node, prefetch|Rebound, one node, prefetch|" \
          "Rebound, two nodes, prefetch|graphile-worker|graphile-worker|pg-boss", sys, "|")
    split("PUSH one at a time|PUSHB 500|PUSH on A, workers on A and B|PUSH on A, workers on A and B (B relays to A)|" \
          "PUSH one at a time|PUSHB 500|" \
          "PUSH on A, workers on A and B|addJobs(500)|addJob|send + work(batch 100)", mode, "|")
    gl = v["graphile-addJobs500", "lifecycle.jobs_per_s"]; gt = v["graphile-addJobs500", "retries.jobs_per_s"]
    g1t = v["graphile-addJob", "retries.jobs_per_s"]; bt = v["pgboss-send", "retries.jobs_per_s"]
    print "| system | mode | lifecycle jobs/s | ÷ graphile addJobs | retries jobs/s | ÷ graphile addJobs | ÷ graphile addJob | ÷ pg-boss | duplicates/missing |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= ns; i++) row(id[i], sys[i], mode[i])
    print "\nWhat PostgreSQL did per job (its statistics; lifecycle, then retries):\n"
    print "| system | mode | commits/job | WAL flushes/job | WAL bytes/job | retries: commits/job | WAL flushes/job | WAL bytes/job |"
    print "|---|---|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= ns; i++) pg(id[i], sys[i], mode[i])
    print "\nCPU per job, µs (PostgreSQL, the Rebound nodes, the clients: load generator or Node, the rest of the machine; lifecycle, then retries):\n"
    print "| system | mode | PostgreSQL | Rebound | clients | rest | retries: PostgreSQL | Rebound | clients | rest |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= ns; i++) cpu(id[i], sys[i], mode[i])
    print "\nCluster ceiling: jobs per second per PostgreSQL core (1 s ÷ PostgreSQL CPU per job above; a database host of C cores serves C times this, however many nodes stand in front of it):\n"
    for (i = 1; i <= ns; i++) ceil(id[i], sys[i], mode[i])
    # two nodes against one node: the database CPU per job (issue 29:
    # "second node neutral": <= 1.1)
    one_l = v["rebound-push", "lifecycle.cpu_pg_us_per_job"]; one_t = v["rebound-push", "retries.cpu_pg_us_per_job"]
    split("rebound2-push|rebound2-fwd", two, "|"); split("two nodes|two nodes, forwarding", twon, "|")
    for (i = 1; i <= 2; i++)
      if (v[two[i], "lifecycle.cpu_pg_us_per_job"] != "" || v[two[i], "retries.cpu_pg_us_per_job"] != "")
        printf "%sPostgreSQL CPU per job, %s ÷ one node (PUSH one at a time): %s (lifecycle), %s (retries)\n",
          (i == 1 ? "\n" : ""), twon[i], r(v[two[i], "lifecycle.cpu_pg_us_per_job"], one_l),
          r(v[two[i], "retries.cpu_pg_us_per_job"], one_t)
    # one node against graphile-worker addJobs(500) (issue 29: PUSH <= 1.0,
    # PUSHB 500 <= 0.5), PUSHB 500 without and with prefetch
    gpl = v["graphile-addJobs500", "lifecycle.cpu_pg_us_per_job"]; gpt = v["graphile-addJobs500", "retries.cpu_pg_us_per_job"]
    split("rebound-push|rebound-pushb500|rebound-pushb500-prefetch", one, "|")
    split("one node PUSH one at a time|one node PUSHB 500|one node PUSHB 500, prefetch", onen, "|")
    for (i = 1; i <= 3 && (gpl != "" || gpt != ""); i++)
      if (v[one[i], "lifecycle.cpu_pg_us_per_job"] != "" || v[one[i], "retries.cpu_pg_us_per_job"] != "")
        printf "%sPostgreSQL CPU per job, %s ÷ graphile-worker addJobs(500): %s (lifecycle), %s (retries)\n",
          (nl++ ? "" : "\n"), onen[i],
          r(v[one[i], "lifecycle.cpu_pg_us_per_job"], gpl), r(v[one[i], "retries.cpu_pg_us_per_job"], gpt)
    if (v["rebound2-probe", "latency.lat_p50_ms"] != "")
      printf "\nprobe (push on node A, FETCH waiting on node B, %s jobs): p50 %s ms, p99 %s ms, max %s ms\n",
        v["rebound2-probe", "latency.jobs"], v["rebound2-probe", "latency.lat_p50_ms"],
        v["rebound2-probe", "latency.lat_p99_ms"], v["rebound2-probe", "latency.lat_max_ms"]
    if (v["rebound2-fwd-probe", "latency.lat_p50_ms"] != "")
      printf "probe, forwarding (push on node A, the leader; FETCH waiting on node B, relayed to A, %s jobs): p50 %s ms, p99 %s ms, max %s ms\n",
        v["rebound2-fwd-probe", "latency.jobs"], v["rebound2-fwd-probe", "latency.lat_p50_ms"],
        v["rebound2-fwd-probe", "latency.lat_p99_ms"], v["rebound2-fwd-probe", "latency.lat_max_ms"]
    if (v["ceiling", "ceiling.pushes_per_s"] != "") {
      printf "\ncommits on this cluster (pgbench -M prepared, one-row INSERT per transaction, %s s each):", secs
      printf " 1 client %s ms (%s/s, %s WAL flushes and %s µs of PostgreSQL CPU each), 4 clients %s ms (%s/s, %s, %s µs), 12 clients %s ms (%s/s, %s, %s µs); SELECT 1, 1 client: %s ms; other processes meanwhile %s, %s, %s, %s cores\n",
        v["ceiling", "insert_c1.commit_ms"], v["ceiling", "insert_c1.commits_per_s"], f(v["ceiling", "insert_c1.wal_flushes_per_commit"]),
        f(v["ceiling", "insert_c1.pg_cpu_us_per_commit"]),
        v["ceiling", "insert_c4.commit_ms"], v["ceiling", "insert_c4.commits_per_s"], f(v["ceiling", "insert_c4.wal_flushes_per_commit"]),
        f(v["ceiling", "insert_c4.pg_cpu_us_per_commit"]),
        v["ceiling", "insert_c12.commit_ms"], v["ceiling", "insert_c12.commits_per_s"], f(v["ceiling", "insert_c12.wal_flushes_per_commit"]),
        f(v["ceiling", "insert_c12.pg_cpu_us_per_commit"]),
        v["ceiling", "select_c1.rtt_ms"], f(v["ceiling", "insert_c1.others_cores"]), f(v["ceiling", "insert_c4.others_cores"]),
        f(v["ceiling", "insert_c12.others_cores"]), f(v["ceiling", "select_c1.others_cores"])
      printf "ceiling for 4 producers, each PUSH answered after a COMMIT: 4 x 1 / %s ms = %s pushes/s\n",
        v["ceiling", "insert_c1.commit_ms"], v["ceiling", "ceiling.pushes_per_s"]
    }
  }' secs="$csecs" "$tmp/results"

# With rounds: each round's PostgreSQL CPU per job, system by system (the
# medians above come from these).
if [ "$repeat" -gt 1 ]; then
  printf '\nPostgreSQL CPU µs per job by round (lifecycle / retries):\n\n'
  allrounds |
    awk -v n="$repeat" '$3 ~ /^(lifecycle|retries)\.cpu_pg_us_per_job$/ { split($3, w, "."); if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 }
                         v[$2, $1, w[1]] = $4 }
      END {
        printf "| system |"; for (r = 1; r <= n; r++) printf " round %d |", r; print ""
        printf "|---|"; for (r = 1; r <= n; r++) printf "---:|"; print ""
        for (i = 1; i <= k; i++) {
          printf "| %s |", order[i]
          for (r = 1; r <= n; r++) printf " %s / %s |", (v[order[i], r, "lifecycle"] == "" ? "–" : v[order[i], r, "lifecycle"]),
                                                        (v[order[i], r, "retries"] == "" ? "–" : v[order[i], r, "retries"])
          print ""
        }
      }'
fi

# Issue 17's targets, judged on this run.
# rounds A B METRIC: each round's ratio A / B of METRIC ("r1 r2 ..."), then
# their median: "median|r1 r2 ..." (empty when no round measured both).
rounds() {
  for r in $(seq 1 "$repeat"); do
    a=$(val "$1" "$3" "$tmp/results.$r"); b=$(val "$2" "$3" "$tmp/results.$r")
    [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { if (b + 0 > 0) printf "%.3f\n", a / b }'
  done | sort -n | awk '{ x[++n] = $1; s = s (n > 1 ? " " : "") sprintf("%.2f", $1) }
    END { if (n) printf "%.3f|%s\n", n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2, s }'
}
# cpucheck TEXT A B METRIC LIMIT: the check that A's PostgreSQL CPU per job
# is at most LIMIT x B's, judged on the median of the rounds' ratios.
cpucheck() {
  rr=$(rounds "$2" "$3" "$4")
  if [ -z "$rr" ]; then check "$1" "not measured"; return; fi
  med=${rr%%|*}
  if [ "$repeat" -gt 1 ]; then
    check "$1, median ratio $(printf '%.2f' "$med") of rounds (${rr#*|})" "$(judge "a <= $5" "$med" 1)"
  else
    check "$1, ratio $(printf '%.2f' "$med")" "$(judge "a <= $5" "$med" 1)"
  fi
}
judge() { # expression over a b, a, b -> PASS/MISS, or "not measured"
  if [ -z "$2" ] || [ -z "$3" ]; then echo "not measured"; return; fi
  awk -v a="$2" -v b="$3" "BEGIN { print (($1) ? \"PASS\" : \"MISS\") }"
}
check() { printf '%-66s %s\n' "$1" "$2"; }
# Rebound's stock-client figure: the better of PUSH without and with prefetch
# (a server setting: the clients are the same); two nodes against one node
# with the same setting.
best() { # NAME1 NAME2 METRIC -> "value name" of the larger
  a=$(val "$1" "$3"); b=$(val "$2" "$3")
  if [ -n "$b" ] && { [ -z "$a" ] || awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > a) }'; }; then
    echo "$b $2"; elif [ -n "$a" ]; then echo "$a $1"; fi
}
set -- $(best rebound-push rebound-prefetch lifecycle.jobs_per_s); rl=${1:-}; rln=${2:-rebound-push}
set -- $(best rebound-push rebound-prefetch retries.jobs_per_s); rt=${1:-}; rtn=${2:-rebound-push}
case "$rln" in *-prefetch) r2n=rebound2-prefetch ;; *) r2n=rebound2-push ;; esac
r2=$(val "$r2n" lifecycle.jobs_per_s); p99=$(val rebound2-probe latency.lat_p99_ms)
gl=$(val graphile-addJobs500 lifecycle.jobs_per_s); gt=$(val graphile-addJobs500 retries.jobs_per_s)
g1t=$(val graphile-addJob retries.jobs_per_s); bt=$(val pgboss-send retries.jobs_per_s)
cl=$(val ceiling ceiling.pushes_per_s)
echo
check "lifecycle ($rln) >= 2 x graphile addJobs ($rl vs ${gl:-–})" "$(judge 'a >= 2 * b' "$rl" "$gl")"
if [ -n "$cl" ]; then
  # Beside the target: is it above what 4 waiting producers can get at all?
  if [ -n "$gl" ]; then
    check "  the target, 2 x $gl = $(awk -v g="$gl" 'BEGIN { printf "%.0f", 2 * g }') jobs/s, vs the commit ceiling ($cl)" \
      "$(awk -v t="$gl" -v c="$cl" 'BEGIN { printf "%s (%.2f x the ceiling)", (2 * t > c ? "ABOVE" : "below"), 2 * t / c }')"
  else
    check "  the target vs the commit ceiling ($cl)" "target not measured"
  fi
  [ -n "$rl" ] && check "  Rebound PUSH lifecycle vs the commit ceiling ($rl vs $cl)" \
    "$(awk -v a="$rl" -v c="$cl" 'BEGIN { printf "%.2f x", a / c }')"
fi
check "retries ($rtn) >= 2 x graphile addJobs retries ($rt vs ${gt:-–})" "$(judge 'a >= 2 * b' "$rt" "$gt")"
check "retries >= 2 x graphile addJob retries ($rt vs ${g1t:-–})" "$(judge 'a >= 2 * b' "$rt" "$g1t")"
check "retries >= 2 x pg-boss retries ($rt vs ${bt:-–})" "$(judge 'a >= 2 * b' "$rt" "$bt")"
check "two nodes >= one node, lifecycle ($r2n: $r2 vs ${rl:-–})" "$(judge 'a >= b' "$r2" "$rl")"
check "push on A -> FETCH on B p99 <= 10 ms (${p99:-–} ms)" "$(judge 'a <= 10' "$p99" 0)"
# Issue 29: one node with stock clients (PUSH) at most graphile-worker's
# best database CPU per job, PUSHB 500 at half of it.
gcl=$(val graphile-addJobs500 lifecycle.cpu_pg_us_per_job); gct=$(val graphile-addJobs500 retries.cpu_pg_us_per_job)
pl=$(val rebound-push lifecycle.cpu_pg_us_per_job); pt=$(val rebound-push retries.cpu_pg_us_per_job)
if [ -n "$pl$pt" ]; then
  cpucheck "rebound-push: PostgreSQL CPU/job <= 1.0 x graphile addJobs ($pl vs ${gcl:-–} µs)" \
    rebound-push graphile-addJobs500 lifecycle.cpu_pg_us_per_job 1.0
  cpucheck "  retries ($pt vs ${gct:-–} µs)" rebound-push graphile-addJobs500 retries.cpu_pg_us_per_job 1.0
fi
for n in rebound-pushb500 rebound-pushb500-prefetch; do
  bl=$(val $n lifecycle.cpu_pg_us_per_job); bt2=$(val $n retries.cpu_pg_us_per_job)
  [ -n "$bl$bt2" ] || continue
  cpucheck "$n: PostgreSQL CPU/job <= 0.5 x graphile addJobs ($bl vs ${gcl:-–} µs)" \
    $n graphile-addJobs500 lifecycle.cpu_pg_us_per_job 0.5
  cpucheck "  retries ($bt2 vs ${gct:-–} µs)" $n graphile-addJobs500 retries.cpu_pg_us_per_job 0.5
done
# Issue 29: a second node neutral for the database (forwarding on).
o1=$(val rebound-push lifecycle.cpu_pg_us_per_job); f2=$(val rebound2-fwd lifecycle.cpu_pg_us_per_job)
o1t=$(val rebound-push retries.cpu_pg_us_per_job); f2t=$(val rebound2-fwd retries.cpu_pg_us_per_job)
fp99=$(val rebound2-fwd-probe latency.lat_p99_ms)
if [ -n "$f2$f2t$fp99" ]; then
  cpucheck "two nodes forwarding: PostgreSQL CPU/job <= 1.1 x one node ($f2 vs ${o1:-–} µs)" \
    rebound2-fwd rebound-push lifecycle.cpu_pg_us_per_job 1.1
  cpucheck "  retries ($f2t vs ${o1t:-–} µs)" rebound2-fwd rebound-push retries.cpu_pg_us_per_job 1.1
  check "  probe p99, forwarding <= 10 ms (${fp99:-–} ms)" "$(judge 'a <= 10' "$fp99" 0)"
fi
echo "bench-pg: done in $(( $(date +%s) - start )) s, $failures failure(s)" >&2
[ "$failures" -eq 0 ]
