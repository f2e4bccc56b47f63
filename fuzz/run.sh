#!/bin/sh
# Builds the libFuzzer targets (fuzz/fuzz_*.c) with clang, ASan and UBSan into
# $O/fuzz/, then runs each for a set time on its corpus. Exit 0 only when no
# target crashed, leaked, timed out or broke an invariant.
#
# Usage: O=build fuzz/run.sh [--seconds N] [--target NAME]... [--build-only]
#   --seconds N   run each target N seconds (default $FUZZ_SECONDS or 60)
#   --target NAME only this target (duration, toml, policy, ftl, job, config,
#                 command, protocol); repeatable
#   --build-only  build the targets, run nothing
# The library sources are compiled once into $O/fuzz/obj (again when a source
# or header is newer). Seeds come from fuzz/corpus/NAME/ (kept small, in git);
# what the fuzzer finds goes to $O/fuzz/corpus/NAME/, and a crashing input to
# $O/fuzz/artifacts/NAME-crash-*: turn it into a test in
# tests/unit/test_fuzz_regressions.c.
set -e
O=${O:-build}
seconds=${FUZZ_SECONDS:-60}
targets=""
build_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --target) targets="$targets $2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz/run.sh: --seconds must be a whole number, got '$seconds'" >&2; exit 2 ;; esac
command -v clang >/dev/null 2>&1 || { echo "fuzz/run.sh: clang not found (scripts/deps.sh fuzz)" >&2; exit 1; }

out=$O/fuzz
mkdir -p "$out/obj" "$out/gen" "$out/artifacts"
# the Makefile's packages, so a library someone adds there is linked here too
pkgs=$(sed -n 's/^PKGS *:= *//p' Makefile)
[ -n "$pkgs" ] || pkgs="libevent libevent_pthreads sqlite3 libpq jansson openssl"
pkg_cflags=$(pkg-config --cflags $pkgs)
pkg_libs="$(pkg-config --libs $pkgs) -lm -pthread"
san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
# The library is built with its own warnings but without -Werror: a new clang
# warning in someone else's file must not stop the fuzzing of the others.
lib_flags="-std=c11 -D_GNU_SOURCE -pthread -Iinclude -Isrc -Wall -Wno-unused-parameter $pkg_cflags"
lib_san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"

# --- the library, once (clang, instrumented) ---
scripts/embed.sh $(ls web/* 2>/dev/null) > "$out/gen/web_assets.c.new"
if cmp -s "$out/gen/web_assets.c.new" "$out/gen/web_assets.c"; then rm "$out/gen/web_assets.c.new"
else mv "$out/gen/web_assets.c.new" "$out/gen/web_assets.c"; fi
# the PostgreSQL schema's migrations, as the Makefile embeds them
sh scripts/embed_schema.sh $(ls src/backend/pg/schema/[0-9][0-9][0-9][0-9].sql) > "$out/gen/pg_schema.c.new"
if cmp -s "$out/gen/pg_schema.c.new" "$out/gen/pg_schema.c"; then rm "$out/gen/pg_schema.c.new"
else mv "$out/gen/pg_schema.c.new" "$out/gen/pg_schema.c"; fi
newest_header=$(ls -t src/*/*.h src/*/*/*.h include/rebound/*.h 2>/dev/null | head -1)
stale=""
objs=""
for src in src/common/*.c src/policy/*.c src/config/*.c src/engine/*.c src/backend/sqlite/*.c src/backend/pg/*.c src/server/*.c \
           src/client/*.c "$out/gen/web_assets.c" "$out/gen/pg_schema.c"; do
  [ -f "$src" ] || continue
  obj="$out/obj/$(echo "$src" | sed "s|^$out/||; s|/|_|g; s|\.c$|.o|")"
  objs="$objs $obj"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || { [ -n "$newest_header" ] && [ "$newest_header" -nt "$obj" ]; }; then
    stale="$stale $src:$obj"
  fi
done
if [ -n "$stale" ]; then
  echo "fuzz: compiling $(echo $stale | wc -w) library files with clang" >&2
  # two at a time: the machine is shared
  echo $stale | tr ' ' '\n' | xargs -P 2 -I{} sh -c \
    'src=${1%%:*}; obj=${1#*:}; clang '"$lib_flags $lib_san"' -c "$src" -o "$obj" || { rm -f "$obj"; exit 1; }' _ {}
  rm -f "$out/librebound_fuzz.a"
fi
[ -f "$out/librebound_fuzz.a" ] || ar rcs "$out/librebound_fuzz.a" $objs

# --- the targets ---
all=$(ls fuzz/fuzz_*.c | sed 's|fuzz/fuzz_||; s|\.c$||')
[ -n "$targets" ] || targets=$(echo $all)
for t in $targets; do
  [ -f "fuzz/fuzz_$t.c" ] || { echo "fuzz/run.sh: no target '$t' (have: $(echo $all))" >&2; exit 2; }
  bin="$out/fuzz_$t"
  if [ ! -x "$bin" ] || [ "fuzz/fuzz_$t.c" -nt "$bin" ] || [ fuzz/fuzz.h -nt "$bin" ] ||
     [ "$out/librebound_fuzz.a" -nt "$bin" ]; then
    clang -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -Isrc -Ifuzz \
      $pkg_cflags $san "fuzz/fuzz_$t.c" "$out/librebound_fuzz.a" $pkg_libs -o "$bin"
  fi
done
[ "$build_only" = 1 ] && { echo "fuzz: built$targets in $out"; exit 0; }

# --- the runs ---
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=""
for t in $targets; do
  work="$out/corpus/$t"
  mkdir -p "$work"
  seeds="fuzz/corpus/$t"
  dict=""
  [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
  echo "== fuzz_$t for ${seconds}s"
  if "$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
       -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" $dict "$work" \
       $( [ -d "$seeds" ] && echo "$seeds" ) > "$out/fuzz_$t.log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$out/fuzz_$t.log" |
      tr '\n' ' ' | sed 's/stat:://g'; echo
  else
    failed="$failed $t"
    echo "fuzz_$t FAILED; its log ($out/fuzz_$t.log) ends:" >&2
    tail -40 "$out/fuzz_$t.log" >&2
    ls "$out/artifacts/$t-"* 2>/dev/null | sed 's/^/  input: /' >&2
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: failed:$failed" >&2
  exit 1
fi
echo "fuzz: all targets ran clean:$targets"
