-- Version 15: debounced jobs (issue 30, docs/flow-control.md "Debounce";
-- the rules are src/engine/debounce.h's, the node merges a push in C:
-- src/backend/pg/sql_debounce.c). rb_debounce holds each debounce key
-- (its hash, rb_debounce_hash: queue and job type included) that has a
-- pending job: not fetched yet, scheduled (1) or enqueued (2). The job's
-- row names the key it took in dkey for the job's whole life, so that the
-- triggers below find it: the key row goes when its job is claimed, dies
-- or is deleted (a later push then starts a new job), and the job's
-- deletion ends its aliases. rb_debounced holds the aliases: the jids of
-- pushes merged into another job, for JOB and TRACK GET, kept while that
-- job lives and 30 minutes after it ended (ended_ms; the maintenance
-- thread deletes them), the most recent 1,000 per job. Nodes of the
-- previous release never merge (they refuse custom.debounce) and their
-- statements are unchanged.
ALTER TABLE rb_jobs ADD COLUMN dkey text;
CREATE TABLE rb_debounce (
  key text PRIMARY KEY,        -- the key's hash (hex SHA-256)
  jid text NOT NULL,           -- its pending job
  k text NOT NULL,             -- the key as pushed
  first_ms bigint NOT NULL,    -- the pending job's first push
  merged bigint NOT NULL DEFAULT 0);  -- pushes merged into it
CREATE TABLE rb_debounced (
  jid text PRIMARY KEY,        -- the merged push's jid (the alias)
  into_jid text NOT NULL,      -- the job it was merged into
  k text NOT NULL,
  merged_ms bigint NOT NULL,
  ended_ms bigint NOT NULL DEFAULT 0);  -- when into_jid's job ended, 0 while it lives
CREATE INDEX rb_debounced_into ON rb_debounced (into_jid, merged_ms);
CREATE INDEX rb_debounced_ended ON rb_debounced (ended_ms) WHERE ended_ms > 0;
CREATE FUNCTION rb_debounce_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM rb_debounce d WHERE d.key = OLD.dkey AND d.jid = OLD.jid;
  IF TG_OP = 'DELETE' THEN
    UPDATE rb_debounced a SET ended_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
      WHERE a.into_jid = OLD.jid AND a.ended_ms = 0;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER rb_jobs_debounce_deleted AFTER DELETE ON rb_jobs FOR EACH ROW
  WHEN (OLD.dkey IS NOT NULL) EXECUTE FUNCTION rb_debounce_release();
CREATE TRIGGER rb_jobs_debounce_moved AFTER UPDATE OF state ON rb_jobs FOR EACH ROW
  WHEN (OLD.dkey IS NOT NULL AND OLD.state IN (1, 2) AND NEW.state NOT IN (1, 2))
  EXECUTE FUNCTION rb_debounce_release();
UPDATE rb_meta SET value = '15' WHERE key = 'schema_version';
