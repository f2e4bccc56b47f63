-- Version 23: the maintenance thread's promotion (rb_promote_late) reaches
-- the jobs it promotes by index in the plans PL/pgSQL keeps (issue 29,
-- session 15; bench/RESULTS.md).
--
-- PL/pgSQL keeps a generic plan of each statement after its first calls,
-- made while rb_jobs was young (a new database's first minute): the
-- statement's `state = st` (a parameter) cannot prove the timed index's
-- predicate (`state <> 2`), so the due jobs were found by scanning rb_jobs
-- whole, ready jobs and all, and the UPDATE joined them back by another
-- scan (a hash join): 0.5-1.3 ms per promotion with a few thousand jobs
-- queued, at every retry's due time. Now the statement names the
-- predicate too, and the function plans with sequential scans off (and
-- jit off, whose threshold a scan that stays would pass with the
-- penalty), as the batch thread's session does. Same rules, same result.
CREATE OR REPLACE FUNCTION rb_promote_late(p_now bigint, p_limit int) RETURNS bigint[]
LANGUAGE plpgsql SET enable_seqscan = off SET jit = off AS $$
DECLARE st int; qs text[]; ls bigint[]; late bigint[] := '{}';
BEGIN
  FOREACH st IN ARRAY ARRAY[4, 1] LOOP
    EXIT WHEN cardinality(late) >= p_limit;
    WITH due AS MATERIALIZED (
      SELECT d.jid, d.due_ms FROM rb_jobs d
        WHERE d.state = st AND d.state <> 2 AND d.due_ms <= p_now
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

UPDATE rb_meta SET value = '23' WHERE key = 'schema_version';
