-- Version 1: the tables. States and flags are src/engine/job_state.h's numbers.
-- due_ms is the state's deadline (run at, lease end, retention end), or the
-- enqueue time while enqueued; enq_ms the last enqueue (enqueued_at); seq
-- the FIFO rank within a priority. Counters are split into shards so nodes
-- do not queue behind one row; readers sum them.
CREATE TABLE rb_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE SEQUENCE rb_job_seq;
CREATE TABLE rb_jobs (
  jid text PRIMARY KEY,
  state smallint NOT NULL,
  queue text NOT NULL,
  priority smallint NOT NULL,
  seq bigint NOT NULL DEFAULT nextval('rb_job_seq'),
  due_ms bigint NOT NULL,
  enq_ms bigint NOT NULL DEFAULT 0,
  first_ms bigint NOT NULL DEFAULT 0,
  attempts integer NOT NULL DEFAULT 0,
  reserve_s integer NOT NULL,
  flags smallint NOT NULL DEFAULT 0,
  wid text,
  json text NOT NULL,
  history text
);
CREATE INDEX rb_jobs_ready ON rb_jobs (queue, priority DESC, seq) WHERE state = 2;
CREATE INDEX rb_jobs_timed ON rb_jobs (state, due_ms) WHERE state <> 2;
CREATE TABLE rb_queues (name text PRIMARY KEY, paused boolean NOT NULL DEFAULT false);
CREATE TABLE rb_counters (name text NOT NULL, shard smallint NOT NULL,
  value bigint NOT NULL, PRIMARY KEY (name, shard));
INSERT INTO rb_meta VALUES ('schema_version', '1');
