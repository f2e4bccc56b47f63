#!/bin/sh
# tier: check
# `rebound config` end to end (check, --env, REBOUND_ENV, --json, reference,
# exit codes and the one-line errors) and the toml_decode test tool.
# Env: REBOUND_BIN (the binary), REBOUND_TOP (checkout), O (build dir).
# Exit 0 = pass.
set -u
top=${REBOUND_TOP:-$(pwd)}
bin=${REBOUND_BIN:-$top/build/rebound}
O=${O:-build}
case "$O" in /*) ;; *) O="$top/$O" ;; esac
decode="$O/tools/toml_decode"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/config-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
passed=0 failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect CODE OUTFILE CMD...: runs CMD, checks the exit code.
expect() {
  want=$1 out=$2; shift 2
  "$@" >"$out" 2>"$out.err"
  got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, want $want: $(cat "$out.err")"; fi
}
# has FILE TEXT: FILE contains the line-fragment TEXT.
has() {
  if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2':"; sed 's/^/  | /' "$1"; fi
}

# No file: defaults only.
unset REBOUND_ENV
expect 0 out "$bin" config check
has out 'listen = "127.0.0.1:7419"'
has out '# default'

# The shipped example is valid.
expect 0 out "$bin" config check "$top/rebound.toml"
has out '[retry.jobtypes.send_email]  # base file'

# Base + overlay, by flag and by REBOUND_ENV; the flag wins.
mkdir conf
cat > conf/rebound.toml <<'EOF'
[server]
max_connections = 10
[backoff]
default_backoff_seconds = [1, 2, 3]
EOF
printf '[server]\nmax_connections = 20\n[backoff]\ndefault_backoff_seconds = [9]\n' > conf/rebound.prod.toml
printf '[server]\nmax_connections = 30\n' > conf/rebound.dev.toml
expect 0 out "$bin" config check conf/rebound.toml --env prod
has out 'max_connections = 20'
has out 'default_backoff_seconds = [9]'
has out '# effective configuration: base file conf/rebound.toml, overlay conf/rebound.prod.toml'
REBOUND_ENV=dev expect 0 out "$bin" config check conf/rebound.toml
has out 'max_connections = 30'
REBOUND_ENV=dev expect 0 out "$bin" config check conf/rebound.toml --env=prod
has out 'max_connections = 20'

# Every subcommand that reads the config resolves the environment the same
# way (--env, else REBOUND_ENV): serve, policy and migrate refuse a missing
# overlay as config check does, naming the file REBOUND_ENV chose (a serve
# that ignored it would run: timeout stops it, exit 124).
REBOUND_ENV=nope expect 1 out timeout 10 "$bin" serve --config conf/rebound.toml --listen 127.0.0.1:0 \
  --http-listen off --db "$tmp/env.db"
has out.err "cannot read 'conf/rebound.nope.toml'"
REBOUND_ENV=nope expect 1 out "$bin" policy simulate --config conf/rebound.toml --jobtype t
has out.err "cannot read 'conf/rebound.nope.toml'"
REBOUND_ENV=nope expect 1 out "$bin" migrate --config conf/rebound.toml --url postgres://127.0.0.1:1/x
has out.err "cannot read 'conf/rebound.nope.toml'"

# --json
expect 0 out.json "$bin" config check conf/rebound.toml --env prod --json
has out.json '"overlay":"conf/rebound.prod.toml"'
has out.json '"from":"overlay"'

# Bad input: exit 2 with one line naming file, line, key and rule.
printf '[server]\nlisten = "127.0.0.1:7419"\nmax_conections = 5\n' > typo.toml
expect 2 out "$bin" config check typo.toml
if [ "$(wc -l < out.err)" -eq 1 ]; then ok; else bad "error is not one line: $(cat out.err)"; fi
has out.err "rebound: typo.toml:3: key 'server.max_conections': unknown key (did you mean 'server.max_connections'?)"
printf '[storage]\nurl = 5\n' > type.toml
expect 2 out "$bin" config check type.toml
has out.err "rebound: type.toml:2: key 'storage.url': must be a SQLite file path or a postgres:// URL"
printf 'a = [1,\n' > syntax.toml
expect 2 out "$bin" config check syntax.toml
has out.err "rebound: syntax.toml:2:1: unterminated array"
expect 1 out "$bin" config check missing.toml
has out.err "rebound: cannot read 'missing.toml'"
expect 1 out "$bin" config check conf/rebound.toml --env nope
has out.err "cannot read 'conf/rebound.nope.toml'"

# Usage errors
expect 2 out "$bin" config
expect 2 out "$bin" config frob
expect 2 out "$bin" config check a.toml b.toml
expect 2 out "$bin" config check --env
expect 2 out "$bin" config check --bogus
expect 0 out "$bin" config --help
has out 'usage: rebound config check'

# The reference is the one in the docs.
expect 0 ref.md "$bin" config reference
sed -n '/<!-- schema:begin -->/,/<!-- schema:end -->/p' "$top/docs/configuration.md" | sed '1d;$d' > doc.md
if cmp -s ref.md doc.md; then ok; else bad "docs/configuration.md reference differs from 'rebound config reference'"; fi

# toml_decode prints tagged JSON, and rejects bad TOML with line and column.
if [ -x "$decode" ]; then
  printf 'n = 1\n[t]\ns = "x"\n' > d.toml
  expect 0 d.json "$decode" d.toml
  has d.json '"type": "integer"'
  has d.json '"value": "x"'
  expect 0 d2.json sh -c "\"$decode\" < d.toml"
  if cmp -s d.json d2.json; then ok; else bad "toml_decode stdin and file differ"; fi
  printf 'n = 1\nn = 2\n' > dup.toml
  expect 1 out "$decode" dup.toml
  has out.err "line 2, column 1: duplicate key 'n'"
else
  bad "toml_decode not built at $decode"
fi

echo "config_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
