#!/bin/sh
# tier: check
# The README quick start, as a newcomer runs it: examples/rebound.toml,
# examples/worker.js (the stock npm client faktory-worker, installed into
# tests/interop on first run) and the CLI against a real `rebound serve` on
# a free port in a temp dir, until the flaky job is dead after its 3 retries.
# Env: REBOUND_BIN (the binary), REBOUND_TOP (the checkout). Exit 0 = pass.
set -eu
top=${REBOUND_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
dir=$top/tests/interop
suite=readme
. "$top/tests/scripts/lib/serve.sh"
need_faktory_worker "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-readme.XXXXXX")
wpid=
cleanup() {
  if [ -n "$wpid" ] && kill -0 "$wpid" 2>/dev/null; then
    kill "$wpid" 2>/dev/null || true
    wait "$wpid" 2>/dev/null || true
  fi
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

{ printf '[server]\nhttp_listen = "127.0.0.1:0"\n\n'; cat "$top/examples/rebound.toml"; } >"$tmp/quick.toml"
start_server quick
export FAKTORY_URL="tcp://127.0.0.1:$port"
NODE_PATH="$dir/node_modules" node "$top/examples/worker.js" >"$tmp/worker.log" 2>&1 &
wpid=$!
"$bin" push hello '["world"]' >/dev/null
jid=$("$bin" push flaky --json | sed -n 's/.*"jid":"\([^"]*\)".*/\1/p')
[ -n "$jid" ] || { echo "readme: quick start: push printed no jid"; exit 1; }
i=0
until "$bin" job "$jid" --json 2>/dev/null | grep -q '"state":"dead"'; do
  i=$((i + 1))
  if [ "$i" -gt 600 ]; then
    echo "readme: quick start: flaky job $jid not dead after 60 s"
    "$bin" job "$jid" || true; cat "$tmp/worker.log"; exit 1
  fi
  sleep 0.1
done
qpass=0; qfail=0
expect() { if eval "$1"; then qpass=$((qpass + 1)); else qfail=$((qfail + 1)); echo "not ok - quick start: $2"; fi; }
expect 'grep -q "hello, world!" "$tmp/worker.log"' "the worker ran hello"
expect '[ "$(grep -c "flaky: attempt" "$tmp/worker.log")" -eq 4 ]' "flaky ran 4 times (3 retries)"
"$bin" job "$jid" >"$tmp/job.txt"
expect 'grep -q "^state  *dead" "$tmp/job.txt"' "rebound job shows the dead state"
expect '[ "$(grep -c " retry " "$tmp/job.txt")" -eq 3 ] && grep -q " dead " "$tmp/job.txt"' \
  "rebound job shows 3 retries then dead in the history"
"$bin" info >"$tmp/info.txt"
expect 'grep -q "1 dead" "$tmp/info.txt"' "rebound info counts the dead job"
if [ "$qfail" -ne 0 ]; then
  cat "$tmp/job.txt" "$tmp/info.txt" "$tmp/worker.log"
fi
echo "quick start: $qpass passed, $qfail failed"
[ "$qfail" -eq 0 ]
