#!/bin/sh
# Runs every test suite: the Criterion binaries (normal, then ASan/UBSan builds),
# then the script suites in tests/scripts/. Prints one closing tally.
# Usage: O=build scripts/run-tests.sh [filter]   (filter: substring of a suite name)
O=${O:-build}
filter=${1:-}
top=$(pwd)
passed=0; failed=0; failed_names=""
export ASAN_OPTIONS="abort_on_error=0:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

run_suite() { # name, command...
  name=$1; shift
  case "$name" in *"$filter"*) ;; *) return ;; esac
  echo "== $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names="$failed_names $name"; fi
}

# A sanitized Criterion binary: its status, and also a leak report in its
# output, since a leak in a test's own process never changes Criterion's
# status (tests/common/lsan_runner.c).
san_out=$(mktemp "${TMPDIR:-/tmp}/rebound-san.XXXXXX")
trap 'rm -f "$san_out"' EXIT
leak_checked() { # command...
  "$@" >"$san_out" 2>&1
  st=$?
  cat "$san_out"
  if grep -q "ERROR: LeakSanitizer" "$san_out"; then
    echo "run-tests: LeakSanitizer reported a leak (above)"
    return 1
  fi
  return $st
}

for variant in "" asan; do
  dir="$O${variant:+/$variant}"
  # the three-node PostgreSQL test runs issue 6's full 100,000 jobs in the
  # normal build; the sanitized build (several times slower) runs its default
  if [ -z "$variant" ]; then pg_jobs=${REBOUND_PG_NODES_JOBS:-100000}; else pg_jobs=${REBOUND_PG_NODES_JOBS:-}; fi
  for t in "$dir"/tests/test_*; do
    [ -x "$t" ] || continue
    check=; [ -n "$variant" ] && check=leak_checked
    REBOUND_BIN="$top/$dir/rebound" REBOUND_TOP="$top" REBOUND_PG_NODES_JOBS="$pg_jobs" \
      run_suite "${variant:-normal}/$(basename "$t")" $check "$t" --jobs 2 --timeout 300
  done
done

for s in tests/scripts/*.sh; do
  [ -f "$s" ] || continue
  REBOUND_BIN="$top/$O/rebound" REBOUND_TOP="$top" O="$O" run_suite "script/$(basename "$s" .sh)" sh "$s"
done

echo
[ -n "$failed_names" ] && echo "failed suites:$failed_names"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
