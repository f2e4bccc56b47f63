-- Version 7: a batch's members found by bid (its page, GET /api/batch/BID,
-- sql_batch_view.c): a partial index, so the jobs of no batch (bid NULL)
-- cost it nothing.
CREATE INDEX rb_jobs_bid ON rb_jobs (bid, jid) WHERE bid IS NOT NULL;
UPDATE rb_meta SET value = '7' WHERE key = 'schema_version';
