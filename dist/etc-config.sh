#!/bin/sh
# Writes the configuration file installed as $(sysconfdir)/rebound/rebound.toml
# (the Debian package's conffile /etc/rebound/rebound.toml): the annotated
# example rebound.toml with every setting commented out at its default, so a
# fresh install runs on the built-in defaults (the example's retry policies
# for its sample queues and job types stay comments) and every setting is
# documented where it would be changed. The plain sections' headers
# ([server], [storage], ...) stay, so that an uncommented key lands in its
# own table.
# Usage: dist/etc-config.sh rebound.toml > out
set -e
src=${1:?usage: $0 rebound.toml}
cat <<'HEAD'
# The configuration of the rebound service (rebound.toml(5)). Every setting
# below is commented out at its default: uncomment one under its [section]
# and change it, then
#   rebound config check /etc/rebound/rebound.toml && systemctl restart rebound
# The service runs in /var/lib/rebound, so the default storage.url
# "./rebound.db" is /var/lib/rebound/rebound.db.
#
HEAD
awk '
/^\[[a-z_]+\][ \t]*$/ && $0 != "[retry]" { print; next }  # a plain section header
/^[^#]/ { print "#" $0; next }                             # a setting: commented out
{ print }                                                  # comments and blank lines
' "$src"
