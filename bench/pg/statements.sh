#!/bin/sh
# Where PostgreSQL's time per job goes, statement by statement (issue 29):
# one Rebound node on a throwaway cluster with pg_stat_statements
# (track = all, so statements inside functions count too, and
# track_planning = on), one loadgen run (4 producers, 8 workers), then per
# job: each statement's calls, execution and planning time (µs), rows per
# call; the database's commits; and the PostgreSQL processes' CPU (/proc,
# as bench/pg/run.sh measures it). Nested statements are counted both in
# their function's line and their own: the top level ones are marked "top".
# Then the PostgreSQL CPU per job by backend role (each node's connections
# are named by application_name; the role from the last statement each
# ran: batch, listen, maintenance, other) and each node's claim statements
# (/metrics: a FETCH's first claim, a parked FETCH's after a wake, and how
# many of each found no job).
# Usage: O=build bench/pg/statements.sh [--jobs N] [--workload lifecycle|retries]
#        [--push-batch N] [--nodes 1|2] [--forward] [--prefetch] [--rebound PATH] [--top N]
#        [--groups N] [--rate R]
# --prefetch: the nodes run with [storage] prefetch = true.
# --forward: the nodes run with [storage] forward = true (node 2 relays its
# clients to node 1, the leader; docs/distributed.md).
# --groups N: the jobs spread over N groups (custom.group; issue 30)
# --rate R: the producers push R jobs per second in all (loadgen --rate),
# below what the workers take: the queue stays drained, the database's
# work per job when a cluster is not saturated.
set -u
O=${O:-build}
here=$(cd "$(dirname "$0")" && pwd)
LG=$O/bench/loadgen
REBOUND=$O/rebound
jobs=5000
wl=lifecycle
pushb=""
nodes=1
top=25
fwd=""
pre=""
groups=""
rate=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift ;;
    --workload) wl=$2; shift ;;
    --push-batch) pushb=$2; shift ;;
    --nodes) nodes=$2; shift ;;
    --rebound) REBOUND=$2; shift ;;
    --top) top=$2; shift ;;
    --forward) fwd=1 ;;
    --prefetch) pre=1 ;;
    --groups) groups=$2; shift ;;
    --rate) rate=$2; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "statements: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
case "$jobs$nodes$top${pushb}${groups}${rate}" in *[!0-9]*)
  echo "statements: --jobs, --nodes, --top, --push-batch, --groups and --rate take numbers" >&2
  exit 2 ;; esac

. "$here/../../scripts/pg_cluster.sh"
for bin in "$LG" "$REBOUND" "$pg_cluster_bin/initdb"; do
  [ -x "$bin" ] || { echo "statements: $bin is missing (make O=$O bench-bin all)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-statements.XXXXXX")
[ "$(id -u)" = 0 ] && chmod 755 "$tmp" && chown postgres "$tmp"
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  pg_cluster_stop; rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
port=$(awk 'BEGIN { srand(); print 20000 + int(rand() * 40000) }')
pg_cluster_as "$pg_cluster_bin/initdb" -D "$tmp/pg" -A trust -U rebound -E UTF8 --locale=C \
  >"$tmp/pg.out" 2>&1 &&
  pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$tmp/pg" -l "$tmp/pg.log" -w -o "-p $port -k $tmp \
    -c listen_addresses='' -c shared_preload_libraries=pg_stat_statements \
    -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on" \
    start >>"$tmp/pg.out" 2>&1 || { cat "$tmp/pg.out" >&2; exit 1; }
pg_cluster_dir=$tmp/pg
psqlc() { pg_cluster_as "$pg_cluster_bin/psql" -X -q -At -h "$tmp" -p "$port" -U rebound -d "$1" -c "$2"; }
psqlc postgres "CREATE DATABASE rebound" && psqlc rebound "CREATE EXTENSION pg_stat_statements" ||
  exit 1
url="postgresql://rebound@/rebound?host=$tmp&port=$port"
"$REBOUND" migrate --url "$url" >"$tmp/server.log" 2>&1 || { cat "$tmp/server.log" >&2; exit 1; }
ports=""
for k in $(seq 1 "$nodes"); do
  { echo '[storage]'; [ -n "$fwd" ] && echo 'forward = true'; [ -n "$pre" ] && echo 'prefetch = true'; } \
    >"$tmp/node.toml"
  "$REBOUND" serve --config "$tmp/node.toml" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --http-port-file "$tmp/http$k" \
    --db "$url&application_name=rebound-n$k" --port-file "$tmp/port$k" \
    >>"$tmp/server.log" 2>&1 &
  pids="$pids $!"
  i=0
  while [ ! -s "$tmp/port$k" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  [ -s "$tmp/port$k" ] || { cat "$tmp/server.log" >&2; exit 1; }
  ports="$ports $(cat "$tmp/port$k")"
done
a=$(echo $ports | awk '{ print $1 }')
if [ -n "$fwd" ] && [ "$nodes" -gt 1 ]; then # the others relay once they have read node 1's lease
  i=0
  while [ "$(grep -c "at 127.0.0.1:$a leads the cluster" "$tmp/server.log")" -lt $((nodes - 1)) ] &&
        [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
fi
wports=$(echo $ports | tr ' ' ',')
psqlc rebound "SELECT pg_stat_statements_reset()" >/dev/null
c0=$(psqlc postgres "SELECT xact_commit FROM pg_stat_database WHERE datname = 'rebound'")
w0=$(psqlc postgres "SELECT wal_sync FROM pg_stat_wal")
pm=$(head -1 "$tmp/pg/postmaster.pid")
t0=$(pg_cluster_cpu "$pm")
becpu() { # each backend's clock ticks: pid ticks
  for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null; done | awk -v pm="$pm" '{ pid = $1; st = $0
    sub(/^.*\) /, "", st); split(st, f, " "); if (f[2] == pm) print pid, f[12] + f[13] }'
}
becpu >"$tmp/be0"
echo "statements: $jobs jobs, $wl, $nodes node(s)${pushb:+, PUSHB $pushb}${pre:+, prefetch}${groups:+, $groups groups}${rate:+, $rate jobs/s}, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$LG" --proto faktory --workload "$wl" --jobs "$jobs" --port "$a" --worker-port "$wports" \
  --drain-ms 1000 --timeout 600 ${pushb:+--push-batch "$pushb"} ${groups:+--groups "$groups"} ${rate:+--rate "$rate"} >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err" >&2; exit 1; }
becpu >"$tmp/be1"
psqlc rebound "SELECT pid, coalesce(nullif(application_name, ''), backend_type), CASE
    WHEN query LIKE '/* rb\\_%' OR query IN ('BEGIN', 'COMMIT') OR query LIKE 'SELECT%rb\\_claim%'
      OR query LIKE 'SELECT%rb\\_ack%' OR query LIKE 'SELECT%rb\\_fail%' THEN 'batch'
    WHEN query LIKE '%LISTEN%' OR query = 'SELECT 1' THEN 'listen'
    WHEN query LIKE '%rb\\_promote%' OR query LIKE '%rb\\_sweep%' OR query LIKE '%rb\\_reap%' OR query LIKE '%due%'
      OR query LIKE '%rb\\_expire%' OR query LIKE '%rb\\_cron%' THEN 'maintenance'
    ELSE 'other' END, left(regexp_replace(query, '\\s+', ' ', 'g'), 40)
  FROM pg_stat_activity WHERE pid <> pg_backend_pid()" | tr '|' '\t' >"$tmp/roles"
for k in $(seq 1 "$nodes"); do
  curl -s "http://127.0.0.1:$(cat "$tmp/http$k")/metrics" | grep -E '^rebound_fetch_claims|^rebound_commit_batch_size_(sum|count)' |
    sed "s/^/n$k /" >>"$tmp/claims"
done
for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
pids=""
t1=$(pg_cluster_cpu "$pm")
c1=$(psqlc postgres "SELECT xact_commit FROM pg_stat_database WHERE datname = 'rebound'")
w1=$(psqlc postgres "SELECT wal_sync FROM pg_stat_wal")
grep -E "jobs_per_s|duplicates|missing" "$tmp/out" | tr '\n' ' '; echo
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
echo "$t0 $t1 $c0 $c1 $w0 $w1" | awk -v n="$jobs" -v hz="$hz" '{
  printf "PostgreSQL CPU %.0f us per job; %.3f commits per job; %.3f WAL flushes per job\n",
    ($2 - $1) * 1e6 / hz / n, ($4 - $3) / n, ($6 - $5) / n }'
echo "per job: calls, exec us, plan us; rows and plannings per call; top: the statement a client sent"
psqlc rebound "SELECT to_char(calls::float8 / $jobs, 'FM990.000'), to_char(total_exec_time * 1000 / $jobs,
    'FM99990.0'), to_char(total_plan_time * 1000 / $jobs, 'FM99990.0'),
    to_char(rows::float8 / greatest(calls, 1), 'FM99990.00'),
    to_char(plans::float8 / greatest(calls, 1), 'FM990.00'), CASE WHEN toplevel THEN 'top' ELSE '' END,
    left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'rebound')
  ORDER BY total_exec_time + total_plan_time DESC LIMIT $top" |
  awk -F'|' '{ printf "%7s %8s %7s %8s %6s %-3s  %s\n", $1, $2, $3, $4, $5, $6, $7 }'
hzr=$(getconf CLK_TCK 2>/dev/null || echo 100)
echo "PostgreSQL CPU per job by backend (us; application_name, role by its last statement; pid: ticks):"
awk -v n="$jobs" -v hz="$hzr" -F'\t' 'FILENAME ~ /be0$/ { split($0, a, " "); t0[a[1]] = a[2]; next }
  FILENAME ~ /be1$/ { split($0, a, " "); t1[a[1]] = a[2]; next }
  { d = t1[$1] - t0[$1]; k = $2 " " $3; s[k] += d; all += d; w[k] = w[k] " " $1 ":" d " (" $4 ")" }
  END { for (k in s) printf "  %-28s %7.0f us/job  %s\n", k, s[k] * 1e6 / hz / n, w[k]
        printf "  %-28s %7.0f us/job\n", "all backends listed", all * 1e6 / hz / n }' \
  "$tmp/be0" "$tmp/be1" "$tmp/roles"
echo "claim statements per job (node, counter, trigger), the batch transactions' commits and their requests:"
awk -v n="$jobs" '{ printf "  %s %-60s %.3f\n", $1, $2, $3 / n }
  $2 ~ /batch_size_sum/ { s[$1] = $3 } $2 ~ /batch_size_count/ { c[$1] = $3 }
  END { for (k in c) if (c[k] > 0) printf "  %s requests per batch commit %.2f\n", k, s[k] / c[k] }' "$tmp/claims"
