#!/bin/sh
# tier: full
# Dashboard tests in headless Chromium: installs Debian's chromium (as root,
# when missing) and playwright-core (npm, into tests/browser), starts
# `rebound serve` on free ports in a temporary directory, runs
# tests/browser/*.test.js, saves screenshots under tests/out/screenshots/,
# and stops the server. Exit 0 = pass.
#   REBOUND_BIN   the binary (default build/rebound)
#   REBOUND_TOP   the checkout (default: this script's ../..)
#   DASHBOARD_PNG when set, also writes the README screenshot there
#   GROUPS_PNG    when set, also writes the Groups page's screenshot there
#                 (docs/groups.png)
set -eu
top=${REBOUND_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
chromium=${CHROMIUM:-/usr/bin/chromium}

if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "browser: installing chromium" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2 ||
      { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2; }
  fi
  [ -x "$chromium" ] || { echo "browser: $chromium missing (sudo apt-get install chromium)" >&2; exit 1; }
fi
command -v node >/dev/null 2>&1 || { echo "browser: node missing (scripts/deps.sh test)" >&2; exit 1; }
if [ ! -d "$top/tests/browser/node_modules/playwright-core" ]; then
  echo "browser: installing playwright-core (npm)" >&2
  (cd "$top/tests/browser" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

dir=$(mktemp -d /tmp/rebound-browser-XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# Cron entries and a throttle for the Cron and Throttles pages (the test
# server's cron clock is moved to just before a new year: the yearly entry
# fires once, soon after the start).
cat >"$dir/rebound.toml" <<'EOF_CONFIG'
[[cron]]
name = "new-year-report"
schedule = "0 0 1 1 *"
[cron.job]
type = "YearlyReport"
queue = "cron"
args = ["summary"]

[[cron]]
name = "nightly-cleanup"
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
missed = "run_once"
[cron.job]
type = "Cleanup"
queue = "maintenance"

[throttles.images]
concurrency = 2
timeout = 60

[groups.outbox]
concurrency = 2
EOF_CONFIG

start_server() { # $1: database name
  rm -f "$dir/port" "$dir/http-port"
  "$bin" serve --config "$dir/rebound.toml" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --db "$dir/$1" \
    --port-file "$dir/port" --http-port-file "$dir/http-port" 2>>"$dir/log" &
  pid=$!
  i=0
  while [ ! -s "$dir/port" ]; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "browser: the server did not start:" >&2; cat "$dir/log" >&2; exit 1
    fi
    sleep 0.05
  done
  REBOUND_PORT=$(cat "$dir/port")
  REBOUND_HTTP_URL="http://127.0.0.1:$(cat "$dir/http-port")"
  REBOUND_LOG="$dir/log"
  export REBOUND_PORT REBOUND_HTTP_URL REBOUND_LOG
}

stop_server() {
  kill "$pid"
  st=0; wait "$pid" || st=$?
  pid=
  if [ $st -ne 0 ] || grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$dir/log"; then
    echo "browser: the server did not exit cleanly ($st):" >&2; cat "$dir/log" >&2; exit 1
  fi
}

export REBOUND_SCREENSHOTS="${REBOUND_SCREENSHOTS:-$top/tests/out/screenshots}" CHROMIUM="$chromium"
# the cron clock 3 s before the next 1 January, 00:00 UTC (server/cron.h)
now_ms=$(date +%s%3N)
new_year=$(date -u -d "$(($(date -u +%Y) + 1))-01-01T00:00:00Z" +%s)
REBOUND_FAULTS="cron.clock_offset_ms=$((new_year * 1000 - now_ms - 3000))"
export REBOUND_FAULTS
start_server test.db
unset REBOUND_FAULTS
(cd "$top/tests/browser" && node --test --test-concurrency=1 dashboard.test.js)
stop_server

if [ -n "${DASHBOARD_PNG:-}" ]; then
  start_server readme.db
  (cd "$top/tests/browser" && DASHBOARD_PNG="$DASHBOARD_PNG" node readme_screenshot.js)
  stop_server
fi
echo "browser: ok (screenshots in $REBOUND_SCREENSHOTS)"
