#!/bin/sh
# The soak test: `rebound serve` under mixed load with injected commit
# failures, hostile clients and random kill -9 / SIGTERM restarts for N
# minutes, then a drain and an account of every job (bench/soak.c says what
# is checked). Not part of `make check`: an hour by default, ten minutes
# with --minutes 10.
# Usage: O=build bench/soak.sh [--minutes N] [--rate PUSHES/S] [--seed S] [--keep]
set -eu
O=${O:-build}
minutes=60
args=
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift ;;
    --rate|--seed) args="$args $1 $2"; shift ;;
    --keep) args="$args --keep" ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$O/rebound" ] && [ -x "$O/bench/soak" ] || make -s O="$O" all "$O/bench/soak"
# shellcheck disable=SC2086
exec "$O/bench/soak" --bin "$O/rebound" --minutes "$minutes" $args
