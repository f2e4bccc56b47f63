# Shared by the script suites that run the stock npm client against a real
# `rebound serve` (interop.sh, readme.sh): sourced, not run. The caller sets
# `suite` (its name, for messages), `bin` (the binary) and `tmp` (a temp dir).
#   need_faktory_worker DIR   node is there and faktory-worker is installed
#                             into DIR (npm install on first use)
#   start_server NAME [DB]    serves $tmp/NAME.toml from DB (default: the
#                             SQLite file $tmp/NAME.db), on a free port
#                             (waits for --port-file); sets pid, port
#   stop_server               stops it (SIGTERM, waits)

need_faktory_worker() {
  command -v node >/dev/null 2>&1 || { echo "$suite: node is missing (scripts/deps.sh test installs it)"; exit 1; }
  if [ ! -f "$1/node_modules/faktory-worker/package.json" ]; then
    echo "$suite: installing faktory-worker into $1"
    (cd "$1" && npm install --no-audit --no-fund --loglevel=error) || { echo "$suite: npm install failed"; exit 1; }
  fi
}

pid=
start_server() {
  rm -f "$tmp/$1.port"
  "$bin" serve --listen 127.0.0.1:0 --db "${2:-$tmp/$1.db}" --port-file "$tmp/$1.port" \
    --config "$tmp/$1.toml" >"$tmp/$1.log" 2>&1 &
  pid=$!
  _i=0
  while [ ! -s "$tmp/$1.port" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$suite: rebound serve exited early:"; cat "$tmp/$1.log"; exit 1
    fi
    _i=$((_i + 1))
    [ "$_i" -lt 300 ] || { echo "$suite: no port file after 30 s"; cat "$tmp/$1.log"; exit 1; }
    sleep 0.1 # polls the port file, which the server writes once it listens
  done
  port=$(cat "$tmp/$1.port")
}

stop_server() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  pid=
}
