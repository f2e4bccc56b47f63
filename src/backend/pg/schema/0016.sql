-- Version 16: groups in turn and their limits (issue 30; docs/distributed.md
-- "Groups and limits").
--
-- rb_jobs.grp: the job's custom.group ('' : ungrouped), set by a trigger
-- from the job's text when a row is inserted (every way in: pushes of this
-- release and the previous one, catch jobs, batch callbacks, import), and
-- filled here for the jobs already stored. The ready index gains it: a
-- group's first job is one probe, and a queue's ungrouped jobs are the
-- prefix (queue, '') of the same index, so a queue that never saw a group
-- is claimed as before.
ALTER TABLE rb_jobs ADD COLUMN grp text NOT NULL DEFAULT '';
UPDATE rb_jobs SET grp = g.v FROM (SELECT jid, json::json #>> '{custom,group}' AS v
    FROM rb_jobs WHERE json LIKE '%"group"%') g
  WHERE rb_jobs.jid = g.jid AND json_typeof(rb_jobs.json::json #> '{custom,group}') = 'string'
    AND g.v <> '';
CREATE INDEX rb_jobs_group_ready ON rb_jobs (queue, grp, priority DESC, seq) WHERE state = 2;
CREATE INDEX rb_jobs_group_working ON rb_jobs (queue, grp) WHERE state = 3;
DROP INDEX rb_jobs_ready;

-- One row per group of a queue that has (or may have) ready jobs, a hold,
-- a bucket not yet refilled or settings; '' is the queue's ungrouped jobs,
-- made with the queue's first grouped job and never idle or held. Nothing
-- is written per claim of a group without limits: the turn is a cursor in
-- each node (the last group it served, walked in name order).
CREATE TABLE rb_groups (
  queue text NOT NULL,
  grp text NOT NULL,
  ready boolean NOT NULL DEFAULT true,  -- may have enqueued jobs; false only after a
                                        -- claim proved it has none under rb_group_lock
  hold smallint NOT NULL DEFAULT 0,     -- engine/group.h rb_group_hold: 0 runnable,
                                        -- 1 concurrency, 2 rate, 3 paused
  hold_until bigint NOT NULL DEFAULT 0, -- ms: a rate hold's end, a pause's end, a
                                        -- concurrency hold's re-check
  tat_us bigint NOT NULL DEFAULT 0,     -- the group's GCRA bucket (engine/gcra.h); 0: full
  o_conc integer, o_rate integer, o_period_ms bigint, o_burst integer, -- GROUP SET; NULL inherits
  paused_until bigint NOT NULL DEFAULT 0,
  reason text,
  PRIMARY KEY (queue, grp)
);
CREATE INDEX rb_groups_runnable ON rb_groups (queue, grp) WHERE ready AND hold = 0;
-- the groups of the jobs stored before this version (rb_group_enqueued's
-- work, for rows that were enqueued before it existed)
INSERT INTO rb_groups (queue, grp)
  SELECT DISTINCT queue, grp FROM rb_jobs WHERE grp <> '' AND state = 2
  UNION SELECT DISTINCT queue, '' FROM rb_jobs WHERE grp <> '';
CREATE INDEX rb_groups_held ON rb_groups (hold_until) WHERE hold <> 0;

-- [throttles.QUEUE] rate: the queue's GCRA bucket.
ALTER TABLE rb_queues ADD COLUMN tat_us bigint NOT NULL DEFAULT 0;

-- GCRA in SQL, for the claim: the C rules' arithmetic (engine/gcra.c), on
-- the emission interval p_t and tolerance p_tau the node computed with
-- rb_gcra_init (p_t 0: no rate). test_pg_rules checks them against C.
CREATE FUNCTION rb_gcra_conforms(p_tat bigint, p_now bigint, p_t bigint, p_tau bigint)
RETURNS boolean LANGUAGE sql IMMUTABLE AS
$$ SELECT p_t = 0 OR p_now >= p_tat - p_tau $$;
CREATE FUNCTION rb_gcra_start(p_tat bigint, p_now bigint, p_t bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN p_t = 0 THEN p_tat ELSE greatest(p_tat, p_now) + p_t END $$;
-- rb_gcra_init's emission interval of p_rate starts per p_period_ms (µs,
-- rounded up, at least 1).
CREATE FUNCTION rb_gcra_interval(p_rate bigint, p_period_ms bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT greatest(1, (p_period_ms * 1000 + p_rate - 1) / p_rate) $$;
CREATE FUNCTION rb_gcra_available(p_tat bigint, p_now bigint, p_t bigint, p_tau bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN p_t = 0 THEN 9223372036854775807
               WHEN p_now < p_tat - p_tau THEN 0
               ELSE (p_now + p_tau - greatest(p_tat, p_now)) / p_t + 1 END $$;

-- A named group's limits, field by field its GROUP SET's (o_*) else its
-- queue's [groups] (q_*, resolved by the node: engine/group.h's
-- rb_flow_limits_resolve without an override); a rate of 0 clears period
-- and burst, a period under 1 s counts as 1 s. Returns the concurrency (0: none) and the bucket's interval
-- and tolerance (0: no rate). test_pg_rules checks it against C.
CREATE FUNCTION rb_group_limits(o_conc int, o_rate int, o_period_ms bigint, o_burst int,
                                q_conc int, q_rate int, q_period_ms bigint, q_burst int,
                                OUT conc int, OUT t bigint, OUT tau bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE rate int := coalesce(o_rate, q_rate, 0);
BEGIN
  conc := coalesce(o_conc, q_conc, 0);
  t := 0;
  tau := 0;
  IF rate > 0 THEN
    t := rb_gcra_interval(rate, greatest(coalesce(o_period_ms, q_period_ms, 0), 1000));
    tau := greatest(coalesce(o_burst, q_burst, 0), 0) * t;
  END IF;
END $$;

-- The advisory lock that orders a group's enqueuers (shared) against a
-- claim marking it idle (exclusive, only ever tried).
CREATE FUNCTION rb_group_lock(q text, g text) RETURNS bigint LANGUAGE sql STABLE AS
$$ SELECT hashtextextended(current_schema() || E'\x1f' || q || E'\x1f' || g, 30) $$;

-- A row's group from its text, before it is inserted.
CREATE FUNCTION rb_group_of_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE g json;
BEGIN
  g := NEW.json::json #> '{custom,group}';
  IF json_typeof(g) = 'string' THEN
    NEW.grp := g #>> '{}';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER rb_jobs_group_of BEFORE INSERT ON rb_jobs FOR EACH ROW
  WHEN (NEW.grp = '' AND NEW.json LIKE '%"group"%') EXECUTE FUNCTION rb_group_of_job();

-- Every job that becomes enqueued in a named group: the group made ready
-- (a write only on the idle -> ready transition). The shared lock, held to
-- the end of the transaction, keeps a claim from marking the group idle
-- while this job is not yet committed (docs/distributed.md, "Groups and
-- limits").
CREATE FUNCTION rb_group_enqueued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(rb_group_lock(NEW.queue, NEW.grp));
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
CREATE TRIGGER rb_jobs_group_enqueued AFTER INSERT OR UPDATE OF state ON rb_jobs
  FOR EACH ROW WHEN (NEW.state = 2 AND NEW.grp <> '') EXECUTE FUNCTION rb_group_enqueued();

-- A job that held a slot of a group with a concurrency limit (flag 4, set
-- by the claim) leaves working: the group's concurrency hold ends and the
-- queue is notified. A row another claim holds is skipped (no wait): that
-- claim counted under its lock, and a hold it sets is re-checked at its
-- hold_until (1 s).
CREATE FUNCTION rb_group_slot_freed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE rb_groups g SET hold = 0, hold_until = 0
    FROM (SELECT h.grp FROM rb_groups h WHERE h.queue = OLD.queue AND h.grp = OLD.grp
          AND h.hold = 1 FOR UPDATE SKIP LOCKED) d
    WHERE g.queue = OLD.queue AND g.grp = d.grp;
  IF FOUND THEN
    PERFORM pg_notify(rb_channel(), OLD.queue);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER rb_jobs_group_slot_deleted AFTER DELETE ON rb_jobs FOR EACH ROW
  WHEN (OLD.state = 3 AND OLD.flags & 4 <> 0) EXECUTE FUNCTION rb_group_slot_freed();
CREATE TRIGGER rb_jobs_group_slot_moved AFTER UPDATE OF state ON rb_jobs FOR EACH ROW
  WHEN (OLD.state = 3 AND NEW.state <> 3 AND OLD.flags & 4 <> 0)
  EXECUTE FUNCTION rb_group_slot_freed();

-- rb_claim_unexpired, same signature (version 8's): a queue's ungrouped
-- jobs only, on the new ready index's prefix (queue, ''). rb_claim_groups
-- runs it for a queue without groups; nodes of the previous release run
-- it for FETCHes of several queues, and leave grouped jobs to the nodes
-- of this release.
CREATE OR REPLACE FUNCTION rb_claim_unexpired(p_queues text[], p_wids text[], p_now bigint)
RETURNS TABLE(slot integer, jid text, json text, enq_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE q text; want int := coalesce(array_length(p_wids, 1), 0); got int := 0; n int;
BEGIN
  FOREACH q IN ARRAY p_queues LOOP
    EXIT WHEN got >= want;
    CONTINUE WHEN EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = q AND qq.paused);
    RETURN QUERY
      WITH picked AS MATERIALIZED (
        SELECT r.jid, r.priority, r.seq, coalesce(r.expires_ms <= p_now, false) AS gone
        FROM rb_jobs r
        WHERE r.state = 2 AND r.queue = q AND r.grp = ''
        ORDER BY r.priority DESC, r.seq
        LIMIT want - got
        FOR UPDATE SKIP LOCKED),
      numbered AS (
        SELECT p.jid, p.gone, (got + row_number() OVER (ORDER BY p.priority DESC, p.seq))::int
          AS rn
        FROM picked p)
      UPDATE rb_jobs j SET state = CASE WHEN nb.gone THEN j.state ELSE 3 END,
        attempts = CASE WHEN nb.gone THEN j.attempts ELSE j.attempts + 1 END,
        wid = CASE WHEN nb.gone THEN j.wid ELSE p_wids[nb.rn] END,
        due_ms = CASE WHEN nb.gone THEN j.due_ms ELSE p_now + j.reserve_s * 1000::bigint END,
        flags = CASE WHEN nb.gone THEN j.flags WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END
      FROM numbered nb WHERE j.jid = nb.jid
      RETURNING CASE WHEN nb.gone THEN -1 ELSE nb.rn - 1 END, j.jid,
        CASE WHEN nb.gone THEN NULL ELSE j.json END, j.enq_ms;
    GET DIAGNOSTICS n = ROW_COUNT;
    got := got + n;
  END LOOP;
END $$;

-- The claim, per queue of p_queues in order (paused ones skipped), for the
-- FETCHes of p_wids. Per queue i: p_cursor[i] the group this node served
-- last (NULL: from the start), p_conc[i], p_rate[i], p_period[i],
-- p_burst[i] the [groups] limits of its named groups (rb_group_limits
-- with each group's GROUP SET), p_qt[i]/p_qtau[i] the queue's [throttles]
-- rate (its bucket's interval and tolerance). A queue without groups
-- is claimed by rb_claim_unexpired. Otherwise its runnable groups
-- give one job each in name order after the cursor, wrapping; a group
-- with limits is locked (SKIP LOCKED: one claimer serves it at a time),
-- its working jobs counted and its bucket checked, and it gives at most
-- one job per call; a group at a limit is held (out of the runnable
-- index) and the next one tried; a group found empty is marked idle
-- under rb_group_lock's exclusive lock, only tried. Rows: slot >= 0 a
-- claimed job (q, g: its queue and group, the node's next cursor); -1 an
-- expired job left as it is (jid; as rb_claim_unexpired); -2 a time to
-- claim again (enq_ms, wall ms: a hold's end, or a group another claim
-- was serving; q: the queue).
CREATE FUNCTION rb_claim_groups(p_queues text[], p_wids text[], p_now bigint,
                                p_cursor text[], p_conc int[], p_rate int[], p_period bigint[],
                                p_burst int[], p_qt bigint[], p_qtau bigint[])
RETURNS TABLE (slot int, jid text, json text, enq_ms bigint, q text, g text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE want int := coalesce(array_length(p_wids, 1), 0); got int := 0; n int;
  i int; qn text; cur text; lim int; qtat bigint; avail bigint; now_us bigint := p_now * 1000;
  skip text[]; misses int; wrapped boolean; gr record; jr record; conc int; t bigint; tau bigint;
  w int; limited boolean; ntat bigint; nhold smallint; nuntil bigint; before int;
  retry_at bigint;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_queues, 1), 0) LOOP
    EXIT WHEN got >= want;
    qn := p_queues[i];
    CONTINUE WHEN EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = qn AND qq.paused);
    lim := want - got;
    before := got;
    retry_at := NULL;
    IF coalesce(p_qt[i], 0) > 0 THEN -- the queue's bucket, one claimer at a time
      SELECT qq.tat_us INTO qtat FROM rb_queues qq WHERE qq.name = qn FOR UPDATE SKIP LOCKED;
      IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM rb_queues qq WHERE qq.name = qn) THEN
          RETURN QUERY SELECT -2, NULL::text, NULL::text, p_now + 20, qn, NULL::text;
        END IF;
        CONTINUE;
      END IF;
      avail := rb_gcra_available(qtat, now_us, p_qt[i], p_qtau[i]);
      IF avail <= 0 THEN
        RETURN QUERY SELECT -2, NULL::text, NULL::text,
          (qtat - p_qtau[i] + 999) / 1000, qn, NULL::text;
        CONTINUE;
      END IF;
      lim := least(lim, avail)::int;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM rb_groups gg WHERE gg.queue = qn) THEN
      RETURN QUERY SELECT CASE WHEN c.slot < 0 THEN c.slot ELSE c.slot + got END, c.jid,
          c.json, c.enq_ms, qn, ''::text
        FROM rb_claim_unexpired(ARRAY[qn], p_wids[got + 1 : got + lim], p_now) c;
      GET DIAGNOSTICS n = ROW_COUNT;
      got := got + n;
    ELSE
      -- holds whose time has come, released (never waiting for a row)
      UPDATE rb_groups gg SET hold = 0, hold_until = 0,
          paused_until = CASE WHEN gg.hold = 3 THEN 0 ELSE gg.paused_until END,
          reason = CASE WHEN gg.hold = 3 THEN NULL ELSE gg.reason END
        FROM (SELECT h.grp FROM rb_groups h WHERE h.queue = qn AND h.hold <> 0
              AND h.hold_until <= p_now FOR UPDATE SKIP LOCKED) d
        WHERE gg.queue = qn AND gg.grp = d.grp;
      cur := p_cursor[i];
      skip := '{}';
      misses := 0;
      wrapped := false;
      WHILE got - before < lim AND misses < want + 16 LOOP
        SELECT gg.grp, gg.o_conc, gg.o_rate, gg.o_period_ms, gg.o_burst INTO gr FROM rb_groups gg
          WHERE gg.queue = qn AND gg.ready AND gg.hold = 0 AND (cur IS NULL OR gg.grp > cur)
            AND gg.grp <> ALL (skip)
          ORDER BY gg.grp LIMIT 1;
        IF NOT FOUND THEN
          EXIT WHEN cur IS NULL OR wrapped;
          cur := NULL; -- from the first group again
          wrapped := true;
          CONTINUE;
        END IF;
        IF gr.grp = '' THEN
          conc := 0; t := 0; tau := 0;
        ELSE
          SELECT l.conc, l.t, l.tau INTO conc, t, tau
            FROM rb_group_limits(gr.o_conc, gr.o_rate, gr.o_period_ms, gr.o_burst, p_conc[i],
                                 p_rate[i], p_period[i], p_burst[i]) l;
        END IF;
        limited := conc > 0 OR t > 0;
        IF limited THEN
          SELECT gg.tat_us INTO ntat FROM rb_groups gg
            WHERE gg.queue = qn AND gg.grp = gr.grp AND gg.ready AND gg.hold = 0
            FOR UPDATE SKIP LOCKED;
          IF NOT FOUND THEN -- served by another claim right now
            skip := skip || gr.grp;
            misses := misses + 1;
            retry_at := least(retry_at, p_now + 20);
            CONTINUE;
          END IF;
          nhold := 0;
          IF conc > 0 THEN
            SELECT count(*) INTO w FROM (SELECT 1 FROM rb_jobs r WHERE r.queue = qn
              AND r.grp = gr.grp AND r.state = 3 LIMIT conc) x;
            IF w >= conc THEN
              nhold := 1; nuntil := p_now + 1000; -- re-checked then at the latest
            END IF;
          END IF;
          IF nhold = 0 AND NOT rb_gcra_conforms(ntat, now_us, t, tau) THEN
            nhold := 2; nuntil := (ntat - tau + 999) / 1000;
          END IF;
          IF nhold <> 0 THEN -- out of the runnable index until released
            UPDATE rb_groups gg SET hold = nhold, hold_until = nuntil
              WHERE gg.queue = qn AND gg.grp = gr.grp;
            skip := skip || gr.grp;
            misses := misses + 1;
            CONTINUE;
          END IF;
        END IF;
        SELECT r.jid, coalesce(r.expires_ms <= p_now, false) AS gone INTO jr FROM rb_jobs r
          WHERE r.queue = qn AND r.grp = gr.grp AND r.state = 2
          ORDER BY r.priority DESC, r.seq LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
          IF gr.grp <> '' AND pg_try_advisory_xact_lock(rb_group_lock(qn, gr.grp))
             AND NOT EXISTS (SELECT 1 FROM rb_jobs r WHERE r.queue = qn AND r.grp = gr.grp
                             AND r.state = 2) THEN
            UPDATE rb_groups gg SET ready = false WHERE gg.queue = qn AND gg.grp = gr.grp;
          END IF;
          skip := skip || gr.grp;
          misses := misses + 1;
          CONTINUE;
        END IF;
        IF jr.gone THEN -- left for the node to drop; the group keeps its turn
          RETURN QUERY SELECT -1, jr.jid, NULL::text, 0::bigint, qn, gr.grp;
          misses := misses + 1;
          CONTINUE;
        END IF;
        got := got + 1;
        RETURN QUERY
          UPDATE rb_jobs j SET state = 3, attempts = j.attempts + 1, wid = p_wids[got],
            due_ms = p_now + j.reserve_s * 1000::bigint,
            flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END | CASE WHEN conc > 0 THEN 4 ELSE 0 END
          WHERE j.jid = jr.jid
          RETURNING got - 1, j.jid, j.json, j.enq_ms, qn, gr.grp;
        IF limited THEN -- its bucket advanced; held when that start reached a limit
          ntat := rb_gcra_start(ntat, now_us, t);
          IF conc > 0 AND w + 1 >= conc THEN
            nhold := 1; nuntil := p_now + 1000;
          ELSIF NOT rb_gcra_conforms(ntat, now_us, t, tau) THEN
            nhold := 2; nuntil := (ntat - tau + 999) / 1000;
          ELSE
            nhold := 0; nuntil := 0;
          END IF;
          UPDATE rb_groups gg SET tat_us = ntat, hold = nhold, hold_until = nuntil
            WHERE gg.queue = qn AND gg.grp = gr.grp;
          skip := skip || gr.grp; -- one job per limited group per call
        END IF;
        cur := gr.grp;
        wrapped := false; -- a pass that claimed may wrap once more
      END LOOP;
      IF misses >= want + 16 AND got - before < lim THEN
        retry_at := p_now; -- stopped by the guard: claim again at once
      END IF;
      IF got - before < lim THEN
        retry_at := least(retry_at, (SELECT min(gg.hold_until) FROM rb_groups gg
                                     WHERE gg.queue = qn AND gg.hold <> 0));
      END IF;
      IF retry_at IS NOT NULL THEN
        RETURN QUERY SELECT -2, NULL::text, NULL::text, retry_at, qn, NULL::text;
      END IF;
    END IF;
    IF coalesce(p_qt[i], 0) > 0 AND got > before THEN
      UPDATE rb_queues qq SET tat_us = greatest(qtat, now_us) + (got - before) * p_qt[i]
        WHERE qq.name = qn;
    END IF;
  END LOOP;
END $$;

-- Maintenance: due holds released (their queues notified; the number of
-- queues returned) and idle groups' rows deleted, each in batches of p_limit rows that no
-- other transaction holds. A row goes when it has no ready job (ready
-- false), no hold, no settings and a full bucket, under the exclusive
-- group lock, only tried.
CREATE FUNCTION rb_groups_maint(p_now bigint, p_limit int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  WITH d AS (SELECT h.queue, h.grp FROM rb_groups h WHERE h.hold <> 0
             AND h.hold_until <= p_now ORDER BY h.hold_until LIMIT p_limit
             FOR UPDATE SKIP LOCKED),
  u AS (UPDATE rb_groups g SET hold = 0, hold_until = 0,
          paused_until = CASE WHEN g.hold = 3 THEN 0 ELSE g.paused_until END,
          reason = CASE WHEN g.hold = 3 THEN NULL ELSE g.reason END FROM d
        WHERE g.queue = d.queue AND g.grp = d.grp RETURNING g.queue)
  SELECT count(pg_notify(rb_channel(), x.queue)) INTO n FROM (SELECT DISTINCT u.queue FROM u) x;
  DELETE FROM rb_groups g USING (
    SELECT h.queue, h.grp FROM rb_groups h WHERE NOT h.ready AND h.hold = 0
      AND h.tat_us <= p_now * 1000 AND h.o_conc IS NULL AND h.o_rate IS NULL
      AND h.o_period_ms IS NULL AND h.o_burst IS NULL AND h.paused_until = 0
    LIMIT p_limit FOR UPDATE SKIP LOCKED) d
  WHERE g.queue = d.queue AND g.grp = d.grp
    AND pg_try_advisory_xact_lock(rb_group_lock(g.queue, g.grp));
  RETURN n;
END $$;

UPDATE rb_meta SET value = '16' WHERE key = 'schema_version';
