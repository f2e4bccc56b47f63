# A throwaway PostgreSQL cluster for scripts that run Rebound in distributed
# mode (bench/run.sh's rebound-pg, tests/scripts/interop.sh): sourced, not run.
#   pg_cluster_start DIR LOG  initdb in DIR/pg (default durability settings,
#                             trust auth, a Unix socket in DIR only), start it
#                             on a random port, create database "rebound";
#                             sets pgurl; returns non-zero (LOG says why).
#                             As root, DIR's parents must be searchable by
#                             the postgres user.
#   pg_cluster_shared DIR LOG a test run's cluster (scripts/run-tests.sh):
#                             DIR/template (initdb'd, database "rebound",
#                             stopped cleanly: tests that restart PostgreSQL
#                             copy it) and DIR/shared started from it on a
#                             free 127.0.0.1 port with its socket in
#                             DIR/shared and test settings (fsync off, room
#                             for parallel suites); sets pg_cluster_port
#   pg_cluster_stop           stops the cluster pg_cluster_start or
#                             pg_cluster_shared started
#   pg_cluster_cpu PID        PostgreSQL's clock ticks so far: the
#                             postmaster PID's own and its children's, those
#                             it reaped included (bench/pg/statements.sh,
#                             bench/pg/floor.sh)
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

pg_cluster_shared() {
  [ -x "$pg_cluster_bin/initdb" ] || { echo "PostgreSQL is not installed (initdb not found)" >>"$2"; return 1; }
  mkdir -p "$1/template" "$1/shared" || return 1
  if [ "$(id -u)" = 0 ]; then chmod 755 "$1" "$1/template" "$1/shared" && chown postgres "$1/template" "$1/shared"; fi
  _t=$1/template _s=$1/shared
  pg_cluster_port=$(awk 'BEGIN { srand(); print 20000 + int(rand() * 40000) }')
  _opts="-p $pg_cluster_port -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
  pg_cluster_as "$pg_cluster_bin/initdb" -D "$_t/data" -A trust -U rebound -E UTF8 --no-sync --locale=C >>"$2" 2>&1 &&
    pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$_t/data" -l "$_t/pg.log" -w \
      -o "$_opts -k $_t" start >>"$2" 2>&1 &&
    pg_cluster_as "$pg_cluster_bin/psql" -X -q -h "$_t" -p "$pg_cluster_port" -U rebound -d postgres \
      -c "CREATE DATABASE rebound" >>"$2" 2>&1 &&
    pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$_t/data" -m fast -w stop >>"$2" 2>&1 &&
    pg_cluster_as cp -a "$_t/data" "$_s/data" >>"$2" 2>&1 &&
    pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$_s/data" -l "$_s/pg.log" -w \
      -o "$_opts -k $_s -c max_connections=300 -c shared_buffers=64MB" start >>"$2" 2>&1 &&
    pg_cluster_dir=$_s/data
}

pg_cluster_stop() {
  [ -n "$pg_cluster_dir" ] && pg_cluster_as "$pg_cluster_bin/pg_ctl" -D "$pg_cluster_dir" -m fast -w stop >/dev/null 2>&1
  pg_cluster_dir=""
}

pg_cluster_cpu() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v pm="$1" '{ pid = $1; st = $0; sub(/^.*\) /, "", st)
    split(st, f, " "); if (pid == pm) t += f[12] + f[13] + f[14] + f[15]
    else if (f[2] == pm) t += f[12] + f[13] } END { print t + 0 }'
}
