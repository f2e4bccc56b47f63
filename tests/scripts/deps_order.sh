#!/bin/sh
# tier: full
# The Makefile installs packages before it compiles anything that needs them.
# Runs make with scripts/deps.sh replaced by a recording stub (DEPS=) and the
# compiler by one that records what it builds and writes empty outputs (CC=),
# then checks the order of the calls for each README command's goal: the
# install of every set the goal needs comes before the first compile, and a
# failed install stops make before any compile. Then scripts/deps.sh itself,
# as a non-root user on a machine missing everything (fake id, dpkg-query and
# apt-get on PATH): it names the packages and the apt-get line, installs nothing.
# Env: REBOUND_TOP (checkout). Exit 0 = pass.
set -u
top=${REBOUND_TOP:-$(pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/deps-order.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

log=$tmp/calls
mkdir -p "$tmp/bin"
# the recording stubs
cat >"$tmp/bin/deps" <<EOF
#!/bin/sh
echo "deps \$*" >>"$log"
exit \${STUB_DEPS_STATUS:-0}
EOF
cat >"$tmp/bin/cc" <<EOF
#!/bin/sh
out=""
while [ \$# -gt 0 ]; do
  case "\$1" in -o) out=\$2; shift ;; esac
  shift
done
echo "cc \$out" >>"$log"
case "\$out" in
  *.o) : >"\$out" ;;
  *) printf '#!/bin/sh\nexit 0\n' >"\$out"; chmod +x "\$out" ;;
esac
EOF
chmod +x "$tmp/bin/deps" "$tmp/bin/cc"

# run_make NAME GOAL...: a fresh build dir, make with the stubs; the calls in $log
run_make() {
  name=$1; shift
  rm -rf "$tmp/o" "$log"; : >"$log"
  make -C "$top" -j2 O="$tmp/o" DEPS="$tmp/bin/deps" CC="$tmp/bin/cc" \
    TEST_RUNNER=true BENCH_RUNNER=true FUZZ_RUNNER=true "$@" >"$tmp/$name.out" 2>&1
}

# order NAME SETS PATTERN: the first line of the log is "deps SETS", no other
# deps call follows, and some compile matching PATTERN happened after it.
order() {
  name=$1 sets=$2 pattern=$3
  first=$(head -n 1 "$log")
  if [ "$first" = "deps $sets" ]; then ok; else bad "$name: first call is '$first', want 'deps $sets'"; sed 's/^/  | /' "$tmp/$name.out" | tail -5; fi
  n=$(grep -c '^deps ' "$log")
  if [ "$n" -eq 1 ]; then ok; else bad "$name: $n deps calls, want 1"; grep '^deps ' "$log" | sed 's/^/  | /'; fi
  if grep -q "^cc .*$pattern" "$log"; then ok; else bad "$name: no compile of $pattern after the install"; fi
}

if run_make check check; then ok; else bad "make check with stubs failed:"; tail -5 "$tmp/check.out"; fi
order check "build test" "/obj/tests/server/test_.*\.o"
if grep -q '^cc .*/asan/' "$log"; then bad "make check built the sanitized tree"; else ok; fi

if run_make full check-full; then ok; else bad "make check-full with stubs failed:"; tail -5 "$tmp/full.out"; fi
order full "build test full" "/obj/tests/server/test_.*\.o"
order full "build test full" "/asan/obj/tests/unit/test_.*\.o"

if run_make run run; then ok; else bad "make run with stubs failed:"; tail -5 "$tmp/run.out"; fi
order run "build" "/rebound$"

if run_make bench bench; then ok; else bad "make bench with stubs failed:"; tail -5 "$tmp/bench.out"; fi
order bench "build bench" "/bench/loadgen$"

if run_make fuzz fuzz; then ok; else bad "make fuzz with stubs failed:"; tail -5 "$tmp/fuzz.out"; fi
order fuzz "build fuzz" "/rebound$"

# one test binary named on the command line needs Criterion too
if run_make one "$tmp/o/tests/test_common"; then ok; else bad "make of one test binary failed:"; tail -5 "$tmp/one.out"; fi
order one "build test" "/obj/tests/unit/test_common\.o"

# a failed install: make stops, names it, and compiles nothing
if STUB_DEPS_STATUS=1 run_make fail check; then bad "make check succeeded with a failing install"; else ok; fi
if grep -q '^cc ' "$log"; then bad "a failing install still compiled: $(grep -c '^cc ' "$log") calls"; else ok; fi
if grep -q 'failed (above): nothing was built' "$tmp/fail.out"; then ok; else bad "no failure message:"; sed 's/^/  | /' "$tmp/fail.out"; fi

# clean installs nothing
if run_make clean clean; then ok; else bad "make clean failed"; fi
if [ -s "$log" ]; then bad "make clean called: $(cat "$log")"; else ok; fi

# scripts/deps.sh as a non-root user with nothing installed
fake=$tmp/fake
mkdir -p "$fake"
printf '#!/bin/sh\n[ "$1" = -u ] && { echo 1000; exit 0; }\nexec /usr/bin/id "$@"\n' >"$fake/id"
printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg-query"
printf '#!/bin/sh\necho "apt-get $*" >>"%s"\n' "$log" >"$fake/apt-get"
for f in id dpkg-query apt-get; do chmod +x "$fake/$f"; done
# node, npm and initdb may be present: hide them by a PATH of only the basics
for f in sh grep mktemp tail rm cat ls; do ln -s "$(command -v $f)" "$fake/$f"; done
: >"$log"
PATH=$fake sh "$top/scripts/deps.sh" test >"$tmp/nonroot.out" 2>&1
st=$?
if [ "$st" -eq 1 ]; then ok; else bad "non-root deps.sh exited $st, want 1"; fi
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2':"; sed 's/^/  | /' "$1"; fi; }
has "$tmp/nonroot.out" "deps: missing Debian packages: build-essential pkg-config"
has "$tmp/nonroot.out" "libcriterion-dev"
has "$tmp/nonroot.out" "sudo apt-get install --no-install-recommends build-essential"
if [ -s "$log" ]; then bad "non-root deps.sh ran: $(cat "$log")"; else ok; fi
PATH=$fake sh "$top/scripts/deps.sh" tests >"$tmp/usage.out" 2>&1
st=$?
if [ "$st" -eq 2 ]; then ok; else bad "deps.sh with an unknown set exited $st, want 2"; fi
has "$tmp/usage.out" "unknown set 'tests'"

echo "deps_order: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
