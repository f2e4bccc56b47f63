#!/bin/sh
# `make bench`: the same load generator (build/bench/loadgen) against Rebound
# and beanstalkd run three ways (in memory; binlog with its default fsync
# interval; binlog with -f 0, fsync on every write), each workload on a fresh
# server in a temp dir, then one table of figures and ratios, the targets,
# and the micro-benchmarks.
# rebound-pg and rebound-pg2 (not in the default list) run Rebound in
# distributed mode on a throwaway PostgreSQL cluster with one and two nodes
# (the load generator spreads its connections over the nodes).
# Issue 30's rows (Rebound only): fairness with groups off (FIFO) and on — a
# tenant's backlog, then a second tenant's few jobs; their push-to-fetch wait
# — and lifecycle with its jobs over 1,000 groups beside the plain lifecycle.
# Usage: O=build bench/run.sh [--quick] [--servers "rebound bs-mem bs-binlog bs-fsync"]
#        [--jobs N] [--prefill N] [--raw FILE] [--rows "lifecycle groups1000"] [--repeat N]
# --rows: only the rows named (a workload or its tag: lifecycle, retries,
# latency, sched, depth, fair_off, fair_on, groups1000).
# --repeat N: the lifecycle and groups1000 rows N times per Rebound server,
# alternating (lifecycle, groups1000, lifecycle, ...); each pair's figures,
# its ratio and the load before each run, then the median of the pairs'
# ratios, which the 1,000-groups target is judged on (the table keeps the
# last pair's figures).
set -u
O=${O:-build}
LG=$O/bench/loadgen
MICRO=$O/bench/micro
REBOUND=${REBOUND:-$O/rebound} # REBOUND=path: another build's server (A/B runs)

quick=0
servers="rebound bs-mem bs-binlog bs-fsync"
jobs=""; prefill=""; raw=""; rows=""; repeat=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --servers) servers=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --prefill) prefill=$2; shift ;;
    --raw) raw=$2; shift ;;
    --rows) rows=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done

case "$repeat" in ''|*[!0-9]*|0) echo "run.sh: --repeat takes a number from 1" >&2; exit 2 ;; esac
if [ $quick = 1 ]; then
  : "${jobs:=2000}" "${prefill:=5000}"
  fsync_jobs=400; sched_jobs=1000; sched_rate=2000; lat_secs=1; timeout=60
  backlog=2000; small=20
else
  : "${jobs:=200000}" "${prefill:=1000000}"
  fsync_jobs=10000; sched_jobs=20000; sched_rate=2000; lat_secs=5; timeout=600
  backlog=20000; small=100
fi

need="$LG $MICRO"
case " $servers " in *" rebound"*) need="$need $REBOUND" ;; esac
. "$(dirname "$0")/../scripts/pg_cluster.sh"
case " $servers " in *" rebound-pg"*)
  [ -x "$pg_cluster_bin/initdb" ] || { echo "run.sh: PostgreSQL is not installed (initdb not found)" >&2; exit 1; } ;;
esac
for bin in $need; do
  [ -x "$bin" ] || { echo "run.sh: $bin is missing; run 'make O=$O bench-bin all' first" >&2; exit 1; }
done
case " $servers " in *" bs-"*)
  command -v beanstalkd >/dev/null 2>&1 || { echo "run.sh: beanstalkd is not installed (scripts/deps.sh bench)" >&2; exit 1; } ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-bench.XXXXXX")
pid=""
cleanup() {
  stop_server # and a PostgreSQL cluster of rebound-pg*
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failures=0

# Whether something listens on 127.0.0.1:$1 (reads /proc, needs no tools).
listening() {
  hex=$(printf '%04X' "$1")
  grep -qi "0100007F:$hex 00000000:0000 0A" /proc/net/tcp 2>/dev/null
}

# Waits for the port file $1 of process $2; sets port.
wait_port() {
  i=0
  while [ ! -s "$1" ] && kill -0 "$2" 2>/dev/null && [ $i -lt 200 ]; do
    sleep 0.05; i=$((i + 1))
  done
  port=$(cat "$1" 2>/dev/null)
}

# Starts server $1 with its data in $2; sets pid and port, returns 1 on failure.
start_server() {
  name=$1; dir=$2
  mkdir -p "$dir/data"
  case "$name" in
    rebound-pg|rebound-pg2)
      # A cluster in $dir/data/pg (default durability settings), the schema,
      # then one or two nodes; port becomes "P1,P2" for the load generator.
      [ "$(id -u)" = 0 ] && chmod 755 "$tmp" "$dir"
      : >"$dir/server.log"
      pg_cluster_start "$dir/data" "$dir/server.log" &&
        "$REBOUND" migrate --url "$pgurl" >>"$dir/server.log" 2>&1 || { echo "run.sh: PostgreSQL did not start:" >&2; cat "$dir/server.log" >&2; return 1; }
      nodes=1; [ "$name" = rebound-pg2 ] && nodes=2
      ports=""; extra_pids=""; pid=""
      for k in $(seq 1 $nodes); do
        "$REBOUND" serve --listen 127.0.0.1:0 --http-listen off --db "$pgurl" \
          --port-file "$dir/port$k" >>"$dir/server.log" 2>&1 &
        p=$!
        wait_port "$dir/port$k" "$p"
        [ -n "$port" ] || { pid=${pid:-$p}; break; }
        if [ -z "$pid" ]; then pid=$p; else extra_pids="$extra_pids $p"; fi
        ports="${ports:+$ports,}$port"
      done
      port=$ports
      [ -n "$port" ] && [ "$(echo "$port" | tr ',' ' ' | wc -w)" = "$nodes" ] && return 0 ;;
    rebound)
      "$REBOUND" serve --listen 127.0.0.1:0 --db "$dir/data/rebound.db" \
        --port-file "$dir/port" >"$dir/server.log" 2>&1 &
      pid=$!
      i=0
      while [ ! -s "$dir/port" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do
        sleep 0.05; i=$((i + 1))
      done
      port=$(cat "$dir/port" 2>/dev/null)
      [ -n "$port" ] && return 0 ;;
    bs-*)
      case "$name" in
        bs-mem) flags="" ;;
        bs-binlog) flags="-b $dir/data" ;;
        bs-fsync) flags="-b $dir/data -f 0" ;;
      esac
      try=0
      while [ $try -lt 20 ]; do
        port=$(awk -v s="$$$try" 'BEGIN { srand(s + systime()); print 20000 + int(rand() * 40000) }' 2>/dev/null ||
               awk -v s="$$$try" 'BEGIN { srand(s); print 20000 + int(rand() * 40000) }')
        try=$((try + 1))
        listening "$port" && continue
        # shellcheck disable=SC2086
        beanstalkd -l 127.0.0.1 -p "$port" $flags >"$dir/server.log" 2>&1 &
        pid=$!
        i=0
        while ! listening "$port" && kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
          sleep 0.05; i=$((i + 1))
        done
        listening "$port" && kill -0 "$pid" 2>/dev/null && return 0
        kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""
      done ;;
  esac
  echo "run.sh: $name did not start:" >&2
  cat "$dir/server.log" >&2
  return 1
}

stop_server() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
  for p in ${extra_pids:-}; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  pg_cluster_stop
  pid=""; extra_pids=""
}

# run SERVER WORKLOAD[:TAG] loadgen-options...: one workload on a fresh
# server; appends "SERVER metric value" lines to $tmp/results (the metrics
# named TAG.x when a tag is given, else WORKLOAD.x).
run() {
  s=$1; wl=${2%%:*}; tag=${2#*:}; shift 2
  if [ "$tag" = "$wl" ]; then tag=""; else set -- --tag "$tag" "$@"; fi
  [ -z "$rows" ] || case " $rows " in *" ${tag:-$wl} "*) ;; *) return 0 ;; esac
  dir="$tmp/$s-${tag:-$wl}"
  rm -rf "$dir" # a --repeat run's earlier one
  mkdir -p "$dir"
  if ! start_server "$s" "$dir"; then
    failures=$((failures + 1)); return 1
  fi
  case "$s" in rebound*) proto=faktory ;; *) proto=beanstalk ;; esac
  printf '  %-10s %-10s' "$s" "${tag:-$wl}" >&2
  # Group commit: count the server's fsyncs during the lifecycle run (perf
  # tracepoints, when perf works here; beanstalkd does not report them,
  # Rebound's own count is in INFO, read below).
  perfpid=""
  if [ "$wl" = lifecycle ] && [ -z "$tag" ] && [ -n "$perf" ]; then
    perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$pid" \
      -o "$dir/perf" >/dev/null 2>&1 &
    perfpid=$!
    sleep 0.5 # perf attaches asynchronously
  fi
  if "$LG" --proto "$proto" --port "$port" --workload "$wl" --server-pid "$pid" \
       --data-dir "$dir/data" --timeout "$timeout" "$@" >"$dir/out" 2>"$dir/err"; then
    if [ -n "$perfpid" ]; then
      kill -INT "$perfpid" 2>/dev/null; wait "$perfpid" 2>/dev/null
      awk -F, '/syscalls:sys_enter_f/ { n += $1; seen = 1 }
               END { if (seen) print "lifecycle.fsyncs", n }' "$dir/perf" >>"$dir/out" 2>/dev/null
      awk '$1 == "lifecycle.jobs" { j = $2 } $1 == "lifecycle.fsyncs" { f = $2 }
           END { if (f > 0) printf "lifecycle.requests_per_fsync %.2f\n", 3 * j / f }' \
        "$dir/out" >"$dir/out2" && cat "$dir/out2" >>"$dir/out"
      perfpid=""
    fi
    # Rebound reports its group commit in INFO (rebound.group_commit; the
    # loadgen prints the deltas over the timed phase): no perf needed.
    awk '$1 ~ /^[a-z]+\.info\.rebound\.group_commit\.(commits|requests|commit_us_total)$/ {
           split($1, p, "."); v[p[1], p[5]] = $2; w[p[1]] = 1 }
         END { for (k in w) if (v[k, "commits"] > 0) {
                 printf "%s.commits %d\n", k, v[k, "commits"]
                 printf "%s.requests_per_commit %.2f\n", k, v[k, "requests"] / v[k, "commits"]
                 printf "%s.commit_ms_avg %.3f\n", k, v[k, "commit_us_total"] / v[k, "commits"] / 1000 } }' \
      "$dir/out" >"$dir/out3" && cat "$dir/out3" >>"$dir/out"
    awk -v s="$s" '{ print s, $1, $2 }' "$dir/out" >>"$tmp/results"
    awk '/jobs_per_s|late_p99|fair_o.*lat_p99/ { printf " %s=%s", $1, $2 }' "$dir/out" >&2
    echo >&2
  else
    [ -n "$perfpid" ] && { kill -INT "$perfpid" 2>/dev/null; wait "$perfpid" 2>/dev/null; }
    echo " FAILED" >&2
    sed 's/^/    /' "$dir/err" >&2
    tail -5 "$dir/server.log" 2>/dev/null | sed 's/^/    server: /' >&2
    failures=$((failures + 1))
  fi
  stop_server
}

# The value of metric $2 for server $1 (empty when not measured).
val() { awk -v s="$1" -v m="$2" '$1 == s && $2 == m { print $3; exit }' "$tmp/results" 2>/dev/null; }

# The 1-minute load average now.
load1() { cut -d' ' -f1 /proc/loadavg; }

# --repeat: server $1's lifecycle and groups1000 rows ($2 jobs) run
# $repeat times, alternating; the first lifecycle run is the one already
# made (its load in $3). Appends "SERVER PAIR START LOAD_L LOAD_G
# LIFECYCLE GROUPS1000 CPU_L CPU_G" to $tmp/pairs; the results keep the
# last pair's figures.
repeat_pairs() {
  rs=$1; rn=$2; ll=$3
  for pair in $(seq 1 "$repeat"); do
    if [ "$pair" -gt 1 ]; then
      grep -v "^$rs lifecycle\.\|^$rs groups1000\." "$tmp/results" >"$tmp/results.keep"
      mv "$tmp/results.keep" "$tmp/results"
      ll=$(load1); rt=$(date -u +%T)
      run "$rs" lifecycle --jobs "$rn"
    fi
    [ "$pair" -eq 1 ] && rt=$first_start
    lg=$(load1)
    run "$rs" lifecycle:groups1000 --jobs "$rn" --groups 1000
    echo "$rs $pair $rt $ll $lg $(val "$rs" lifecycle.jobs_per_s) $(val "$rs" groups1000.jobs_per_s)" \
      "$(val "$rs" lifecycle.server_cpu_us_per_job) $(val "$rs" groups1000.server_cpu_us_per_job)" \
      >>"$tmp/pairs"
  done
}

: >"$tmp/results"
# perf counts fsyncs for the group-commit figure; without it that row is "–".
perf=""
if command -v perf >/dev/null 2>&1 &&
   perf stat -x, -e syscalls:sys_enter_fdatasync -o /dev/null true >/dev/null 2>&1; then
  perf=perf
fi
start=$(date +%s)
echo "bench: $(uname -srm), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), mode $([ $quick = 1 ] && echo quick || echo full)" >&2
echo "bench: jobs=$jobs (bs-fsync: $fsync_jobs) prefill=$prefill sched=$sched_jobs@${sched_rate}/s" >&2
: >"$tmp/pairs"
for s in $servers; do
  n=$jobs; p=$prefill
  [ "$s" = bs-fsync ] && { n=$fsync_jobs; [ $quick = 0 ] && p=0; }
  first_load=$(load1); first_start=$(date -u +%T)
  run "$s" lifecycle --jobs "$n"
  run "$s" retries --jobs "$n"
  peak=$(val "$s" lifecycle.jobs_per_s)
  if [ -n "$peak" ]; then
    rate=$(awk -v p="$peak" 'BEGIN { r = int(p / 2); print r < 1 ? 1 : r }')
    lj=$(awk -v r="$rate" -v t="$lat_secs" -v n="$n" 'BEGIN { j = int(r * t); if (j > n) j = n; print j < 100 ? 100 : j }')
    run "$s" latency --jobs "$lj" --rate "$rate"
  fi
  run "$s" sched --jobs "$sched_jobs" --rate "$sched_rate"
  # depth and footprint: -f 0 fsyncs every put, so a million-job prefill
  # would take minutes; its footprint equals bs-binlog's.
  [ "$p" -gt 0 ] && run "$s" depth --jobs "$n" --prefill "$p"
  case "$s" in rebound*)
    run "$s" fairness:fair_off --jobs "$small" --prefill "$backlog" --producers 1 --groups 0
    run "$s" fairness:fair_on --jobs "$small" --prefill "$backlog" --producers 1 --groups 1
    if [ "$repeat" -gt 1 ]; then
      repeat_pairs "$s" "$n" "$first_load"
    else
      run "$s" lifecycle:groups1000 --jobs "$n" --groups 1000
    fi ;;
  esac
done

# The table: one row per figure, one column per server, then Rebound's ratios.
# (--rows: without the micro-benchmarks and the fsync probe.)
: >"$tmp/micro"
[ -n "$rows" ] || "$MICRO" $([ $quick = 1 ] && echo --quick) >"$tmp/micro" 2>"$tmp/micro.err" || {
  echo "run.sh: micro failed:" >&2; cat "$tmp/micro.err" >&2; failures=$((failures + 1)); }
# What the fsync-bound figures stood on: the disk's fdatasync now, alone
# and four at a time, in the directory the servers used.
[ -n "$rows" ] || for t in 1 4; do
  "$O/bench/fsync_probe" --dir "$tmp" --threads $t --secs $([ $quick = 1 ] && echo 0.3 || echo 2) \
    >>"$tmp/micro" 2>"$tmp/fsync.err" || {
    echo "run.sh: fsync_probe failed:" >&2; cat "$tmp/fsync.err" >&2; failures=$((failures + 1)); }
done
[ -n "$raw" ] && cp "$tmp/results" "$raw"
awk -v servers="$servers" '
  { v[$1, $2] = $3 }
  function f(x) { return x == "" ? "–" : x }
  function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f", a / b) }
  END {
    n = split(servers, S, " ")
    nm = split("lifecycle.jobs_per_s lifecycle.ops_per_s lifecycle.lat_p50_ms lifecycle.lat_p99_ms " \
          "lifecycle.server_cpu_us_per_job lifecycle.loadgen_cpu_us_per_job lifecycle.cores_busy lifecycle.fsyncs lifecycle.requests_per_fsync " \
          "lifecycle.commits lifecycle.requests_per_commit lifecycle.commit_ms_avg retries.jobs_per_s retries.server_cpu_us_per_job " \
          "depth.jobs_per_s depth.server_cpu_us_per_job sched.late_p50_ms sched.late_p99_ms sched.late_max_ms " \
          "footprint.rss_bytes_per_job footprint.disk_bytes_per_job footprint.prefill_jobs_per_s " \
          "latency.rate_asked latency.lat_p50_ms latency.lat_p99_ms latency.lat_max_ms " \
          "fair_off.lat_p50_ms fair_off.lat_p99_ms fair_off.secs fair_on.lat_p50_ms fair_on.lat_p99_ms fair_on.secs " \
          "groups1000.jobs_per_s groups1000.server_cpu_us_per_job", M, " ")
    for (s = 1; s <= n; s++) v[S[s], "depth.vs_empty"] = ratio(v[S[s], "depth.jobs_per_s"], v[S[s], "lifecycle.jobs_per_s"])
    printf "| figure |"; for (s = 1; s <= n; s++) printf " %s |", S[s]
    printf " rebound / bs-mem | rebound / bs-fsync |\n|---|"
    for (s = 1; s <= n + 2; s++) printf "---:|"
    printf "\n"
    for (i = 1; i <= nm; i++) {
      m = M[i]
      if (m == "depth.server_cpu_us_per_job") { row("depth.jobs_per_s / lifecycle.jobs_per_s", "depth.vs_empty") }
      row(m, m)
    }
  }
  function row(label, m,   s) {
    printf "| %s |", label
    for (s = 1; s <= n; s++) printf " %s |", f(v[S[s], m])
    printf " %s | %s |\n", ratio(v["rebound", m], v["bs-mem", m]), ratio(v["rebound", m], v["bs-fsync", m])
  }
' "$tmp/results"

# --repeat: each pair, and the median of their ratios per server.
if [ -s "$tmp/pairs" ]; then
  echo
  echo "| server | pair | start (UTC) | load (1 min) lifecycle / groups1000 | lifecycle jobs/s | groups1000 jobs/s | ratio | server CPU us/job lifecycle / groups1000 |"
  echo "|---|---:|---|---|---:|---:|---:|---|"
  awk '{ r = ($6 > 0 && $7 != "") ? sprintf("%.2f", $7 / $6) : "–"
         printf "| %s | %d | %s | %s / %s | %s | %s | %s | %s / %s |\n", $1, $2, $3, $4, $5, $6, $7, r, $8, $9 }' \
    "$tmp/pairs"
  awk '$6 > 0 && $7 != "" { n[$1]++; r[$1, n[$1]] = $7 / $6 }
       END { for (s in n) {
               k = n[s]
               for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
                 if (r[s, j] < r[s, i]) { t = r[s, i]; r[s, i] = r[s, j]; r[s, j] = t }
               m = k % 2 ? r[s, (k + 1) / 2] : (r[s, k / 2] + r[s, k / 2 + 1]) / 2
               printf "%s median %.4f %.2f %.2f %d\n", s, m, r[s, 1], r[s, k], k } }' \
    "$tmp/pairs" >"$tmp/medians"
  awk '{ printf "%s: groups1000 / lifecycle over %d pairs: median %.2f (min %.2f, max %.2f)\n", $1, $6, $3, $4, $5 }' \
    "$tmp/medians"
fi

# The targets (issue 5), judged on this run's figures.
echo
check() { # label, verdict
  printf '%-58s %s\n' "$1" "$2"
}
rl=$(val rebound lifecycle.jobs_per_s); ml=$(val bs-mem lifecycle.jobs_per_s); fl=$(val bs-fsync lifecycle.jobs_per_s)
rd=$(val rebound depth.jobs_per_s); rs=$(val rebound sched.late_p99_ms); rr=$(val rebound footprint.rss_bytes_per_job)
judge() { # expression over a b -> PASS/MISS, or "not measured"
  if [ -z "$2" ] || [ -z "$3" ]; then echo "not measured"; return; fi
  awk -v a="$2" -v b="$3" "BEGIN { x = $1; print (x ? \"PASS\" : \"MISS\") }"
}
if case " $servers " in *" rebound "*) true ;; *) false ;; esac; then
  check "lifecycle >= 1.0 x beanstalkd in memory ($rl vs ${ml:-–})" "$(judge 'a >= b' "$rl" "$ml")"
  check "lifecycle >= 10 x beanstalkd -b -f 0 ($rl vs ${fl:-–})" "$(judge 'a >= 10 * b' "$rl" "$fl")"
  check "depth within 10% of empty queue ($rd vs $rl)" "$(judge 'a >= 0.9 * b' "$rd" "$rl")"
  check "scheduler lateness p99 <= 10 ms ($rs ms)" "$(judge 'a <= 10' "$rs" 0)"
  check "server RSS <= 300 bytes per waiting job ($rr)" "$(judge 'a <= 300' "$rr" 0)"
fi
# Issue 30: with groups on, a second tenant's jobs wait for a turn, not for
# the first tenant's backlog; 1,000 groups cost at most a fifth of lifecycle.
for s in $servers; do
  case "$s" in rebound*) ;; *) continue ;; esac
  fo=$(val "$s" fair_off.lat_p99_ms); fn=$(val "$s" fair_on.lat_p99_ms)
  gl=$(val "$s" groups1000.jobs_per_s); pl=$(val "$s" lifecycle.jobs_per_s)
  check "$s: second tenant's wait p99 with groups ($fn ms) <= 1/10 FIFO's (${fo:-–} ms)" "$(judge 'a * 10 <= b' "$fn" "$fo")"
  med=$(awk -v s="$s" '$1 == s { print $3 }' "$tmp/medians" 2>/dev/null)
  if [ -n "$med" ]; then
    check "$s: lifecycle with 1,000 groups >= 0.8 x without (median of $repeat pairs $(printf '%.2f' "$med"))" "$(judge 'a >= 0.8' "$med" 1)"
  else
    check "$s: lifecycle with 1,000 groups >= 0.8 x without ($gl vs ${pl:-–})" "$(judge 'a >= 0.8 * b' "$gl" "$pl")"
  fi
done
echo
cat "$tmp/micro"
echo "bench: done in $(( $(date +%s) - start )) s, $failures failure(s)" >&2
[ "$failures" -eq 0 ]
