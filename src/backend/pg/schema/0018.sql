-- Version 18: held-back starts counted in distributed mode, and idle
-- groups' rows kept a while (issue 30; docs/distributed.md "Groups and
-- limits").
--
-- A held-back start (INFO's holds, /metrics' rebound_group_holds_total) is
-- a named group entering a hold, or a FETCH passing a queue over for its
-- [throttles] rate while it has a ready job. The claim that sets a hold
-- counts it on the group's row, in the UPDATE that sets the hold (no other
-- row written: no claim waits on a shared counter), GROUP PAUSE on the row
-- it pauses, a rate pass on the queue's rb_queues row the claim holds
-- already. Readers sum a queue's rows; a group row that maintenance deletes
-- gives its counts to the queue's '' row first. A concurrency hold that a
-- claim or maintenance released at its 1 s re-check is marked (hold_until
-- -1): the claim that finds the group still at its limit holds it again
-- without counting it (one hold, as on a single node).
ALTER TABLE rb_groups ADD COLUMN holds_c bigint NOT NULL DEFAULT 0,
  ADD COLUMN holds_r bigint NOT NULL DEFAULT 0, ADD COLUMN holds_p bigint NOT NULL DEFAULT 0,
  -- when a claim marked it idle (wall ms): maintenance deletes the row a
  -- minute after, not at its next pass (the next push of the group would
  -- make it again)
  ADD COLUMN idle_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE rb_queues ADD COLUMN rate_passes bigint NOT NULL DEFAULT 0;

-- The claim, per queue of p_queues in order (paused ones skipped), for the
-- FETCHes of p_wids. Per queue i: p_cursor[i] the group this node served
-- last (NULL: from the start), p_conc[i], p_rate[i], p_period[i],
-- p_burst[i] the [groups] limits of its named groups (rb_group_limits
-- with each group's GROUP SET), p_qt[i]/p_qtau[i] the queue's [throttles]
-- rate (its bucket's interval and tolerance). A queue without groups
-- is claimed by rb_claim_unexpired. Otherwise in rounds: a round takes the
-- next runnable groups in name order after the cursor, wrapping once (as
-- many as jobs are still wanted, each group once), and gives each one job;
-- the cursor moves to the round's last group, and the next round (when
-- more jobs are wanted than groups were runnable) goes on from there. A
-- group with limits is locked (SKIP LOCKED: one claimer serves it at a
-- time), its working jobs counted and its bucket checked, and it gives at
-- most one job per call; a group at a limit is held (out of the runnable
-- index). A group found empty is marked idle under rb_group_lock's
-- exclusive lock, only tried, and checked empty again by a statement that
-- starts after the lock is held. Rows: slot >= 0 a claimed job (q, g: its
-- queue and group, the node's next cursor; in walk order per round); -1
-- an expired job left as it is (jid; as rb_claim_unexpired); -2 a time to
-- claim again (enq_ms, wall ms: a hold's end, or a group another claim was
-- serving; q: the queue).
CREATE OR REPLACE FUNCTION rb_claim_groups(p_queues text[], p_wids text[], p_now bigint,
                                p_cursor text[], p_conc int[], p_rate int[], p_period bigint[],
                                p_burst int[], p_qt bigint[], p_qtau bigint[])
RETURNS TABLE (slot int, jid text, json text, enq_ms bigint, q text, g text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE want int := coalesce(array_length(p_wids, 1), 0); got int := 0; n int;
  i int; qn text; cur text; lim int; qtat bigint; avail bigint; now_us bigint := p_now * 1000;
  skip text[]; misses int; before int; retry_at bigint; need int; qc int; qr int;
  -- a round: its groups in walk order (cg) and which have limits (cl); the
  -- rounds' positions that gave a job (gave); expired jobs met (xj, xg);
  -- the jobs claimed (u_*: position, slot, jid, text, enqueued)
  cg text[]; cl boolean[]; gave int[]; xj text[]; xg text[];
  u_ord int[]; u_slot int[]; u_jid text[]; u_json text[]; u_enq bigint[]; idle text[];
  k int; upto int; jr record; conc int; t bigint; tau bigint; w int; ntat bigint; nhold smallint;
  nuntil bigint; oc int; orate int; operiod bigint; oburst int; jtext text; jenq bigint;
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
      IF avail <= 0 THEN -- a held-back start when the queue has a ready job
        UPDATE rb_queues qq SET rate_passes = qq.rate_passes + 1 WHERE qq.name = qn
          AND EXISTS (SELECT 1 FROM rb_jobs r WHERE r.queue = qn AND r.state = 2);
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
      IF EXISTS (SELECT 1 FROM rb_groups h WHERE h.hold <> 0 AND h.hold_until <= p_now
                 AND h.queue = qn) THEN
        UPDATE rb_groups gg SET hold = 0, hold_until = CASE WHEN gg.hold = 1 THEN -1 ELSE 0 END,
            paused_until = CASE WHEN gg.hold = 3 THEN 0 ELSE gg.paused_until END,
            reason = CASE WHEN gg.hold = 3 THEN NULL ELSE gg.reason END
          FROM (SELECT h.grp FROM rb_groups h WHERE h.queue = qn AND h.hold <> 0
                AND h.hold_until <= p_now FOR UPDATE SKIP LOCKED) d
          WHERE gg.queue = qn AND gg.grp = d.grp;
      END IF;
      cur := p_cursor[i];
      qc := coalesce(p_conc[i], 0);
      qr := coalesce(p_rate[i], 0);
      skip := '{}';
      idle := '{}';
      misses := 0;
      WHILE got - before < lim AND misses < want + 16 LOOP
        need := lim - (got - before);
        -- the round: its groups (the runnable index, from the cursor: a
        -- range each side of it), the first ready job of each group without
        -- limits, those jobs claimed
        WITH cand AS MATERIALIZED (
            SELECT c.grp, c.lmt, (row_number() OVER (ORDER BY c.wrap, c.grp))::int AS ord
            FROM ((SELECT gg.grp, 0 AS wrap, gg.grp <> '' AND (coalesce(gg.o_conc, qc) > 0
                          OR coalesce(gg.o_rate, qr) > 0) AS lmt
                   FROM rb_groups gg WHERE gg.queue = qn AND gg.ready AND gg.hold = 0
                     AND gg.grp >= coalesce(cur, '') AND gg.grp IS DISTINCT FROM cur
                     AND gg.grp <> ALL (skip)
                   ORDER BY gg.grp LIMIT need + need + 8)
                  UNION ALL
                  (SELECT gg.grp, 1, gg.grp <> '' AND (coalesce(gg.o_conc, qc) > 0
                          OR coalesce(gg.o_rate, qr) > 0)
                   FROM rb_groups gg WHERE gg.queue = qn AND gg.ready AND gg.hold = 0
                     AND gg.grp <= cur AND gg.grp <> ALL (skip)
                   ORDER BY gg.grp LIMIT need + need + 8)) c
            ORDER BY c.wrap, c.grp LIMIT need + need + 8),
          -- in walk order (the lateral join keeps cand's order), the first
          -- need groups that have a job or limits: those after it are not
          -- looked at this round
          picked AS MATERIALIZED (
            SELECT c.ord, c.grp, c.lmt, f.jid, coalesce(f.gone, false) AS gone
            FROM cand c LEFT JOIN LATERAL (
                SELECT r.jid, coalesce(r.expires_ms <= p_now, false) AS gone FROM rb_jobs r
                WHERE NOT c.lmt AND r.queue = qn AND r.grp = c.grp AND r.state = 2
                ORDER BY r.priority DESC, r.seq LIMIT 1 FOR UPDATE SKIP LOCKED) f ON true
            WHERE c.lmt OR f.jid IS NOT NULL
            LIMIT need),
          numbered AS (
            SELECT p.ord, p.jid, (got + row_number() OVER (ORDER BY p.ord))::int AS s
            FROM picked p WHERE NOT p.lmt AND NOT p.gone),
          upd AS (
            UPDATE rb_jobs j SET state = 3, attempts = j.attempts + 1, wid = p_wids[nb.s],
              due_ms = p_now + j.reserve_s * 1000::bigint,
              flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END
            FROM numbered nb WHERE j.jid = nb.jid
            RETURNING nb.ord, nb.s - 1 AS s, j.jid, j.json, j.enq_ms)
        SELECT (SELECT array_agg(c.grp ORDER BY c.ord) FROM cand c),
               (SELECT array_agg(c.lmt ORDER BY c.ord) FROM cand c),
               (SELECT array_agg(p.ord) FROM picked p),
               (SELECT CASE WHEN count(*) >= need THEN max(p.ord) END FROM picked p),
               (SELECT array_agg(p.jid) FROM picked p WHERE p.gone),
               (SELECT array_agg(p.grp) FROM picked p WHERE p.gone),
               a.o, a.s, a.j, a.t, a.e
          FROM (SELECT array_agg(u.ord) AS o, array_agg(u.s) AS s, array_agg(u.jid) AS j,
                       array_agg(u.json) AS t, array_agg(u.enq_ms) AS e FROM upd u) a
          INTO cg, cl, gave, upto, xj, xg, u_ord, u_slot, u_jid, u_json, u_enq;
        EXIT WHEN cg IS NULL; -- no runnable group left
        upto := coalesce(upto, cardinality(cg)); -- the round's last group looked at
        got := got + coalesce(cardinality(u_ord), 0);
        IF xj IS NOT NULL THEN -- left for the node to drop; their groups keep their turn
          RETURN QUERY SELECT -1, x.j, NULL::text, 0::bigint, qn, x.g FROM unnest(xj, xg) x(j, g);
          misses := misses + cardinality(xj);
        END IF;
        -- the round's groups looked at: those without limits that gave no job
        -- (empty, or every job held by other claims) to idle below; those
        -- with limits served one at a time (at most one job each per call)
        FOR k IN 1 .. upto LOOP
          IF NOT cl[k] THEN
            IF NOT coalesce(k = ANY (gave), false) THEN
              idle := idle || cg[k];
            END IF;
            CONTINUE;
          END IF;
          skip := skip || cg[k];
          SELECT gg.tat_us, gg.o_conc, gg.o_rate, gg.o_period_ms, gg.o_burst
            INTO ntat, oc, orate, operiod, oburst FROM rb_groups gg
            WHERE gg.queue = qn AND gg.grp = cg[k] AND gg.ready AND gg.hold = 0
            FOR UPDATE SKIP LOCKED;
          IF NOT FOUND THEN -- served by another claim right now
            misses := misses + 1;
            retry_at := least(retry_at, p_now + 20);
            CONTINUE;
          END IF;
          SELECT l.conc, l.t, l.tau INTO conc, t, tau
            FROM rb_group_limits(oc, orate, operiod, oburst, p_conc[i], p_rate[i], p_period[i],
                                 p_burst[i]) l;
          nhold := 0;
          IF conc > 0 THEN
            SELECT count(*) INTO w FROM (SELECT 1 FROM rb_jobs r WHERE r.queue = qn
              AND r.grp = cg[k] AND r.state = 3 LIMIT conc) x;
            IF w >= conc THEN
              nhold := 1; nuntil := p_now + 1000; -- re-checked then at the latest
            END IF;
          END IF;
          IF nhold = 0 AND NOT rb_gcra_conforms(ntat, now_us, t, tau) THEN
            nhold := 2; nuntil := (ntat - tau + 999) / 1000;
          END IF;
          IF nhold <> 0 THEN -- out of the runnable index until released; counted
            -- unless a concurrency hold's re-check found the group still at it
            UPDATE rb_groups gg SET hold = nhold, hold_until = nuntil,
                holds_c = gg.holds_c + CASE WHEN nhold = 1 AND gg.hold_until <> -1 THEN 1
                                            ELSE 0 END,
                holds_r = gg.holds_r + CASE WHEN nhold = 2 THEN 1 ELSE 0 END
              WHERE gg.queue = qn AND gg.grp = cg[k];
            misses := misses + 1;
            CONTINUE;
          END IF;
          SELECT r.jid, coalesce(r.expires_ms <= p_now, false) AS gone INTO jr FROM rb_jobs r
            WHERE r.queue = qn AND r.grp = cg[k] AND r.state = 2
            ORDER BY r.priority DESC, r.seq LIMIT 1 FOR UPDATE SKIP LOCKED;
          IF NOT FOUND THEN -- found empty: marked idle below with the others
            idle := idle || cg[k];
            CONTINUE;
          END IF;
          IF jr.gone THEN
            RETURN QUERY SELECT -1, jr.jid, NULL::text, 0::bigint, qn, cg[k];
            misses := misses + 1;
            CONTINUE;
          END IF;
          got := got + 1;
          UPDATE rb_jobs j SET state = 3, attempts = j.attempts + 1, wid = p_wids[got],
              due_ms = p_now + j.reserve_s * 1000::bigint,
              flags = CASE WHEN j.flags & 1 <> 0 THEN 2 ELSE 0 END
                      | CASE WHEN conc > 0 THEN 4 ELSE 0 END
            WHERE j.jid = jr.jid
            RETURNING j.json, j.enq_ms INTO jtext, jenq;
          u_ord := u_ord || k;
          u_slot := u_slot || got - 1;
          u_jid := u_jid || jr.jid;
          u_json := u_json || jtext;
          u_enq := u_enq || jenq;
          IF conc > 0 OR t > 0 THEN -- its bucket advanced; held when that start reached a limit
            ntat := rb_gcra_start(ntat, now_us, t);
            IF conc > 0 AND w + 1 >= conc THEN
              nhold := 1; nuntil := p_now + 1000;
            ELSIF NOT rb_gcra_conforms(ntat, now_us, t, tau) THEN
              nhold := 2; nuntil := (ntat - tau + 999) / 1000;
            ELSE
              nhold := 0; nuntil := 0;
            END IF;
            UPDATE rb_groups gg SET tat_us = ntat, hold = nhold, hold_until = nuntil,
                holds_c = gg.holds_c + CASE WHEN nhold = 1 THEN 1 ELSE 0 END,
                holds_r = gg.holds_r + CASE WHEN nhold = 2 THEN 1 ELSE 0 END
              WHERE gg.queue = qn AND gg.grp = cg[k];
          END IF;
        END LOOP;
        IF u_ord IS NOT NULL THEN -- in walk order: the last row's group is the cursor
          RETURN QUERY SELECT u.s, u.j, u.t, u.e, qn, cg[u.o]
            FROM unnest(u_ord, u_slot, u_jid, u_json, u_enq) u(o, s, j, t, e) ORDER BY u.o;
        END IF;
        -- the groups found without a job, marked idle when empty (not when
        -- other claims hold their jobs: the check sees those), each under
        -- its lock, checked by a statement that starts after it is held
        IF cardinality(idle) > 0 THEN
          skip := skip || idle;
          misses := misses + cardinality(idle);
          UPDATE rb_groups gg SET ready = false, idle_ms = p_now
            WHERE gg.queue = qn AND gg.grp = ANY (idle) AND gg.grp <> ''
              AND CASE WHEN pg_try_advisory_xact_lock(rb_group_lock(qn, gg.grp))
                       THEN rb_group_empty(qn, gg.grp) ELSE false END;
        END IF;
        idle := '{}';
        cur := cg[upto];
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
-- queues returned; a concurrency hold marked re-checked) and the rows of
-- groups idle for a minute deleted, each in batches of p_limit rows that
-- no other transaction holds. A row goes when it has no ready job (ready
-- false), no hold, no settings and a full bucket, under the exclusive
-- group lock, only tried; its held-back starts go to its queue's '' row
-- (skipped while another transaction holds that row: no wait).
CREATE OR REPLACE FUNCTION rb_groups_maint(p_now bigint, p_limit int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  WITH d AS (SELECT h.queue, h.grp FROM rb_groups h WHERE h.hold <> 0
             AND h.hold_until <= p_now ORDER BY h.hold_until LIMIT p_limit
             FOR UPDATE SKIP LOCKED),
  u AS (UPDATE rb_groups g SET hold = 0, hold_until = CASE WHEN g.hold = 1 THEN -1 ELSE 0 END,
          paused_until = CASE WHEN g.hold = 3 THEN 0 ELSE g.paused_until END,
          reason = CASE WHEN g.hold = 3 THEN NULL ELSE g.reason END FROM d
        WHERE g.queue = d.queue AND g.grp = d.grp RETURNING g.queue)
  SELECT count(pg_notify(rb_channel(), x.queue)) INTO n FROM (SELECT DISTINCT u.queue FROM u) x;
  WITH c AS (SELECT h.queue, h.grp, h.holds_c + h.holds_r + h.holds_p > 0 AS counted
             FROM rb_groups h WHERE NOT h.ready AND h.hold = 0 AND h.grp <> ''
               AND h.idle_ms <= p_now - 60000 AND h.tat_us <= p_now * 1000
               AND h.o_conc IS NULL AND h.o_rate IS NULL AND h.o_period_ms IS NULL
               AND h.o_burst IS NULL AND h.paused_until = 0
             LIMIT p_limit FOR UPDATE SKIP LOCKED),
  z AS (SELECT z.queue FROM rb_groups z WHERE z.grp = ''
          AND z.queue IN (SELECT c.queue FROM c WHERE c.counted) FOR UPDATE SKIP LOCKED),
  d AS (DELETE FROM rb_groups g USING c WHERE g.queue = c.queue AND g.grp = c.grp
          AND (NOT c.counted OR c.queue IN (SELECT z.queue FROM z))
          AND pg_try_advisory_xact_lock(rb_group_lock(g.queue, g.grp))
        RETURNING g.queue, g.holds_c, g.holds_r, g.holds_p)
  UPDATE rb_groups g SET holds_c = g.holds_c + s.c, holds_r = g.holds_r + s.r,
      holds_p = g.holds_p + s.p
    FROM (SELECT d.queue, sum(d.holds_c) AS c, sum(d.holds_r) AS r, sum(d.holds_p) AS p
          FROM d GROUP BY d.queue) s
    WHERE g.queue = s.queue AND g.grp = '';
  RETURN n;
END $$;

UPDATE rb_meta SET value = '18' WHERE key = 'schema_version';
