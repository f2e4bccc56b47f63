#!/bin/sh
# Installs the Debian packages Rebound's build and tests need, skipping those
# already present. Usage: scripts/deps.sh [build|test|bench|fuzz|all]  (default build)
set -e
want="build-essential pkg-config libevent-dev libsqlite3-dev libpq-dev libjansson-dev libssl-dev"
case "${1:-build}" in
  build) ;;
  test)  want="$want libcriterion-dev nodejs npm postgresql sqlite3 clang libclang-rt-14-dev chromium" ;;
  fuzz)  want="$want clang libclang-rt-14-dev" ;;
  bench) want="$want libcriterion-dev beanstalkd" ;;
  all)   want="$want libcriterion-dev nodejs npm postgresql beanstalkd chromium sqlite3 clang libclang-rt-14-dev" ;;
  *) echo "usage: $0 [build|test|bench|fuzz|all]" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  case "$p" in
    # node/npm may come from elsewhere than Debian; accept whatever is on PATH
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
    postgresql) command -v initdb >/dev/null 2>&1 && continue
                ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
if [ "$(id -u)" != 0 ]; then
  echo "deps: missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
