-- Version 14: less database work per job (issue 29).
--
-- rb_parked: the nodes that have a FETCH parked (waiting for a job), each
-- with when that stops counting (until_ms, wall ms: the node refreshes it
-- while FETCHes wait there, so a node that died drops out by itself). A
-- push notifies only when a node other than its own is listed: a node
-- wakes its own parked FETCHes without a notification, and every listening
-- node paid a transaction for each NOTIFY. UNLOGGED: it is a hint, lost
-- with a crash of PostgreSQL (the nodes write it again as they park, and
-- their 1 s poll covers a wake missed meanwhile).
CREATE UNLOGGED TABLE rb_parked (
  node text PRIMARY KEY,
  until_ms bigint NOT NULL
);

-- The plain push (PUSH and PUSHB jobs without parents, batches, unique
-- locks or expiry), rb_push's successor: the same insert, and
--   * a job marked in p_hand goes straight to the FETCH parked for it on
--     the pushing node (wid p_wid, NULL for a worker without one): it is
--     inserted claimed for that worker, attempt counted, lease running
--     from now, as a claim leaves a job, unless its queue is paused;
--   * the queues that got ready jobs are notified only when a node other
--     than p_node has a FETCH parked (rb_parked).
-- Returns each inserted job with its state (3: handed off). Its plan is
-- kept generic: PostgreSQL otherwise planned the statement anew for each
-- call's arrays, which cost more than running it (pg_stat_statements'
-- total_plan_time, 246 us per job; per call of 2 jobs 290 us of CPU
-- against 80-83; issue 29).
CREATE FUNCTION rb_push_hand(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],
                             p_reserve int[], p_json text[], p_now bigint, p_wid text[],
                             p_hand boolean[], p_node text)
RETURNS TABLE(o_jid text, o_state smallint) LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  WITH u AS MATERIALIZED (
    SELECT u.jid, u.queue, u.prio, u.run_at, u.reserve, u.body, u.wid, u.ord,
      CASE WHEN u.run_at > p_now THEN 1
           WHEN u.hand AND NOT EXISTS (SELECT 1 FROM rb_queues q WHERE q.name = u.queue
                                       AND q.paused) THEN 3
           ELSE 2 END AS st
    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json, p_wid, p_hand)
      WITH ORDINALITY AS u(jid, queue, prio, run_at, reserve, body, wid, hand, ord)),
  ins AS (
    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,
                              attempts, reserve_s, wid, json)
    SELECT u.jid, u.st, u.queue, u.prio,
      CASE WHEN u.st = 1 THEN u.run_at WHEN u.st = 3 THEN p_now + u.reserve * 1000::bigint
           ELSE p_now END,
      CASE WHEN u.st = 1 THEN 0 ELSE p_now END, CASE WHEN u.st = 1 THEN 0 ELSE p_now END,
      CASE WHEN u.st = 3 THEN 1 ELSE 0 END, u.reserve, CASE WHEN u.st = 3 THEN u.wid END,
      u.body
    FROM u ORDER BY u.ord
    ON CONFLICT (jid) DO NOTHING
    RETURNING j.jid, j.queue, j.state),
  known AS (INSERT INTO rb_queues (name) SELECT DISTINCT i.queue FROM ins i
    ORDER BY 1 ON CONFLICT DO NOTHING),
  woke AS (SELECT pg_notify(rb_channel(), r.queue)
    FROM (SELECT DISTINCT i.queue FROM ins i WHERE i.state = 2) r
    WHERE EXISTS (SELECT 1 FROM rb_parked p WHERE p.node IS DISTINCT FROM p_node
                  AND p.until_ms > p_now))
  SELECT i.jid, i.state FROM ins i WHERE (SELECT count(*) FROM woke) >= 0;
END $$;

-- rb_ack_batch, same signature, rules and outcome (version 13's, holder
-- rule rb_holder_status included): the counter's upsert
-- inline. rb_count, a SQL function, was planned again on every call. A
-- set-based version (one locking read of every job of the batch, one
-- DELETE) was measured and not kept: per call of 2 jobs (the batches'
-- usual size) 162-172 us of the backend's CPU against 137-152 for this
-- loop as it was and 97-112 with the counter inline; at 8 jobs 210-220
-- against 220 (bench/RESULTS.md, issue 29).
CREATE OR REPLACE FUNCTION rb_ack_batch(p_jids text[], p_wids text[], p_shard int,
  p_now bigint, p_ttl_ms bigint, p_batch boolean)
RETURNS TABLE (status int, queue text, jobtype text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE n int := coalesce(array_length(p_jids, 1), 0);
  st int[] := array_fill(0, ARRAY[n]);
  qs text[] := array_fill(NULL::text, ARRAY[n]);
  ts text[] := array_fill(NULL::text, ARRAY[n]);
  i int; r record; h int; jt json; done int := 0;
BEGIN
  FOR i IN SELECT u.ord FROM unnest(p_jids) WITH ORDINALITY AS u(jid, ord)
           ORDER BY u.jid, u.ord LOOP
    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf, j.bid, j.trk INTO r
      FROM rb_jobs j WHERE j.jid = p_jids[i] FOR UPDATE;
    h := rb_holder_status(r.state, r.wid, p_wids[i]);
    IF h IN (1, 2) THEN
      st[i] := h;
    ELSIF (h = 0 OR r.flags & 1 <> 0) AND r.bid IS NOT NULL AND NOT p_batch THEN
      st[i] := 5;
    ELSIF h = 0 OR r.flags & 1 <> 0 THEN
      IF r.trk THEN
        UPDATE rb_track t SET ended_ms = p_now, state = 3 WHERE t.jid = p_jids[i];
      END IF;
      DELETE FROM rb_jobs j WHERE j.jid = p_jids[i];
      IF r.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = p_jids[i]) THEN
        PERFORM rb_dep_succeeded(p_jids[i], p_now, p_ttl_ms);
      END IF;
      done := done + 1;
      st[i] := 0;
      qs[i] := r.queue;
      jt := r.json::json -> 'jobtype';
      ts[i] := CASE WHEN json_typeof(jt) = 'string' THEN left(jt #>> '{}', 127) END;
    ELSE
      st[i] := 3;
    END IF;
  END LOOP;
  IF done > 0 THEN
    INSERT INTO rb_counters AS k (name, shard, value) VALUES ('processed', p_shard, done)
      ON CONFLICT (name, shard) DO UPDATE SET value = k.value + excluded.value;
  END IF;
  RETURN QUERY SELECT * FROM unnest(st, qs, ts);
END $$;


-- rb_fail_apply, same signature: the counter's upsert inline (see above).
CREATE OR REPLACE FUNCTION rb_fail_apply(p_jid text[], p_state int[], p_due bigint[],
                                         p_flags int[], p_json text[], p_hist text[],
                                         p_del text[], p_failures int, p_shard int)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE rb_jobs j SET state = u.st, due_ms = u.due, flags = u.fl, json = u.body,
    history = u.hist, wid = NULL
  FROM unnest(p_jid, p_state, p_due, p_flags, p_json, p_hist)
    AS u(jid, st, due, fl, body, hist)
  WHERE j.jid = u.jid;
  DELETE FROM rb_jobs j WHERE j.jid = ANY(p_del);
  IF p_failures > 0 THEN
    INSERT INTO rb_counters AS k (name, shard, value) VALUES ('failures', p_shard, p_failures)
      ON CONFLICT (name, shard) DO UPDATE SET value = k.value + excluded.value;
  END IF;
END $$;

UPDATE rb_meta SET value = '14' WHERE key = 'schema_version';
