#!/bin/sh
# tier: full
# `make install` and `make uninstall` (docs/operations.md): installs into a
# DESTDIR and checks the exact file list, the unit's paths, the config, the
# manual pages (rendered with man or groff, every subcommand in rebound(1),
# every schema setting in rebound.toml(5)), the bash completion, and
# `systemd-analyze verify` of the unit where systemd-analyze exists; then
# uninstalls and checks that nothing is left, and that a changed config is.
# Env: REBOUND_TOP (checkout), O (build dir, holding the built binary).
# Exit 0 = pass.
set -u
# run from `make check`: the outer make's flags and jobserver are not ours
unset MAKEFLAGS MFLAGS MAKELEVEL
top=${REBOUND_TOP:-$(pwd)}
O=${O:-build}
case "$O" in /*) ;; *) O="$top/$O" ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # description, command...
  what=$1; shift
  if "$@" >"$tmp/check.out" 2>&1; then ok; else bad "$what"; sed 's/^/  | /' "$tmp/check.out"; fi
}
mk() { make -C "$top" --no-print-directory O="$O" "$@"; }

dest=$tmp/dest
# docs/operations.md's staged line: prefix=/usr alone implies sysconfdir=/etc
# (issue 25: it once gave /usr/etc/rebound/rebound.toml)
dirs="prefix=/usr"
# shellcheck disable=SC2086
if ! mk install DESTDIR="$dest" $dirs >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "install.sh: make install failed"
  exit 1
fi

# --- exactly these files ---
cat >"$tmp/want" <<'EOF'
/etc/rebound/rebound.toml
/usr/bin/rebound
/usr/lib/systemd/system/rebound.service
/usr/lib/sysusers.d/rebound.conf
/usr/share/bash-completion/completions/rebound
/usr/share/doc/rebound/examples/rebound.toml
/usr/share/man/man1/rebound.1
/usr/share/man/man5/rebound.toml.5
EOF
(cd "$dest" && find . -type f -o -type l) | sed 's|^\.||' | sort >"$tmp/got"
check "installed files differ from the list" diff "$tmp/want" "$tmp/got"
bin=$dest/usr/bin/rebound
check "installed binary runs" "$bin" version
check "binary is mode 755" test "$(stat -c %a "$bin")" = 755
check "unit is mode 644" test "$(stat -c %a "$dest/usr/lib/systemd/system/rebound.service")" = 644

# --- the unit, with the directories filled in ---
unit=$dest/usr/lib/systemd/system/rebound.service
check "unit's ExecStart" grep -qx 'ExecStart=/usr/bin/rebound serve --config /etc/rebound/rebound.toml' "$unit"
check "unit keeps no @placeholder@" sh -c "! grep -n '@[a-z]*@' '$unit'"
for line in Type=notify WatchdogSec=30s User=rebound StateDirectory=rebound \
            ConfigurationDirectory=rebound ProtectSystem=strict NoNewPrivileges=yes \
            PrivateTmp=yes ProtectHome=yes WorkingDirectory=/var/lib/rebound; do
  check "unit lacks $line" grep -qx "$line" "$unit"
done

# --- one configuration path everywhere: the unit, both pages, the config's
# own header (agree ROOT SYSCONFDIR UNIT MANDIR: the installed tree under
# ROOT names SYSCONFDIR/rebound/rebound.toml and no other)
agree() {
  r=$1 want="$2/rebound/rebound.toml" u=$3 m=$4
  check "unit's --config is $want" grep -q -- "--config $want\$" "$r$u"
  for f in "$r$m/man1/rebound.1" "$r$m/man5/rebound.toml.5" "$r$2/rebound/rebound.toml"; do
    check "$(basename "$f") names $want" grep -qF "$want" "$f"
    check "$(basename "$f") names no other rebound.toml under an etc/" \
      sh -c "! grep -oE '[^ ]*etc/rebound/rebound.toml' '$f' | grep -vxF '$want'"
  done
}
agree "$dest" /etc /usr/lib/systemd/system/rebound.service /usr/share/man

# --- the config: the example's settings, all commented out at the defaults ---
conf=$dest/etc/rebound/rebound.toml
check "example installed verbatim" cmp "$top/rebound.toml" "$dest/usr/share/doc/rebound/examples/rebound.toml"
check "installed config is valid" "$bin" config check "$conf"
"$bin" config check "$conf" >"$tmp/conf.out" 2>&1
check "installed config sets nothing (all defaults)" sh -c "! grep -E '# (base file|overlay)' '$tmp/conf.out'"
# each schema setting appears in it, commented, as NAME = ...
"$bin" config reference | sed -n 's/^| `\([a-z_]*\)\.\([a-z_]*\)` .*/\1.\2/p' >"$tmp/settings"
check "schema reference lists settings" test -s "$tmp/settings"
while read -r s; do
  check "installed config lacks '#${s#*.} ='" grep -q "^#${s#*.} = " "$conf"
done <"$tmp/settings"

# --- manual pages: render without warnings ---
man1=$dest/usr/share/man/man1/rebound.1
man5=$dest/usr/share/man/man5/rebound.toml.5
for page in "$man1" "$man5"; do
  if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man --warnings -l "$page" >"$tmp/page.txt" 2>"$tmp/page.err"
    check "man -l $(basename "$page")" test $? -eq 0
    check "man warns about $(basename "$page")" sh -c "! test -s '$tmp/page.err' || { cat '$tmp/page.err'; false; }"
    check "$(basename "$page") renders text" grep -q 'NAME' "$tmp/page.txt"
  elif command -v groff >/dev/null 2>&1; then
    check "groff warns about $(basename "$page")" sh -c "test -z \"\$(groff -man -ww -z '$page' 2>&1)\""
  else
    echo "install.sh: neither man nor groff: checking $(basename "$page")'s roff minimally"
    check "$(basename "$page") has .TH" grep -q '^\.TH ' "$page"
  fi
  check "$(basename "$page") has NAME" grep -q '^\.SH NAME' "$page"
done

# rebound(1): a section for every subcommand `rebound help` lists, and no other
"$bin" help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' | sort >"$tmp/cmds"
sed -n 's/^\.SS \(.*\)/\1/p' "$man1" | sed 's/\\-/-/g' | sort >"$tmp/man_cmds"
check "help lists commands" test -s "$tmp/cmds"
check "rebound(1) sections differ from 'rebound help'" diff "$tmp/cmds" "$tmp/man_cmds"
# each one's options too (its --help is the page's text for it)
for c in $(cat "$tmp/cmds"); do
  [ "$c" = help ] && continue
  for opt in $("$bin" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    esc=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
    check "rebound(1) lacks $c's $opt" grep -q -- "$esc" "$man1"
  done
done

# rebound.toml(5): every schema setting under its [section], and no other
awk '/^\.SH/ {sec = ""; next}
     /^\.SS \[/ {sec = $2; gsub(/[][]/, "", sec); next}
     /^\.TP/ {tp = 1; next}
     tp && /^\.B / && sec != "" {k = $2; gsub(/\\-/, "-", k); print sec "." k}
     {tp = 0}' "$man5" | sort >"$tmp/man_settings"
sort "$tmp/settings" >"$tmp/settings.sorted"
check "rebound.toml(5) settings differ from the schema" diff "$tmp/settings.sorted" "$tmp/man_settings"

# --- bash completion, against the installed binary ---
comp=$dest/usr/share/bash-completion/completions/rebound
complete_words() { # words... (the last one is completed)
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _rebound; printf "%s\n" "${COMPREPLY[@]}"' \
    sh "$comp" "$bin" "$@"
}
if command -v bash >/dev/null 2>&1; then
  got=$(complete_words se); check "completion of 'se' is serve, got '$got'" test "$got" = serve
  got=$(complete_words serve --con); check "completion of 'serve --con', got '$got'" test "$got" = --config
  got=$(complete_words queue pa); check "completion of 'queue pa', got '$got'" test "$got" = pause
  got=$(complete_words config re); check "completion of 'config re', got '$got'" test "$got" = reference
  got=$(complete_words "" | wc -l); check "completion lists every command ($got)" test "$got" -eq "$(wc -l <"$tmp/cmds")"
else
  echo "install.sh: no bash: completion not exercised"
fi

# --- systemd-analyze verify, on a real prefix (its ExecStart and man: links resolve) ---
if command -v systemd-analyze >/dev/null 2>&1; then
  root=$tmp/root
  if mk install prefix="$root" >"$tmp/install2.log" 2>&1; then
    u=$root/lib/systemd/system/rebound.service
    MANPATH=$root/share/man systemd-analyze verify "$u" >"$tmp/verify.out" 2>&1
    rc=$?
    check "systemd-analyze verify exit $rc" test "$rc" -eq 0
    check "systemd-analyze verify said something" sh -c "! test -s '$tmp/verify.out' || { cat '$tmp/verify.out'; false; }"
    if systemd-analyze security --help 2>&1 | grep -q -- --offline; then
      check "systemd-analyze security: exposure above 2.0" \
        systemd-analyze security --offline=yes --threshold=20 "$u"
    fi
    mk uninstall prefix="$root" >/dev/null 2>&1
    check "uninstall of $root left files" test -z "$(find "$root" -type f)"
  else
    bad "make install prefix=$root"; cat "$tmp/install2.log"
  fi
else
  echo "install.sh: systemd-analyze not found: skipping 'systemd-analyze verify' of the unit"
fi

# --- another prefix: every path follows it, and uninstall takes it all back ---
opt=$tmp/opt
if mk install DESTDIR="$opt" prefix=/opt/rb >"$tmp/install4.log" 2>&1; then
  check "config under prefix=/opt/rb" test -f "$opt/opt/rb/etc/rebound/rebound.toml"
  agree "$opt" /opt/rb/etc /opt/rb/lib/systemd/system/rebound.service /opt/rb/share/man
  check "unit's ExecStart under prefix=/opt/rb" grep -qx \
    'ExecStart=/opt/rb/bin/rebound serve --config /opt/rb/etc/rebound/rebound.toml' \
    "$opt/opt/rb/lib/systemd/system/rebound.service"
  mk uninstall DESTDIR="$opt" prefix=/opt/rb >/dev/null 2>&1
  check "uninstall of prefix=/opt/rb left files: $(find "$opt" -type f)" test -z "$(find "$opt" -type f)"
else
  bad "make install prefix=/opt/rb"; cat "$tmp/install4.log"
fi
# an explicit sysconfdir wins over the /usr rule
sc=$tmp/sc
if mk install DESTDIR="$sc" prefix=/usr sysconfdir=/srv/conf >"$tmp/install5.log" 2>&1; then
  agree "$sc" /srv/conf /usr/lib/systemd/system/rebound.service /usr/share/man
  mk uninstall DESTDIR="$sc" prefix=/usr sysconfdir=/srv/conf >/dev/null 2>&1
  check "uninstall with sysconfdir=/srv/conf left files" test -z "$(find "$sc" -type f)"
else
  bad "make install sysconfdir=/srv/conf"; cat "$tmp/install5.log"
fi

# --- a second install keeps a changed config; uninstall leaves it and only it ---
echo '# changed by the admin' >>"$conf"
# shellcheck disable=SC2086
mk install DESTDIR="$dest" $dirs >"$tmp/install3.log" 2>&1
check "reinstall overwrote the changed config" grep -q 'changed by the admin' "$conf"
check "reinstall said it kept the config" grep -q "keeping the existing" "$tmp/install3.log"
# shellcheck disable=SC2086
mk uninstall DESTDIR="$dest" $dirs >"$tmp/uninstall.log" 2>&1
check "make uninstall" test $? -eq 0
(cd "$dest" && find . -type f) | sed 's|^\.||' >"$tmp/left"
check "uninstall left other than the changed config: $(cat "$tmp/left")" test "$(cat "$tmp/left")" = /etc/rebound/rebound.toml
rm -f "$conf"

# --- install, uninstall: nothing left, and our own directories gone ---
# shellcheck disable=SC2086
mk install DESTDIR="$dest" $dirs >/dev/null 2>&1 && mk uninstall DESTDIR="$dest" $dirs >/dev/null 2>&1
check "install + uninstall" test $? -eq 0
check "uninstall left files: $(cd "$dest" && find . -type f)" test -z "$(find "$dest" -type f -o -type l)"
for d in /etc/rebound /usr/share/doc/rebound; do
  check "uninstall left the directory $d" test ! -e "$dest$d"
done

echo "install.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
