-- Version 11: INFO lists every known queue, as Faktory does (issue 25):
-- every rb_queues row (a queue pushed to or paused; QUEUE REMOVE deletes
-- its row) and any queue with jobs enqueued, size 0 once empty. Before,
-- only the queues with jobs enqueued or paused. rb_push and rb_push_unique
-- replaced in place: a refused push no longer adds its queue's row.
CREATE OR REPLACE FUNCTION rb_info() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'counts', (SELECT coalesce(json_object_agg(s.state, s.n), '{}')
               FROM (SELECT state, count(*) AS n FROM rb_jobs GROUP BY state) s),
    'queues', (SELECT coalesce(json_agg(json_build_array(x.name, x.size, x.paused)
                                        ORDER BY x.name), '[]')
               FROM (SELECT coalesce(a.queue, q.name) AS name, coalesce(a.n, 0) AS size,
                            coalesce(q.paused, false) AS paused
                     FROM (SELECT queue, count(*) AS n FROM rb_jobs WHERE state = 2
                           GROUP BY queue) a
                     FULL JOIN rb_queues q ON q.name = a.queue) x),
    'processed', (SELECT coalesce(sum(value), 0) FROM rb_counters
                  WHERE name = 'processed'),
    'failures', (SELECT coalesce(sum(value), 0) FROM rb_counters
                 WHERE name = 'failures'))::text
$$;
-- a push refused (its jid taken, or not unique) makes no queue known:
-- the queue's row comes with the jobs inserted
CREATE OR REPLACE FUNCTION rb_push(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],
  p_reserve int[], p_json text[], p_now bigint) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE ok text[]; qs text[];
BEGIN
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
    RETURNING j.jid, j.queue, j.state),
  known AS (INSERT INTO rb_queues (name) SELECT DISTINCT i.queue FROM ins i
    ORDER BY 1 ON CONFLICT DO NOTHING)
  SELECT coalesce(array_agg(i.jid), '{}'),
         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)
    INTO ok, qs FROM ins i;
  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;
  RETURN ok;
END $$;
-- the same for rb_push_unique (version 8's otherwise: the lock a unique job
-- whose jid was taken has just taken is undone)
CREATE OR REPLACE FUNCTION rb_push_unique(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],
  p_reserve int[], p_json text[], p_now bigint, p_ukey text[], p_until bigint[],
  p_start boolean[], p_exp bigint[], p_shard int)
RETURNS TABLE (o_jid text, o_st int, o_holder text) LANGUAGE plpgsql AS $$
DECLARE n int := coalesce(array_length(p_jid, 1), 0);
  keep boolean[] := array_fill(true, ARRAY[n]);
  i int; refused int := 0; ok text[]; qs text[];
BEGIN
  FOR i IN SELECT u.ord FROM unnest(p_ukey) WITH ORDINALITY AS u(k, ord)
           WHERE u.k IS NOT NULL ORDER BY u.k, u.ord LOOP
    INSERT INTO rb_unique AS l (key, jid, until_ms, start)
      VALUES (p_ukey[i], p_jid[i], p_until[i], p_start[i])
      ON CONFLICT (key) DO UPDATE SET jid = excluded.jid, until_ms = excluded.until_ms,
        start = excluded.start
      WHERE l.until_ms <= p_now;
    IF NOT FOUND THEN
      keep[i] := false;
      refused := refused + 1;
    END IF;
  END LOOP;
  WITH ins AS (
    INSERT INTO rb_jobs AS j (jid, state, queue, priority, due_ms, enq_ms, first_ms,
                              reserve_s, json, ukey, expires_ms)
    SELECT u.jid, CASE WHEN u.run_at > p_now THEN 1 ELSE 2 END, u.queue, u.prio,
      greatest(u.run_at, p_now), CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END,
      CASE WHEN u.run_at > p_now THEN 0 ELSE p_now END, u.reserve, u.body, u.k, u.exp
    FROM unnest(p_jid, p_queue, p_prio, p_at, p_reserve, p_json, p_ukey, p_exp)
      WITH ORDINALITY AS u(jid, queue, prio, run_at, reserve, body, k, exp, ord)
    WHERE keep[u.ord]
    ORDER BY u.ord
    ON CONFLICT (jid) DO NOTHING
    RETURNING j.jid, j.queue, j.state),
  known AS (INSERT INTO rb_queues (name) SELECT DISTINCT i.queue FROM ins i
    ORDER BY 1 ON CONFLICT DO NOTHING)
  SELECT coalesce(array_agg(i.jid), '{}'),
         array_agg(DISTINCT i.queue) FILTER (WHERE i.state = 2)
    INTO ok, qs FROM ins i;
  DELETE FROM rb_unique l
    USING unnest(p_ukey, p_jid) WITH ORDINALITY AS u(k, jid, ord)
    WHERE u.k IS NOT NULL AND keep[u.ord] AND NOT (u.jid = ANY(ok))
      AND l.key = u.k AND l.jid = u.jid;
  PERFORM pg_notify(rb_channel(), q) FROM unnest(qs) AS q;
  IF refused > 0 THEN PERFORM rb_count('unique_rejected', p_shard, refused); END IF;
  RETURN QUERY SELECT u.jid, CASE WHEN keep[u.ord] THEN 0 ELSE 1 END,
      CASE WHEN NOT keep[u.ord] THEN
        (SELECT l.jid FROM rb_unique l WHERE l.key = p_ukey[u.ord]) END
    FROM unnest(p_jid) WITH ORDINALITY AS u(jid, ord)
    WHERE NOT keep[u.ord] OR u.jid = ANY(ok) ORDER BY u.ord;
END $$;
UPDATE rb_meta SET value = '11' WHERE key = 'schema_version';
