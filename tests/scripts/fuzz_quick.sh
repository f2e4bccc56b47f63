#!/bin/sh
# tier: full
# A short run of every fuzz target (fuzz/run.sh, a few seconds each) as part
# of `make check`: fails when a target does not build or any input crashes,
# leaks or breaks an invariant. Needs clang and libclang-rt-14-dev
# (scripts/deps.sh test installs them).
set -e
cd "${REBOUND_TOP:-.}"
O=${O:-build}
command -v clang >/dev/null 2>&1 || { echo "fuzz_quick: clang is missing (scripts/deps.sh test)" >&2; exit 1; }
O=$O sh fuzz/run.sh --seconds "${FUZZ_QUICK_SECONDS:-4}"
