-- Version 19: the grouped claim's database cost (issue 30, session 13;
-- docs/distributed.md "Groups and limits").
--
-- A queue's holds by their end. The claim asks whether one of its queue's
-- holds is due (before it takes a round) and when the next one ends (its
-- -2 row); on a table not analyzed since its groups came (a new queue's)
-- both read rb_groups by the queue's prefix of the primary key, every
-- group row of the queue (1,001 rows, 19 pages per claim with 1,000
-- groups). With this index each is one probe of the held rows.
-- rb_groups_held (hold_until, every queue) stays for maintenance.
CREATE INDEX rb_groups_held_queue ON rb_groups (queue, hold_until) WHERE hold <> 0;

UPDATE rb_meta SET value = '19' WHERE key = 'schema_version';
