#!/bin/sh
# Installs the Debian packages Rebound's build and tests need, skipping those
# already present. The Makefile runs it before it compiles anything, with the
# sets its goals need.
# Usage: scripts/deps.sh [SET...]   SET: build (default), test, full, bench,
#        bench-pg, fuzz, all
# Exit 0: everything is there. Exit 1: something is missing and could not be
# installed (not root, or apt-get failed); the message names the packages and
# the command that installs them. Exit 2: bad usage.
set -e
build="build-essential pkg-config libevent-dev libsqlite3-dev libpq-dev libjansson-dev libssl-dev"
# make check: Criterion, PostgreSQL, node and npm for the README sequence's
# stock client, valgrind for test_valgrind
test="libcriterion-dev nodejs npm postgresql valgrind"
# make check-full adds: the sqlite3 shell, clang for the fuzz targets,
# chromium for the browser suite, beanstalkd for bench_quick's peer figures;
# install.sh and deb.sh: man and groff for the pages, systemd for
# systemd-analyze, dpkg-dev, debhelper and lintian for the package
full="sqlite3 clang libclang-rt-14-dev chromium beanstalkd"
full="$full man-db groff-base systemd dpkg-dev debhelper lintian"
bench="beanstalkd postgresql"
# make bench-pg: PostgreSQL, and node/npm for graphile-worker and pg-boss
benchpg="postgresql nodejs npm"
fuzz="clang libclang-rt-14-dev"

want=$build
[ $# -eq 0 ] && set -- build
for set in "$@"; do
  case "$set" in
    build) ;;
    test)  want="$want $test" ;;
    full)  want="$want $test $full" ;;
    bench) want="$want $bench" ;;
    bench-pg) want="$want $benchpg" ;;
    fuzz)  want="$want $fuzz" ;;
    all)   want="$want $test $full $bench $benchpg $fuzz" ;;
    *) echo "usage: $0 [build|test|full|bench|bench-pg|fuzz|all]... (unknown set '$set')" >&2; exit 2 ;;
  esac
done

missing=""
for p in $want; do
  case " $missing " in *" $p "*) continue ;; esac
  case "$p" in
    # node/npm may come from elsewhere than Debian; accept whatever is on PATH
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
    postgresql) command -v initdb >/dev/null 2>&1 && continue
                ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
missing=${missing# }
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "deps: missing Debian packages: $missing" >&2
  echo "deps: install them as root, then run make again:" >&2
  echo "deps:   sudo apt-get update && sudo apt-get install --no-install-recommends $missing" >&2
  exit 1
fi
log=$(mktemp "${TMPDIR:-/tmp}/rebound-deps.XXXXXX")
echo "deps: installing $missing (apt-get; log in $log)" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "deps: apt-get could not install: $missing (log above, whole in $log)" >&2
  exit 1
fi
rm -f "$log"
echo "deps: installed $missing" >&2
