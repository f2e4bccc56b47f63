-- Version 9: progress tracking (docs/enterprise.md "Tracking", issue 16).
-- rb_track holds one record per jid that got a TRACK SET: percent (-1:
-- never set), descr (NULL: never set), updated_ms (the last SET), and once
-- its job is gone ended_ms and state (engine/track.h's rb_track_state: 3
-- success, 5 dead); ended records are dropped RB_TRACK_RETENTION_MS after
-- ended_ms (the maintenance sweep, sql_track.c). A live job's state is
-- never copied here: TRACK GET reads its row. rb_jobs.trk marks a job
-- whose record is live (set by TRACK SET), so the end of every other job
-- costs nothing: rb_ack_batch (replaced in place, same signature, so the
-- nodes of the previous release ACK by it too) ends a marked job's record
-- as a success before deleting the row, and a trigger whose WHEN skips
-- every unmarked row ends it as dead when the row is deleted any other
-- way (FAIL's discard, MUTATE, QUEUE REMOVE, expiry, the dead set's
-- retention), with the database's clock; an ACK's success is kept. FLUSH
-- truncates the table (TRUNCATE fires no row trigger).
CREATE TABLE rb_track (jid text PRIMARY KEY, percent int NOT NULL DEFAULT -1,
  descr text, updated_ms bigint NOT NULL DEFAULT 0,
  ended_ms bigint NOT NULL DEFAULT 0, state smallint NOT NULL DEFAULT 0);
CREATE INDEX rb_track_ended ON rb_track (ended_ms) WHERE ended_ms > 0;
ALTER TABLE rb_jobs ADD COLUMN trk boolean NOT NULL DEFAULT false;
CREATE FUNCTION rb_track_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE rb_track t SET ended_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
    state = 5 WHERE t.jid = OLD.jid AND t.ended_ms = 0;
  RETURN NULL;
END $$;
CREATE TRIGGER rb_jobs_track_deleted AFTER DELETE ON rb_jobs FOR EACH ROW
  WHEN (OLD.trk) EXECUTE FUNCTION rb_track_gone();
-- version 6's, a marked job's record ended as a success first
CREATE OR REPLACE FUNCTION rb_ack_batch(p_jids text[], p_wids text[], p_shard int,
  p_now bigint, p_ttl_ms bigint, p_batch boolean)
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
    SELECT j.state, j.flags, j.wid, j.queue, j.json, j.wf, j.bid, j.trk INTO r
      FROM rb_jobs j WHERE j.jid = p_jids[i] FOR UPDATE;
    IF NOT FOUND THEN
      st[i] := 1;
    ELSIF r.state = 3 AND r.wid IS NOT NULL AND p_wids[i] IS NOT NULL
          AND r.wid <> p_wids[i] THEN
      st[i] := 2;
    ELSIF (r.state = 3 OR r.flags & 1 <> 0) AND r.bid IS NOT NULL AND NOT p_batch THEN
      st[i] := 5;
    ELSIF r.state = 3 OR r.flags & 1 <> 0 THEN
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
UPDATE rb_meta SET value = '9' WHERE key = 'schema_version';
