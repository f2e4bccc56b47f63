#!/bin/sh
# Runs the fault suite (tests/faults/, issue 27): each $O/faults/test_*
# binary, its cases one at a time (their bounds are about the configured
# timeouts; cases run side by side would measure each other), --repeat N
# times in a row, then the measured times of every case ("faults:" lines)
# and one tally. Any other argument goes to the Criterion binaries
# (--filter 'faults/blackhole*').
# Usage: O=build tests/faults/run.sh [--repeat N] [criterion args...]
O=${O:-build}
top=$(pwd)
repeat=1
if [ "${1:-}" = "--repeat" ]; then
  repeat=$2
  shift 2
fi
out=$(mktemp "${TMPDIR:-/tmp}/rebound-faults.XXXXXX")
trap 'rm -f "$out"' EXIT
passed=0; failed=0
i=0
while [ "$i" -lt "$repeat" ]; do
  i=$((i + 1))
  for t in "$O"/faults/test_*; do
    [ -x "$t" ] || continue
    echo "== run $i/$repeat: $(basename "$t")"
    if REBOUND_BIN="$top/$O/rebound" REBOUND_TOOLS="$top/$O/tools" REBOUND_TOP="$top" \
        "$t" --jobs 1 --timeout 300 "$@" >>"$out" 2>&1; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "run $i: $(basename "$t") failed:"
      grep -E '^\[FAIL\]|Assertion|^\[----\] ' "$out" | tail -20
    fi
    grep -E '^\[====\] Synthesis' "$out" | tail -1
  done
done
echo
echo "measured (ms; docs/distributed.md, \"Network faults\"):"
grep -E '^faults: ' "$out"
cases=$(grep -E '^\[====\] Synthesis' "$out" |
  sed -E 's/.*Passing: ([0-9]+) \| Failing: ([0-9]+) \| Crashing: ([0-9]+).*/\1 \2 \3/' |
  awk '{p += $1; f += $2 + $3} END {printf "%d cases passed, %d failed", p, f}')
echo
echo "fault suite: $cases; $passed runs of a binary passed, $failed failed ($repeat run(s))"
[ "$failed" -eq 0 ]
