#!/bin/sh
# tier: full
# Interop suite: the stock npm client faktory-worker (installed into
# tests/interop on first run), unchanged, against a real `rebound serve` on a
# free port in a temp dir: tests/interop/interop.js as producer and worker,
# with a password and a retry policy set in the config, then
# tests/interop/workflow.js (job dependencies sent in custom.depends_on),
# tests/interop/batch.js (BATCH through the client's generic send, members by
# custom.bid), tests/interop/unique.js (unique and expiring jobs) and
# tests/interop/track.js, each against the single node and against
# distributed mode. (The README quick start is readme.sh, in make check.)
# Env: REBOUND_BIN (the binary), REBOUND_TOP (the checkout). Exit 0 = pass.
set -eu
top=${REBOUND_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
dir=$top/tests/interop

suite=interop
. "$top/scripts/pg_cluster.sh"
. "$top/tests/scripts/lib/serve.sh"
need_faktory_worker "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-interop.XXXXXX")
cleanup() {
  stop_server
  pg_cluster_stop
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

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
