-- Version 19: the grouped claim's and the grouped push's database cost
-- (issue 30, session 13; docs/distributed.md "Groups and limits").
--
-- A queue's holds by their end. The claim asks whether one of its queue's
-- holds is due (before it takes a round) and when the next one ends (its
-- -2 row); both read rb_groups by the queue's prefix of the primary key,
-- every group row of the queue (1,001 rows, 19 pages per claim with 1,000
-- groups). With this index each is one probe of the held rows.
-- rb_groups_held (hold_until, every queue) stays for maintenance.
CREATE INDEX rb_groups_held_queue ON rb_groups (queue, hold_until) WHERE hold <> 0;

-- Jobs inserted enqueued in named groups make their groups ready once per
-- statement instead of once per row: a push of n jobs (a PUSHB, or the
-- pushes a node sends together) runs two statements, not n PL/pgSQL
-- calls of two to four each. The rules are rb_group_enqueued's: the
-- groups' shared rb_group_lock first (in queue, group order), then, in a
-- statement that starts after the locks are held, one probe of each
-- group's row: an idle one set ready, a missing one made with its queue's
-- '' row. Jobs
-- that become enqueued by an UPDATE (a retry, a promotion, a debounce
-- merge) still run rb_group_enqueued per row: a trigger on UPDATE OF
-- state cannot see a transition table.
CREATE FUNCTION rb_groups_enqueued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(rb_group_lock(d.queue, d.grp))
    FROM (SELECT DISTINCT n.queue, n.grp FROM rb_new_jobs n
          WHERE n.state = 2 AND n.grp <> '' ORDER BY 1, 2) d;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  -- one probe of each group's row: an idle row set ready, a missing one
  -- made (with its queue's '' row)
  WITH s AS MATERIALIZED (SELECT d.queue, d.grp, g.ready
                          FROM (SELECT DISTINCT n.queue, n.grp FROM rb_new_jobs n
                                WHERE n.state = 2 AND n.grp <> '') d
                          LEFT JOIN rb_groups g ON g.queue = d.queue AND g.grp = d.grp
                          ORDER BY d.queue, d.grp),
  u AS (UPDATE rb_groups g SET ready = true FROM s
        WHERE NOT s.ready AND g.queue = s.queue AND g.grp = s.grp)
  INSERT INTO rb_groups (queue, grp)
    SELECT x.queue, x.grp FROM (SELECT s.queue, '' AS grp FROM s WHERE s.ready IS NULL
                                UNION SELECT s.queue, s.grp FROM s WHERE s.ready IS NULL) x
    ORDER BY 1, 2 ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
DROP TRIGGER rb_jobs_group_enqueued ON rb_jobs;
CREATE TRIGGER rb_jobs_group_enqueued AFTER UPDATE OF state ON rb_jobs
  FOR EACH ROW WHEN (NEW.state = 2 AND NEW.grp <> '') EXECUTE FUNCTION rb_group_enqueued();
CREATE TRIGGER rb_jobs_groups_inserted AFTER INSERT ON rb_jobs
  REFERENCING NEW TABLE AS rb_new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION rb_groups_enqueued();

UPDATE rb_meta SET value = '19' WHERE key = 'schema_version';
