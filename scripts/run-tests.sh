#!/bin/bash
# Runs the test suites of one tier and prints one closing tally.
#   check (make check, the default): every Criterion binary of the normal
#     build (unit and server suites, both backends) and the script suites
#     whose header says "tier: check" (the README sequence among them);
#   full (make check-full, what .ci/run runs): the same, the 100,000-job
#     three-node run, the ASan/UBSan build of every Criterion binary, and
#     every script suite (package, install, browser, npm interop, fuzz,
#     the benchmarks' quick runs, the fault suite).
# Criterion binaries run several at a time (REBOUND_TEST_JOBS, default the
# number of cores + 1: server suites mostly wait on fsync and sockets),
# longest first by the times of the previous run ($O/test-times); a suite's
# output is printed whole when it fails, its summary line when it passes,
# and kept in $O/test-logs/. Script suites run one at a time after them
# (benchmarks and the package build must not share the machine).
# One PostgreSQL cluster serves the whole run: a template every test that
# restarts PostgreSQL copies, and a shared cluster in which each test works
# in a schema of its own (tests/server/pg_harness.h reads $RBPG_TEMPLATE,
# $RBPG_SHARED_DIR and $RBPG_SHARED_PORT).
# Usage: O=build scripts/run-tests.sh [filter]   (filter: substring of a suite
#        name); REBOUND_TIER=check|full.
set -u
O=${O:-build}
tier=${REBOUND_TIER:-check}
filter=${1:-}
top=$(pwd)
case "$tier" in check|full) ;; *) echo "run-tests: REBOUND_TIER must be check or full, not '$tier'" >&2; exit 2 ;; esac
jobs=${REBOUND_TEST_JOBS:-$(($(nproc 2>/dev/null || echo 2) + 1))}
case "$jobs" in ''|*[!0-9]*|0) echo "run-tests: REBOUND_TEST_JOBS must be a number of suites at once (1 or more), not '$jobs'" >&2; exit 2 ;; esac
logs=$O/test-logs
times=$O/test-times
mkdir -p "$logs"
export ASAN_OPTIONS="abort_on_error=0:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export REBOUND_TOP="$top"
start=$(date +%s)

# --- the run's PostgreSQL cluster ------------------------------------------
. "$top/scripts/pg_cluster.sh"
pgtmp=
stop_pg() {
  [ -n "$pgtmp" ] || return 0
  pg_cluster_stop
  rm -rf "$pgtmp"
  pgtmp=
}
trap stop_pg EXIT
trap 'stop_pg; exit 130' INT TERM
if [ -x "$pg_cluster_bin/initdb" ] && ls "$O"/tests/test_pg_* >/dev/null 2>&1; then
  pgtmp=$(mktemp -d "${TMPDIR:-/tmp}/rbpg.XXXXXX")
  if pg_cluster_shared "$pgtmp" "$pgtmp/setup.log"; then
    export RBPG_TEMPLATE="$pgtmp/template" RBPG_SHARED_DIR="$pgtmp/shared" RBPG_SHARED_PORT="$pg_cluster_port"
    export RBPG_RUN_OWNED=1
  else
    echo "run-tests: the run's PostgreSQL cluster did not start (each suite starts its own):"
    cat "$pgtmp/setup.log"
    rm -rf "$pgtmp"; pgtmp=
  fi
fi

# --- the suites --------------------------------------------------------------
passed=0; failed=0; failed_names=""
declare -A pid_of_name=() name_of_pid=() began=()
new_times=""

wanted() { case "$1" in *"$filter"*) return 0 ;; *) return 1 ;; esac; }

finish() { # pid status
  local name=${name_of_pid[$1]} secs log st=$2
  secs=$(($(date +%s) - ${began[$name]}))
  new_times="$new_times$secs $name"$'\n'
  log="$logs/${name//\//_}.log"
  # A sanitized binary fails on a leak report in its output too: a leak in a
  # test's own process never changes Criterion's status
  # (tests/common/lsan_runner.c).
  if [ "$st" -eq 0 ] && [ "${name%%/*}" = asan ] && grep -q "ERROR: LeakSanitizer" "$log"; then
    echo "run-tests: LeakSanitizer reported a leak (above)" >>"$log"
    st=1
  fi
  if [ "$st" -eq 0 ]; then
    passed=$((passed + 1))
    echo "== $name: ok (${secs} s) $(grep -a 'Synthesis:' "$log" | tail -n 1 | sed 's/.*Synthesis: //')"
  else
    failed=$((failed + 1)); failed_names="$failed_names $name"
    echo "== $name: FAILED (${secs} s, exit $st); its output ($log):"
    cat "$log"
  fi
  unset "name_of_pid[$1]"
}

reap_one() {
  local st=0 p
  wait -n -p p || st=$?
  [ -n "${p:-}" ] && finish "$p" "$st"
}

launch() { # name, command... (in the background, at most $jobs at once)
  local name=$1 log
  shift
  while [ ${#name_of_pid[@]} -ge "$jobs" ]; do reap_one; done
  log="$logs/${name//\//_}.log"
  began[$name]=$(date +%s)
  ( "$@" >"$log" 2>&1 ) &
  name_of_pid[$!]=$name
}

# Criterion binaries, longest first by the last run's times (unknown ones
# first of all: they may be long).
list=""
for variant in "" asan; do
  [ -n "$variant" ] && [ "$tier" != full ] && continue
  dir="$O${variant:+/$variant}"
  for t in "$dir"/tests/test_*; do
    [ -x "$t" ] || continue
    name="${variant:-normal}/$(basename "$t")"
    wanted "$name" || continue
    secs=$(awk -v n="$name" '$2 == n { print $1 }' "$times" 2>/dev/null)
    list="$list${secs:-100000} $name $t"$'\n'
  done
done
while read -r _ name t; do
  [ -n "$name" ] || continue
  variant=${name%%/*}
  # the three-node test: 100,000 jobs in the full tier's normal build (issue
  # 6's run), its default in the sanitized build, 5,000 in make check
  case "$tier/$variant" in
    full/normal) pg_jobs=${REBOUND_PG_NODES_JOBS:-100000} ;;
    full/asan) pg_jobs=${REBOUND_PG_NODES_JOBS:-} ;;
    *) pg_jobs=${REBOUND_PG_NODES_JOBS:-5000} ;;
  esac
  if [ "$variant" = asan ]; then bin="$top/$O/asan/rebound"; else bin="$top/$O/rebound"; fi
  REBOUND_BIN="$bin" REBOUND_PG_NODES_JOBS="$pg_jobs" launch "$name" "$t" --jobs 2 --timeout 300
done < <(printf '%s' "$list" | sort -rn)
while [ ${#name_of_pid[@]} -gt 0 ]; do reap_one; done

# Script suites, one at a time: those of this tier (a suite's header line
# "# tier: full" keeps it out of make check).
export REBOUND_BIN="$top/$O/rebound" O
for s in tests/scripts/*.sh; do
  [ -f "$s" ] || continue
  name="script/$(basename "$s" .sh)"
  wanted "$name" || continue
  if [ "$tier" = check ] && grep -q '^# tier: full' "$s"; then continue; fi
  launch "$name" sh "$s"
  while [ ${#name_of_pid[@]} -gt 0 ]; do reap_one; done
done

# Keep the times for the next run's order (suites not run keep theirs).
if [ -n "$new_times" ]; then
  { printf '%s' "$new_times"
    [ -f "$times" ] && awk 'NR == FNR { seen[$2] = 1; next } !seen[$2]' <(printf '%s' "$new_times") "$times"
  } >"$times.new" && mv "$times.new" "$times"
fi

echo
[ -n "$failed_names" ] && echo "failed suites:$failed_names"
echo "suites ($tier): $passed passed, $failed failed in $(($(date +%s) - start)) s"
[ "$failed" -eq 0 ]
