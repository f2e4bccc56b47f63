/* The PostgreSQL schema and its migrations. Each version is one SQL text,
 * applied in order inside one transaction under an advisory lock; the
 * version is kept in rb_meta. Invariant: never edit a released migration,
 * add a new one and bump RB_PG_SCHEMA_VERSION. Every object lives in the
 * connection's current schema, so one database can hold several deployments
 * (and the tests use one schema per case). */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

/* Version 1: the tables. States and flags are the numbers in sql.h.
 * due_ms is the state's deadline (run at, lease end, retention end), or the
 * enqueue time while enqueued; enq_ms the last enqueue (enqueued_at); seq
 * the FIFO rank within a priority. Counters are split into shards so nodes
 * do not queue behind one row; readers sum them. */
static const char migration_1[] =
    "CREATE TABLE rb_meta (key text PRIMARY KEY, value text NOT NULL);\n"
    "CREATE SEQUENCE rb_job_seq;\n"
    "CREATE TABLE rb_jobs (\n"
    "  jid text PRIMARY KEY,\n"
    "  state smallint NOT NULL,\n"
    "  queue text NOT NULL,\n"
    "  priority smallint NOT NULL,\n"
    "  seq bigint NOT NULL DEFAULT nextval('rb_job_seq'),\n"
    "  due_ms bigint NOT NULL,\n"
    "  enq_ms bigint NOT NULL DEFAULT 0,\n"
    "  first_ms bigint NOT NULL DEFAULT 0,\n"
    "  attempts integer NOT NULL DEFAULT 0,\n"
    "  reserve_s integer NOT NULL,\n"
    "  flags smallint NOT NULL DEFAULT 0,\n"
    "  wid text,\n"
    "  json text NOT NULL,\n"
    "  history text\n"
    ");\n"
    "CREATE INDEX rb_jobs_ready ON rb_jobs (queue, priority DESC, seq) WHERE state = 2;\n"
    "CREATE INDEX rb_jobs_timed ON rb_jobs (state, due_ms) WHERE state <> 2;\n"
    "CREATE TABLE rb_queues (name text PRIMARY KEY, paused boolean NOT NULL DEFAULT false);\n"
    "CREATE TABLE rb_counters (name text NOT NULL, shard smallint NOT NULL,\n"
    "  value bigint NOT NULL, PRIMARY KEY (name, shard));\n"
    "INSERT INTO rb_meta VALUES ('schema_version', '1');\n";

/* Version 2: the functions behind the engine's statements (one round trip
 * each). Lock order, to rule out deadlocks: job rows in jid order (or SKIP
 * LOCKED), queue rows in name order, counter rows last. */
static const char migration_2[] =
    "CREATE FUNCTION rb_channel() RETURNS text LANGUAGE sql STABLE AS\n"
    "$$ SELECT 'rebound:' || current_schema() $$;\n"

    "CREATE FUNCTION rb_count(p_name text, p_shard int, p_delta bigint) RETURNS void\n"
    "LANGUAGE sql AS $$\n"
    "  INSERT INTO rb_counters (name, shard, value) VALUES (p_name, p_shard, p_delta)\n"
    "  ON CONFLICT (name, shard) DO UPDATE SET value = rb_counters.value + excluded.value\n"
    "$$;\n"

    /* PUSH/PUSHB: inserted jids back; taken ones are left out. */
    "CREATE FUNCTION rb_push(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],\n"
    "  p_reserve int[], p_json text[], p_now bigint) RETURNS text[]\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE ok text[]; qs text[];\n"
    "BEGIN\n"
    "  INSERT INTO rb_queues (name) SELECT DISTINCT u.q FROM unnest(p_queue) AS u(q)\n"
    "    ORDER BY 1 ON CONFLICT DO NOTHING;\n"
    "  WITH ins AS (\n"
    "    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,\n"
    "                              reserve_s, json)\n"
    "    SELECT u.jid, CASE WHEN u.run_at > p_now THEN 1 ELSE 2 END, u.queue, u.prio,\n"
    "      greatest(u.run_at, p_now), CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END,\n"
    "      CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END, u.reserve, u.body\n"
    "    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json) WITH ORDINALITY\n"
    "      AS u(jid, queue, prio, run_at, reserve, body, ord)\n"
    "    ORDER BY u.ord\n"
    "    ON CONFLICT (jid) DO NOTHING\n"
    "    RETURNING j.jid, j.queue, j.state)\n"
    "  SELECT coalesce(array_agg(i.jid), '{}'),\n"
    "         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)\n"
    "    INTO ok, qs FROM ins i;\n"
    "  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "  RETURN ok;\n"
    "END $$;\n"

    /* FETCH: per queue in order, the fenced CTE picks and locks, then the
     * UPDATE claims; MATERIALIZED keeps the planner from re-running the
     * LIMIT subquery. Slot k gets holder p_wids[k+1]. */
    "CREATE FUNCTION rb_claim(p_queues text[], p_wids text[], p_now bigint)\n"
    "RETURNS TABLE (slot int, jid text, json text, enq_ms bigint)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE q text; want int := coalesce(array_length(p_wids, 1), 0); got int := 0; n int;\n"
    "BEGIN\n"
    "  FOREACH q IN ARRAY p_queues LOOP\n"
    "    EXIT WHEN got >= want;\n"
    "    CONTINUE WHEN EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = q AND qq.paused);\n"
    "    RETURN QUERY\n"
    "      WITH picked AS MATERIALIZED (\n"
    "        SELECT r.jid, r.priority, r.seq FROM rb_jobs r\n"
    "        WHERE r.state = 2 AND r.queue = q\n"
    "        ORDER BY r.priority DESC, r.seq\n"
    "        LIMIT want - got\n"
    "        FOR UPDATE SKIP LOCKED),\n"
    "      numbered AS (\n"
    "        SELECT p.jid, (got + row_number() OVER (ORDER BY p.priority DESC, p.seq))::int AS rn\n"
    "        FROM picked p)\n"
    "      UPDATE rb_jobs j SET state = 3, attempts = j.attempts + 1, wid = p_wids[nb.rn],\n"
    "        due_ms = p_now + j.reserve_s * 1000::bigint,\n"
    "        flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END\n"
    "      FROM numbered nb WHERE j.jid = nb.jid\n"
    "      RETURNING nb.rn - 1, j.jid, j.json, j.enq_ms;\n"
    "    GET DIAGNOSTICS n = ROW_COUNT;\n"
    "    got := got + n;\n"
    "  END LOOP;\n"
    "END $$;\n"

    /* ACK: statuses as rb_job_status, in request order. */
    "CREATE FUNCTION rb_ack(p_jids text[], p_wids text[], p_shard int) RETURNS int[]\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE st int[] := array_fill(0, ARRAY[coalesce(array_length(p_jids, 1), 0)]);\n"
    "  i int; r record; done int := 0;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)\n"
    "           ORDER BY u.jid, u.ord LOOP\n"
    "    SELECT j.state, j.flags, j.wid INTO r FROM rb_jobs j WHERE j.jid = p_jids[i] FOR UPDATE;\n"
    "    IF NOT FOUND THEN\n"
    "      st[i] := 1;\n"
    "    ELSIF r.state = 3 AND r.flags & 2 <> 0 AND r.wid IS NOT NULL\n"
    "          AND p_wids[i] IS NOT NULL AND r.wid <> p_wids[i] THEN\n"
    "      st[i] := 2;\n"
    "    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN\n"
    "      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];\n"
    "      done := done + 1;\n"
    "      st[i] := 0;\n"
    "    ELSE\n"
    "      st[i] := 3;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;\n"
    "  RETURN st;\n"
    "END $$;\n"

    /* FAIL and the reaper: the decisions made in C, written at once. */
    "CREATE FUNCTION rb_fail_apply(p_jid text[], p_state int[], p_due bigint[], p_flags int[],\n"
    "  p_json text[], p_hist text[], p_del text[], p_failures int, p_shard int) RETURNS void\n"
    "LANGUAGE plpgsql AS $$\n"
    "BEGIN\n"
    "  UPDATE rb_jobs j SET state = u.st, due_ms = u.due, flags = u.fl, json = u.body,\n"
    "    history = u.hist, wid = NULL\n"
    "  FROM unnest(p_jid, p_state, p_due, p_flags, p_json, p_hist)\n"
    "    AS u(jid, st, due, fl, body, hist)\n"
    "  WHERE j.jid = u.jid;\n"
    "  DELETE FROM rb_jobs j WHERE j.jid = ANY(p_del);\n"
    "  IF p_failures > 0 THEN PERFORM rb_count('failures', p_shard, p_failures); END IF;\n"
    "END $$;\n"

    /* SNOOZE and EXTEND: (status, state) as rb_job_status and the job's state. */
    "CREATE FUNCTION rb_held(p_jid text, p_wid text, OUT status int, OUT state int,\n"
    "  OUT queue text) LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE r record;\n"
    "BEGIN\n"
    "  SELECT j.state, j.flags, j.wid, j.queue INTO r FROM rb_jobs j\n"
    "    WHERE j.jid = p_jid FOR UPDATE;\n"
    "  IF NOT FOUND THEN status := 1; state := 0; RETURN; END IF;\n"
    "  state := r.state; queue := r.queue;\n"
    "  IF r.state = 3 AND r.flags & 2 <> 0 AND r.wid IS NOT NULL AND p_wid IS NOT NULL\n"
    "     AND r.wid <> p_wid THEN status := 2;\n"
    "  ELSIF r.state <> 3 THEN status := 4;\n"
    "  ELSE status := 0;\n"
    "  END IF;\n"
    "END $$;\n"

    "CREATE FUNCTION rb_snooze(p_jid text, p_wid text, p_seconds bigint, p_now bigint,\n"
    "  OUT status int, OUT state int) LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE h record;\n"
    "BEGIN\n"
    "  SELECT * INTO h FROM rb_held(p_jid, p_wid);\n"
    "  status := h.status; state := h.state;\n"
    "  IF h.status <> 0 THEN RETURN; END IF;\n"
    "  IF p_seconds > 0 THEN\n"
    "    UPDATE rb_jobs j SET state = 1, due_ms = p_now + p_seconds * 1000,\n"
    "      attempts = j.attempts - 1, flags = 0, wid = NULL WHERE j.jid = p_jid;\n"
    "  ELSE\n"
    "    UPDATE rb_jobs j SET state = 2, due_ms = p_now, enq_ms = p_now,\n"
    "      seq = nextval('rb_job_seq'), attempts = j.attempts - 1, flags = 0, wid = NULL\n"
    "      WHERE j.jid = p_jid;\n"
    "    PERFORM pg_notify(rb_channel(), h.queue);\n"
    "  END IF;\n"
    "END $$;\n"

    "CREATE FUNCTION rb_extend(p_jid text, p_wid text, p_seconds bigint, p_now bigint,\n"
    "  OUT status int, OUT state int) LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE h record;\n"
    "BEGIN\n"
    "  SELECT * INTO h FROM rb_held(p_jid, p_wid);\n"
    "  status := h.status; state := h.state;\n"
    "  IF h.status = 0 THEN\n"
    "    UPDATE rb_jobs j SET due_ms = p_now + p_seconds * 1000 WHERE j.jid = p_jid;\n"
    "  END IF;\n"
    "END $$;\n"

    /* The timer: due scheduled/retrying jobs become enqueued. One state at
     * a time, so each pick walks rb_jobs_timed in order and stops at the
     * limit, however many jobs are due. */
    "CREATE FUNCTION rb_promote(p_now bigint, p_limit int) RETURNS int\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE st int; qs text[]; n int; total int := 0;\n"
    "BEGIN\n"
    "  FOREACH st IN ARRAY ARRAY[4, 1] LOOP\n"
    "    EXIT WHEN total >= p_limit;\n"
    "    WITH due AS MATERIALIZED (\n"
    "      SELECT d.jid FROM rb_jobs d WHERE d.state = st AND d.due_ms <= p_now\n"
    "      ORDER BY d.due_ms LIMIT p_limit - total FOR UPDATE SKIP LOCKED),\n"
    "    up AS (\n"
    "      UPDATE rb_jobs j SET state = 2, due_ms = p_now, enq_ms = p_now,\n"
    "        first_ms = CASE WHEN j.first_ms = 0 THEN p_now ELSE j.first_ms END,\n"
    "        seq = nextval('rb_job_seq')\n"
    "      FROM due WHERE j.jid = due.jid RETURNING j.queue)\n"
    "    SELECT count(*), array_agg(DISTINCT up.queue) INTO n, qs FROM up;\n"
    "    PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "    total := total + n;\n"
    "  END LOOP;\n"
    "  RETURN total;\n"
    "END $$;\n"

    /* MUTATE on rows the caller selected (and locked) in this transaction. */
    "CREATE FUNCTION rb_mutate_apply(p_cmd text, p_jids text[], p_now bigint,\n"
    "  p_retention_ms bigint) RETURNS void\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE qs text[];\n"
    "BEGIN\n"
    "  IF p_cmd IN ('discard', 'clear') THEN\n"
    "    DELETE FROM rb_jobs j WHERE j.jid = ANY(p_jids);\n"
    "  ELSIF p_cmd = 'kill' THEN\n"
    "    UPDATE rb_jobs j SET state = 5, due_ms = p_now + p_retention_ms, wid = NULL\n"
    "      WHERE j.jid = ANY(p_jids) AND j.state <> 5;\n"
    "  ELSIF p_cmd = 'requeue' THEN\n"
    "    WITH up AS (\n"
    "      UPDATE rb_jobs j SET state = 2, flags = 0, wid = NULL, due_ms = p_now,\n"
    "        enq_ms = p_now, seq = nextval('rb_job_seq'),\n"
    "        first_ms = CASE WHEN j.first_ms = 0 THEN p_now ELSE j.first_ms END\n"
    "      WHERE j.jid = ANY(p_jids) RETURNING j.queue)\n"
    "    SELECT array_agg(DISTINCT up.queue) INTO qs FROM up;\n"
    "    PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "  ELSE\n"
    "    RAISE EXCEPTION 'unknown mutation %', p_cmd;\n"
    "  END IF;\n"
    "END $$;\n"

    /* INFO's numbers as one JSON text. */
    "CREATE FUNCTION rb_info() RETURNS text LANGUAGE sql STABLE AS $$\n"
    "  SELECT json_build_object(\n"
    "    'counts', (SELECT coalesce(json_object_agg(s.state, s.n), '{}')\n"
    "               FROM (SELECT state, count(*) AS n FROM rb_jobs GROUP BY state) s),\n"
    "    'queues', (SELECT coalesce(json_agg(json_build_array(x.name, x.size, x.paused)\n"
    "                                        ORDER BY x.name), '[]')\n"
    "               FROM (SELECT coalesce(a.queue, q.name) AS name, coalesce(a.n, 0) AS size,\n"
    "                            coalesce(q.paused, false) AS paused\n"
    "                     FROM (SELECT queue, count(*) AS n FROM rb_jobs WHERE state = 2\n"
    "                           GROUP BY queue) a\n"
    "                     FULL JOIN (SELECT name, paused FROM rb_queues WHERE paused) q\n"
    "                       ON q.name = a.queue) x),\n"
    "    'processed', (SELECT coalesce(sum(value), 0) FROM rb_counters\n"
    "                  WHERE name = 'processed'),\n"
    "    'failures', (SELECT coalesce(sum(value), 0) FROM rb_counters\n"
    "                 WHERE name = 'failures'))::text\n"
    "$$;\n"
    "UPDATE rb_meta SET value = '2' WHERE key = 'schema_version';\n";

/* Version 3: what a node's /metrics needs back from the database. An ACK
 * reports each completed job's queue and job type (rb_ack_labels), a
 * promotion how late each job was (rb_promote_late); and the cluster-wide
 * worker registry (rb_workers, rb_worker_seen). rb_ack and rb_promote
 * are left in place so that nodes still running the previous release keep
 * working until they are restarted (docs/distributed.md, upgrading). */
static const char migration_3[] =
    /* ACK: one row per request, in request order: the status as
     * rb_job_status, and for a completed job its queue and its top-level
     * "jobtype" (at most 127 characters; NULL when not a string). */
    "CREATE FUNCTION rb_ack_labels(p_jids text[], p_wids text[], p_shard int)\n"
    "RETURNS TABLE (status int, queue text, jobtype text)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE n int := coalesce(array_length(p_jids, 1), 0);\n"
    "  st int[] := array_fill(0, ARRAY[n]);\n"
    "  qs text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  ts text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  i int; r record; jt json; done int := 0;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)\n"
    "           ORDER BY u.jid, u.ord LOOP\n"
    "    SELECT j.state, j.flags, j.wid, j.queue, j.json INTO r FROM rb_jobs j\n"
    "      WHERE j.jid = p_jids[i] FOR UPDATE;\n"
    "    IF NOT FOUND THEN\n"
    "      st[i] := 1;\n"
    "    ELSIF r.state = 3 AND r.flags & 2 <> 0 AND r.wid IS NOT NULL\n"
    "          AND p_wids[i] IS NOT NULL AND r.wid <> p_wids[i] THEN\n"
    "      st[i] := 2;\n"
    "    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN\n"
    "      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];\n"
    "      done := done + 1;\n"
    "      st[i] := 0;\n"
    "      qs[i] := r.queue;\n"
    "      jt := r.json::json -> 'jobtype';\n"
    "      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;\n"
    "    ELSE\n"
    "      st[i] := 3;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;\n"
    "  RETURN QUERY SELECT * FROM unnest(st, qs, ts);\n"
    "END $$;\n"

    /* The timer, as rb_promote, returning p_now - due_ms of every job it
     * moved to its queue (the array's length is the count). */
    "CREATE FUNCTION rb_promote_late(p_now bigint, p_limit int) RETURNS bigint[]\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE st int; qs text[]; ls bigint[]; late bigint[] := '{}';\n"
    "BEGIN\n"
    "  FOREACH st IN ARRAY ARRAY[4, 1] LOOP\n"
    "    EXIT WHEN cardinality(late) >= p_limit;\n"
    "    WITH due AS MATERIALIZED (\n"
    "      SELECT d.jid, d.due_ms FROM rb_jobs d WHERE d.state = st AND d.due_ms <= p_now\n"
    "      ORDER BY d.due_ms LIMIT p_limit - cardinality(late) FOR UPDATE SKIP LOCKED),\n"
    "    up AS (\n"
    "      UPDATE rb_jobs j SET state = 2, due_ms = p_now, enq_ms = p_now,\n"
    "        first_ms = CASE WHEN j.first_ms = 0 THEN p_now ELSE j.first_ms END,\n"
    "        seq = nextval('rb_job_seq')\n"
    "      FROM due WHERE j.jid = due.jid RETURNING j.queue, p_now - due.due_ms AS late_ms)\n"
    "    SELECT coalesce(array_agg(up.late_ms), '{}'), array_agg(DISTINCT up.queue)\n"
    "      INTO ls, qs FROM up;\n"
    "    PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "    late := late || ls;\n"
    "  END LOOP;\n"
    "  RETURN late;\n"
    "END $$;\n"

    /* The cluster's workers (docs/distributed.md, "Workers"): one row per
     * HELLO wid. seen_ms is the last time any node saw it alive (its
     * HELLO, a BEAT, or the node holding a connection from it refreshing
     * the row); a row is live while seen_ms is within RB_PG_WORKER_TTL_MS,
     * and stale rows are deleted by any node's maintenance. signal is 0,
     * 1 (quiet) or 2 (terminate), said at the worker's next BEAT. */
    "CREATE TABLE rb_workers (\n"
    "  wid text PRIMARY KEY,\n"
    "  info text,\n"
    "  node text NOT NULL,\n"
    "  first_ms bigint NOT NULL,\n"
    "  beat_ms bigint NOT NULL,\n"
    "  seen_ms bigint NOT NULL,\n"
    "  signal int NOT NULL DEFAULT 0);\n"
    "CREATE INDEX rb_workers_seen ON rb_workers (seen_ms);\n"

    /* HELLO, BEAT and a node's refresh, batched: the signal per request in
     * request order, -1 for a BEAT (kind 0) of a wid without a live row.
     * Kinds: 0 BEAT from a node without a connection from the wid (only a
     * live row counts), 1 BEAT from a node with one, 2 HELLO (with info),
     * 3 refresh (beat_ms kept); 1-3 insert the row when missing, and a
     * stale row found again starts afresh (first_ms, no signal). Rows are
     * locked in wid order so that concurrent batches cannot deadlock. */
    "CREATE FUNCTION rb_worker_seen(p_wids text[], p_kinds int[], p_infos text[],\n"
    "                               p_node text, p_now bigint, p_live bigint)\n"
    "RETURNS int[]\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE n int := coalesce(array_length(p_wids, 1), 0);\n"
    "  res int[] := array_fill(-1, ARRAY[n]);\n"
    "  i int; k int; s int;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_wids) WITH ORDINALITY AS u(wid, ord)\n"
    "           ORDER BY u.wid, u.ord LOOP\n"
    "    k := p_kinds[i];\n"
    "    IF k = 0 THEN\n"
    "      UPDATE rb_workers w SET beat_ms = p_now, seen_ms = p_now, node = p_node\n"
    "        WHERE w.wid = p_wids[i] AND w.seen_ms >= p_live RETURNING w.signal INTO s;\n"
    "      IF FOUND THEN res[i] := s; END IF;\n"
    "    ELSE\n"
    "      INSERT INTO rb_workers AS w (wid, info, node, first_ms, beat_ms, seen_ms)\n"
    "        VALUES (p_wids[i], p_infos[i], p_node, p_now, p_now, p_now)\n"
    "      ON CONFLICT (wid) DO UPDATE SET\n"
    "        info = coalesce(excluded.info, w.info), node = excluded.node,\n"
    "        first_ms = CASE WHEN w.seen_ms < p_live THEN p_now ELSE w.first_ms END,\n"
    "        signal = CASE WHEN w.seen_ms < p_live THEN 0 ELSE w.signal END,\n"
    "        beat_ms = CASE WHEN k = 3 AND w.seen_ms >= p_live THEN w.beat_ms ELSE p_now END,\n"
    "        seen_ms = p_now\n"
    "      RETURNING w.signal INTO s;\n"
    "      res[i] := s;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  RETURN res;\n"
    "END $$;\n"
    "UPDATE rb_meta SET value = '3' WHERE key = 'schema_version';\n";

/* Version 4: a working job belongs to the wid that claimed it (issue 13).
 * Before, ACK, SNOOZE and EXTEND from another wid were refused only for a
 * job claimed again after an expired lease (flags & 2); now for every
 * working job. A request without a wid is still not checked. The functions
 * are replaced in place with the same signatures, so every ACK, SNOOZE and
 * EXTEND the database applies follows the rule, whichever release the node
 * runs; FAIL is decided in C (sql_fail.c), so a node of an earlier release
 * keeps the old rule for FAIL until it is restarted. */
static const char migration_4[] =
    "CREATE OR REPLACE FUNCTION rb_held(p_jid text, p_wid text, OUT status int,\n"
    "  OUT state int, OUT queue text) LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE r record;\n"
    "BEGIN\n"
    "  SELECT j.state, j.wid, j.queue INTO r FROM rb_jobs j WHERE j.jid = p_jid FOR UPDATE;\n"
    "  IF NOT FOUND THEN status := 1; state := 0; RETURN; END IF;\n"
    "  state := r.state; queue := r.queue;\n"
    "  IF r.state = 3 AND r.wid IS NOT NULL AND p_wid IS NOT NULL AND r.wid <> p_wid THEN\n"
    "    status := 2;\n"
    "  ELSIF r.state <> 3 THEN status := 4;\n"
    "  ELSE status := 0;\n"
    "  END IF;\n"
    "END $$;\n"

    "CREATE OR REPLACE FUNCTION rb_ack_labels(p_jids text[], p_wids text[], p_shard int)\n"
    "RETURNS TABLE (status int, queue text, jobtype text)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE n int := coalesce(array_length(p_jids, 1), 0);\n"
    "  st int[] := array_fill(0, ARRAY[n]);\n"
    "  qs text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  ts text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  i int; r record; jt json; done int := 0;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)\n"
    "           ORDER BY u.jid, u.ord LOOP\n"
    "    SELECT j.state, j.flags, j.wid, j.queue, j.json INTO r FROM rb_jobs j\n"
    "      WHERE j.jid = p_jids[i] FOR UPDATE;\n"
    "    IF NOT FOUND THEN\n"
    "      st[i] := 1;\n"
    "    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL\n"
    "          AND r.wid <> p_wids[i] THEN\n"
    "      st[i] := 2;\n"
    "    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN\n"
    "      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];\n"
    "      done := done + 1;\n"
    "      st[i] := 0;\n"
    "      qs[i] := r.queue;\n"
    "      jt := r.json::json -> 'jobtype';\n"
    "      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;\n"
    "    ELSE\n"
    "      st[i] := 3;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;\n"
    "  RETURN QUERY SELECT * FROM unnest(st, qs, ts);\n"
    "END $$;\n"

    /* version 2's ACK, for nodes of that release still running */
    "CREATE OR REPLACE FUNCTION rb_ack(p_jids text[], p_wids text[], p_shard int)\n"
    "RETURNS int[] LANGUAGE sql AS $$\n"
    "  SELECT coalesce(array_agg(a.status ORDER BY a.ord), '{}')\n"
    "  FROM rb_ack_labels(p_jids, p_wids, p_shard) WITH ORDINALITY\n"
    "    AS a(status, queue, jobtype, ord)\n"
    "$$;\n"
    "UPDATE rb_meta SET value = '4' WHERE key = 'schema_version';\n";

/* Version 5: job dependencies (docs/workflows.md, issue 15). States 6
 * (waiting) and 7 (blocked) are plain values of rb_jobs.state. Only jobs
 * of a workflow touch the new tables: rb_edges (parent, child) while the
 * parent still concerns the child; rb_wait per held child (its remaining
 * parents, of those the dead ones blocking it, its on_dep_failure as
 * rb_dep_mode); rb_dep_done the ACKed workflow jobs a later push may still
 * name, until until_ms ([workflows] succeeded_ttl). rb_jobs.wf marks a job
 * that named parents; a parent is known by its edges (an index probe), so
 * a push never writes its parents' rows (it holds them FOR SHARE, and two
 * pushes naming one parent must not both upgrade that lock). A plain ACK
 * costs one probe more. rb_ack_deps is rb_ack_labels plus the release of an ACKed
 * parent's children (the succeeded event of src/engine/depend.c's
 * rb_dep_on_parent: the edge is used up, remaining drops by one, a child
 * at 0 with no dead parent is enqueued, or scheduled when its `at` is
 * later, its policy counting from then). */
static const char migration_5[] =
    "ALTER TABLE rb_jobs ADD COLUMN wf boolean NOT NULL DEFAULT false;\n"
    "CREATE TABLE rb_edges (parent text NOT NULL, child text NOT NULL,\n"
    "  PRIMARY KEY (parent, child));\n"
    "CREATE INDEX rb_edges_child ON rb_edges (child);\n"
    "CREATE TABLE rb_wait (child text PRIMARY KEY, remaining int NOT NULL,\n"
    "  dead int NOT NULL DEFAULT 0, mode smallint NOT NULL DEFAULT 0);\n"
    "CREATE TABLE rb_dep_done (jid text PRIMARY KEY, until_ms bigint NOT NULL);\n"
    "CREATE INDEX rb_dep_done_until ON rb_dep_done (until_ms);\n"

    /* A child leaves waiting: enqueued now, or scheduled at its `at`
     * (kept in due_ms while it waits); attempts and first_ms start over. */
    "CREATE FUNCTION rb_dep_release(p_child text, p_now bigint) RETURNS void\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE q text; st int;\n"
    "BEGIN\n"
    "  DELETE FROM rb_wait w WHERE w.child = p_child;\n"
    "  UPDATE rb_jobs j SET state = CASE WHEN j.due_ms > p_now THEN 1 ELSE 2 END,\n"
    "    due_ms = greatest(j.due_ms, p_now), attempts = 0, flags = 0, wid = NULL,\n"
    "    enq_ms = CASE WHEN j.due_ms > p_now THEN 0 ELSE p_now END,\n"
    "    first_ms = CASE WHEN j.due_ms > p_now THEN 0 ELSE p_now END,\n"
    "    seq = nextval('rb_job_seq')\n"
    "    WHERE j.jid = p_child RETURNING j.queue, j.state INTO q, st;\n"
    "  IF st = 2 THEN PERFORM pg_notify(rb_channel(), q); END IF;\n"
    "END $$;\n"

    /* Parent p_jid was ACKed (its row already deleted): its record, and
     * its children told, locked in jid order. */
    "CREATE FUNCTION rb_dep_succeeded(p_jid text, p_now bigint, p_ttl_ms bigint)\n"
    "RETURNS void LANGUAGE plpgsql AS $$\n"
    "DECLARE c text; w record;\n"
    "BEGIN\n"
    "  INSERT INTO rb_dep_done (jid, until_ms) VALUES (p_jid, p_now + p_ttl_ms)\n"
    "    ON CONFLICT (jid) DO UPDATE SET until_ms = excluded.until_ms;\n"
    "  FOR c IN SELECT e.child FROM rb_edges e WHERE e.parent = p_jid ORDER BY e.child LOOP\n"
    "    PERFORM 1 FROM rb_jobs j WHERE j.jid = c FOR UPDATE;\n"
    "    DELETE FROM rb_edges e WHERE e.parent = p_jid AND e.child = c;\n"
    "    UPDATE rb_wait x SET remaining = greatest(x.remaining - 1, 0),\n"
    "      dead = least(x.dead, greatest(x.remaining - 1, 0))\n"
    "      WHERE x.child = c RETURNING x.remaining, x.dead INTO w;\n"
    "    IF NOT FOUND THEN CONTINUE; END IF;\n"
    "    IF w.remaining = 0 THEN\n"
    "      PERFORM rb_dep_release(c, p_now);\n"
    "    ELSIF w.dead > 0 THEN\n"
    "      UPDATE rb_jobs j SET state = 7 WHERE j.jid = c AND j.state IN (6, 7);\n"
    "    ELSE\n"
    "      UPDATE rb_jobs j SET state = 6 WHERE j.jid = c AND j.state IN (6, 7);\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "END $$;\n"

    "CREATE FUNCTION rb_ack_deps(p_jids text[], p_wids text[], p_shard int, p_now bigint,\n"
    "  p_ttl_ms bigint)\n"
    "RETURNS TABLE (status int, queue text, jobtype text)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE n int := coalesce(array_length(p_jids, 1), 0);\n"
    "  st int[] := array_fill(0, ARRAY[n]);\n"
    "  qs text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  ts text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  i int; r record; jt json; done int := 0;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)\n"
    "           ORDER BY u.jid, u.ord LOOP\n"
    "    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf INTO r FROM rb_jobs j\n"
    "      WHERE j.jid = p_jids[i] FOR UPDATE;\n"
    "    IF NOT FOUND THEN\n"
    "      st[i] := 1;\n"
    "    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL\n"
    "          AND r.wid <> p_wids[i] THEN\n"
    "      st[i] := 2;\n"
    "    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN\n"
    "      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];\n"
    "      IF r.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = p_jids[i]) THEN\n"
    "        PERFORM rb_dep_succeeded(p_jids[i], p_now, p_ttl_ms);\n"
    "      END IF;\n"
    "      done := done + 1;\n"
    "      st[i] := 0;\n"
    "      qs[i] := r.queue;\n"
    "      jt := r.json::json -> 'jobtype';\n"
    "      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;\n"
    "    ELSE\n"
    "      st[i] := 3;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;\n"
    "  RETURN QUERY SELECT * FROM unnest(st, qs, ts);\n"
    "END $$;\n"

    /* A pushed child (its row inserted by rb_push in this transaction):
     * edges to its parents still stored (the others succeeded), its
     * count, state waiting when any remain; the child marked. */
    "CREATE FUNCTION rb_dep_attach(p_child text, p_parents text[], p_mode int)\n"
    "RETURNS int LANGUAGE plpgsql AS $$\n"
    "DECLARE n int;\n"
    "BEGIN\n"
    "  INSERT INTO rb_edges (parent, child)\n"
    "    SELECT j.jid, p_child FROM rb_jobs j WHERE j.jid = ANY(p_parents)\n"
    "    ON CONFLICT DO NOTHING;\n"
    "  GET DIAGNOSTICS n = ROW_COUNT;\n"
    "  UPDATE rb_jobs j SET wf = true WHERE j.jid = p_child;\n"
    "  IF n > 0 THEN\n"
    "    INSERT INTO rb_wait (child, remaining, dead, mode) VALUES (p_child, n, 0, p_mode);\n"
    "    UPDATE rb_jobs j SET state = 6, enq_ms = 0, first_ms = 0 WHERE j.jid = p_child;\n"
    "  END IF;\n"
    "  RETURN n;\n"
    "END $$;\n"
    /* nodes of the previous release still running: their ACK (and
     * version 2's rb_ack, which calls it) releases children too, with the
     * database's clock and the default succeeded_ttl (1 h) */
    "CREATE OR REPLACE FUNCTION rb_ack_labels(p_jids text[], p_wids text[], p_shard int)\n"
    "RETURNS TABLE (status int, queue text, jobtype text) LANGUAGE sql AS $$\n"
    "  SELECT * FROM rb_ack_deps(p_jids, p_wids, p_shard,\n"
    "    (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 3600000)\n"
    "$$;\n"
    "UPDATE rb_meta SET value = '5' WHERE key = 'schema_version';\n";

/* Version 6: batches (docs/workflows.md "Batches", issue 15). rb_batches
 * holds each batch's stored form (engine/batch.h's rb_batch_dump) in body,
 * with the columns the statements need: parent_bid, depth (0 at top level,
 * a child one more than its parent: batch rows are locked in (depth DESC,
 * bid) order, descendants before ancestors, so no two transactions
 * deadlock), committed, created_ms and finished_ms for expiry. On rb_jobs,
 * bid is the batch of a member (custom.bid) or of a callback job
 * (custom._bid, with bcb true), set only for those jobs. rb_ack_batch is
 * rb_ack_deps except that a batch member or callback that would be
 * completed is left untouched with status 5 when p_batch is false: the node
 * then ACKs it in a transaction of its own that also locks and updates its
 * batch (sql_batch.c), so a plain ACK stays one statement. */
static const char migration_6[] =
    "CREATE TABLE rb_batches (bid text PRIMARY KEY, parent_bid text,\n"
    "  depth int NOT NULL DEFAULT 0, committed boolean NOT NULL DEFAULT false,\n"
    "  created_ms bigint NOT NULL, finished_ms bigint NOT NULL DEFAULT 0,\n"
    "  body text NOT NULL);\n"
    "CREATE INDEX rb_batches_parent ON rb_batches (parent_bid) WHERE parent_bid IS NOT NULL;\n"
    "CREATE INDEX rb_batches_open ON rb_batches (created_ms) WHERE NOT committed;\n"
    "CREATE INDEX rb_batches_finished ON rb_batches (finished_ms) WHERE finished_ms > 0;\n"
    "ALTER TABLE rb_jobs ADD COLUMN bid text;\n"
    "ALTER TABLE rb_jobs ADD COLUMN bcb boolean NOT NULL DEFAULT false;\n"

    "CREATE FUNCTION rb_ack_batch(p_jids text[], p_wids text[], p_shard int, p_now bigint,\n"
    "  p_ttl_ms bigint, p_batch boolean)\n"
    "RETURNS TABLE (status int, queue text, jobtype text)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE n int := coalesce(array_length(p_jids, 1), 0);\n"
    "  st int[] := array_fill(0, ARRAY[n]);\n"
    "  qs text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  ts text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  i int; r record; jt json; done int := 0;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)\n"
    "           ORDER BY u.jid, u.ord LOOP\n"
    "    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf, j.bid INTO r FROM rb_jobs j\n"
    "      WHERE j.jid = p_jids[i] FOR UPDATE;\n"
    "    IF NOT FOUND THEN\n"
    "      st[i] := 1;\n"
    "    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL\n"
    "          AND r.wid <> p_wids[i] THEN\n"
    "      st[i] := 2;\n"
    "    ELSIF (r.state = 3 OR r.flags & 1 <> 0) AND r.bid IS NOT NULL AND NOT p_batch THEN\n"
    "      st[i] := 5;\n"
    "    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN\n"
    "      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];\n"
    "      IF r.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = p_jids[i]) THEN\n"
    "        PERFORM rb_dep_succeeded(p_jids[i], p_now, p_ttl_ms);\n"
    "      END IF;\n"
    "      done := done + 1;\n"
    "      st[i] := 0;\n"
    "      qs[i] := r.queue;\n"
    "      jt := r.json::json -> 'jobtype';\n"
    "      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;\n"
    "    ELSE\n"
    "      st[i] := 3;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;\n"
    "  RETURN QUERY SELECT * FROM unnest(st, qs, ts);\n"
    "END $$;\n"
    "UPDATE rb_meta SET value = '6' WHERE key = 'schema_version';\n";

/* Version 7: a batch's members found by bid (its page, GET /api/batch/BID,
 * sql_batch_view.c): a partial index, so the jobs of no batch (bid NULL)
 * cost it nothing. */
static const char migration_7[] =
    "CREATE INDEX rb_jobs_bid ON rb_jobs (bid, jid) WHERE bid IS NOT NULL;\n"
    "UPDATE rb_meta SET value = '7' WHERE key = 'schema_version';\n";

/* Version 8: unique jobs and expiring jobs (docs/enterprise.md, issue 16).
 * rb_unique holds one row per lock: key (engine/unique.h's SHA-256 of
 * jobtype, queue and canonical args) is the primary key, so two nodes
 * pushing the same unique job at once cannot both win; until_ms is when it
 * runs out (a push finding a lock that ran out takes it over), start marks
 * unique_until "start". On rb_jobs, ukey is the key a unique job locked
 * (NULL for every other job) and expires_ms its custom.expires_at (NULL for
 * none). rb_push_unique is rb_push for a push holding a unique or expiring
 * job (plain pushes keep rb_push): the locks taken first, in key order,
 * then the jobs not refused inserted. A lock is released by its holder
 * alone (key and jid both match, never a newer holder's) through two
 * triggers whose WHEN skips every job without ukey: when the job row is
 * deleted (ACK, discard, QUEUE REMOVE, expiry), when it dies (state 5), and
 * at its claim (state 3) for unique_until "start". rb_claim_unexpired is
 * rb_claim leaving the expired ready jobs it picks as they are and
 * reporting them (slot -1) for the node to drop in a transaction of its own
 * (sql_unique.c) and claim again for the slots they used up: a claim with
 * no expired job costs what rb_claim did. rb_claim, left for nodes of the
 * previous release, runs it without the reports. */
static const char migration_8[] =
    "CREATE TABLE rb_unique (key text PRIMARY KEY, jid text NOT NULL,\n"
    "  until_ms bigint NOT NULL, start boolean NOT NULL DEFAULT false);\n"
    "ALTER TABLE rb_jobs ADD COLUMN ukey text;\n"
    "ALTER TABLE rb_jobs ADD COLUMN expires_ms bigint;\n"
    "CREATE INDEX rb_jobs_expiring ON rb_jobs (expires_ms) WHERE expires_ms IS NOT NULL;\n"

    "CREATE FUNCTION rb_unique_release() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    "BEGIN\n"
    "  DELETE FROM rb_unique l WHERE l.key = OLD.ukey AND l.jid = OLD.jid\n"
    "    AND (TG_OP = 'DELETE' OR NEW.state = 5 OR l.start);\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE TRIGGER rb_jobs_unique_deleted AFTER DELETE ON rb_jobs FOR EACH ROW\n"
    "  WHEN (OLD.ukey IS NOT NULL) EXECUTE FUNCTION rb_unique_release();\n"
    "CREATE TRIGGER rb_jobs_unique_moved AFTER UPDATE OF state ON rb_jobs FOR EACH ROW\n"
    "  WHEN (OLD.ukey IS NOT NULL AND NEW.state IN (3, 5) AND OLD.state <> NEW.state)\n"
    "  EXECUTE FUNCTION rb_unique_release();\n"

    /* o_st: 0 inserted, 1 not unique (o_holder: the lock's holder); a jid
     * taken is left out (as rb_push) */
    "CREATE FUNCTION rb_push_unique(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],\n"
    "  p_reserve int[], p_json text[], p_now bigint, p_ukey text[], p_until bigint[],\n"
    "  p_start boolean[], p_exp bigint[], p_shard int)\n"
    "RETURNS TABLE (o_jid text, o_st int, o_holder text) LANGUAGE plpgsql AS $$\n"
    "DECLARE n int := coalesce(array_length(p_jid, 1), 0);\n"
    "  keep boolean[] := array_fill(true, ARRAY[n]);\n"
    "  i int; refused int := 0; ok text[]; qs text[];\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_ukey) WITH ORDINALITY AS u(k, ord)\n"
    "           WHERE u.k IS NOT NULL ORDER BY u.k, u.ord LOOP\n"
    "    INSERT INTO rb_unique AS l (key, jid, until_ms, start)\n"
    "      VALUES (p_ukey[i], p_jid[i], p_until[i], p_start[i])\n"
    "      ON CONFLICT (key) DO UPDATE SET jid = excluded.jid, until_ms = excluded.until_ms,\n"
    "        start = excluded.start\n"
    "      WHERE l.until_ms <= p_now;\n"
    "    IF NOT FOUND THEN\n"
    "      keep[i] := false;\n"
    "      refused := refused + 1;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  INSERT INTO rb_queues (name) SELECT DISTINCT u.q\n"
    "    FROM unnest(p_queue) WITH ORDINALITY AS u(q, ord) WHERE keep[u.ord]\n"
    "    ORDER BY 1 ON CONFLICT DO NOTHING;\n"
    "  WITH ins AS (\n"
    "    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,\n"
    "                              reserve_s, json, ukey, expires_ms)\n"
    "    SELECT u.jid, CASE WHEN u.run_at > p_now THEN 1 ELSE 2 END, u.queue, u.prio,\n"
    "      greatest(u.run_at, p_now), CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END,\n"
    "      CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END, u.reserve, u.body, u.k, u.exp\n"
    "    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json, p_ukey, p_exp)\n"
    "      WITH ORDINALITY AS u(jid, queue, prio, run_at, reserve, body, k, exp, ord)\n"
    "    WHERE keep[u.ord]\n"
    "    ORDER BY u.ord\n"
    "    ON CONFLICT (jid) DO NOTHING\n"
    "    RETURNING j.jid, j.queue, j.state)\n"
    "  SELECT coalesce(array_agg(i.jid), '{}'),\n"
    "         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)\n"
    "    INTO ok, qs FROM ins i;\n"
    /* a unique job whose jid was taken: the lock it just took undone */
    "  DELETE FROM rb_unique l\n"
    "    USING unnest(p_ukey, p_jid) WITH ORDINALITY AS u(k, jid, ord)\n"
    "    WHERE u.k IS NOT NULL AND keep[u.ord] AND NOT (u.jid = ANY(ok))\n"
    "      AND l.key = u.k AND l.jid = u.jid;\n"
    "  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "  IF refused > 0 THEN PERFORM rb_count('unique_rejected', p_shard, refused); END IF;\n"
    "  RETURN QUERY SELECT u.jid, CASE WHEN keep[u.ord] THEN 0 ELSE 1 END,\n"
    "      CASE WHEN NOT keep[u.ord] THEN\n"
    "        (SELECT l.jid FROM rb_unique l WHERE l.key = p_ukey[u.ord]) END\n"
    "    FROM unnest(p_jid) WITH ORDINALITY AS u(jid, ord)\n"
    "    WHERE NOT keep[u.ord] OR u.jid = ANY(ok) ORDER BY u.ord;\n"
    "END $$;\n"

    /* version 2's rb_claim, an expired job picked reported in place of a claim */
    "CREATE FUNCTION rb_claim_unexpired(p_queues text[], p_wids text[], p_now bigint)\n"
    "RETURNS TABLE (slot int, jid text, json text, enq_ms bigint)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE q text; want int := coalesce(array_length(p_wids, 1), 0); got int := 0; n int;\n"
    "BEGIN\n"
    "  FOREACH q IN ARRAY p_queues LOOP\n"
    "    EXIT WHEN got >= want;\n"
    "    CONTINUE WHEN EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = q AND qq.paused);\n"
    /* as rb_claim, except that an expired job picked is left as it is and
     * reported (slot -1): it used up a slot, which the node claims again
     * for once it has dropped the job */
    "    RETURN QUERY\n"
    "      WITH picked AS MATERIALIZED (\n"
    "        SELECT r.jid, r.priority, r.seq, coalesce(r.expires_ms <= p_now, false) AS gone\n"
    "        FROM rb_jobs r\n"
    "        WHERE r.state = 2 AND r.queue = q\n"
    "        ORDER BY r.priority DESC, r.seq\n"
    "        LIMIT want - got\n"
    "        FOR UPDATE SKIP LOCKED),\n"
    "      numbered AS (\n"
    "        SELECT p.jid, p.gone, (got + row_number() OVER (ORDER BY p.priority DESC, p.seq))::int\n"
    "          AS rn\n"
    "        FROM picked p)\n"
    "      UPDATE rb_jobs j SET state = CASE WHEN nb.gone THEN j.state ELSE 3 END,\n"
    "        attempts = CASE WHEN nb.gone THEN j.attempts ELSE j.attempts + 1 END,\n"
    "        wid = CASE WHEN nb.gone THEN j.wid ELSE p_wids[nb.rn] END,\n"
    "        due_ms = CASE WHEN nb.gone THEN j.due_ms ELSE p_now + j.reserve_s * 1000::bigint END,\n"
    "        flags = CASE WHEN nb.gone THEN j.flags WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END\n"
    "      FROM numbered nb WHERE j.jid = nb.jid\n"
    "      RETURNING CASE WHEN nb.gone THEN -1 ELSE nb.rn - 1 END, j.jid,\n"
    "        CASE WHEN nb.gone THEN NULL ELSE j.json END, j.enq_ms;\n"
    "    GET DIAGNOSTICS n = ROW_COUNT;\n"
    "    got := got + n;\n"
    "  END LOOP;\n"
    "END $$;\n"
    /* nodes of the previous release: expired jobs never claimed nor reported */
    "CREATE OR REPLACE FUNCTION rb_claim(p_queues text[], p_wids text[], p_now bigint)\n"
    "RETURNS TABLE (slot int, jid text, json text, enq_ms bigint) LANGUAGE sql AS $$\n"
    "  SELECT * FROM rb_claim_unexpired(p_queues, p_wids, p_now) c WHERE c.slot >= 0\n"
    "$$;\n"
    "UPDATE rb_meta SET value = '8' WHERE key = 'schema_version';\n";

/* Version 9: progress tracking (docs/enterprise.md "Tracking", issue 16).
 * rb_track holds one record per jid that got a TRACK SET: percent (-1:
 * never set), descr (NULL: never set), updated_ms (the last SET), and once
 * its job is gone ended_ms and state (engine/track.h's rb_track_state: 3
 * success, 5 dead); ended records are dropped RB_TRACK_RETENTION_MS after
 * ended_ms (the maintenance sweep, sql_track.c). A live job's state is
 * never copied here: TRACK GET reads its row. rb_jobs.trk marks a job
 * whose record is live (set by TRACK SET), so the end of every other job
 * costs nothing: rb_ack_batch (replaced in place, same signature, so the
 * nodes of the previous release ACK by it too) ends a marked job's record
 * as a success before deleting the row, and a trigger whose WHEN skips
 * every unmarked row ends it as dead when the row is deleted any other
 * way (FAIL's discard, MUTATE, QUEUE REMOVE, expiry, the dead set's
 * retention), with the database's clock; an ACK's success is kept. FLUSH
 * truncates the table (TRUNCATE fires no row trigger). */
static const char migration_9[] =
    "CREATE TABLE rb_track (jid text PRIMARY KEY, percent int NOT NULL DEFAULT -1,\n"
    "  descr text, updated_ms bigint NOT NULL DEFAULT 0,\n"
    "  ended_ms bigint NOT NULL DEFAULT 0, state smallint NOT NULL DEFAULT 0);\n"
    "CREATE INDEX rb_track_ended ON rb_track (ended_ms) WHERE ended_ms > 0;\n"
    "ALTER TABLE rb_jobs ADD COLUMN trk boolean NOT NULL DEFAULT false;\n"

    "CREATE FUNCTION rb_track_gone() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    "BEGIN\n"
    "  UPDATE rb_track t SET ended_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,\n"
    "    state = 5 WHERE t.jid = OLD.jid AND t.ended_ms = 0;\n"
    "  RETURN NULL;\n"
    "END $$;\n"
    "CREATE TRIGGER rb_jobs_track_deleted AFTER DELETE ON rb_jobs FOR EACH ROW\n"
    "  WHEN (OLD.trk) EXECUTE FUNCTION rb_track_gone();\n"

    /* version 6's, a marked job's record ended as a success first */
    "CREATE OR REPLACE FUNCTION rb_ack_batch(p_jids text[], p_wids text[], p_shard int,\n"
    "  p_now bigint, p_ttl_ms bigint, p_batch boolean)\n"
    "RETURNS TABLE (status int, queue text, jobtype text)\n"
    "LANGUAGE plpgsql AS $$\n"
    "#variable_conflict use_column\n"
    "DECLARE n int := coalesce(array_length(p_jids, 1), 0);\n"
    "  st int[] := array_fill(0, ARRAY[n]);\n"
    "  qs text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  ts text[] := array_fill(NULL::text, ARRAY[n]);\n"
    "  i int; r record; jt json; done int := 0;\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)\n"
    "           ORDER BY u.jid, u.ord LOOP\n"
    "    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf, j.bid, j.trk INTO r\n"
    "      FROM rb_jobs j WHERE j.jid = p_jids[i] FOR UPDATE;\n"
    "    IF NOT FOUND THEN\n"
    "      st[i] := 1;\n"
    "    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL\n"
    "          AND r.wid <> p_wids[i] THEN\n"
    "      st[i] := 2;\n"
    "    ELSIF (r.state = 3 OR r.flags & 1 <> 0) AND r.bid IS NOT NULL AND NOT p_batch THEN\n"
    "      st[i] := 5;\n"
    "    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN\n"
    "      IF r.trk THEN\n"
    "        UPDATE rb_track t SET ended_ms = p_now, state = 3 WHERE t.jid = p_jids[i];\n"
    "      END IF;\n"
    "      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];\n"
    "      IF r.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = p_jids[i]) THEN\n"
    "        PERFORM rb_dep_succeeded(p_jids[i], p_now, p_ttl_ms);\n"
    "      END IF;\n"
    "      done := done + 1;\n"
    "      st[i] := 0;\n"
    "      qs[i] := r.queue;\n"
    "      jt := r.json::json -> 'jobtype';\n"
    "      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;\n"
    "    ELSE\n"
    "      st[i] := 3;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;\n"
    "  RETURN QUERY SELECT * FROM unnest(st, qs, ts);\n"
    "END $$;\n"
    "UPDATE rb_meta SET value = '9' WHERE key = 'schema_version';\n";

/* Version 10: the workflow graph sees used-up edges (docs/workflows.md
 * "Seeing it", issue 25). rb_edges keeps an edge only while the parent
 * concerns the child; once it is used up (the parent ACKed, or dead and
 * cancelling or ignored by the child, or discarded, or the child killed)
 * it moves to rb_edges_used, which only the graph reads: a dead parent's
 * released or cancelled children, and a succeeded record's parents and
 * children, stay in its graph while the jobs are stored or recorded. A
 * row goes when its child is gone (deleted without a record, or its
 * record expired); one whose parent is gone stays: the child shows that
 * parent as unknown. rb_dep_succeeded (called by rb_ack_deps and
 * rb_ack_batch) is replaced in place to move its edges; the other moves
 * are the nodes' C code (sql_deps.c), so a node of the previous release
 * still running only leaves those out of the graph. */
static const char migration_10[] =
    "CREATE TABLE rb_edges_used (parent text NOT NULL, child text NOT NULL,\n"
    "  PRIMARY KEY (parent, child));\n"
    "CREATE INDEX rb_edges_used_child ON rb_edges_used (child);\n"
    /* version 5's, its used-up edges kept for the graph */
    "CREATE OR REPLACE FUNCTION rb_dep_succeeded(p_jid text, p_now bigint, p_ttl_ms bigint)\n"
    "RETURNS void LANGUAGE plpgsql AS $$\n"
    "DECLARE c text; w record;\n"
    "BEGIN\n"
    "  INSERT INTO rb_dep_done (jid, until_ms) VALUES (p_jid, p_now + p_ttl_ms)\n"
    "    ON CONFLICT (jid) DO UPDATE SET until_ms = excluded.until_ms;\n"
    "  FOR c IN SELECT e.child FROM rb_edges e WHERE e.parent = p_jid ORDER BY e.child LOOP\n"
    "    PERFORM 1 FROM rb_jobs j WHERE j.jid = c FOR UPDATE;\n"
    "    DELETE FROM rb_edges e WHERE e.parent = p_jid AND e.child = c;\n"
    "    INSERT INTO rb_edges_used (parent, child) VALUES (p_jid, c) ON CONFLICT DO NOTHING;\n"
    "    UPDATE rb_wait x SET remaining = greatest(x.remaining - 1, 0),\n"
    "      dead = least(x.dead, greatest(x.remaining - 1, 0))\n"
    "      WHERE x.child = c RETURNING x.remaining, x.dead INTO w;\n"
    "    IF NOT FOUND THEN CONTINUE; END IF;\n"
    "    IF w.remaining = 0 THEN\n"
    "      PERFORM rb_dep_release(c, p_now);\n"
    "    ELSIF w.dead > 0 THEN\n"
    "      UPDATE rb_jobs j SET state = 7 WHERE j.jid = c AND j.state IN (6, 7);\n"
    "    ELSE\n"
    "      UPDATE rb_jobs j SET state = 6 WHERE j.jid = c AND j.state IN (6, 7);\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "END $$;\n"
    "UPDATE rb_meta SET value = '10' WHERE key = 'schema_version';\n";

/* Version 11: INFO lists every known queue, as Faktory does (issue 25):
 * every rb_queues row (a queue pushed to or paused; QUEUE REMOVE deletes
 * its row) and any queue with jobs enqueued, size 0 once empty. Before,
 * only the queues with jobs enqueued or paused. rb_push and rb_push_unique
 * replaced in place: a refused push no longer adds its queue's row. */
static const char migration_11[] =
    "CREATE OR REPLACE FUNCTION rb_info() RETURNS text LANGUAGE sql STABLE AS $$\n"
    "  SELECT json_build_object(\n"
    "    'counts', (SELECT coalesce(json_object_agg(s.state, s.n), '{}')\n"
    "               FROM (SELECT state, count(*) AS n FROM rb_jobs GROUP BY state) s),\n"
    "    'queues', (SELECT coalesce(json_agg(json_build_array(x.name, x.size, x.paused)\n"
    "                                        ORDER BY x.name), '[]')\n"
    "               FROM (SELECT coalesce(a.queue, q.name) AS name, coalesce(a.n, 0) AS size,\n"
    "                            coalesce(q.paused, false) AS paused\n"
    "                     FROM (SELECT queue, count(*) AS n FROM rb_jobs WHERE state = 2\n"
    "                           GROUP BY queue) a\n"
    "                     FULL JOIN rb_queues q ON q.name = a.queue) x),\n"
    "    'processed', (SELECT coalesce(sum(value), 0) FROM rb_counters\n"
    "                  WHERE name = 'processed'),\n"
    "    'failures', (SELECT coalesce(sum(value), 0) FROM rb_counters\n"
    "                 WHERE name = 'failures'))::text\n"
    "$$;\n"
    /* a push refused (its jid taken, or not unique) makes no queue known:
     * the queue's row comes with the jobs inserted */
    "CREATE OR REPLACE FUNCTION rb_push(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],\n"
    "  p_reserve int[], p_json text[], p_now bigint) RETURNS text[]\n"
    "LANGUAGE plpgsql AS $$\n"
    "DECLARE ok text[]; qs text[];\n"
    "BEGIN\n"
    "  WITH ins AS (\n"
    "    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,\n"
    "                              reserve_s, json)\n"
    "    SELECT u.jid, CASE WHEN u.run_at > p_now THEN 1 ELSE 2 END, u.queue, u.prio,\n"
    "      greatest(u.run_at, p_now), CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END,\n"
    "      CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END, u.reserve, u.body\n"
    "    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json) WITH ORDINALITY\n"
    "      AS u(jid, queue, prio, run_at, reserve, body, ord)\n"
    "    ORDER BY u.ord\n"
    "    ON CONFLICT (jid) DO NOTHING\n"
    "    RETURNING j.jid, j.queue, j.state),\n"
    "  known AS (INSERT INTO rb_queues (name) SELECT DISTINCT i.queue FROM ins i\n"
    "    ORDER BY 1 ON CONFLICT DO NOTHING)\n"
    "  SELECT coalesce(array_agg(i.jid), '{}'),\n"
    "         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)\n"
    "    INTO ok, qs FROM ins i;\n"
    "  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "  RETURN ok;\n"
    "END $$;\n"
    "CREATE OR REPLACE FUNCTION rb_push_unique(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],\n"
    "  p_reserve int[], p_json text[], p_now bigint, p_ukey text[], p_until bigint[],\n"
    "  p_start boolean[], p_exp bigint[], p_shard int)\n"
    "RETURNS TABLE (o_jid text, o_st int, o_holder text) LANGUAGE plpgsql AS $$\n"
    "DECLARE n int := coalesce(array_length(p_jid, 1), 0);\n"
    "  keep boolean[] := array_fill(true, ARRAY[n]);\n"
    "  i int; refused int := 0; ok text[]; qs text[];\n"
    "BEGIN\n"
    "  FOR i IN SELECT u.ord FROM unnest(p_ukey) WITH ORDINALITY AS u(k, ord)\n"
    "           WHERE u.k IS NOT NULL ORDER BY u.k, u.ord LOOP\n"
    "    INSERT INTO rb_unique AS l (key, jid, until_ms, start)\n"
    "      VALUES (p_ukey[i], p_jid[i], p_until[i], p_start[i])\n"
    "      ON CONFLICT (key) DO UPDATE SET jid = excluded.jid, until_ms = excluded.until_ms,\n"
    "        start = excluded.start\n"
    "      WHERE l.until_ms <= p_now;\n"
    "    IF NOT FOUND THEN\n"
    "      keep[i] := false;\n"
    "      refused := refused + 1;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "  WITH ins AS (\n"
    "    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,\n"
    "                              reserve_s, json, ukey, expires_ms)\n"
    "    SELECT u.jid, CASE WHEN u.run_at > p_now THEN 1 ELSE 2 END, u.queue, u.prio,\n"
    "      greatest(u.run_at, p_now), CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END,\n"
    "      CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END, u.reserve, u.body, u.k, u.exp\n"
    "    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json, p_ukey, p_exp)\n"
    "      WITH ORDINALITY AS u(jid, queue, prio, run_at, reserve, body, k, exp, ord)\n"
    "    WHERE keep[u.ord]\n"
    "    ORDER BY u.ord\n"
    "    ON CONFLICT (jid) DO NOTHING\n"
    "    RETURNING j.jid, j.queue, j.state),\n"
    "  known AS (INSERT INTO rb_queues (name) SELECT DISTINCT i.queue FROM ins i\n"
    "    ORDER BY 1 ON CONFLICT DO NOTHING)\n"
    "  SELECT coalesce(array_agg(i.jid), '{}'),\n"
    "         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)\n"
    "    INTO ok, qs FROM ins i;\n"
    /* a unique job whose jid was taken: the lock it just took undone */
    "  DELETE FROM rb_unique l\n"
    "    USING unnest(p_ukey, p_jid) WITH ORDINALITY AS u(k, jid, ord)\n"
    "    WHERE u.k IS NOT NULL AND keep[u.ord] AND NOT (u.jid = ANY(ok))\n"
    "      AND l.key = u.k AND l.jid = u.jid;\n"
    "  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;\n"
    "  IF refused > 0 THEN PERFORM rb_count('unique_rejected', p_shard, refused); END IF;\n"
    "  RETURN QUERY SELECT u.jid, CASE WHEN keep[u.ord] THEN 0 ELSE 1 END,\n"
    "      CASE WHEN NOT keep[u.ord] THEN\n"
    "        (SELECT l.jid FROM rb_unique l WHERE l.key = p_ukey[u.ord]) END\n"
    "    FROM unnest(p_jid) WITH ORDINALITY AS u(jid, ord)\n"
    "    WHERE NOT keep[u.ord] OR u.jid = ANY(ok) ORDER BY u.ord;\n"
    "END $$;\n"
    "UPDATE rb_meta SET value = '11' WHERE key = 'schema_version';\n";

/* Version 12: a counter row per engine (issue 27). Until now each engine
 * added to one of 16 shared rows per counter, picked at random: a node
 * frozen mid-transaction (cut off from the database, or paused) kept its
 * row locked, and every other engine that had picked the same row waited
 * for it. Each engine now takes a shard of its own from rb_counter_shard
 * when it connects (16 and up: 0..15 stay with nodes of earlier releases,
 * whose functions are unchanged), so no engine ever waits on another's
 * counter row; readers still sum. The maintenance sweep folds the rows of
 * engines into shard -1 (rows locked by a transaction in flight are
 * skipped), so the table does not grow with every node start. */
static const char migration_12[] =
    "ALTER TABLE rb_counters ALTER COLUMN shard TYPE int;\n"
    "CREATE SEQUENCE rb_counter_shard AS int MINVALUE 16 START 16;\n"
    "UPDATE rb_meta SET value = '12' WHERE key = 'schema_version';\n";

static const char *const migrations[RB_PG_SCHEMA_VERSION] = {
    migration_1, migration_2, migration_3, migration_4, migration_5, migration_6, migration_7,
    migration_8, migration_9, migration_10, migration_11, migration_12};

/* The version inside the current transaction (or autocommit). */
static int read_version(rb_pg *pg, int *version, rb_err *err)
{
    PGresult *r = sql_query(pg, "SELECT to_regclass('rb_meta') IS NOT NULL", 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    bool exists = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    *version = 0;
    if (!exists)
        return 0;
    r = sql_query(pg, "SELECT value FROM rb_meta WHERE key = 'schema_version'", 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (PQntuples(r) == 1)
        *version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

int rb_pg_schema_version(rb_pg *pg, int *version, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    return rc ? rc : read_version(pg, version, err);
}

int rb_pg_check_schema(rb_pg *pg, rb_err *err)
{
    int v, rc = rb_pg_schema_version(pg, &v, err);
    if (rc)
        return rc;
    if (v == RB_PG_SCHEMA_VERSION)
        return 0;
    if (v == 0)
        return rb_err_set(err, RB_EVERSION,
                          "the database has no rebound schema: run 'rebound migrate' first");
    if (v < RB_PG_SCHEMA_VERSION)
        return rb_err_set(err, RB_EVERSION,
                          "the database schema is version %d, this rebound needs %d: run "
                          "'rebound migrate'", v, RB_PG_SCHEMA_VERSION);
    return rb_err_set(err, RB_EVERSION,
                      "the database schema is version %d, newer than this rebound supports "
                      "(%d): upgrade rebound on this node", v, RB_PG_SCHEMA_VERSION);
}

int rb_pg_migrate_to(rb_pg *pg, int target, int *from, rb_err *err)
{
    if (target < 1 || target > RB_PG_SCHEMA_VERSION)
        return rb_err_set(err, RB_EINVAL, "schema version must be from 1 to %d, not %d",
                          RB_PG_SCHEMA_VERSION, target);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    if ((rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    int v = 0;
    if ((rc = sql_exec(pg, "SELECT pg_advisory_xact_lock(hashtext('rebound:migrate:' ||"
                          " current_schema()))", err)) ||
        (rc = read_version(pg, &v, err)))
        goto fail;
    if (from)
        *from = v;
    if (v > RB_PG_SCHEMA_VERSION) {
        rc = rb_err_set(err, RB_EVERSION,
                        "the database schema is version %d, newer than this rebound supports "
                        "(%d): refusing to touch it", v, RB_PG_SCHEMA_VERSION);
        goto fail;
    }
    for (int next = v + 1; next <= target; next++) {
        if ((rc = sql_exec(pg, migrations[next - 1], err))) {
            rb_err_prefix(err, "migration to schema version %d", next);
            goto fail;
        }
    }
    if ((rc = sql_exec(pg, "COMMIT", err)))
        return rc;
    pg->prepared = 0; /* functions may have changed */
    sql_take_shard(pg); /* a counter row of its own, now that there are some */
    return 0;
fail:
    sql_rollback(pg);
    return rc;
}

int rb_pg_migrate(rb_pg *pg, int *from, int *to, rb_err *err)
{
    int rc = rb_pg_migrate_to(pg, RB_PG_SCHEMA_VERSION, from, err);
    if (!rc && to)
        *to = RB_PG_SCHEMA_VERSION;
    return rc;
}
