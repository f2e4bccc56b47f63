-- Version 6: batches (docs/workflows.md "Batches", issue 15). rb_batches
-- holds each batch's stored form (engine/batch.h's rb_batch_dump) in body,
-- with the columns the statements need: parent_bid, depth (0 at top level,
-- a child one more than its parent: batch rows are locked in (depth DESC,
-- bid) order, descendants before ancestors, so no two transactions
-- deadlock), committed, created_ms and finished_ms for expiry. On rb_jobs,
-- bid is the batch of a member (custom.bid) or of a callback job
-- (custom._bid, with bcb true), set only for those jobs. rb_ack_batch is
-- rb_ack_deps except that a batch member or callback that would be
-- completed is left untouched with status 5 when p_batch is false: the node
-- then ACKs it in a transaction of its own that also locks and updates its
-- batch (sql_batch.c), so a plain ACK stays one statement.
CREATE TABLE rb_batches (bid text PRIMARY KEY, parent_bid text,
  depth int NOT NULL DEFAULT 0, committed boolean NOT NULL DEFAULT false,
  created_ms bigint NOT NULL, finished_ms bigint NOT NULL DEFAULT 0,
  body text NOT NULL);
CREATE INDEX rb_batches_parent ON rb_batches (parent_bid) WHERE parent_bid IS NOT NULL;
CREATE INDEX rb_batches_open ON rb_batches (created_ms) WHERE NOT committed;
CREATE INDEX rb_batches_finished ON rb_batches (finished_ms) WHERE finished_ms > 0;
ALTER TABLE rb_jobs ADD COLUMN bid text;
ALTER TABLE rb_jobs ADD COLUMN bcb boolean NOT NULL DEFAULT false;
CREATE FUNCTION rb_ack_batch(p_jids text[], p_wids text[], p_shard int, p_now bigint,
  p_ttl_ms bigint, p_batch boolean)
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
    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf, j.bid INTO r FROM rb_jobs j
      WHERE j.jid = p_jids[i] FOR UPDATE;
    IF NOT FOUND THEN
      st[i] := 1;
    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL
          AND r.wid <> p_wids[i] THEN
      st[i] := 2;
    ELSIF (r.state = 3 OR r.flags & 1 <> 0) AND r.bid IS NOT NULL AND NOT p_batch THEN
      st[i] := 5;
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
UPDATE rb_meta SET value = '6' WHERE key = 'schema_version';
