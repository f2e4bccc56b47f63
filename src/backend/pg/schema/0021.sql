-- Version 21: the grouped claim's statement (SQL_CLAIMG) without the work
-- it seldom does (issue 30, session 14; docs/distributed.md "Groups and
-- limits").
--
-- The statement marked the groups its round found empty idle with an
-- UPDATE of rb_groups in a CTE, and built its -2 row ("claim again at")
-- from sub-plans probing rb_jobs and rb_groups: both were set up (the
-- UPDATE's relation and its five indexes opened, the sub-plans' index
-- scans begun) by every execution, most of which use neither (no group
-- to idle, a round not short). Each is now a function the statement
-- calls only when it has something to do; the rules are the same.

-- The groups p_grps of p_queue that a claim's round found without a job it
-- could take, marked idle (ready = false, idle since p_now) when no
-- enqueuer holds their lock (rb_group_lock, tried, not waited for) and
-- they have no enqueued job (rb_group_empty); the count marked.
CREATE FUNCTION rb_groups_idle(p_queue text, p_grps text[], p_now bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  UPDATE rb_groups gg SET ready = false, idle_ms = p_now
    WHERE gg.queue = p_queue AND gg.grp = ANY (p_grps)
      AND CASE WHEN pg_try_advisory_xact_lock(rb_group_lock(gg.queue, gg.grp))
               THEN rb_group_empty(gg.queue, gg.grp) ELSE false END;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;

-- When a round that stopped short of its FETCHes should claim p_queue
-- again: p_now when it did not see every runnable group (p_full) or a
-- group it served (p_grps, with the job it took, p_jids) has another
-- enqueued job (one probe per group, LATERAL: as a semi join a generic
-- plan walks the queue's ready index, session 13), else the end of the
-- queue's next hold; NULL: not before a push or a freed slot wakes it.
CREATE FUNCTION rb_claim_next(p_queue text, p_grps text[], p_jids text[], p_full boolean,
                              p_now bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN least(CASE WHEN p_full OR EXISTS (SELECT 1 FROM unnest(p_grps, p_jids) AS p(g, j)
                   CROSS JOIN LATERAL (SELECT 1 FROM rb_jobs r WHERE r.queue = p_queue
                     AND r.grp = p.g AND r.state = 2 AND r.jid <> p.j LIMIT 1) o)
                 THEN p_now END,
               (SELECT min(h.hold_until) FROM rb_groups h
                WHERE h.queue = p_queue AND h.hold <> 0));
END $$;

-- Every job that becomes enqueued in a named group (version 16's rule, the
-- same statements): the group's shared lock is now taken as a plain
-- expression (PL/pgSQL evaluates it without starting a query: one query per
-- grouped row instead of two), before the probe, whose snapshot is taken
-- after it as before.
CREATE OR REPLACE FUNCTION rb_group_enqueued() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE locked boolean;
BEGIN
  locked := pg_advisory_xact_lock_shared(rb_group_lock(NEW.queue, NEW.grp)) IS NULL;
  PERFORM 1 FROM rb_groups g WHERE g.queue = NEW.queue AND g.grp = NEW.grp AND g.ready;
  IF NOT FOUND THEN
    UPDATE rb_groups g SET ready = true WHERE g.queue = NEW.queue AND g.grp = NEW.grp;
    IF NOT FOUND THEN
      INSERT INTO rb_groups (queue, grp) VALUES (NEW.queue, ''), (NEW.queue, NEW.grp)
        ON CONFLICT DO NOTHING;
    END IF;
  END IF;
  RETURN NULL;
END $$;

UPDATE rb_meta SET value = '21' WHERE key = 'schema_version';
