#!/bin/bash
# tier: check
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
# The three layers (issue 28; docs/design.md "Layers"): the server (src/server/)
# reaches the jobs only through the engine (src/engine/engine.h), the engine
# and the backends (src/backend/sqlite/, src/backend/pg/) never include or
# call the server, and neither backend includes or calls the other; only
# the engine answers clients (no reply function named under src/backend/).
# Includes are read from the sources, calls from the normal build's objects
# ($O/obj: run after make). The engine's rb_backend_for_url is the one place
# that names both backends. Env: REBOUND_TOP, O. Exit 0 = pass.
set -u
top=${REBOUND_TOP:-$(pwd)}
cd "$top" || exit 1
obj=${O:-build}/obj/src
bad=0
fail() { echo "layers: $*"; bad=1; }

hits=$(grep -n '#include "\(server\|cli\)/' src/backend/*/*.[ch] src/engine/*.[ch])
[ -n "$hits" ] && fail "the engine or a backend includes the server:"$'\n'"$hits"
hits=$(grep -n '#include "backend/pg/' src/backend/sqlite/*.[ch]; grep -n '#include "backend/sqlite/' src/backend/pg/*.[ch])
[ -n "$hits" ] && fail "a backend includes the other:"$'\n'"$hits"
hits=$(grep -n '#include "backend/' src/server/*.[ch])
[ -n "$hits" ] && fail "the server includes a backend (use the engine's interface):"$'\n'"$hits"
hits=$(grep -n '#include "backend/' src/engine/*.[ch] | grep -v '^src/engine/engine\.c:')
[ -n "$hits" ] && fail "the engine names a backend outside rb_backend_for_url (engine.c):"$'\n'"$hits"
hits=$(grep -n '\brb_reply_\|\brb_conn_' src/backend/*/*.[ch] src/engine/*.[ch] | grep -v '^[^:]*:[0-9]*: *\(/\*\|\*\)')
[ -n "$hits" ] && fail "replies or connections used below the server:"$'\n'"$hits"

# calls, from the objects' symbol tables
defined() { for f in "$@"; do nm --defined-only "$f" | awk '$2 ~ /[TDBR]/ {print $3}'; done | sort -u; }
needed() { for f in "$@"; do nm -u "$f" | awk '{print $2}'; done | sort -u; }
objs() { # the objects of the sources in folder $1 (stale ones ignored)
  for c in src/$1/*.c; do o=$obj/${c#src/}; echo "${o%.c}.o"; done
}
for d in server backend/sqlite backend/pg engine; do
  for o in $(objs $d); do
    [ -f "$o" ] || { echo "layers: $o is missing (run make first)"; exit 1; }
  done
done
server=$(defined $(objs server) $(objs cli))
sq=$(defined $(objs backend/sqlite))
pg=$(defined $(objs backend/pg))
check_calls() { # what $1's objects call among the symbols $3 ($2 names them)
  local from=$1 what=$2 syms=$3 calls
  calls=$(comm -12 <(needed $(objs "$from")) <(printf '%s\n' "$syms"))
  [ -n "$calls" ] && fail "src/$from calls $what: $(echo $calls)"
}
check_calls engine "the server" "$server"
check_calls backend/sqlite "the server" "$server"
check_calls backend/pg "the server" "$server"
check_calls backend/sqlite "the PostgreSQL backend" "$pg"
check_calls backend/pg "the SQLite backend" "$sq"
check_calls server "a backend" "$(printf '%s\n%s\n' "$sq" "$pg" | sort -u)"
[ $bad -eq 0 ] && echo "layers: server -> engine -> backends, no call or include against the grain"
exit $bad
