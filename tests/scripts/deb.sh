#!/bin/sh
# tier: full
# The Debian package (debian/, docs/operations.md): builds it with
# `dpkg-buildpackage -us -uc -b` in a temporary copy of the tree, checks the
# .deb's exact file list, its conffile, its dependencies and maintainer
# scripts, runs lintian (an error fails the test), unpacks it into a
# scratch root with `dpkg -x` and runs what it ships, and runs the
# maintainer scripts against recording stubs to check what they would do
# to a system (user, state directory, permissions, service).
# Env: REBOUND_TOP (checkout). Exit 0 = pass.
set -u
# run from `make check`: the outer make's flags and jobserver are not ours
unset MAKEFLAGS MFLAGS MAKELEVEL
top=${REBOUND_TOP:-$(pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # description, command...
  what=$1; shift
  if "$@" >"$tmp/check.out" 2>&1; then ok; else bad "$what"; sed 's/^/  | /' "$tmp/check.out"; fi
}

for tool in dpkg-buildpackage dh lintian dpkg-deb; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "deb.sh: $tool is missing (scripts/deps.sh test installs dpkg-dev, debhelper, lintian)"
    exit 1
  fi
done

# --- build, in a copy of the tree without build outputs ---
src=$tmp/src
mkdir -p "$src"
tar -C "$top" --exclude=./.git --exclude='./build*' --exclude=node_modules --exclude=./tests/out \
  --exclude='*.db' --exclude='*.db-wal' --exclude='*.db-shm' -cf - . | tar -C "$src" -xf -
jobs=$(nproc 2>/dev/null || echo 2)
if ! (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" dpkg-buildpackage -us -uc -b) \
     >"$tmp/build.log" 2>&1; then
  tail -n 40 "$tmp/build.log"
  echo "deb.sh: dpkg-buildpackage failed (whole log above, last 40 lines)"
  exit 1
fi
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
deb=$tmp/rebound_${version}_$(dpkg --print-architecture).deb
check "built $deb" test -f "$deb"
check "debian/changelog's version is the binary's ($version)" \
  sh -c "'$src/build-deb/rebound' version | grep -q '^rebound ${version%%-*} '"

# --- contents: exactly these files ---
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||; s|^|/|' | sort >"$tmp/files"
unitdir=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed -n 's|^\./\(.*\)/rebound\.service$|/\1|p')
sort >"$tmp/want" <<EOF
/etc/rebound/rebound.toml
$unitdir/rebound.service
/usr/bin/rebound
/usr/lib/sysusers.d/rebound.conf
/usr/share/bash-completion/completions/rebound
/usr/share/doc/rebound/README.md.gz
/usr/share/doc/rebound/changelog.gz
/usr/share/doc/rebound/configuration.md.gz
/usr/share/doc/rebound/copyright
/usr/share/doc/rebound/examples/rebound.toml
/usr/share/doc/rebound/operations.md.gz
/usr/share/man/man1/rebound.1.gz
/usr/share/man/man5/rebound.toml.5.gz
EOF
check "the unit is under a systemd unit directory ($unitdir)" \
  sh -c "case '$unitdir' in /lib/systemd/system|/usr/lib/systemd/system) ;; *) false ;; esac"
check "package files differ from the list" diff "$tmp/want" "$tmp/files"
check "/usr/bin/rebound is mode 755, root" sh -c "dpkg-deb -c '$deb' | grep -q '^-rwxr-xr-x root/root .* \./usr/bin/rebound$'"

# --- control: conffile, dependencies, maintainer scripts ---
ctl=$tmp/control
dpkg-deb -e "$deb" "$ctl"
check "conffiles is /etc/rebound/rebound.toml" test "$(cat "$ctl/conffiles")" = /etc/rebound/rebound.toml
depends=$(dpkg-deb -f "$deb" Depends)
for d in adduser libevent libsqlite3 libpq5 libjansson4 libssl3; do
  check "Depends lacks $d: $depends" sh -c "echo '$depends' | grep -q '$d'"
done
for s in postinst postrm prerm; do
  check "$s is executable" test -x "$ctl/$s"
  check "$s is valid sh" sh -n "$ctl/$s"
done
check "postinst enables the service (dh_installsystemd)" grep -q "deb-systemd-helper enable 'rebound.service'" "$ctl/postinst"
check "prerm stops the service" grep -q "rebound.service" "$ctl/prerm"

# --- lintian: no errors (warnings are printed) ---
lintian --fail-on error "$deb" >"$tmp/lintian.out" 2>&1
rc=$?
grep -v '^running with root privileges' "$tmp/lintian.out"
check "lintian exit $rc (errors above)" test "$rc" -eq 0
check "lintian reports no error" sh -c "! grep -q '^E: ' '$tmp/lintian.out'"

# --- unpacked in a scratch root: what it ships works ---
root=$tmp/root
dpkg -x "$deb" "$root"
check "unpacked binary runs" "$root/usr/bin/rebound" version
check "the shipped config is valid and all defaults" sh -c \
  "'$root/usr/bin/rebound' config check '$root/etc/rebound/rebound.toml' > '$tmp/conf.out' && ! grep -qE '# (base file|overlay)' '$tmp/conf.out'"
unit=$root$unitdir/rebound.service
check "unit runs /usr/bin/rebound with /etc/rebound/rebound.toml" \
  grep -qx 'ExecStart=/usr/bin/rebound serve --config /etc/rebound/rebound.toml' "$unit"
check "unit is Type=notify" grep -qx 'Type=notify' "$unit"
if command -v man >/dev/null 2>&1; then
  check "rebound(1) renders from the package" sh -c "MANWIDTH=80 man -l '$root/usr/share/man/man1/rebound.1.gz' | grep -q 'rebound serve'"
  check "rebound.toml(5) renders from the package" sh -c "MANWIDTH=80 man -l '$root/usr/share/man/man5/rebound.toml.5.gz' | grep -q 'max_connections'"
fi
# the server itself starts from the unpacked tree and answers
dir=$tmp/run
mkdir -p "$dir"
"$root/usr/bin/rebound" serve --config "$root/etc/rebound/rebound.toml" --listen 127.0.0.1:0 \
  --http-listen off --db "$dir/rebound.db" --port-file "$dir/port" 2>"$dir/log" &
pid=$!
i=0
while [ ! -s "$dir/port" ] && [ $i -lt 200 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
check "the packaged server started" test -s "$dir/port"
if [ -s "$dir/port" ]; then
  check "the packaged client pushes to it" "$root/usr/bin/rebound" push deb.test --url "tcp://127.0.0.1:$(cat "$dir/port")"
fi
kill -TERM $pid 2>/dev/null
wait $pid
st=$?
check "the packaged server stopped cleanly on SIGTERM (status $st)" test "$st" -eq 0

# --- maintainer scripts against recording stubs ---
stubs=$tmp/stubs
mkdir -p "$stubs"
for c in adduser install dpkg-statoverride deb-systemd-helper deb-systemd-invoke systemctl rm; do
  printf '#!/bin/sh\necho "%s $*" >> "%s"\nexit 0\n' "$c" "$tmp/calls" >"$stubs/$c"
  chmod +x "$stubs/$c"
done
# getent: no such user yet; dpkg-statoverride --list: no override yet
printf '#!/bin/sh\necho "getent $*" >> "%s"\nexit 2\n' "$tmp/calls" >"$stubs/getent"
printf '#!/bin/sh\necho "dpkg-statoverride $*" >> "%s"\ncase "$1" in --list) exit 1 ;; esac\nexit 0\n' \
  "$tmp/calls" >"$stubs/dpkg-statoverride"
chmod +x "$stubs/getent" "$stubs/dpkg-statoverride"
: >"$tmp/calls"
if [ -d /var/lib/rebound ]; then
  echo "deb.sh: /var/lib/rebound exists here: the postinst's mkdir is not exercised"
fi
check "postinst configure" env PATH="$stubs:$PATH" sh "$ctl/postinst" configure
check "postinst creates the system user rebound" \
  grep -qx 'adduser --system --group --quiet --home /var/lib/rebound --no-create-home rebound' "$tmp/calls"
[ -d /var/lib/rebound ] ||
  check "postinst creates /var/lib/rebound for rebound, 0750" \
    grep -qx 'install -d -o rebound -g rebound -m 0750 /var/lib/rebound' "$tmp/calls"
check "postinst makes the config readable by rebound only" \
  grep -qx 'dpkg-statoverride --update --add root rebound 0640 /etc/rebound/rebound.toml' "$tmp/calls"
check "postinst enables rebound.service" grep -qx 'deb-systemd-helper enable rebound.service' "$tmp/calls"
: >"$tmp/calls"
check "postrm purge" env PATH="$stubs:$PATH" sh "$ctl/postrm" purge
check "postrm purge removes the state directory" grep -qx 'rm -rf /var/lib/rebound' "$tmp/calls"
check "postrm purge drops the override" grep -qx 'dpkg-statoverride --remove /etc/rebound/rebound.toml' "$tmp/calls"
: >"$tmp/calls"
check "postrm remove" env PATH="$stubs:$PATH" sh "$ctl/postrm" remove
check "postrm remove keeps the state directory" sh -c "! grep -q '/var/lib/rebound' '$tmp/calls'"

echo "deb.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
