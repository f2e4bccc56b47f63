/* The PostgreSQL engine's connection: open/close, reconnecting with backoff
 * after a loss, every round trip bounded by a deadline (libpq's
 * asynchronous calls on a nonblocking connection, polled here), prepared
 * statements, LISTEN/NOTIFY, and the small helpers the other sql_*.c files
 * share (array literals, result fields). */
#include "backend/pg/sql_impl.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

/* An array parameter the planner does not see (a one-row subquery): a
 * statement over arrays is otherwise planned again on every execution,
 * since a plan made for the given arrays' lengths (a custom plan) looks
 * cheaper than the plan made once for any (the generic plan, which
 * guesses 10 elements) whenever fewer are given, and planning such a
 * statement cost more than running it (issue 29: 246 us per job). With
 * the array hidden a custom plan guesses at least as many rows as the
 * generic one (a function scan over several arrays takes the largest
 * guess), so it never looks cheaper and the generic plan is kept after
 * PostgreSQL's first five executions of each prepared statement. (As the
 * argument of ANY it needs a cast, else it reads as ANY (subquery).) */
#define SQL_PLAN_GENERIC(param) "(SELECT " param ")"

/* The SQL of each sql_stmt. The functions called here are created by the
 * migrations in sql_schema.c. */
static const char *const sql_stmt_text[SQL_STMT_COUNT] = {
    /* The plain push (schema 14's rb_push_hand, as one statement: a
     * function's entry, its GUC setting and its inner statement's start-up
     * cost more than the insert; issue 29). $8, $9: the hand-off (a job
     * marked in $9 goes straight to the FETCH parked for it on this node,
     * inserted claimed for worker $8, attempt counted, lease running from
     * now, as a claim leaves a job, unless its queue is paused); $10 this
     * node: the queues that got ready jobs are notified only when another
     * node has a FETCH parked (rb_parked); $11 the jobs' custom.group ('':
     * none; schema 16's trigger then reads the text). Each job's row comes
     * back with its state (3: handed off). SQL_PLAN_GENERIC hides the
     * first array from the planner, see there. */
    [SQL_PUSH] = "/* rb_push */ WITH u AS MATERIALIZED (SELECT u.jid, u.queue, u.prio, u.run_at,"
                " u.reserve, u.body, u.wid, u.grp, u.ord, CASE WHEN u.run_at > $7::bigint THEN 1"
                " WHEN u.hand AND NOT EXISTS (SELECT 1 FROM rb_queues q WHERE q.name = u.queue"
                " AND q.paused) THEN 3 ELSE 2 END AS st"
                " FROM unnest(" SQL_PLAN_GENERIC("$1::text[]") ", $2::text[], $3::int[], $4::bigint[],"
                " $5::int[], $6::text[], $8::text[], $9::boolean[], $11::text[]) WITH ORDINALITY"
                " AS u(jid, queue, prio, run_at, reserve, body, wid, hand, grp, ord)),"
                " ins AS (INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms,"
                " first_ms, attempts, reserve_s, wid, json, grp)"
                " SELECT u.jid, u.st, u.queue, u.prio, CASE WHEN u.st = 1 THEN u.run_at"
                " WHEN u.st = 3 THEN $7::bigint + u.reserve * 1000::bigint ELSE $7::bigint END,"
                " CASE WHEN u.st = 1 THEN 0 ELSE $7::bigint END,"
                " CASE WHEN u.st = 1 THEN 0 ELSE $7::bigint END, CASE WHEN u.st = 3 THEN 1 ELSE 0 END,"
                " u.reserve, CASE WHEN u.st = 3 THEN u.wid END, u.body, coalesce(u.grp, '')"
                " FROM u ORDER BY u.ord ON CONFLICT (jid) DO NOTHING RETURNING j.jid, j.queue, j.state),"
                " known AS (INSERT INTO rb_queues (name) SELECT DISTINCT i.queue FROM ins i"
                " ORDER BY 1 ON CONFLICT DO NOTHING),"
                " woke AS (SELECT pg_notify(rb_channel(), r.queue)"
                " FROM (SELECT DISTINCT i.queue FROM ins i WHERE i.state = 2) r"
                " WHERE EXISTS (SELECT 1 FROM rb_parked p WHERE p.node IS DISTINCT FROM $10::text"
                " AND p.until_ms > $7::bigint))"
                " SELECT i.jid AS o_jid, i.state AS o_state FROM ins i"
                " WHERE (SELECT count(*) FROM woke) >= 0",
    [SQL_PUSH_UNIQUE] = "SELECT o_jid, o_st, o_holder FROM rb_push_unique($1::text[], $2::text[], $3::int[],"
                       " $4::bigint[], $5::int[], $6::text[], $7::bigint, $8::text[], $9::bigint[],"
                       " $10::boolean[], $11::bigint[], $12::int)",
    /* groups in turn and their limits (sql_groups.c's arguments, schema 16) */
    [SQL_CLAIM] = "SELECT slot, jid, json, enq_ms, q, g FROM rb_claim_groups($1::text[], $2::text[],"
                 " $3::bigint, $4::text[], $5::int[], $6::int[], $7::bigint[], $8::int[],"
                 " $9::bigint[], $10::bigint[])",
    /* rb_claim_unexpired for one queue (the usual FETCH), as one
     * statement: the function's loop, its paused check and its result set
     * cost more than the claim (schema 14, issue 29). A queue with groups
     * (schema 16) is not claimed here: one row with slot -4 says so, and
     * rb_claim_groups claims it */
    [SQL_CLAIM1] = "/* rb_claim, one queue */ WITH picked AS MATERIALIZED (SELECT r.jid, r.priority, r.seq,"
                  " coalesce(r.expires_ms <= $3::bigint, false) AS gone FROM rb_jobs r"
                  " WHERE r.state = 2 AND r.queue = $1 AND r.grp = '' AND NOT EXISTS (SELECT 1"
                  " FROM rb_queues qq WHERE qq.name = $1 AND qq.paused) AND NOT EXISTS (SELECT 1"
                  " FROM rb_groups gg WHERE gg.queue = $1) ORDER BY r.priority DESC, r.seq"
                  " LIMIT cardinality($2::text[]) FOR UPDATE SKIP LOCKED),"
                  " numbered AS (SELECT p.jid, p.gone, row_number() OVER (ORDER BY p.priority DESC,"
                  " p.seq)::int AS rn FROM picked p),"
                  " upd AS (UPDATE rb_jobs j SET state = CASE WHEN nb.gone THEN j.state ELSE 3 END,"
                  " attempts = CASE WHEN nb.gone THEN j.attempts ELSE j.attempts + 1 END,"
                  " wid = CASE WHEN nb.gone THEN j.wid ELSE ($2::text[])[nb.rn] END,"
                  " due_ms = CASE WHEN nb.gone THEN j.due_ms"
                  " ELSE $3::bigint + j.reserve_s * 1000::bigint END,"
                  " flags = CASE WHEN nb.gone THEN j.flags WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END"
                  " FROM numbered nb WHERE j.jid = nb.jid"
                  " RETURNING CASE WHEN nb.gone THEN -1 ELSE nb.rn - 1 END AS slot, j.jid,"
                  " CASE WHEN nb.gone THEN NULL ELSE j.json END AS json, j.enq_ms)"
                  " SELECT * FROM upd UNION ALL"
                  " SELECT -4, NULL, NULL, NULL WHERE EXISTS (SELECT 1 FROM rb_groups gg"
                  " WHERE gg.queue = $1)",
    /* rb_claim_groups' common case for one queue as one statement
     * (schema 17, idle_ms 18; same parameters, same rows): one round of the runnable
     * groups after the cursor, the first ready job of each, the groups
     * found empty marked idle (rb_group_empty looks after the try-lock).
     * rb_claim_groups claims when the queue has a [throttles] rate, a hold
     * due, a group with limits in the round, or fewer runnable groups than
     * FETCHes (later passes): then the statement claims nothing and answers
     * one row, slot -4 with 1 as its time when a group with limits was in
     * the round (else 0), and the node runs rb_claim_groups (SQL_CLAIM)
     * itself and remembers the queue for a while (sql_groups_claim_stmt;
     * as a branch of this statement the function's scan was set up by
     * every execution, 22 of 260 us, session 14); a -2 row at now asks for another
     * claim when the round stopped short of its FETCHes while a group it
     * served has another job or it did not see every runnable group (a
     * probe per served group, LATERAL: as a semi join the generic plan
     * walked the queue's ready index from its first group, session 13).
     * The idle marks and the -2 row's probes are functions (schema 21,
     * rb_groups_idle, rb_claim_next) called only when there is something
     * to mark or the round was short: as an UPDATE and sub-plans in the
     * statement every execution set them up (opened rb_groups' indexes,
     * began their scans), a fifth of the statement's CPU time */
    [SQL_CLAIMG] = "/* rb_claim_groups, one queue */ WITH a AS MATERIALIZED (SELECT"
                  " ($1::text[])[1] AS q, ($4::text[])[1] AS cur, coalesce(($5::int[])[1], 0) AS"
                  " qc, coalesce(($6::int[])[1], 0) AS qr, cardinality($2::text[]) AS need, EXISTS"
                  " (SELECT 1 FROM rb_queues qq WHERE qq.name = ($1::text[])[1] AND qq.paused) AS"
                  " paused, coalesce(($9::bigint[])[1], 0) > 0 OR EXISTS (SELECT 1 FROM rb_groups"
                  " h WHERE h.hold <> 0 AND h.hold_until <= $3::bigint AND h.queue ="
                  " ($1::text[])[1]) AS busy, $7::bigint[] AS u7, $8::int[] AS u8, $10::bigint[] AS"
                  " u10), cand AS MATERIALIZED (SELECT c.grp, c.lmt,"
                  " (row_number() OVER (ORDER BY c.wrap, c.grp))::int AS ord FROM a, LATERAL"
                  " ((SELECT gg.grp, 0 AS wrap, gg.grp <> '' AND (coalesce(gg.o_conc, a.qc) > 0 OR"
                  " coalesce(gg.o_rate, a.qr) > 0) AS lmt FROM rb_groups gg WHERE gg.queue = a.q"
                  " AND gg.ready AND gg.hold = 0 AND gg.grp >= coalesce(a.cur, '') AND gg.grp IS"
                  " DISTINCT FROM a.cur ORDER BY gg.grp LIMIT 2 * a.need + 8) UNION ALL (SELECT"
                  " gg.grp, 1, gg.grp <> '' AND (coalesce(gg.o_conc, a.qc) > 0 OR"
                  " coalesce(gg.o_rate, a.qr) > 0) FROM rb_groups gg WHERE gg.queue = a.q AND"
                  " gg.ready AND gg.hold = 0 AND gg.grp <= a.cur ORDER BY gg.grp LIMIT 2 * a.need"
                  " + 8)) c WHERE NOT a.paused AND NOT a.busy ORDER BY c.wrap, c.grp LIMIT 2 *"
                  " cardinality($2::text[]) + 8), fb AS MATERIALIZED (SELECT NOT a.paused AND"
                  " (a.busy OR x.l OR (SELECT count(*) FROM cand) < a.need) AS v, x.l FROM a,"
                  " LATERAL (SELECT EXISTS (SELECT 1 FROM cand c WHERE c.lmt) AS l) x), picked AS MATERIALIZED (SELECT c.ord, c.grp,"
                  " f.jid, f.gone FROM cand c CROSS JOIN LATERAL ( SELECT r.jid,"
                  " coalesce(r.expires_ms <= $3::bigint, false) AS gone FROM rb_jobs r WHERE"
                  " r.queue = ($1::text[])[1] AND r.grp = c.grp AND r.state = 2 ORDER BY"
                  " r.priority DESC, r.seq LIMIT 1 FOR UPDATE SKIP LOCKED) f WHERE NOT (SELECT"
                  " fb.v FROM fb) LIMIT cardinality($2::text[])), numbered AS (SELECT p.ord,"
                  " p.grp, p.jid, (row_number() OVER (ORDER BY p.ord))::int AS rn FROM picked p"
                  " WHERE NOT p.gone), upd AS (UPDATE rb_jobs j SET state = 3, attempts ="
                  " j.attempts + 1, wid = ($2::text[])[nb.rn], due_ms = $3::bigint + j.reserve_s *"
                  " 1000::bigint, flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END FROM"
                  " numbered nb WHERE j.jid = nb.jid RETURNING nb.ord, nb.rn - 1 AS slot, j.jid,"
                  " j.json, j.enq_ms, nb.grp), idled AS MATERIALIZED (SELECT rb_groups_idle(($1::text[])[1],"
                  " array_agg(c.grp), $3::bigint) AS n FROM cand c WHERE c.grp <> '' AND c.ord <="
                  " (SELECT CASE WHEN count(*) >= cardinality($2::text[]) THEN max(p.ord) ELSE"
                  " 2147483647 END FROM picked p) AND NOT EXISTS (SELECT 1 FROM picked p WHERE"
                  " p.ord = c.ord) AND NOT (SELECT fb.v FROM fb) HAVING count(*) > 0) SELECT"
                  " u.slot, u.jid, u.json, u.enq_ms, ($1::text[])[1] AS q, u.grp AS g FROM (SELECT"
                  " * FROM upd ORDER BY upd.ord) u WHERE (SELECT count(*) FROM idled) >= 0 UNION"
                  " ALL SELECT -1, p.jid, NULL, 0, ($1::text[])[1], p.grp FROM picked p WHERE"
                  " p.gone UNION ALL SELECT -2, NULL, NULL, x.at, x.q, NULL FROM (SELECT a.q, CASE"
                  " WHEN NOT a.paused AND NOT (SELECT fb.v FROM fb) AND (SELECT count(*) FROM"
                  " picked p WHERE NOT p.gone) < a.need THEN rb_claim_next(a.q, ARRAY(SELECT"
                  " p.grp FROM picked p WHERE NOT p.gone ORDER BY p.ord), ARRAY(SELECT p.jid FROM"
                  " picked p WHERE NOT p.gone ORDER BY p.ord), (SELECT count(*) FROM cand) >= 2 *"
                  " a.need + 8, $3::bigint) END AS at FROM a OFFSET 0) x WHERE x.at IS NOT NULL"
                  " UNION ALL SELECT -4, NULL, NULL, CASE WHEN fb.l THEN 1 ELSE 0 END, a.q, NULL"
                  " FROM a, fb WHERE fb.v",
    /* SQL_CLAIMG's full round, alone (issue 30, session 17): the next
     * runnable groups after the cursor, as many as FETCHes (the queue's
     * ungrouped jobs, '', only when it has one: SQL_CLAIMG passes an empty
     * '' over, never idle), and the first ready job of each, claimed when
     * every group gave a job that has not expired. Anything else (a group
     * empty, with limits or its job expired, fewer runnable groups than
     * FETCHes, a paused queue, a hold due, a [throttles] rate) claims
     * nothing and answers one row, slot -4 with 2 as its time: the node
     * runs SQL_CLAIMG, which deals with each, and starts the queue's claims
     * with it for a while (sql_groups_handed_over). SQL_CLAIMG's other work
     * (its hand-over tests, the idle marks, the expired jobs' rows, the -2
     * row's probes), set up by every execution, cost 60 us of its 400
     * (pgbench, 4 FETCHes, 1,000 groups; bench/RESULTS.md, session 17) */
    [SQL_CLAIML] = "/* rb_claim_groups, one queue, a full round */ WITH a AS MATERIALIZED"
                   " (SELECT ($1::text[])[1] AS q, ($4::text[])[1] AS cur,"
                   " coalesce(($5::int[])[1], 0) AS qc, coalesce(($6::int[])[1], 0) AS qr,"
                   " cardinality($2::text[]) AS need, coalesce(($9::bigint[])[1], 0) = 0 AND NOT"
                   " EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = ($1::text[])[1] AND"
                   " qq.paused) AND NOT EXISTS (SELECT 1 FROM rb_groups h WHERE h.hold <> 0 AND"
                   " h.hold_until <= $3::bigint AND h.queue = ($1::text[])[1]) AS ok,"
                   " $7::bigint[] AS u7, $8::int[] AS u8, $10::bigint[] AS u10), cand AS"
                   " MATERIALIZED (SELECT c.grp, c.lmt, (row_number() OVER (ORDER BY c.wrap,"
                   " c.grp))::int AS ord FROM a, LATERAL ((SELECT gg.grp, 0 AS wrap, gg.grp <>"
                   " '' AND (coalesce(gg.o_conc, a.qc) > 0 OR coalesce(gg.o_rate, a.qr) > 0) AS"
                   " lmt FROM rb_groups gg WHERE gg.queue = a.q AND gg.ready AND gg.hold = 0 AND"
                   " gg.grp >= coalesce(a.cur, '') AND gg.grp IS DISTINCT FROM a.cur AND (gg.grp"
                   " <> '' OR EXISTS (SELECT 1 FROM rb_jobs e WHERE e.queue = a.q AND e.grp = ''"
                   " AND e.state = 2)) ORDER BY gg.grp LIMIT a.need) UNION ALL (SELECT gg.grp,"
                   " 1, gg.grp <> '' AND (coalesce(gg.o_conc, a.qc) > 0 OR coalesce(gg.o_rate,"
                   " a.qr) > 0) FROM rb_groups gg WHERE gg.queue = a.q AND gg.ready AND gg.hold"
                   " = 0 AND gg.grp <= a.cur AND (gg.grp <> '' OR EXISTS (SELECT 1 FROM rb_jobs"
                   " e WHERE e.queue = a.q AND e.grp = '' AND e.state = 2)) ORDER BY gg.grp"
                   " LIMIT a.need)) c WHERE a.ok ORDER BY c.wrap, c.grp LIMIT"
                   " cardinality($2::text[])), picked AS MATERIALIZED (SELECT c.ord, c.grp,"
                   " f.jid, f.gone FROM cand c CROSS JOIN LATERAL (SELECT r.jid,"
                   " coalesce(r.expires_ms <= $3::bigint, false) AS gone FROM rb_jobs r WHERE"
                   " r.queue = ($1::text[])[1] AND r.grp = c.grp AND r.state = 2 ORDER BY"
                   " r.priority DESC, r.seq LIMIT 1 FOR UPDATE SKIP LOCKED) f WHERE NOT EXISTS"
                   " (SELECT 1 FROM cand l WHERE l.lmt)), clean AS MATERIALIZED (SELECT count(*)"
                   " = cardinality($2::text[]) AND coalesce(bool_and(NOT p.gone), true) AS v"
                   " FROM picked p), upd AS (UPDATE rb_jobs j SET state = 3, attempts ="
                   " j.attempts + 1, wid = ($2::text[])[p.ord], due_ms = $3::bigint +"
                   " j.reserve_s * 1000::bigint, flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE"
                   " 0 END FROM picked p WHERE j.jid = p.jid AND (SELECT clean.v FROM clean)"
                   " RETURNING p.ord, p.ord - 1 AS slot, j.jid, j.json, j.enq_ms, p.grp) SELECT"
                   " u.slot, u.jid, u.json, u.enq_ms, ($1::text[])[1] AS q, u.grp AS g FROM"
                   " (SELECT * FROM upd ORDER BY upd.ord) u UNION ALL SELECT -4, NULL, NULL, 2,"
                   " ($1::text[])[1], NULL FROM clean WHERE NOT clean.v",
    /* ACK: schema 14's rb_ack_batch loop as one statement (issue 29), its
     * rules the same: the rows locked in jid order; per element (in order)
     * the holder rule (rb_holder_status) gives 1 missing, 2 another
     * holder, 3 not working (no expired mark); a batch's job 5 (left to
     * sql_batch_ack), a workflow job or a parent 6 (left to rb_ack_batch:
     * its children are released there, RB_PG_ACK_DEPS); else the job is
     * done (0): deleted, its progress record ended, the counter added to.
     * A jid given twice is done once, by its first element that may, and
     * missing (1) for the ones after. $1 jids, $2 wids, $3 the counter's
     * shard, $4 now (wall ms). Rows: status, and for a job done its queue
     * and job type (its first 127 bytes), one per element in order. The
     * rows are probed one jid at a time (LATERAL, in jid order): as
     * `jid = ANY ($1)` the generic plan made while rb_jobs was young (every
     * benchmark's and every new database's first minute, before autovacuum
     * looks) was a sequential scan, kept for good, that read the whole
     * table per ACK (376-484 pages per ACK by the end of a 10,000-job run,
     * issue 30 session 14). */
    [SQL_ACK] = "/* rb_ack */ WITH a AS (SELECT u.jid, u.wid, u.ord FROM unnest("
                SQL_PLAN_GENERIC("$1::text[]") ", $2::text[]) WITH ORDINALITY AS u(jid, wid, ord)),"
                " l AS MATERIALIZED (SELECT j.jid, j.state, j.flags, j.wid, j.queue, j.bid, j.trk,"
                " j.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = j.jid) AS deps,"
                " j.json::json -> 'jobtype' AS jt FROM (SELECT DISTINCT k.jid FROM unnest("
                SQL_PLAN_GENERIC("$1::text[]") ") AS k(jid) ORDER BY k.jid) k CROSS JOIN LATERAL"
                " (SELECT r.* FROM rb_jobs r WHERE r.jid = k.jid FOR UPDATE) j),"
                " e AS (SELECT a.ord, a.jid, l.queue, l.jt, l.trk, l.deps, l.bid, x.h,"
                " x.h NOT IN (1, 2) AND (x.h = 0 OR l.flags & 1 <> 0) AS may"
                " FROM a LEFT JOIN l ON l.jid = a.jid"
                " CROSS JOIN LATERAL (SELECT rb_holder_status(l.state, l.wid, a.wid) AS h) x),"
                " s AS MATERIALIZED (SELECT e.ord, e.jid, e.queue, e.jt, e.trk,"
                " CASE WHEN e.deps THEN 6"
                " WHEN e.bid IS NULL AND e.ord > min(e.ord) FILTER (WHERE e.may)"
                " OVER (PARTITION BY e.jid) THEN 1"
                " WHEN e.h IN (1, 2) THEN e.h WHEN NOT e.may THEN 3"
                " WHEN e.bid IS NOT NULL THEN 5 ELSE 0 END AS status FROM e),"
                " d AS (DELETE FROM rb_jobs j USING s WHERE s.status = 0 AND j.jid = s.jid),"
                " t AS (UPDATE rb_track t SET ended_ms = $4::bigint, state = 3 FROM s"
                " WHERE s.status = 0 AND s.trk AND t.jid = s.jid),"
                " c AS (INSERT INTO rb_counters AS k (name, shard, value)"
                " SELECT 'processed', $3::int, count(*) FROM s WHERE s.status = 0"
                " HAVING count(*) > 0 ON CONFLICT (name, shard)"
                " DO UPDATE SET value = k.value + excluded.value)"
                " SELECT s.status, CASE WHEN s.status = 0 THEN s.queue END AS queue,"
                " CASE WHEN s.status = 0 AND json_typeof(s.jt) = 'string'"
                " THEN left(s.jt #>> '{}', 127) END AS jobtype FROM s ORDER BY s.ord",
    [SQL_LOCK_JOBS] = "SELECT jid, queue, wid, json, history, state, priority, attempts, flags,"
                     " first_ms, bid, bcb FROM rb_jobs WHERE jid = ANY($1::text[]) ORDER BY jid"
                     " FOR UPDATE",
    [SQL_LOCK_EXPIRED] = "SELECT jid, queue, wid, json, history, state, priority, attempts, flags,"
                        " first_ms, bid, bcb FROM rb_jobs WHERE state = 3 AND due_ms <= $1::bigint"
                        " ORDER BY due_ms LIMIT $2::int FOR UPDATE SKIP LOCKED",
    /* FAIL's and the reaper's writes (schema 14's rb_fail_apply as one
     * statement, issue 29): the rows of $1 (locked by SQL_LOCK_JOBS or
     * SQL_LOCK_EXPIRED; none of them in $7) get their new state $2, due
     * time $3, flags $4, text $5 and history $6 and lose their holder; the
     * rows of $7 are deleted; $8 failures added to the counter of shard $9. */
    [SQL_FAIL_APPLY] = "/* rb_fail_apply */ WITH up AS (UPDATE rb_jobs j SET state = u.st,"
                      " due_ms = u.due, flags = u.fl, json = u.body, history = u.hist, wid = NULL"
                      " FROM unnest(" SQL_PLAN_GENERIC("$1::text[]") ", $2::int[], $3::bigint[],"
                      " $4::int[], $5::text[], $6::text[]) AS u(jid, st, due, fl, body, hist)"
                      " WHERE j.jid = u.jid),"
                      " del AS (DELETE FROM rb_jobs j WHERE j.jid = ANY("
                      SQL_PLAN_GENERIC("$7::text[]") "::text[])),"
                      " c AS (INSERT INTO rb_counters AS k (name, shard, value)"
                      " SELECT 'failures', $9::int, $8::int WHERE $8::int > 0"
                      " ON CONFLICT (name, shard) DO UPDATE SET value = k.value + excluded.value)"
                      " SELECT 1",
    [SQL_SNOOZE] = "SELECT status, state FROM rb_snooze($1, $2, $3::bigint, $4::bigint)",
    [SQL_EXTEND] = "SELECT status, state FROM rb_extend($1, $2, $3::bigint, $4::bigint)",
    [SQL_PROMOTE] = "SELECT rb_promote_late($1::bigint, $2::int)",
    [SQL_CLEANUP_DEAD] = "WITH d AS MATERIALIZED (SELECT jid FROM rb_jobs WHERE state = 5"
                        " AND due_ms <= $1::bigint ORDER BY due_ms LIMIT $2::int"
                        " FOR UPDATE SKIP LOCKED)"
                        " DELETE FROM rb_jobs j USING d WHERE j.jid = d.jid RETURNING j.jid,"
                        " j.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = j.jid)",
    /* every deadline's earliest, then the leases' (state 3) alone */
    [SQL_NEXT_DUE] = "SELECT least(l.m, (SELECT min(due_ms) FROM rb_jobs WHERE state = 1),"
                    " (SELECT min(due_ms) FROM rb_jobs WHERE state = 4),"
                    " (SELECT min(due_ms) FROM rb_jobs WHERE state = 5)), l.m"
                    " FROM (SELECT min(due_ms) AS m FROM rb_jobs WHERE state = 3) l",
    [SQL_MUTATE_SELECT] = "SELECT jid, json FROM rb_jobs WHERE state = $1::int"
                         " AND ($2::text[] IS NULL OR jid = ANY($2::text[]))"
                         " ORDER BY jid FOR UPDATE",
    [SQL_MUTATE_APPLY] = "SELECT rb_mutate_apply($1, $2::text[], $3::bigint, $4::bigint)",
    [SQL_INFO] = "SELECT rb_info()",
    [SQL_JOB] = SQL_JOB_SELECT " WHERE jid = $1",
    [SQL_COUNTERS] = "SELECT coalesce(sum(value) FILTER (WHERE name = 'processed'), 0),"
                    " coalesce(sum(value) FILTER (WHERE name = 'failures'), 0) FROM rb_counters",
    [SQL_WORKERS_SEEN] = "SELECT rb_worker_seen($1::text[], $2::int[], $3::text[], $4, $5::bigint,"
                        " $6::bigint)",
    [SQL_WORKERS_SIGNAL] = "WITH l AS (SELECT wid FROM rb_workers WHERE seen_ms >= $3::bigint"
                          " AND ($1::text IS NULL OR wid = $1) ORDER BY wid FOR UPDATE)"
                          " UPDATE rb_workers w SET signal = $2::int FROM l WHERE w.wid = l.wid",
    [SQL_WORKERS_LIST] = "SELECT wid, info, node, first_ms, beat_ms, seen_ms, signal"
                        " FROM rb_workers WHERE seen_ms >= $1::bigint ORDER BY wid",
    [SQL_WORKERS_COUNT] = "SELECT count(*) FROM rb_workers WHERE seen_ms >= $1::bigint",
    [SQL_WORKERS_CLEANUP] = "WITH d AS MATERIALIZED (SELECT wid FROM rb_workers"
                           " WHERE seen_ms < $1::bigint ORDER BY seen_ms LIMIT $2::int"
                           " FOR UPDATE SKIP LOCKED)"
                           " DELETE FROM rb_workers w USING d WHERE w.wid = d.wid",
};

const char *sql_stmt_sql(sql_stmt s)
{
    return (unsigned)s < SQL_STMT_COUNT ? sql_stmt_text[s] : NULL;
}

#define SQL_BACKOFF_FIRST_MS 100
#define SQL_BACKOFF_MAX_MS 5000

const rb_config *sql_cfg(const rb_pg *pg)
{
    return pg->cfg ? pg->cfg : &pg->defaults;
}

/* Copies libpq's message into pg->last_error as one line: line breaks and
 * tabs become single spaces, no trailing space. */
static void remember_error(rb_pg *pg, const char *msg)
{
    if (!msg || !*msg)
        msg = "unknown error";
    size_t n = 0;
    for (; *msg && n + 1 < sizeof pg->last_error; msg++) {
        bool space = *msg == '\n' || *msg == '\r' || *msg == '\t' || *msg == ' ';
        if (space && (n == 0 || pg->last_error[n - 1] == ' '))
            continue;
        pg->last_error[n++] = space ? ' ' : *msg;
    }
    while (n > 0 && pg->last_error[n - 1] == ' ')
        n--;
    pg->last_error[n] = '\0';
}

static void sent_clear(rb_pg *pg);
static void sent_add(rb_pg *pg, sql_stmt s, bool prepare);

/* Closes the connection (the server ends its session when it sees that,
 * or its timeouts do when it cannot) and lets the next call reconnect. */
static void drop_conn(rb_pg *pg)
{
    if (pg->conn) {
        PQfinish(pg->conn);
        pg->conn = NULL;
    }
    pg->prepared = 0;
    pg->committing = false;
    pg->backoff_ms = SQL_BACKOFF_FIRST_MS;
    pg->next_try_ms = rb_mono_ms(); /* the next call tries at once */
}

void sql_lost(rb_pg *pg)
{
    if (pg->conn)
        remember_error(pg, PQerrorMessage(pg->conn));
    drop_conn(pg);
}

/* The connection failed (why: the reason, NULL: libpq's) or gave no reply
 * by its deadline: dropped, and err says whether what was in flight may
 * have committed (RB_EDOUBT) or cannot have (RB_ECONN). */
static int conn_failed(rb_pg *pg, const char *why, rb_err *err)
{
    bool doubt = pg->committing;
    if (why)
        remember_error(pg, why);
    else if (pg->conn)
        remember_error(pg, PQerrorMessage(pg->conn));
    drop_conn(pg);
    return rb_err_set(err, doubt ? RB_EDOUBT : RB_ECONN, "database connection lost: %s",
                      pg->last_error);
}

/* --- bounded waits --- */

enum { IO_OK, IO_LOST, IO_LATE };

/* When a round trip beginning now must end (monotonic ms; -1: never). */
static int64_t round_deadline(const rb_pg *pg)
{
    if (pg->deadline_ms > 0)
        return pg->deadline_ms;
    return pg->io_timeout_ms > 0 ? rb_mono_ms() + pg->io_timeout_ms : -1;
}

/* Waits until c's socket is ready for events: IO_OK, IO_LATE once the
 * deadline (-1: none) has passed, IO_LOST when there is no socket. */
static int wait_socket(PGconn *c, short events, int64_t deadline)
{
    for (;;) {
        int fd = PQsocket(c);
        if (fd < 0)
            return IO_LOST;
        int ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - rb_mono_ms();
            if (left <= 0)
                return IO_LATE;
            ms = left > INT_MAX ? INT_MAX : (int)left;
        }
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, ms);
        if (n > 0)
            return IO_OK;
        if (n < 0 && errno != EINTR)
            return IO_LOST;
    }
}

/* Sends what libpq holds for the (nonblocking) connection by deadline. */
static int flush_by(rb_pg *pg, int64_t deadline)
{
    for (;;) {
        int f = PQflush(pg->conn);
        if (f == 0)
            return IO_OK;
        if (f < 0)
            return IO_LOST;
        int w = wait_socket(pg->conn, POLLIN | POLLOUT, deadline);
        if (w != IO_OK)
            return w;
        if (!PQconsumeInput(pg->conn))
            return IO_LOST;
    }
}

/* The next result of what was sent, read by deadline: NULL with *io IO_OK
 * when there is none left, NULL with *io set when the deadline passed or
 * the connection failed. */
static PGresult *result_by(rb_pg *pg, int64_t deadline, int *io)
{
    *io = IO_OK;
    while (PQisBusy(pg->conn)) {
        int w = wait_socket(pg->conn, POLLIN, deadline);
        if (w != IO_OK) {
            *io = w;
            return NULL;
        }
        if (!PQconsumeInput(pg->conn)) {
            *io = IO_LOST;
            return NULL;
        }
    }
    return PQgetResult(pg->conn);
}

/* The failure of a round trip that began at t0 (io: IO_LOST or IO_LATE). */
static int round_failed(rb_pg *pg, int io, int64_t t0, rb_err *err)
{
    if (io != IO_LATE)
        return conn_failed(pg, NULL, err);
    char why[160];
    if (pg->deadline_ms > 0) /* the request's own deadline, from when it was posted */
        snprintf(why, sizeof why,
                 "no reply from the database by the request's deadline"
                 " (storage.request_timeout; its last statement waited %lld ms)",
                 (long long)(rb_mono_ms() - t0));
    else
        snprintf(why, sizeof why, "no reply from the database within %lld ms",
                 (long long)(rb_mono_ms() - t0));
    return conn_failed(pg, why, err);
}

/* A statement the caller has just sent (sent: its PQsend* result), run to
 * its end within the round trip's deadline, as PQexec runs one: *out is
 * the last result (the first error, when one failed), to PQclear. commits:
 * it may commit (COMMIT, or a statement outside a transaction). 0, or
 * RB_ECONN/RB_EDOUBT when the connection failed or the deadline passed
 * (it is then dropped: conn_failed). */
static int exec_sent(rb_pg *pg, int sent, bool commits, PGresult **out, rb_err *err)
{
    int64_t t0 = rb_mono_ms(), deadline = round_deadline(pg);
    pg->committing = commits;
    *out = NULL;
    int io = sent == 1 ? flush_by(pg, deadline) : IO_LOST;
    PGresult *r;
    while (io == IO_OK && (r = result_by(pg, deadline, &io))) {
        if (*out && PQresultStatus(*out) == PGRES_FATAL_ERROR) {
            PQclear(r);
            continue;
        }
        PQclear(*out);
        *out = r;
    }
    if (io == IO_OK)
        return 0;
    PQclear(*out);
    *out = NULL;
    return round_failed(pg, io, t0, err);
}

/* Whether no transaction is open (a statement sent now commits alone). */
static bool autocommit(const rb_pg *pg)
{
    return PQtransactionStatus(pg->conn) == PQTRANS_IDLE;
}

static void fail_result(rb_pg *pg, PGresult *r, rb_err *err);
static bool result_ok(const PGresult *r);

/* exec_sent, then a failed result turned into err (fail_result): the
 * result when it is COMMAND_OK or TUPLES_OK, else NULL. */
static PGresult *finish(rb_pg *pg, int sent, bool commits, rb_err *err)
{
    PGresult *r;
    if (exec_sent(pg, sent, commits, &r, err))
        return NULL;
    if (!result_ok(r)) {
        fail_result(pg, r, err);
        return NULL;
    }
    return r;
}

/* Runs sql (no result wanted, failures ignored but a lost connection
 * dropped): rollbacks and the tests' poison. */
static void exec_quiet(rb_pg *pg, const char *sql)
{
    rb_err e;
    PGresult *r;
    if (!exec_sent(pg, PQsendQuery(pg->conn, sql), false, &r, &e))
        PQclear(r);
}

void rb_pg_set_deadline(rb_pg *pg, int64_t mono_ms)
{
    pg->deadline_ms = mono_ms;
}

/* The server's notices and warnings ("terminating connection because of
 * crash of another server process") are not the engine's to print: the
 * error that follows, if any, is returned to the caller. */
static void drop_notice(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* Appends key = val to the parameter arrays unless the URL set key. */
static void param_default(const char **keys, const char **vals, size_t *k, const char *key,
                          const char *val)
{
    for (size_t i = 0; i < *k; i++)
        if (!strcmp(keys[i], key))
            return;
    keys[*k] = key;
    vals[(*k)++] = val;
}

#define SQL_KEEPALIVE_IDLE_S 5
#define SQL_KEEPALIVE_INTERVAL_S 1
#define SQL_KEEPALIVE_COUNT 3
/* statement_timeout and lock_timeout, in percent of the round trip's bound */
#define SQL_STATEMENT_SHARE 80

/* Starts a connection (PQconnectStartParams) with the URL's parameters and
 * the engine's: application_name, TCP keepalives and (bounded engines)
 * tcp_user_timeout unless the URL sets them, and the session's timeouts
 * as options before the URL's own (whose -c settings come later and win).
 * *limit_ms receives the connect timeout (the URL's connect_timeout, 5 s
 * by default). NULL when out of memory or the URL does not parse. */
static PGconn *start_conn(const rb_pg *pg, int64_t *limit_ms)
{
    PQconninfoOption *opts = PQconninfoParse(pg->url, NULL);
    if (!opts)
        return NULL;
    size_t n = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        n++;
    const char **keys = rb_xcalloc(n + 16, sizeof *keys), **vals = rb_xcalloc(n + 16, sizeof *vals);
    size_t k = 0;
    const char *own = NULL;
    *limit_ms = 5000;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        if (!strcmp(o->keyword, "options")) {
            own = o->val;
            continue;
        }
        if (!strcmp(o->keyword, "connect_timeout")) { /* libpq's rule: 0 none, else >= 2 s */
            long v = strtol(o->val, NULL, 10);
            *limit_ms = v <= 0 ? -1 : (v < 2 ? 2 : v) * 1000L;
        }
        keys[k] = o->keyword;
        vals[k++] = o->val;
    }
    char idle[16], interval[16], count[16], user_timeout[24];
    snprintf(idle, sizeof idle, "%d", SQL_KEEPALIVE_IDLE_S);
    snprintf(interval, sizeof interval, "%d", SQL_KEEPALIVE_INTERVAL_S);
    snprintf(count, sizeof count, "%d", SQL_KEEPALIVE_COUNT);
    snprintf(user_timeout, sizeof user_timeout, "%lld", (long long)pg->io_timeout_ms);
    param_default(keys, vals, &k, "application_name", "rebound");
    param_default(keys, vals, &k, "keepalives", "1");
    param_default(keys, vals, &k, "keepalives_idle", idle);
    param_default(keys, vals, &k, "keepalives_interval", interval);
    param_default(keys, vals, &k, "keepalives_count", count);
    rb_buf o = RB_BUF_INIT;
    if (pg->io_timeout_ms > 0) {
        /* the server gives up on a statement (a lock wait, say) before the
         * node gives up on its round trip: a clean error, not applied, the
         * connection kept, instead of a connection dropped as if the
         * database had gone (a healthy node waiting on a frozen one) */
        long long stmt_ms = pg->io_timeout_ms * SQL_STATEMENT_SHARE / 100;
        param_default(keys, vals, &k, "tcp_user_timeout", user_timeout);
        rb_buf_printf(&o,
                      "-c statement_timeout=%lld -c lock_timeout=%lld -c tcp_user_timeout=%lld"
                      " -c tcp_keepalives_idle=%d -c tcp_keepalives_interval=%d"
                      " -c tcp_keepalives_count=%d",
                      stmt_ms > 0 ? stmt_ms : 1, stmt_ms > 0 ? stmt_ms : 1,
                      (long long)pg->io_timeout_ms, SQL_KEEPALIVE_IDLE_S,
                      SQL_KEEPALIVE_INTERVAL_S, SQL_KEEPALIVE_COUNT);
    }
    if (pg->idle_tx_ms > 0)
        rb_buf_printf(&o, "%s-c idle_in_transaction_session_timeout=%lld", o.len ? " " : "",
                      (long long)pg->idle_tx_ms);
    if (pg->keyed) /* jit off too: a plan that must still scan (rb_parked) costs
                      enable_seqscan's penalty, over jit_above_cost, and
                      compiling it took seconds per statement */
        rb_buf_printf(&o, "%s-c enable_seqscan=off -c jit=off", o.len ? " " : "");
    if (own && *own)
        rb_buf_printf(&o, "%s%s", o.len ? " " : "", own);
    if (o.len) {
        keys[k] = "options";
        vals[k++] = rb_buf_str(&o);
    }
    keys[k] = vals[k] = NULL;
    PGconn *c = PQconnectStartParams(keys, vals, 0);
    rb_buf_release(&o);
    free(keys);
    free(vals);
    PQconninfoFree(opts);
    return c;
}

/* Opens pg->conn (nonblocking) within the connect timeout and the round
 * trip's deadline. */
static int open_conn(rb_pg *pg, rb_err *err)
{
    int64_t limit_ms = 5000, t0 = rb_mono_ms();
    PGconn *c = start_conn(pg, &limit_ms);
    int64_t deadline = round_deadline(pg);
    if (limit_ms >= 0 && (deadline < 0 || t0 + limit_ms < deadline))
        deadline = t0 + limit_ms;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    int io = c && PQstatus(c) != CONNECTION_BAD ? IO_OK : IO_LOST;
    while (io == IO_OK && st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        io = wait_socket(c, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (io == IO_OK)
            st = PQconnectPoll(c);
    }
    if (io == IO_OK && st == PGRES_POLLING_OK && PQsetnonblocking(c, 1) == 0) {
        PQsetNoticeProcessor(c, drop_notice, NULL);
        pg->conn = c;
        pg->prepared = 0;
        pg->committing = false;
        return 0;
    }
    if (io == IO_LATE) {
        char why[96];
        snprintf(why, sizeof why, "no answer within %lld ms", (long long)(rb_mono_ms() - t0));
        remember_error(pg, why);
    } else {
        remember_error(pg, c ? PQerrorMessage(c) : "out of memory");
    }
    PQfinish(c);
    return rb_err_set(err, RB_ECONN, "cannot connect to the database: %s", pg->last_error);
}

/* One connection attempt; on success runs LISTEN when asked. */
static int connect_once(rb_pg *pg, rb_err *err)
{
    int rc = open_conn(pg, err);
    if (rc)
        return rc;
    rb_err qerr = {0};
    /* a bounded engine's session also checks its client while a statement
     * runs (PostgreSQL 14 and later), so a statement the node gave up on
     * (its connection dropped) is cancelled instead of going on (holding
     * or waiting for locks) and perhaps committing */
    char check[64] = "";
    if (pg->io_timeout_ms > 0 && PQserverVersion(pg->conn) >= 140000)
        snprintf(check, sizeof check,
                 ", set_config('client_connection_check_interval', '%lld', false)",
                 (long long)(pg->io_timeout_ms / 2 < 1000 ? pg->io_timeout_ms / 2 : 1000));
    char q[128];
    snprintf(q, sizeof q, "SELECT current_schema()%s", check);
    PGresult *r = finish(pg, PQsendQuery(pg->conn, q), false, &qerr);
    if (!r || PQgetisnull(r, 0, 0)) {
        if (r)
            remember_error(pg, "no current schema (search_path names none that exists)");
        else
            remember_error(pg, rb_err_msg(&qerr));
        PQclear(r);
        drop_conn(pg);
        return rb_err_set(err, RB_ECONN, "cannot read the current schema: %s", pg->last_error);
    }
    free(pg->channel);
    rb_buf ch = RB_BUF_INIT;
    rb_buf_printf(&ch, "rebound:%s", PQgetvalue(r, 0, 0));
    pg->channel = rb_buf_detach(&ch, NULL);
    PQclear(r);
    if (pg->listen) {
        char *id = PQescapeIdentifier(pg->conn, pg->channel, strlen(pg->channel));
        rb_buf sql = RB_BUF_INIT;
        rb_buf_printf(&sql, "LISTEN %s", id ? id : "\"rebound\"");
        PQfreemem(id);
        rc = sql_exec(pg, rb_buf_str(&sql), err);
        rb_buf_release(&sql);
        if (rc) { /* not listening: not connected, the listen thread tries again */
            drop_conn(pg);
            return RB_ECONN;
        }
    }
    if (!pg->listen)
        sql_take_shard(pg);
    pg->generation++;
    pg->backoff_ms = SQL_BACKOFF_FIRST_MS;
    return 0;
}

void sql_take_shard(rb_pg *pg)
{
    if (pg->shard >= 16 || !pg->conn)
        return;
    rb_err err = {0};
    PGresult *r = finish(pg, PQsendQuery(pg->conn, "SELECT nextval(to_regclass('rb_counter_shard'))"),
                         false, &err);
    if (r && !PQgetisnull(r, 0, 0))
        pg->shard = (int)sql_int(r, 0, 0);
    PQclear(r);
}

int sql_ensure(rb_pg *pg, rb_err *err)
{
    if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
        return 0;
    if (pg->conn)
        sql_lost(pg);
    int64_t now = rb_mono_ms();
    if (now < pg->next_try_ms)
        return rb_err_set(err, RB_ECONN, "database unavailable (%s); reconnecting in %lld ms",
                          pg->last_error, (long long)(pg->next_try_ms - now));
    int rc = connect_once(pg, err);
    if (rc) {
        pg->next_try_ms = rb_mono_ms() + pg->backoff_ms;
        pg->backoff_ms = pg->backoff_ms * 2 > SQL_BACKOFF_MAX_MS ? SQL_BACKOFF_MAX_MS
                                                                : pg->backoff_ms * 2;
    }
    return rc;
}

int rb_pg_open(const rb_pg_options *o, rb_pg **out, rb_err *err)
{
    if (!o || !o->url || !*o->url)
        return rb_err_set(err, RB_EINVAL, "storage url is empty");
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(o->url, &perr);
    if (!opts) {
        rb_err_set(err, RB_EINVAL, "invalid database url '%s': %s", o->url,
                   perr ? perr : "out of memory");
        PQfreemem(perr);
        if (err) /* libpq's message ends with a newline */
            err->msg[strcspn(err->msg, "\n")] = '\0';
        return RB_EINVAL;
    }
    PQconninfoFree(opts);
    rb_pg *pg = rb_xcalloc(1, sizeof *pg);
    pg->turns = sql_turns_new();
    pg->own_turns = true;
    pg->url = rb_xstrdup(o->url);
    pg->cfg = o->cfg;
    rb_config_init(&pg->defaults);
    pg->listen = o->listen;
    pg->io_timeout_ms = o->io_timeout_ms > 0 ? o->io_timeout_ms : 0;
    pg->idle_tx_ms = o->idle_tx_ms > 0 ? o->idle_tx_ms : 0;
    pg->keyed = o->keyed;
    if (o->seed)
        rb_rng_seed(&pg->rng, o->seed);
    else
        rb_rng_seed_os(&pg->rng);
    pg->shard = (int)rb_rng_range(&pg->rng, 0, 15);
    pg->backoff_ms = SQL_BACKOFF_FIRST_MS;
    int rc = connect_once(pg, err);
    if (rc) {
        rb_pg_close(pg);
        return rc;
    }
    *out = pg;
    return 0;
}

void rb_pg_close(rb_pg *pg)
{
    if (!pg)
        return;
    PQfinish(pg->conn);
    sql_batch_forget(pg);
    sent_clear(pg);
    free(pg->sent);
    free(pg->bev);
    free(pg->expired);
    rb_config_release(&pg->defaults);
    free(pg->url);
    free(pg->channel);
    free(pg->node);
    if (pg->own_turns)
        sql_turns_free(pg->turns);
    free(pg);
}

bool rb_pg_connected(const rb_pg *pg)
{
    return pg->conn && PQstatus(pg->conn) == CONNECTION_OK;
}

int rb_pg_reconnect(rb_pg *pg, rb_err *err)
{
    return sql_ensure(pg, err);
}

void rb_pg_retry_now(rb_pg *pg)
{
    pg->next_try_ms = rb_mono_ms();
    pg->backoff_ms = SQL_BACKOFF_FIRST_MS;
}

int rb_pg_socket(const rb_pg *pg)
{
    return rb_pg_connected(pg) ? PQsocket(pg->conn) : -1;
}

unsigned rb_pg_generation(const rb_pg *pg)
{
    return pg->generation;
}

int rb_pg_statement_bound(rb_pg *pg, int64_t ms, rb_err *err)
{
    if (pg->io_timeout_ms <= 0)
        return 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    if (ms <= 0)
        return sql_exec(pg, "RESET statement_timeout; RESET lock_timeout", err);
    long long stmt = ms * SQL_STATEMENT_SHARE / 100;
    char sql[96];
    snprintf(sql, sizeof sql, "SET statement_timeout = %lld; SET lock_timeout = %lld",
             stmt > 0 ? stmt : 1, stmt > 0 ? stmt : 1);
    return sql_exec(pg, sql, err);
}

int rb_pg_ping(rb_pg *pg, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (!rc)
        rc = sql_exec(pg, "SELECT 1", err);
    return rc == RB_EDOUBT ? RB_ECONN : rc; /* nothing to commit */
}

/* True when a failed result means the connection is gone or going: libpq's
 * own errors (no SQLSTATE: "server closed the connection unexpectedly"),
 * class 08 (connection exception), and 57P01-57P03 (the server is shutting
 * down, crashed, or not accepting connections yet). */
static bool connection_lost(const rb_pg *pg, const PGresult *r)
{
    if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK || !r)
        return true;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return !state || !strncmp(state, "08", 2) || !strcmp(state, "57P01") ||
           !strcmp(state, "57P02") || !strcmp(state, "57P03");
}

/* Turns a failed result into err; closes a lost connection. */
static void fail_result(rb_pg *pg, PGresult *r, rb_err *err)
{
    if (connection_lost(pg, r)) {
        conn_failed(pg, pg->conn && r ? PQresultErrorMessage(r) : NULL, err);
    } else {
        const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(pg->conn);
        const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
        snprintf(pg->last_sqlstate, sizeof pg->last_sqlstate, "%s", state ? state : "");
        remember_error(pg, msg);
        rb_err_set(err, RB_ESTORE, "database error: %s", pg->last_error);
    }
    PQclear(r);
}

static bool result_ok(const PGresult *r)
{
    ExecStatusType st = PQresultStatus(r);
    return r && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
}

int sql_exec(rb_pg *pg, const char *sql, rb_err *err)
{
    if (!pg->conn)
        return rb_err_set(err, RB_ECONN, "database unavailable (%s)", pg->last_error);
    if (pg->pipe == SQL_PIPE_SEND) /* only sql_run's statements are sent */
        return rb_err_set(err, RB_ESTATE, "not sent in a pipeline");
    if (pg->wrapped && (!strcmp(sql, "BEGIN") || !strcmp(sql, "COMMIT")))
        return rb_err_set(err, RB_ESTORE, "internal error: %s inside a batch transaction", sql);
    rb_err local = {0};
    if (!err)
        err = &local;
    bool commits = autocommit(pg) ? strcmp(sql, "BEGIN") != 0 : !strcmp(sql, "COMMIT");
    PGresult *r = finish(pg, PQsendQuery(pg->conn, sql), commits, err);
    if (!r)
        return err->code ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}

int sql_begin(rb_pg *pg, rb_err *err)
{
    if (!pg->wrapped)
        return sql_exec(pg, "BEGIN", err);
    int rc = sql_exec(pg, "SAVEPOINT rb_unit", err);
    pg->unit = rc == 0;
    return rc;
}

int sql_commit(rb_pg *pg, rb_err *err)
{
    if (pg->conn && PQtransactionStatus(pg->conn) == PQTRANS_INERROR) {
        sql_rollback(pg);
        return rb_err_set(err, RB_ESTORE, "database error: transaction aborted (%s)",
                          pg->last_error);
    }
    if (!pg->unit)
        return sql_exec(pg, "COMMIT", err);
    pg->unit = false;
    return sql_exec(pg, "RELEASE SAVEPOINT rb_unit", err);
}

void sql_rollback(rb_pg *pg)
{
    sql_batch_forget(pg);
    bool unit = pg->unit;
    pg->unit = false;
    if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK)
        return;
    if (unit) {
        exec_quiet(pg, "ROLLBACK TO SAVEPOINT rb_unit");
        if (pg->conn)
            exec_quiet(pg, "RELEASE SAVEPOINT rb_unit");
    } else if (!pg->wrapped) {
        exec_quiet(pg, "ROLLBACK");
    }
}

static int pipe_read(rb_pg *pg, bool begin, bool commit, rb_err *err);

int rb_pg_tx_commit_send(rb_pg *pg, rb_err *err)
{
    bool left = pg->pipe == SQL_PIPE_TAKE && pg->next_sent < pg->n_sent;
    pg->pipe = SQL_PIPE_OFF;
    sent_clear(pg);
    if (left) { /* a result no call took: the calls did not repeat (a bug) */
        rb_pg_tx_rollback(pg);
        return rb_err_set(err, RB_ESTORE, "internal error: a pipelined result was not taken");
    }
    pg->unit = false;
    if (!pg->conn) {
        pg->wrapped = false;
        return rb_err_set(err, RB_ECONN, "database connection lost: %s", pg->last_error);
    }
    if (PQtransactionStatus(pg->conn) != PQTRANS_INTRANS) {
        rb_pg_tx_rollback(pg);
        return rb_err_set(err, RB_ESTORE, "database error: batch transaction aborted (%s)",
                          pg->last_error);
    }
    if (PQenterPipelineMode(pg->conn) != 1) {
        rb_pg_tx_rollback(pg);
        return rb_err_set(err, RB_ESTORE, "database error: %s", PQerrorMessage(pg->conn));
    }
    pg->pipe = SQL_PIPE_SEND;
    return 0;
}

int rb_pg_tx_commit_read(rb_pg *pg, rb_err *err)
{
    return pipe_read(pg, false, true, err);
}

int rb_pg_tx_pipe_commit(rb_pg *pg, rb_err *err)
{
    return pipe_read(pg, true, true, err);
}

void rb_pg_tx_taken(rb_pg *pg)
{
    pg->pipe = SQL_PIPE_OFF;
    sent_clear(pg);
}

/* --- the batch transaction's pipeline --- */

static void sent_clear(rb_pg *pg)
{
    for (size_t i = 0; i < pg->n_sent; i++)
        PQclear(pg->sent[i].r);
    pg->n_sent = pg->next_sent = 0;
}

int rb_pg_tx_pipe_send(rb_pg *pg, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    sent_clear(pg);
    if (PQenterPipelineMode(pg->conn) != 1 ||
        PQsendQueryParams(pg->conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) != 1) {
        PQexitPipelineMode(pg->conn);
        return rb_err_set(err, RB_ESTORE, "database error: %s", PQerrorMessage(pg->conn));
    }
    pg->wrapped = true;
    pg->unit = false;
    pg->committing = false;
    pg->expired_mark = pg->n_expired;
    pg->pipe = SQL_PIPE_SEND;
    return 0;
}

/* The next result of a pipelined query and the NULL that ends it, read by
 * deadline; NULL when it failed (its message kept in last_error), or when
 * the connection failed or the deadline passed (*io set). */
static PGresult *pipe_result(rb_pg *pg, int64_t deadline, bool *ok, int *io)
{
    if (*io != IO_OK) {
        *ok = false;
        return NULL;
    }
    PGresult *r = result_by(pg, deadline, io), *end;
    while (*io == IO_OK && (end = result_by(pg, deadline, io))) /* not expected: one each */
        PQclear(end);
    if (*io != IO_OK) {
        PQclear(r);
        *ok = false;
        return NULL;
    }
    if (result_ok(r))
        return r;
    if (r && PQresultStatus(r) != PGRES_PIPELINE_ABORTED)
        remember_error(pg, PQresultErrorMessage(r));
    else if (!r)
        remember_error(pg, PQerrorMessage(pg->conn));
    PQclear(r);
    *ok = false;
    return NULL;
}

/* Ends a pipeline in one round trip: the Sync sent (after a COMMIT when
 * commit: the batch transaction's end), every result read by the deadline
 * (BEGIN's first when begin: the pipeline rb_pg_tx_pipe_send began) and
 * kept for the calls to take (SQL_PIPE_TAKE). A statement that failed
 * rolls the transaction back (RB_ESTORE: nothing applied); a lost
 * connection or the deadline is RB_ECONN, or RB_EDOUBT when the COMMIT was
 * in flight. */
static int pipe_read(rb_pg *pg, bool begin, bool commit, rb_err *err)
{
    bool sent = pg->pipe == SQL_PIPE_SEND, ok = sent, committed = false;
    pg->pipe = SQL_PIPE_OFF;
    int64_t t0 = rb_mono_ms(), deadline = round_deadline(pg);
    int io = IO_OK;
    pg->committing = commit;
    if ((commit && PQsendQueryParams(pg->conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) != 1) ||
        PQpipelineSync(pg->conn) != 1)
        ok = false;
    else if ((io = flush_by(pg, deadline)) == IO_OK) {
        if (begin)
            PQclear(pipe_result(pg, deadline, &ok, &io)); /* BEGIN */
        for (size_t i = 0; i < pg->n_sent; i++) {
            pg->sent[i].r = pipe_result(pg, deadline, &ok, &io);
            if (!pg->sent[i].r && pg->sent[i].prepare && pg->sent[i].s < SQL_STMT_COUNT)
                pg->prepared &= ~(1u << pg->sent[i].s); /* prepared again next time */
        }
        if (commit) { /* after a failed statement it is skipped: ok is false already */
            PGresult *c = pipe_result(pg, deadline, &ok, &io);
            committed = c != NULL;
            PQclear(c);
        }
        PGresult *sync = io == IO_OK ? result_by(pg, deadline, &io) : NULL;
        if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC)
            ok = false;
        PQclear(sync);
    }
    if (io != IO_OK) { /* lost, or no reply in time */
        sent_clear(pg);
        pg->wrapped = false;
        return round_failed(pg, io, t0, err);
    }
    pg->committing = false; /* answered: committed, or it failed */
    if (PQexitPipelineMode(pg->conn) != 1 || PQstatus(pg->conn) != CONNECTION_OK) {
        sent_clear(pg);
        pg->wrapped = false;
        return conn_failed(pg, NULL, err); /* a pipeline it cannot leave: a connection lost */
    }
    for (size_t i = 0; i < pg->n_sent; i++) /* the preparations: nothing to take */
        if (pg->sent[i].prepare) {
            PQclear(pg->sent[i].r);
            pg->sent[i].r = NULL;
            pg->sent[i].s = SQL_STMT_COUNT;
        }
    if (!ok && !committed) {
        sent_clear(pg);
        rb_pg_tx_rollback(pg);
        return rb_err_set(err, RB_ESTORE, "database error: %s", pg->last_error);
    }
    size_t k = 0; /* the executions, in order */
    for (size_t i = 0; i < pg->n_sent; i++)
        if (!pg->sent[i].prepare)
            pg->sent[k++] = pg->sent[i];
    pg->n_sent = k;
    pg->next_sent = 0;
    pg->pipe = SQL_PIPE_TAKE;
    if (commit) /* committed: what the calls do next runs on its own */
        pg->wrapped = false;
    return 0;
}

int rb_pg_tx_pipe_read(rb_pg *pg, rb_err *err)
{
    return pipe_read(pg, true, false, err);
}

void rb_pg_tx_pipe_skip(rb_pg *pg, bool skip)
{
    pg->pipe_skip = skip;
}

void rb_pg_tx_poison(rb_pg *pg)
{
    if (!pg->conn)
        return;
    if (pg->pipe != SQL_PIPE_SEND) {
        exec_quiet(pg, "SELECT 1/0");
        return;
    }
    /* a pipeline's: sent behind the calls' statements, its result dropped
     * as a preparation's is */
    if (PQsendQueryParams(pg->conn, "SELECT 1/0", 0, NULL, NULL, NULL, NULL, 0) == 1)
        sent_add(pg, SQL_STMT_COUNT, true);
    else
        pg->pipe = SQL_PIPE_OFF; /* the read reports it */
}

void rb_pg_tx_rollback(rb_pg *pg)
{
    pg->pipe = SQL_PIPE_OFF;
    sent_clear(pg);
    pg->wrapped = false;
    pg->unit = false;
    sql_batch_forget(pg);
    if (pg->n_expired > pg->expired_mark) /* dropped by what is undone: not dropped */
        pg->n_expired = pg->expired_mark;
    if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
        exec_quiet(pg, "ROLLBACK");
}

static void sent_add(rb_pg *pg, sql_stmt s, bool prepare)
{
    if (pg->n_sent == pg->cap_sent) {
        pg->cap_sent = pg->cap_sent ? pg->cap_sent * 2 : 8;
        pg->sent = rb_xrealloc(pg->sent, pg->cap_sent * sizeof *pg->sent);
    }
    pg->sent[pg->n_sent++] = (struct sql_sent){.s = s, .prepare = prepare};
}

/* SQL_PIPE_SEND: s (prepared first when it is not yet) sent, no result. */
static PGresult *pipe_send(rb_pg *pg, sql_stmt s, const char *name, int nparams,
                           const char *const *params, rb_err *err)
{
    bool ok = true;
    if (!(pg->prepared & (1u << s))) {
        ok = PQsendPrepare(pg->conn, name, sql_stmt_text[s], 0, NULL) == 1;
        if (ok) {
            sent_add(pg, s, true);
            pg->prepared |= 1u << s; /* unless the pipeline fails: rb_pg_tx_pipe_read */
        }
    }
    if (ok && (ok = PQsendQueryPrepared(pg->conn, name, nparams, params, NULL, NULL, 0) == 1))
        sent_add(pg, s, false);
    if (!ok)
        pg->pipe = SQL_PIPE_OFF; /* rb_pg_tx_pipe_read reports it */
    rb_err_set(err, RB_ESTATE, "sent in a pipeline");
    return NULL;
}

/* SQL_PIPE_TAKE: the next kept result when it is s's. */
static bool pipe_take(rb_pg *pg, sql_stmt s, PGresult **out, rb_err *err)
{
    if (pg->pipe_skip || pg->next_sent >= pg->n_sent || pg->sent[pg->next_sent].s != s)
        return false;
    struct sql_sent *t = &pg->sent[pg->next_sent++];
    *out = t->r;
    t->r = NULL;
    if (!*out)
        rb_err_set(err, RB_ESTORE, "database error: %s", pg->last_error);
    return true;
}

PGresult *sql_run(rb_pg *pg, sql_stmt s, int nparams, const char *const *params, rb_err *err)
{
    if (!pg->conn) {
        rb_err_set(err, RB_ECONN, "database unavailable (%s)", pg->last_error);
        return NULL;
    }
    char name[16];
    snprintf(name, sizeof name, "rb_s%d", (int)s);
    if (pg->pipe == SQL_PIPE_SEND)
        return pipe_send(pg, s, name, nparams, params, err);
    PGresult *kept;
    if (pg->pipe == SQL_PIPE_TAKE && pipe_take(pg, s, &kept, err))
        return kept;
    if (!(pg->prepared & (1u << s))) {
        PGresult *p = finish(pg, PQsendPrepare(pg->conn, name, sql_stmt_text[s], 0, NULL), false,
                             err);
        if (!p)
            return NULL;
        PQclear(p);
        pg->prepared |= 1u << s;
    }
    return finish(pg, PQsendQueryPrepared(pg->conn, name, nparams, params, NULL, NULL, 0),
                  autocommit(pg), err);
}

PGresult *sql_query(rb_pg *pg, const char *sql, int nparams, const char *const *params,
                    rb_err *err)
{
    if (!pg->conn) {
        rb_err_set(err, RB_ECONN, "database unavailable (%s)", pg->last_error);
        return NULL;
    }
    if (pg->pipe == SQL_PIPE_SEND) { /* only sql_run's statements are sent */
        rb_err_set(err, RB_ESTATE, "not sent in a pipeline");
        return NULL;
    }
    return finish(pg, PQsendQueryParams(pg->conn, sql, nparams, NULL, params, NULL, NULL, 0),
                  autocommit(pg), err);
}

int rb_pg_drain(rb_pg *pg, char ***queues, size_t *n, rb_err *err)
{
    *queues = NULL;
    *n = 0;
    if (!rb_pg_connected(pg)) /* no reconnect here: that would block */
        return rb_err_set(err, RB_ECONN, "listen connection lost (%s)", pg->last_error);
    if (!PQconsumeInput(pg->conn)) {
        sql_lost(pg);
        return rb_err_set(err, RB_ECONN, "database connection lost: %s", pg->last_error);
    }
    PGnotify *nt;
    while ((nt = PQnotifies(pg->conn))) {
        bool seen = false;
        for (size_t i = 0; i < *n && !seen; i++)
            seen = strcmp((*queues)[i], nt->extra) == 0;
        if (!seen) {
            *queues = rb_xrealloc(*queues, (*n + 1) * sizeof **queues);
            (*queues)[(*n)++] = rb_xstrdup(nt->extra);
        }
        PQfreemem(nt);
    }
    return 0;
}

/* --- helpers --- */

void sql_arr_begin(rb_buf *b)
{
    rb_buf_reset(b);
    rb_buf_addc(b, '{');
}

static void arr_sep(rb_buf *b)
{
    if (b->len > 1)
        rb_buf_addc(b, ',');
}

void sql_arr_str(rb_buf *b, const char *s)
{
    arr_sep(b);
    if (!s) {
        rb_buf_adds(b, "NULL");
        return;
    }
    rb_buf_addc(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            rb_buf_addc(b, '\\');
        rb_buf_addc(b, *s);
    }
    rb_buf_addc(b, '"');
}

void sql_arr_int(rb_buf *b, int64_t v)
{
    arr_sep(b);
    rb_buf_printf(b, "%lld", (long long)v);
}

void sql_arr_end(rb_buf *b)
{
    rb_buf_addc(b, '}');
}

char *sql_json_with_enqueued(const char *json, int64_t enq_ms)
{
    if (enq_ms <= 0 || json[0] != '{' || strstr(json, "\"enqueued_at\""))
        return rb_xstrdup(json);
    char ts[RB_TIME_STRLEN];
    rb_buf b = RB_BUF_INIT;
    rb_buf_printf(&b, "{\"enqueued_at\":\"%s\"", rb_time_format(enq_ms, ts));
    const char *rest = json + 1;
    while (*rest == ' ')
        rest++;
    if (*rest != '}')
        rb_buf_addc(&b, ',');
    rb_buf_adds(&b, rest);
    return rb_buf_detach(&b, NULL);
}

char *sql_dup(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? NULL : rb_xstrdup(PQgetvalue(r, row, c));
}

int64_t sql_int(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? 0 : strtoll(PQgetvalue(r, row, c), NULL, 10);
}

size_t sql_parse_int_array(const char *s, int64_t *out, size_t max)
{
    size_t n = 0;
    if (!s || *s != '{')
        return 0;
    s++;
    while (*s && *s != '}' && n < max) {
        char *end;
        out[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s != '}')
            break;
    }
    return n;
}

bool rb_pg_is_url(const char *url)
{
    return url && (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13) ||
                   strchr(url, '=') != NULL);
}
