#!/bin/sh
# Interop suite: the stock npm client faktory-worker (installed into
# tests/interop on first run) as producer and worker against a real
# `rebound serve` on a free port in a temp dir, with a password and a retry
# policy set in the config. Exit 0 = pass.
# Env: REBOUND_BIN (the binary), REBOUND_TOP (the checkout).
set -eu
top=${REBOUND_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
dir=$top/tests/interop

command -v node >/dev/null 2>&1 || { echo "interop: node is missing (scripts/deps.sh test installs it)"; exit 1; }
if [ ! -f "$dir/node_modules/faktory-worker/package.json" ]; then
  echo "interop: installing faktory-worker into tests/interop"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error) || { echo "interop: npm install failed"; exit 1; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-interop.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

password=interop-$$
cat > "$tmp/rebound.toml" <<EOT
[server]
listen = "127.0.0.1:0"
http_listen = "127.0.0.1:0"
password = "$password"

[retry.jobtypes.flaky]
ftl = "2 1s 1s"
EOT

"$bin" serve --listen 127.0.0.1:0 --db "$tmp/rebound.db" --port-file "$tmp/port" \
  --config "$tmp/rebound.toml" >"$tmp/server.log" 2>&1 &
pid=$!

# Wait for the port file (the server writes it once it listens).
i=0
while [ ! -s "$tmp/port" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "interop: rebound serve exited early:"; cat "$tmp/server.log"; exit 1
  fi
  i=$((i + 1))
  [ "$i" -lt 300 ] || { echo "interop: no port file after 30 s"; cat "$tmp/server.log"; exit 1; }
  sleep 0.1
done
port=$(cat "$tmp/port")

status=0
FAKTORY_URL="tcp://:$password@127.0.0.1:$port" node "$dir/interop.js" || status=$?
if [ "$status" -ne 0 ]; then
  echo "interop: failed; server log:"; tail -n 40 "$tmp/server.log"
fi
exit "$status"
