#!/bin/sh
# test_toml_conformance on a plain clone (issue 25): without the toml-test
# corpus beside the checkout the cases are skipped, saying so, and the suite
# passes; with CI set a missing corpus fails; REBOUND_TOML_TEST names a
# corpus anywhere. Runs the Criterion binary from a directory with nothing
# beside it. Env: O (build dir), REBOUND_TOP. Exit 0 = pass.
set -u
top=${REBOUND_TOP:-$(pwd)}
t="$top/${O:-build}/tests/test_toml_conformance"
[ -x "$t" ] || { echo "toml_corpus: no $t (build it first)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-toml.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/clone"
passed=0; failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; sed 's/^/  /' "$tmp/out"; }

# plain clone: skipped, said plainly, exit 0
(cd "$tmp/clone" && env -u CI -u REBOUND_TOML_TEST REBOUND_TOP="$tmp/clone" "$t" >"$tmp/out" 2>&1)
st=$?
[ "$st" -eq 0 ] && ok || bad "plain clone: exit $st, want 0"
grep -q "conformance cases were SKIPPED: no corpus (set REBOUND_TOML_TEST" "$tmp/out" && ok \
  || bad "plain clone: no word that the cases were skipped"

# CI set: a missing corpus fails
(cd "$tmp/clone" && env -u REBOUND_TOML_TEST CI=true REBOUND_TOP="$tmp/clone" "$t" >"$tmp/out" 2>&1)
st=$?
[ "$st" -ne 0 ] && ok || bad "CI without the corpus: exit 0, want a failure"
grep -q "toml-test corpus not found and CI is set" "$tmp/out" && ok || bad "CI: no reason given"

# REBOUND_TOML_TEST naming no corpus fails, naming the variable
(cd "$tmp/clone" && env -u CI REBOUND_TOML_TEST="$tmp/none" REBOUND_TOP="$tmp/clone" "$t" >"$tmp/out" 2>&1)
st=$?
[ "$st" -ne 0 ] && ok || bad "REBOUND_TOML_TEST=$tmp/none: exit 0"
grep -q "REBOUND_TOML_TEST='$tmp/none' holds no toml-test corpus" "$tmp/out" && ok \
  || bad "bad REBOUND_TOML_TEST: no reason given"

# a corpus named by REBOUND_TOML_TEST runs (when this machine has one)
corpus=
for c in "${REBOUND_TOML_TEST:-}" "$top/../shared/toml-test"; do
  [ -n "$c" ] && [ -f "$c/tests/files-toml-1.0.0" ] && { corpus=$c; break; }
done
if [ -n "$corpus" ]; then
  (cd "$tmp/clone" && env -u CI REBOUND_TOML_TEST="$corpus" REBOUND_TOP="$tmp/clone" "$t" >"$tmp/out" 2>&1)
  st=$?
  [ "$st" -eq 0 ] && ok || bad "REBOUND_TOML_TEST=$corpus: exit $st"
  grep -q "Tested: 2 | Passing: 2" "$tmp/out" && ok || bad "the corpus's cases did not run"
else
  echo "toml_corpus: no toml-test corpus on this machine: the run with one is not checked"
fi

echo "toml_corpus: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
