-- Version 2: the functions behind the engine's statements (one round trip
-- each). Lock order, to rule out deadlocks: job rows in jid order (or SKIP
-- LOCKED), queue rows in name order, counter rows last.
CREATE FUNCTION rb_channel() RETURNS text LANGUAGE sql STABLE AS
$$ SELECT 'rebound:' || current_schema() $$;
CREATE FUNCTION rb_count(p_name text, p_shard int, p_delta bigint) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO rb_counters (name, shard, value) VALUES (p_name, p_shard, p_delta)
  ON CONFLICT (name, shard) DO UPDATE SET value = rb_counters.value + excluded.value
$$;
-- PUSH/PUSHB: inserted jids back; taken ones are left out.
CREATE FUNCTION rb_push(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],
  p_reserve int[], p_json text[], p_now bigint) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE ok text[]; qs text[];
BEGIN
  INSERT INTO rb_queues (name) SELECT DISTINCT u.q FROM unnest(p_queue) AS u(q)
    ORDER BY 1 ON CONFLICT DO NOTHING;
  WITH ins AS (
    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,
                              reserve_s, json)
    SELECT u.jid, CASE WHEN u.run_at > p_now THEN 1 ELSE 2 END, u.queue, u.prio,
      greatest(u.run_at, p_now), CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END,
      CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END, u.reserve, u.body
    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json) WITH ORDINALITY
      AS u(jid, queue, prio, run_at, reserve, body, ord)
    ORDER BY u.ord
    ON CONFLICT (jid) DO NOTHING
    RETURNING j.jid, j.queue, j.state)
  SELECT coalesce(array_agg(i.jid), '{}'),
         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)
    INTO ok, qs FROM ins i;
  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;
  RETURN ok;
END $$;
-- FETCH: per queue in order, the fenced CTE picks and locks, then the
-- UPDATE claims; MATERIALIZED keeps the planner from re-running the
-- LIMIT subquery. Slot k gets holder p_wids[k+1].
CREATE FUNCTION rb_claim(p_queues text[], p_wids text[], p_now bigint)
RETURNS TABLE (slot int, jid text, json text, enq_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE q text; want int := coalesce(array_length(p_wids, 1), 0); got int := 0; n int;
BEGIN
  FOREACH q IN ARRAY p_queues LOOP
    EXIT WHEN got >= want;
    CONTINUE WHEN EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = q AND qq.paused);
    RETURN QUERY
      WITH picked AS MATERIALIZED (
        SELECT r.jid, r.priority, r.seq FROM rb_jobs r
        WHERE r.state = 2 AND r.queue = q
        ORDER BY r.priority DESC, r.seq
        LIMIT want - got
        FOR UPDATE SKIP LOCKED),
      numbered AS (
        SELECT p.jid, (got + row_number() OVER (ORDER BY p.priority DESC, p.seq))::int AS rn
        FROM picked p)
      UPDATE rb_jobs j SET state = 3, attempts = j.attempts + 1, wid = p_wids[nb.rn],
        due_ms = p_now + j.reserve_s * 1000::bigint,
        flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END
      FROM numbered nb WHERE j.jid = nb.jid
      RETURNING nb.rn - 1, j.jid, j.json, j.enq_ms;
    GET DIAGNOSTICS n = ROW_COUNT;
    got := got + n;
  END LOOP;
END $$;
-- ACK: statuses as rb_job_status, in request order.
CREATE FUNCTION rb_ack(p_jids text[], p_wids text[], p_shard int) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE st int[] := array_fill(0, ARRAY[coalesce(array_length(p_jids, 1), 0)]);
  i int; r record; done int := 0;
BEGIN
  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)
           ORDER BY u.jid, u.ord LOOP
    SELECT j.state, j.flags, j.wid INTO r FROM rb_jobs j WHERE j.jid = p_jids[i] FOR UPDATE;
    IF NOT FOUND THEN
      st[i] := 1;
    ELSIF r.state = 3 AND r.flags & 2 <> 0 AND r.wid IS NOT NULL
          AND p_wids[i] IS NOT NULL AND r.wid <> p_wids[i] THEN
      st[i] := 2;
    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN
      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];
      done := done + 1;
      st[i] := 0;
    ELSE
      st[i] := 3;
    END IF;
  END LOOP;
  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;
  RETURN st;
END $$;
-- FAIL and the reaper: the decisions made in C, written at once.
CREATE FUNCTION rb_fail_apply(p_jid text[], p_state int[], p_due bigint[], p_flags int[],
  p_json text[], p_hist text[], p_del text[], p_failures int, p_shard int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE rb_jobs j SET state = u.st, due_ms = u.due, flags = u.fl, json = u.body,
    history = u.hist, wid = NULL
  FROM unnest(p_jid, p_state, p_due, p_flags, p_json, p_hist)
    AS u(jid, st, due, fl, body, hist)
  WHERE j.jid = u.jid;
  DELETE FROM rb_jobs j WHERE j.jid = ANY(p_del);
  IF p_failures > 0 THEN PERFORM rb_count('failures', p_shard, p_failures); END IF;
END $$;
-- SNOOZE and EXTEND: (status, state) as rb_job_status and the job's state.
CREATE FUNCTION rb_held(p_jid text, p_wid text, OUT status int, OUT state int,
  OUT queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE r record;
BEGIN
  SELECT j.state, j.flags, j.wid, j.queue INTO r FROM rb_jobs j
    WHERE j.jid = p_jid FOR UPDATE;
  IF NOT FOUND THEN status := 1; state := 0; RETURN; END IF;
  state := r.state; queue := r.queue;
  IF r.state = 3 AND r.flags & 2 <> 0 AND r.wid IS NOT NULL AND p_wid IS NOT NULL
     AND r.wid <> p_wid THEN status := 2;
  ELSIF r.state <> 3 THEN status := 4;
  ELSE status := 0;
  END IF;
END $$;
CREATE FUNCTION rb_snooze(p_jid text, p_wid text, p_seconds bigint, p_now bigint,
  OUT status int, OUT state int) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE h record;
BEGIN
  SELECT * INTO h FROM rb_held(p_jid, p_wid);
  status := h.status; state := h.state;
  IF h.status <> 0 THEN RETURN; END IF;
  IF p_seconds > 0 THEN
    UPDATE rb_jobs j SET state = 1, due_ms = p_now + p_seconds * 1000,
      attempts = j.attempts - 1, flags = 0, wid = NULL WHERE j.jid = p_jid;
  ELSE
    UPDATE rb_jobs j SET state = 2, due_ms = p_now, enq_ms = p_now,
      seq = nextval('rb_job_seq'), attempts = j.attempts - 1, flags = 0, wid = NULL
      WHERE j.jid = p_jid;
    PERFORM pg_notify(rb_channel(), h.queue);
  END IF;
END $$;
CREATE FUNCTION rb_extend(p_jid text, p_wid text, p_seconds bigint, p_now bigint,
  OUT status int, OUT state int) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE h record;
BEGIN
  SELECT * INTO h FROM rb_held(p_jid, p_wid);
  status := h.status; state := h.state;
  IF h.status = 0 THEN
    UPDATE rb_jobs j SET due_ms = p_now + p_seconds * 1000 WHERE j.jid = p_jid;
  END IF;
END $$;
-- The timer: due scheduled/retrying jobs become enqueued. One state at
-- a time, so each pick walks rb_jobs_timed in order and stops at the
-- limit, however many jobs are due.
CREATE FUNCTION rb_promote(p_now bigint, p_limit int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE st int; qs text[]; n int; total int := 0;
BEGIN
  FOREACH st IN ARRAY ARRAY[4, 1] LOOP
    EXIT WHEN total >= p_limit;
    WITH due AS MATERIALIZED (
      SELECT d.jid FROM rb_jobs d WHERE d.state = st AND d.due_ms <= p_now
      ORDER BY d.due_ms LIMIT p_limit - total FOR UPDATE SKIP LOCKED),
    up AS (
      UPDATE rb_jobs j SET state = 2, due_ms = p_now, enq_ms = p_now,
        first_ms = CASE WHEN j.first_ms = 0 THEN p_now ELSE j.first_ms END,
        seq = nextval('rb_job_seq')
      FROM due WHERE j.jid = due.jid RETURNING j.queue)
    SELECT count(*), array_agg(DISTINCT up.queue) INTO n, qs FROM up;
    PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;
    total := total + n;
  END LOOP;
  RETURN total;
END $$;
-- MUTATE on rows the caller selected (and locked) in this transaction.
CREATE FUNCTION rb_mutate_apply(p_cmd text, p_jids text[], p_now bigint,
  p_retention_ms bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE qs text[];
BEGIN
  IF p_cmd IN ('discard', 'clear') THEN
    DELETE FROM rb_jobs j WHERE j.jid = ANY(p_jids);
  ELSIF p_cmd = 'kill' THEN
    UPDATE rb_jobs j SET state = 5, due_ms = p_now + p_retention_ms, wid = NULL
      WHERE j.jid = ANY(p_jids) AND j.state <> 5;
  ELSIF p_cmd = 'requeue' THEN
    WITH up AS (
      UPDATE rb_jobs j SET state = 2, flags = 0, wid = NULL, due_ms = p_now,
        enq_ms = p_now, seq = nextval('rb_job_seq'),
        first_ms = CASE WHEN j.first_ms = 0 THEN p_now ELSE j.first_ms END
      WHERE j.jid = ANY(p_jids) RETURNING j.queue)
    SELECT array_agg(DISTINCT up.queue) INTO qs FROM up;
    PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;
  ELSE
    RAISE EXCEPTION 'unknown mutation %', p_cmd;
  END IF;
END $$;
-- INFO's numbers as one JSON text.
CREATE FUNCTION rb_info() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'counts', (SELECT coalesce(json_object_agg(s.state, s.n), '{}')
               FROM (SELECT state, count(*) AS n FROM rb_jobs GROUP BY state) s),
    'queues', (SELECT coalesce(json_agg(json_build_array(x.name, x.size, x.paused)
                                        ORDER BY x.name), '[]')
               FROM (SELECT coalesce(a.queue, q.name) AS name, coalesce(a.n, 0) AS size,
                            coalesce(q.paused, false) AS paused
                     FROM (SELECT queue, count(*) AS n FROM rb_jobs WHERE state = 2
                           GROUP BY queue) a
                     FULL JOIN (SELECT name, paused FROM rb_queues WHERE paused) q
                       ON q.name = a.queue) x),
    'processed', (SELECT coalesce(sum(value), 0) FROM rb_counters
                  WHERE name = 'processed'),
    'failures', (SELECT coalesce(sum(value), 0) FROM rb_counters
                 WHERE name = 'failures'))::text
$$;
UPDATE rb_meta SET value = '2' WHERE key = 'schema_version';
