-- Version 3: what a node's /metrics needs back from the database. An ACK
-- reports each completed job's queue and job type (rb_ack_labels), a
-- promotion how late each job was (rb_promote_late); and the cluster-wide
-- worker registry (rb_workers, rb_worker_seen). rb_ack and rb_promote
-- are left in place so that nodes still running the previous release keep
-- working until they are restarted (docs/distributed.md, upgrading).
-- ACK: one row per request, in request order: the status as
-- rb_job_status, and for a completed job its queue and its top-level
-- "jobtype" (at most 127 characters; NULL when not a string).
CREATE FUNCTION rb_ack_labels(p_jids text[], p_wids text[], p_shard int)
RETURNS TABLE (status int, queue text, jobtype text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE n int := coalesce(array_length(p_jids, 1), 0);
  st int[] := array_fill(0, ARRAY[n]);
  qs text[] := array_fill(NULL::text, ARRAY[n]);
  ts text[] := array_fill(NULL::text, ARRAY[n]);
  i int; r record; jt json; done int := 0;
BEGIN
  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)
           ORDER BY u.jid, u.ord LOOP
    SELECT j.state, j.flags, j.wid, j.queue, j.json INTO r FROM rb_jobs j
      WHERE j.jid = p_jids[i] FOR UPDATE;
    IF NOT FOUND THEN
      st[i] := 1;
    ELSIF r.state = 3 AND r.flags & 2 <> 0 AND r.wid IS NOT NULL
          AND p_wids[i] IS NOT NULL AND r.wid <> p_wids[i] THEN
      st[i] := 2;
    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN
      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];
      done := done + 1;
      st[i] := 0;
      qs[i] := r.queue;
      jt := r.json::json -> 'jobtype';
      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;
    ELSE
      st[i] := 3;
    END IF;
  END LOOP;
  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;
  RETURN QUERY SELECT * FROM unnest(st, qs, ts);
END $$;
-- The timer, as rb_promote, returning p_now - due_ms of every job it
-- moved to its queue (the array's length is the count).
CREATE FUNCTION rb_promote_late(p_now bigint, p_limit int) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE st int; qs text[]; ls bigint[]; late bigint[] := '{}';
BEGIN
  FOREACH st IN ARRAY ARRAY[4, 1] LOOP
    EXIT WHEN cardinality(late) >= p_limit;
    WITH due AS MATERIALIZED (
      SELECT d.jid, d.due_ms FROM rb_jobs d WHERE d.state = st AND d.due_ms <= p_now
      ORDER BY d.due_ms LIMIT p_limit - cardinality(late) FOR UPDATE SKIP LOCKED),
    up AS (
      UPDATE rb_jobs j SET state = 2, due_ms = p_now, enq_ms = p_now,
        first_ms = CASE WHEN j.first_ms = 0 THEN p_now ELSE j.first_ms END,
        seq = nextval('rb_job_seq')
      FROM due WHERE j.jid = due.jid RETURNING j.queue, p_now - due.due_ms AS late_ms)
    SELECT coalesce(array_agg(up.late_ms), '{}'), array_agg(DISTINCT up.queue)
      INTO ls, qs FROM up;
    PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;
    late := late || ls;
  END LOOP;
  RETURN late;
END $$;
-- The cluster's workers (docs/distributed.md, "Workers"): one row per
-- HELLO wid. seen_ms is the last time any node saw it alive (its
-- HELLO, a BEAT, or the node holding a connection from it refreshing
-- the row); a row is live while seen_ms is within RB_PG_WORKER_TTL_MS,
-- and stale rows are deleted by any node's maintenance. signal is 0,
-- 1 (quiet) or 2 (terminate), said at the worker's next BEAT.
CREATE TABLE rb_workers (
  wid text PRIMARY KEY,
  info text,
  node text NOT NULL,
  first_ms bigint NOT NULL,
  beat_ms bigint NOT NULL,
  seen_ms bigint NOT NULL,
  signal int NOT NULL DEFAULT 0);
CREATE INDEX rb_workers_seen ON rb_workers (seen_ms);
-- HELLO, BEAT and a node's refresh, batched: the signal per request in
-- request order, -1 for a BEAT (kind 0) of a wid without a live row.
-- Kinds: 0 BEAT from a node without a connection from the wid (only a
-- live row counts), 1 BEAT from a node with one, 2 HELLO (with info),
-- 3 refresh (beat_ms kept); 1-3 insert the row when missing, and a
-- stale row found again starts afresh (first_ms, no signal). Rows are
-- locked in wid order so that concurrent batches cannot deadlock.
CREATE FUNCTION rb_worker_seen(p_wids text[], p_kinds int[], p_infos text[],
                               p_node text, p_now bigint, p_live bigint)
RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE n int := coalesce(array_length(p_wids, 1), 0);
  res int[] := array_fill(-1, ARRAY[n]);
  i int; k int; s int;
BEGIN
  FOR i IN SELECT u.ord FROM unnest(p_wids) WITH ORDINALITY AS u(wid, ord)
           ORDER BY u.wid, u.ord LOOP
    k := p_kinds[i];
    IF k = 0 THEN
      UPDATE rb_workers w SET beat_ms = p_now, seen_ms = p_now, node = p_node
        WHERE w.wid = p_wids[i] AND w.seen_ms >= p_live RETURNING w.signal INTO s;
      IF FOUND THEN res[i] := s; END IF;
    ELSE
      INSERT INTO rb_workers AS w (wid, info, node, first_ms, beat_ms, seen_ms)
        VALUES (p_wids[i], p_infos[i], p_node, p_now, p_now, p_now)
      ON CONFLICT (wid) DO UPDATE SET
        info = coalesce(excluded.info, w.info), node = excluded.node,
        first_ms = CASE WHEN w.seen_ms < p_live THEN p_now ELSE w.first_ms END,
        signal = CASE WHEN w.seen_ms < p_live THEN 0 ELSE w.signal END,
        beat_ms = CASE WHEN k = 3 AND w.seen_ms >= p_live THEN w.beat_ms ELSE p_now END,
        seen_ms = p_now
      RETURNING w.signal INTO s;
      res[i] := s;
    END IF;
  END LOOP;
  RETURN res;
END $$;
UPDATE rb_meta SET value = '3' WHERE key = 'schema_version';
