-- Version 13: one holder check (issue 28). The rule "a working job belongs
-- to the wid that claimed it" (version 4, docs/protocol.md "Reservations
-- and late replies") was written out in each function that needs it;
-- rb_holder_status is now its one SQL text: the engine's rule in C
-- (rb_job_outcome, src/engine/job_state.h) for SNOOZE and EXTEND, with the
-- same outcome numbers (rb_job_status; tests/server/test_pg_rules.c
-- compares the two over every state, flag set, holder and wid): 1 MISSING
-- when there is no job (state NULL, or 0: a pending job is not visible),
-- 4 NOT_WORKING for a job in any state but working (3), whoever holds it,
-- 2 OTHER_HOLDER for a working job that a wid holds and another wid asks
-- for, 0 DONE for a working job asked for by its holder, or when either
-- side has no wid (not checked). Inlined by the planner (a SQL
-- expression). rb_held (SNOOZE, EXTEND) and rb_ack_batch (the ACK the
-- nodes run) are replaced in place to call it, each otherwise as it was
-- (version 4's and version 9's): same signatures, so nodes of the
-- previous release keep working and follow the same rule. rb_ack_deps
-- (the ACK of version 5's nodes, and through rb_ack_labels and rb_ack of
-- earlier ones) becomes rb_ack_batch with its batch members ACKed inline,
-- as it did them (it knew no batches), instead of a copy of its loop: a
-- tracked job's record now ends as a success there too. ACK's own rule on
-- top stays in rb_ack_batch: a job not working but whose reservation
-- expired (flags & 1) is completed by a late ACK, any other gets NOOP (3).
-- FAIL decides in C on the locked rows (rb_pg_fail, the same
-- rb_job_outcome).
CREATE FUNCTION rb_holder_status(p_state int, p_holder text, p_wid text) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_state IS NULL OR p_state = 0 THEN 1
              WHEN p_state <> 3 THEN 4
              WHEN p_holder IS NOT NULL AND p_wid IS NOT NULL AND p_holder <> p_wid THEN 2
              ELSE 0 END
$$;
CREATE OR REPLACE FUNCTION rb_held(p_jid text, p_wid text, OUT status int,
  OUT state int, OUT queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE r record;
BEGIN
  SELECT j.state, j.wid, j.queue INTO r FROM rb_jobs j WHERE j.jid = p_jid FOR UPDATE;
  status := rb_holder_status(r.state, r.wid, p_wid);
  state := coalesce(r.state, 0); queue := r.queue;
END $$;
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
  IF done > 0 THEN PERFORM rb_count('processed', p_shard, done); END IF;
  RETURN QUERY SELECT * FROM unnest(st, qs, ts);
END $$;
CREATE OR REPLACE FUNCTION rb_ack_deps(p_jids text[], p_wids text[], p_shard int, p_now bigint,
  p_ttl_ms bigint)
RETURNS TABLE (status int, queue text, jobtype text)
LANGUAGE sql AS $$
  SELECT * FROM rb_ack_batch(p_jids, p_wids, p_shard, p_now, p_ttl_ms, true)
$$;
UPDATE rb_meta SET value = '13' WHERE key = 'schema_version';
