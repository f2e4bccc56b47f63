#!/bin/sh
# tier: full
# TLS interop suite: a self-signed certificate from the openssl command line,
# `rebound serve` with server.tls_cert/tls_key on a free port, then
#  1. the stock npm client faktory-worker (tests/interop/tls_interop.js) as
#     producer and worker over TLS, verifying the certificate as its CA;
#  2. the rebound CLI over tcp+tls:// (trusting the certificate through
#     $SSL_CERT_FILE), and refusing the connection when it is not trusted;
#  3. Node's https module against the HTTP API, which is HTTPS with the same
#     certificate (and basic auth over it), refusing it without the CA.
# Env: REBOUND_BIN (the binary), REBOUND_TOP (the checkout). Exit 0 = pass.
set -eu
top=${REBOUND_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
dir=$top/tests/interop

command -v openssl >/dev/null 2>&1 || { echo "tls_interop: the openssl command is missing"; exit 1; }
suite=tls_interop
. "$top/tests/scripts/lib/serve.sh"
need_faktory_worker "$dir"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-tls.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -subj /CN=rebound-tls-test \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1 \
  || { echo "tls_interop: openssl could not make a certificate"; exit 1; }
cat >"$tmp/tls.toml" <<EOT
[server]
http_listen = "127.0.0.1:0"
tls_cert = "$tmp/cert.pem"
tls_key = "$tmp/key.pem"
password = "tls-$$"
EOT

"$bin" serve --listen 127.0.0.1:0 --db "$tmp/tls.db" --port-file "$tmp/port" \
  --http-port-file "$tmp/http-port" --config "$tmp/tls.toml" >"$tmp/log" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
  kill -0 "$pid" 2>/dev/null || { echo "tls_interop: rebound serve exited early:"; cat "$tmp/log"; exit 1; }
  i=$((i + 1))
  [ "$i" -lt 300 ] || { echo "tls_interop: no port file after 30 s"; cat "$tmp/log"; exit 1; }
  sleep 0.1
done
port=$(cat "$tmp/port")
grep -q "port $port, tls" "$tmp/log" || { echo "tls_interop: the server does not say it serves tls"; cat "$tmp/log"; exit 1; }

# --- 1. faktory-worker over TLS ------------------------------------------------
status=0
FAKTORY_URL="tcp://:tls-$$@127.0.0.1:$port" REBOUND_TLS_CA="$tmp/cert.pem" node "$dir/tls_interop.js" || status=$?
if [ "$status" -ne 0 ]; then
  echo "tls_interop: failed; server log:"; tail -n 40 "$tmp/log"; exit "$status"
fi

# --- 2. the CLI over tcp+tls:// -------------------------------------------------
pass=0; fail=0
expect() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "not ok - cli: $2"; fi; }
url="tcp+tls://:tls-$$@127.0.0.1:$port"
SSL_CERT_FILE="$tmp/cert.pem" "$bin" push cli_tls '[1]' --url "$url" --jid tls-cli-job-000001 >"$tmp/push.out" 2>&1 || true
expect 'grep -q "pushed tls-cli-job-000001" "$tmp/push.out"' "rebound push over tcp+tls:// (got: $(cat "$tmp/push.out"))"
SSL_CERT_FILE="$tmp/cert.pem" "$bin" job tls-cli-job-000001 --url "$url" >"$tmp/job.out" 2>&1 || true
expect 'grep -q "^state  *enqueued" "$tmp/job.out"' "rebound job over tcp+tls:// shows the pushed job"
rc=0
SSL_CERT_FILE=/dev/null "$bin" info --url "$url" >"$tmp/untrusted.out" 2>&1 || rc=$?
expect '[ "$rc" -eq 1 ] && grep -q "certificate not trusted" "$tmp/untrusted.out"' \
  "an untrusted certificate is refused with exit 1 (rc $rc: $(cat "$tmp/untrusted.out"))"
echo "tls cli: $pass passed, $fail failed"

# --- 3. the HTTP API over HTTPS ---------------------------------------------------
hport=$(cat "$tmp/http-port")
# node -e SCRIPT CA PASSWORD: prints "STATUS BODY", or "error CODE"
get='const [ca, pw] = process.argv.slice(1);
const o = { host: "127.0.0.1", port: '"$hport"', path: "/api/info", ca: ca ? require("fs").readFileSync(ca) : undefined,
            headers: pw ? { Authorization: "Basic " + Buffer.from("u:" + pw).toString("base64") } : {} };
require("https").get(o, (r) => { let b = ""; r.on("data", (d) => (b += d)); r.on("end", () => console.log(r.statusCode, b)); })
  .on("error", (e) => console.log("error", e.code));'
node -e "$get" "$tmp/cert.pem" "tls-$$" >"$tmp/https.out" 2>&1 || true
expect 'grep -q "^200 .*\"name\":\"Rebound\"" "$tmp/https.out"' "GET /api/info over HTTPS with the password (got: $(cat "$tmp/https.out"))"
node -e "$get" "$tmp/cert.pem" "" >"$tmp/https-noauth.out" 2>&1 || true
expect 'grep -q "^401 " "$tmp/https-noauth.out"' "GET /api/info over HTTPS without the password is 401 (got: $(cat "$tmp/https-noauth.out"))"
node -e "$get" "" "tls-$$" >"$tmp/https-untrusted.out" 2>&1 || true
expect 'grep -qE "^error [A-Z_]*SELF_SIGNED_CERT" "$tmp/https-untrusted.out"' "HTTPS without the CA is refused (got: $(cat "$tmp/https-untrusted.out"))"
expect 'grep -q "dashboard and API on https://" "$tmp/log"' "the log says https://"
echo "tls cli and https: $pass passed, $fail failed"

kill "$pid"; wait "$pid" || { echo "tls_interop: the server did not exit cleanly"; cat "$tmp/log"; exit 1; }
pid=
[ "$fail" -eq 0 ]
