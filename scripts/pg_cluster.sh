# A throwaway PostgreSQL cluster for scripts that run Rebound in distributed
# mode (bench/run.sh's rebound-pg, tests/scripts/interop.sh): sourced, not run.
#   pg_cluster_start DIR LOG  initdb in DIR/pg (default durability settings,
#                             trust auth, a Unix socket in DIR only), start it
#                             on a random port, create database "rebound";
#                             sets pgurl; returns non-zero (LOG says why).
#                             As root, DIR's parents must be searchable by
#                             the postgres user.
#   pg_cluster_stop           stops the cluster pg_cluster_start started
# When run as root, PostgreSQL's tools run as the postgres user (DIR is made
# theirs). Needs the postgresql package (scripts/deps.sh test or bench).

pg_cluster_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
pg_cluster_dir=""

pg_cluster_as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_cluster_start() {
  [ -x "$pg_cluster_bin/initdb" ] || { echo "PostgreSQL is not installed (initdb not found)" >>"$2"; return 1; }
  if [ "$(id -u)" = 0 ]; then chmod 755 "$1" && chown postgres "$1"; fi
  _port=$(awk 'BEGIN { srand(); print 20000 + int(rand() * 40000) }')
  pg_cluster_as "$pg_cluster_bin/initdb" -D "$1/pg" -A trust -U rebound -E UTF8 --locale=C >>"$2" 2>&1 &&
    pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$1/pg" -l "$1/pg.log" -w \
      -o "-p $_port -k $1 -c listen_addresses=''" start >>"$2" 2>&1 &&
    pg_cluster_dir=$1/pg &&
    pg_cluster_as "$pg_cluster_bin/psql" -X -q -h "$1" -p "$_port" -U rebound -d postgres \
      -c "CREATE DATABASE rebound" >>"$2" 2>&1 &&
    pgurl="postgresql://rebound@/rebound?host=$1&port=$_port"
}

pg_cluster_stop() {
  [ -n "$pg_cluster_dir" ] && pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$pg_cluster_dir" -m fast -w stop >/dev/null 2>&1
  pg_cluster_dir=""
}
