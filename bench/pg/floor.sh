#!/bin/sh
# The floor under issue 29's PUSHB 500 target: what the database's CPU per
# job is when a job's whole life is the least any PostgreSQL queue can do
# with a row per job — pushed 500 per statement, claimed and deleted by one
# transaction per eight jobs (the most a batch holds with eight stock
# workers, each waiting for its ACK's +OK: bench/RESULTS.md, session 16),
# plain statements, no ownership check, no counters.
#   bare:   a table with a primary key and two partial indexes (ready jobs
#           by queue and order; leased and scheduled jobs by time);
#   schema: Rebound's own rb_jobs (`rebound migrate`: its columns, indexes
#           and triggers) with the same plain statements.
# pgbench, one client, 1,290 transactions a run (one in 63, seeded, a push of 500,
# the rest ACK-and-claim of eight; about 10,000 jobs, bench-pg's run), on a
# throwaway cluster with default durability settings; PostgreSQL CPU per
# job as bench/pg/run.sh measures it (/proc: the postmaster, its children,
# and those reaped). Rebound's own figure for the same shape is
# `bench/pg/statements.sh --push-batch 500 --prefetch`.
# Usage: O=build bench/pg/floor.sh [--rounds N]   (default 3; medians)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
O=${O:-build}
REBOUND=${REBOUND:-$here/../../$O/rebound}
rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "floor: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done
case $rounds in ''|*[!0-9]*|0) echo "floor: --rounds takes a positive number" >&2; exit 2 ;; esac
. "$here/../../scripts/pg_cluster.sh"
[ -x "$REBOUND" ] || { echo "floor: $REBOUND is missing (make O=$O)" >&2; exit 1; }
[ -x "$pg_cluster_bin/pgbench" ] || { echo "floor: pgbench is missing (scripts/deps.sh bench-pg)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-floor.XXXXXX")
trap 'pg_cluster_stop; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
pg_cluster_start "$tmp" "$tmp/pg.out" || { cat "$tmp/pg.out" >&2; exit 1; }
"$REBOUND" migrate --url "$pgurl" >"$tmp/migrate.out" 2>&1 || { cat "$tmp/migrate.out" >&2; exit 1; }
port=${pgurl##*port=}
psqlc() { pg_cluster_as "$pg_cluster_bin/psql" -X -q -At -h "$tmp" -p "$port" -U rebound -d rebound -c "$1"; }
pm=$(head -1 "$pg_cluster_dir/postmaster.pid")
body="'{\"jid\":\"' || md5(g::text) || '\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"q\"}'"
cat >"$tmp/bare.sql" <<EOF
\\set r random(1, 63)
\\if :r = 1
INSERT INTO j (queue, state, run_at, payload) SELECT 'q', 2, 0, $body FROM generate_series(1, 500) g;
\\else
BEGIN;
DELETE FROM j WHERE state = 3 AND run_at > 0;
UPDATE j SET state = 3, wid = 'w', run_at = 1000 FROM (SELECT id FROM j WHERE state = 2 AND queue = 'q'
  ORDER BY priority DESC, id LIMIT 8 FOR UPDATE SKIP LOCKED) c WHERE j.id = c.id;
COMMIT;
\\endif
EOF
cat >"$tmp/schema.sql" <<EOF
\\set r random(1, 63)
\\if :r = 1
INSERT INTO rb_jobs (jid, state, queue, priority, due_ms, enq_ms, first_ms, reserve_s, json)
  SELECT md5(random()::text), 2, 'q', 0, 0, 1, 1, 1800, $body FROM generate_series(1, 500) g;
\\else
BEGIN;
DELETE FROM rb_jobs WHERE state = 3 AND due_ms > 0;
UPDATE rb_jobs j SET state = 3, wid = 'w', attempts = j.attempts + 1, due_ms = 1000 + j.reserve_s * 1000
  FROM (SELECT jid FROM rb_jobs WHERE state = 2 AND queue = 'q' AND grp = ''
  ORDER BY priority DESC, seq LIMIT 8 FOR UPDATE SKIP LOCKED) c WHERE j.jid = c.jid;
COMMIT;
\\endif
EOF
reset_bare="DROP TABLE IF EXISTS j; CREATE TABLE j (id bigserial PRIMARY KEY, queue text NOT NULL,
  state smallint NOT NULL, priority smallint NOT NULL DEFAULT 0, run_at bigint NOT NULL, wid text,
  payload text NOT NULL); CREATE INDEX j_ready ON j (queue, priority DESC, id) WHERE state = 2;
  CREATE INDEX j_timed ON j (state, run_at) WHERE state <> 2"
done_bare="SELECT (SELECT last_value FROM j_id_seq) - (SELECT count(*) FROM j)"
reset_schema="TRUNCATE rb_jobs; SELECT setval('rb_job_seq', 1)"
done_schema="SELECT (SELECT last_value FROM rb_job_seq) - 1 - (SELECT count(*) FROM rb_jobs)"
hz=$(getconf CLK_TCK)
echo "floor: $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  for mix in bare schema; do
    eval "psqlc \"SET client_min_messages = warning; \$reset_$mix\"" >/dev/null
    psqlc "CHECKPOINT"
    t0=$(pg_cluster_cpu "$pm")
    PGOPTIONS="-c enable_seqscan=off -c jit=off" pg_cluster_as "$pg_cluster_bin/pgbench" -n -M prepared --random-seed=1 \
      -f "$tmp/$mix.sql" -c 1 -t 1290 -h "$tmp" -p "$port" -U rebound rebound >"$tmp/pgbench.out" 2>&1 ||
      { cat "$tmp/pgbench.out" >&2; exit 1; }
    t1=$(pg_cluster_cpu "$pm")
    n=$(eval "psqlc \"\$done_$mix\"")
    echo "$r $mix $n $((t1 - t0))" | awk -v hz="$hz" '{ printf "round %d  %-6s  %5d jobs  %4.0f us per job\n",
      $1, $2, $3, $4 * 1e6 / hz / $3 }' | tee -a "$tmp/rows"
  done
done
awk '{ v[$3] = v[$3] " " $(NF - 3) } END { for (m in v) { n = split(v[m], a, " ")
  for (i = 1; i <= n; i++) for (k = i + 1; k <= n; k++) if (a[k] < a[i]) { t = a[i]; a[i] = a[k]; a[k] = t }
  printf "median  %-6s  %4.0f us per job (%s )\n", m, a[int((n + 1) / 2)], v[m] } }' "$tmp/rows" | sort
