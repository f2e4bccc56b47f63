#!/bin/sh
# Interop suite: the stock npm client faktory-worker (installed into
# tests/interop on first run), unchanged, against a real `rebound serve` on a
# free port in a temp dir.
#  1. tests/interop/interop.js as producer and worker, with a password and a
#     retry policy set in the config, then tests/interop/workflow.js (job
#     dependencies sent in custom.depends_on) and tests/interop/batch.js
#     (BATCH through the client's generic send, members by custom.bid) and
#     tests/interop/unique.js (unique and expiring jobs), each against the
#     single node and against distributed mode;
#  2. the README quick start: examples/rebound.toml, examples/worker.js and the
#     CLI, until the flaky job is dead.
# Env: REBOUND_BIN (the binary), REBOUND_TOP (the checkout). Exit 0 = pass.
set -eu
top=${REBOUND_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
dir=$top/tests/interop

command -v node >/dev/null 2>&1 || { echo "interop: node is missing (scripts/deps.sh test installs it)"; exit 1; }
if [ ! -f "$dir/node_modules/faktory-worker/package.json" ]; then
  echo "interop: installing faktory-worker into tests/interop"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error) || { echo "interop: npm install failed"; exit 1; }
fi

. "$top/scripts/pg_cluster.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-interop.XXXXXX")
pid=; wpid=
stop_server() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  pid=
}
cleanup() {
  if [ -n "$wpid" ] && kill -0 "$wpid" 2>/dev/null; then
    kill "$wpid" 2>/dev/null || true
    wait "$wpid" 2>/dev/null || true
  fi
  stop_server
  pg_cluster_stop
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# start_server NAME [DB]: serves $tmp/NAME.toml from DB (default: the SQLite
# file $tmp/NAME.db); sets pid, port.
start_server() {
  rm -f "$tmp/$1.port"
  "$bin" serve --listen 127.0.0.1:0 --db "${2:-$tmp/$1.db}" --port-file "$tmp/$1.port" \
    --config "$tmp/$1.toml" >"$tmp/$1.log" 2>&1 &
  pid=$!
  i=0
  while [ ! -s "$tmp/$1.port" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "interop: rebound serve exited early:"; cat "$tmp/$1.log"; exit 1
    fi
    i=$((i + 1))
    [ "$i" -lt 300 ] || { echo "interop: no port file after 30 s"; cat "$tmp/$1.log"; exit 1; }
    sleep 0.1
  done
  port=$(cat "$tmp/$1.port")
}

# --- 1. faktory-worker as producer and worker --------------------------------
password=interop-$$
cat >"$tmp/interop.toml" <<EOT
[server]
listen = "127.0.0.1:0"
http_listen = "127.0.0.1:0"
password = "$password"

[retry.jobtypes.flaky]
ftl = "2 1s 1s"

[retry.jobtypes.step]
ftl = "2 1s 1s"
EOT
# Each script against the single node (SQLite), then against distributed
# mode (a throwaway PostgreSQL cluster): the stock client cannot tell them
# apart.
run_scripts() { # NAME SCRIPT...
  name=$1; shift
  for script in "$@"; do
    status=0
    FAKTORY_URL="tcp://:$password@127.0.0.1:$port" node "$dir/$script.js" || status=$?
    if [ "$status" -ne 0 ]; then
      echo "interop: $script failed ($name); server log:"; tail -n 40 "$tmp/interop.log"; exit "$status"
    fi
  done
}
start_server interop
run_scripts sqlite interop workflow batch unique track
stop_server
[ "$(id -u)" = 0 ] && chmod 755 "$tmp"
mkdir -p "$tmp/pgc"
pg_cluster_start "$tmp/pgc" "$tmp/pg-start.log" && "$bin" migrate --url "$pgurl" >>"$tmp/pg-start.log" 2>&1 ||
  { echo "interop: PostgreSQL did not start:"; cat "$tmp/pg-start.log"; exit 1; }
start_server interop "$pgurl"
echo "interop: the same against distributed mode (PostgreSQL)"
run_scripts postgresql interop workflow batch unique track
stop_server
pg_cluster_stop

# --- 2. the README quick start ------------------------------------------------
{ printf '[server]\nhttp_listen = "127.0.0.1:0"\n\n'; cat "$top/examples/rebound.toml"; } >"$tmp/quick.toml"
start_server quick
export FAKTORY_URL="tcp://127.0.0.1:$port"
NODE_PATH="$dir/node_modules" node "$top/examples/worker.js" >"$tmp/worker.log" 2>&1 &
wpid=$!
"$bin" push hello '["world"]' >/dev/null
jid=$("$bin" push flaky --json | sed -n 's/.*"jid":"\([^"]*\)".*/\1/p')
[ -n "$jid" ] || { echo "interop: quick start: push printed no jid"; exit 1; }
i=0
until "$bin" job "$jid" --json 2>/dev/null | grep -q '"state":"dead"'; do
  i=$((i + 1))
  if [ "$i" -gt 600 ]; then
    echo "interop: quick start: flaky job $jid not dead after 60 s"
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
