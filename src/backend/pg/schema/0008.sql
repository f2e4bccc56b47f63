-- Version 8: unique jobs and expiring jobs (docs/enterprise.md, issue 16).
-- rb_unique holds one row per lock: key (engine/unique.h's SHA-256 of
-- jobtype, queue and canonical args) is the primary key, so two nodes
-- pushing the same unique job at once cannot both win; until_ms is when it
-- runs out (a push finding a lock that ran out takes it over), start marks
-- unique_until "start". On rb_jobs, ukey is the key a unique job locked
-- (NULL for every other job) and expires_ms its custom.expires_at (NULL for
-- none). rb_push_unique is rb_push for a push holding a unique or expiring
-- job (plain pushes keep rb_push): the locks taken first, in key order,
-- then the jobs not refused inserted. A lock is released by its holder
-- alone (key and jid both match, never a newer holder's) through two
-- triggers whose WHEN skips every job without ukey: when the job row is
-- deleted (ACK, discard, QUEUE REMOVE, expiry), when it dies (state 5), and
-- at its claim (state 3) for unique_until "start". rb_claim_unexpired is
-- rb_claim leaving the expired ready jobs it picks as they are and
-- reporting them (slot -1) for the node to drop in a transaction of its own
-- (sql_unique.c) and claim again for the slots they used up: a claim with
-- no expired job costs what rb_claim did. rb_claim, left for nodes of the
-- previous release, runs it without the reports.
CREATE TABLE rb_unique (key text PRIMARY KEY, jid text NOT NULL,
  until_ms bigint NOT NULL, start boolean NOT NULL DEFAULT false);
ALTER TABLE rb_jobs ADD COLUMN ukey text;
ALTER TABLE rb_jobs ADD COLUMN expires_ms bigint;
CREATE INDEX rb_jobs_expiring ON rb_jobs (expires_ms) WHERE expires_ms IS NOT NULL;
CREATE FUNCTION rb_unique_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM rb_unique l WHERE l.key = OLD.ukey AND l.jid = OLD.jid
    AND (TG_OP = 'DELETE' OR NEW.state = 5 OR l.start);
  RETURN NULL;
END $$;
CREATE TRIGGER rb_jobs_unique_deleted AFTER DELETE ON rb_jobs FOR EACH ROW
  WHEN (OLD.ukey IS NOT NULL) EXECUTE FUNCTION rb_unique_release();
CREATE TRIGGER rb_jobs_unique_moved AFTER UPDATE OF state ON rb_jobs FOR EACH ROW
  WHEN (OLD.ukey IS NOT NULL AND NEW.state IN (3, 5) AND OLD.state <> NEW.state)
  EXECUTE FUNCTION rb_unique_release();
-- o_st: 0 inserted, 1 not unique (o_holder: the lock's holder); a jid
-- taken is left out (as rb_push), and the lock a unique job whose jid was
-- taken has just taken is undone (the DELETE near the end)
CREATE FUNCTION rb_push_unique(p_jid text[], p_queue text[], p_prio int[], p_at bigint[],
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
  INSERT INTO rb_queues (name) SELECT DISTINCT u.q
    FROM unnest(p_queue) WITH ORDINALITY AS u(q, ord) WHERE keep[u.ord]
    ORDER BY 1 ON CONFLICT DO NOTHING;
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
    RETURNING j.jid, j.queue, j.state)
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
-- version 2's rb_claim, an expired job picked reported in place of a
-- claim: it is left as it is and reported (slot -1); it used up a slot,
-- which the node claims again for once it has dropped the job
CREATE FUNCTION rb_claim_unexpired(p_queues text[], p_wids text[], p_now bigint)
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
        SELECT r.jid, r.priority, r.seq, coalesce(r.expires_ms <= p_now, false) AS gone
        FROM rb_jobs r
        WHERE r.state = 2 AND r.queue = q
        ORDER BY r.priority DESC, r.seq
        LIMIT want - got
        FOR UPDATE SKIP LOCKED),
      numbered AS (
        SELECT p.jid, p.gone, (got + row_number() OVER (ORDER BY p.priority DESC, p.seq))::int
          AS rn
        FROM picked p)
      UPDATE rb_jobs j SET state = CASE WHEN nb.gone THEN j.state ELSE 3 END,
        attempts = CASE WHEN nb.gone THEN j.attempts ELSE j.attempts + 1 END,
        wid = CASE WHEN nb.gone THEN j.wid ELSE p_wids[nb.rn] END,
        due_ms = CASE WHEN nb.gone THEN j.due_ms ELSE p_now + j.reserve_s * 1000::bigint END,
        flags = CASE WHEN nb.gone THEN j.flags WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END
      FROM numbered nb WHERE j.jid = nb.jid
      RETURNING CASE WHEN nb.gone THEN -1 ELSE nb.rn - 1 END, j.jid,
        CASE WHEN nb.gone THEN NULL ELSE j.json END, j.enq_ms;
    GET DIAGNOSTICS n = ROW_COUNT;
    got := got + n;
  END LOOP;
END $$;
-- nodes of the previous release: expired jobs never claimed nor reported
CREATE OR REPLACE FUNCTION rb_claim(p_queues text[], p_wids text[], p_now bigint)
RETURNS TABLE (slot int, jid text, json text, enq_ms bigint) LANGUAGE sql AS $$
  SELECT * FROM rb_claim_unexpired(p_queues, p_wids, p_now) c WHERE c.slot >= 0
$$;
UPDATE rb_meta SET value = '8' WHERE key = 'schema_version';
