-- Version 12: a counter row per engine (issue 27). Until now each engine
-- added to one of 16 shared rows per counter, picked at random: a node
-- frozen mid-transaction (cut off from the database, or paused) kept its
-- row locked, and every other engine that had picked the same row waited
-- for it. Each engine now takes a shard of its own from rb_counter_shard
-- when it connects (16 and up: 0..15 stay with nodes of earlier releases,
-- whose functions are unchanged), so no engine ever waits on another's
-- counter row; readers still sum. The maintenance sweep folds the rows of
-- engines into shard -1 (rows locked by a transaction in flight are
-- skipped), so the table does not grow with every node start.
ALTER TABLE rb_counters ALTER COLUMN shard TYPE int;
CREATE SEQUENCE rb_counter_shard AS int MINVALUE 16 START 16;
UPDATE rb_meta SET value = '12' WHERE key = 'schema_version';
