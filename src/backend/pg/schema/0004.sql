-- Version 4: a working job belongs to the wid that claimed it (issue 13).
-- Before, ACK, SNOOZE and EXTEND from another wid were refused only for a
-- job claimed again after an expired lease (flags & 2); now for every
-- working job. A request without a wid is still not checked. The functions
-- are replaced in place with the same signatures, so every ACK, SNOOZE and
-- EXTEND the database applies follows the rule, whichever release the node
-- runs; FAIL is decided in C (sql_fail.c), so a node of an earlier release
-- keeps the old rule for FAIL until it is restarted.
CREATE OR REPLACE FUNCTION rb_held(p_jid text, p_wid text, OUT status int,
  OUT state int, OUT queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE r record;
BEGIN
  SELECT j.state, j.wid, j.queue INTO r FROM rb_jobs j WHERE j.jid = p_jid FOR UPDATE;
  IF NOT FOUND THEN status := 1; state := 0; RETURN; END IF;
  state := r.state; queue := r.queue;
  IF r.state = 3 AND r.wid IS NOT NULL AND p_wid IS NOT NULL AND r.wid <> p_wid THEN
    status := 2;
  ELSIF r.state <> 3 THEN status := 4;
  ELSE status := 0;
  END IF;
END $$;
CREATE OR REPLACE FUNCTION rb_ack_labels(p_jids text[], p_wids text[], p_shard int)
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
    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL
          AND r.wid <> p_wids[i] THEN
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
-- version 2's ACK, for nodes of that release still running
CREATE OR REPLACE FUNCTION rb_ack(p_jids text[], p_wids text[], p_shard int)
RETURNS int[] LANGUAGE sql AS $$
  SELECT coalesce(array_agg(a.status ORDER BY a.ord), '{}')
  FROM rb_ack_labels(p_jids, p_wids, p_shard) WITH ORDINALITY
    AS a(status, queue, jobtype, ord)
$$;
UPDATE rb_meta SET value = '4' WHERE key = 'schema_version';
