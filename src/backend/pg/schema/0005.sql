-- Version 5: job dependencies (docs/workflows.md, issue 15). States 6
-- (waiting) and 7 (blocked) are plain values of rb_jobs.state. Only jobs
-- of a workflow touch the new tables: rb_edges (parent, child) while the
-- parent still concerns the child; rb_wait per held child (its remaining
-- parents, of those the dead ones blocking it, its on_dep_failure as
-- rb_dep_mode); rb_dep_done the ACKed workflow jobs a later push may still
-- name, until until_ms ([workflows] succeeded_ttl). rb_jobs.wf marks a job
-- that named parents; a parent is known by its edges (an index probe), so
-- a push never writes its parents' rows (it holds them FOR SHARE, and two
-- pushes naming one parent must not both upgrade that lock). A plain ACK
-- costs one probe more. rb_ack_deps is rb_ack_labels plus the release of an ACKed
-- parent's children (the succeeded event of src/engine/depend.c's
-- rb_dep_on_parent: the edge is used up, remaining drops by one, a child
-- at 0 with no dead parent is enqueued, or scheduled when its `at` is
-- later, its policy counting from then).
ALTER TABLE rb_jobs ADD COLUMN wf boolean NOT NULL DEFAULT false;
CREATE TABLE rb_edges (parent text NOT NULL, child text NOT NULL,
  PRIMARY KEY (parent, child));
CREATE INDEX rb_edges_child ON rb_edges (child);
CREATE TABLE rb_wait (child text PRIMARY KEY, remaining int NOT NULL,
  dead int NOT NULL DEFAULT 0, mode smallint NOT NULL DEFAULT 0);
CREATE TABLE rb_dep_done (jid text PRIMARY KEY, until_ms bigint NOT NULL);
CREATE INDEX rb_dep_done_until ON rb_dep_done (until_ms);
-- A child leaves waiting: enqueued now, or scheduled at its `at`
-- (kept in due_ms while it waits); attempts and first_ms start over.
CREATE FUNCTION rb_dep_release(p_child text, p_now bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE q text; st int;
BEGIN
  DELETE FROM rb_wait w WHERE w.child = p_child;
  UPDATE rb_jobs j SET state = CASE WHEN j.due_ms > p_now THEN 1 ELSE 2 END,
    due_ms = greatest(j.due_ms, p_now), attempts = 0, flags = 0, wid = NULL,
    enq_ms = CASE WHEN j.due_ms > p_now THEN 0 ELSE p_now END,
    first_ms = CASE WHEN j.due_ms > p_now THEN 0 ELSE p_now END,
    seq = nextval('rb_job_seq')
    WHERE j.jid = p_child RETURNING j.queue, j.state INTO q, st;
  IF st = 2 THEN PERFORM pg_notify(rb_channel(), q); END IF;
END $$;
-- Parent p_jid was ACKed (its row already deleted): its record, and
-- its children told, locked in jid order.
CREATE FUNCTION rb_dep_succeeded(p_jid text, p_now bigint, p_ttl_ms bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE c text; w record;
BEGIN
  INSERT INTO rb_dep_done (jid, until_ms) VALUES (p_jid, p_now + p_ttl_ms)
    ON CONFLICT (jid) DO UPDATE SET until_ms = excluded.until_ms;
  FOR c IN SELECT e.child FROM rb_edges e WHERE e.parent = p_jid ORDER BY e.child LOOP
    PERFORM 1 FROM rb_jobs j WHERE j.jid = c FOR UPDATE;
    DELETE FROM rb_edges e WHERE e.parent = p_jid AND e.child = c;
    UPDATE rb_wait x SET remaining = greatest(x.remaining - 1, 0),
      dead = least(x.dead, greatest(x.remaining - 1, 0))
      WHERE x.child = c RETURNING x.remaining, x.dead INTO w;
    IF NOT FOUND THEN CONTINUE; END IF;
    IF w.remaining = 0 THEN
      PERFORM rb_dep_release(c, p_now);
    ELSIF w.dead > 0 THEN
      UPDATE rb_jobs j SET state = 7 WHERE j.jid = c AND j.state IN (6, 7);
    ELSE
      UPDATE rb_jobs j SET state = 6 WHERE j.jid = c AND j.state IN (6, 7);
    END IF;
  END LOOP;
END $$;
CREATE FUNCTION rb_ack_deps(p_jids text[], p_wids text[], p_shard int, p_now bigint,
  p_ttl_ms bigint)
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
    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf INTO r FROM rb_jobs j
      WHERE j.jid = p_jids[i] FOR UPDATE;
    IF NOT FOUND THEN
      st[i] := 1;
    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL
          AND r.wid <> p_wids[i] THEN
      st[i] := 2;
    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN
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
-- A pushed child (its row inserted by rb_push in this transaction):
-- edges to its parents still stored (the others succeeded), its
-- count, state waiting when any remain; the child marked.
CREATE FUNCTION rb_dep_attach(p_child text, p_parents text[], p_mode int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  INSERT INTO rb_edges (parent, child)
    SELECT j.jid, p_child FROM rb_jobs j WHERE j.jid = ANY(p_parents)
    ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE rb_jobs j SET wf = true WHERE j.jid = p_child;
  IF n > 0 THEN
    INSERT INTO rb_wait (child, remaining, dead, mode) VALUES (p_child, n, 0, p_mode);
    UPDATE rb_jobs j SET state = 6, enq_ms = 0, first_ms = 0 WHERE j.jid = p_child;
  END IF;
  RETURN n;
END $$;
-- nodes of the previous release still running: their ACK (and
-- version 2's rb_ack, which calls it) releases children too, with the
-- database's clock and the default succeeded_ttl (1 h)
CREATE OR REPLACE FUNCTION rb_ack_labels(p_jids text[], p_wids text[], p_shard int)
RETURNS TABLE (status int, queue text, jobtype text) LANGUAGE sql AS $$
  SELECT * FROM rb_ack_deps(p_jids, p_wids, p_shard,
    (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 3600000)
$$;
UPDATE rb_meta SET value = '5' WHERE key = 'schema_version';
