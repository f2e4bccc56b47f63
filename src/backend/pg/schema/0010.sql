-- Version 10: the workflow graph sees used-up edges (docs/workflows.md
-- "Seeing it", issue 25). rb_edges keeps an edge only while the parent
-- concerns the child; once it is used up (the parent ACKed, or dead and
-- cancelling or ignored by the child, or discarded, or the child killed)
-- it moves to rb_edges_used, which only the graph reads: a dead parent's
-- released or cancelled children, and a succeeded record's parents and
-- children, stay in its graph while the jobs are stored or recorded. A
-- row goes when its child is gone (deleted without a record, or its
-- record expired); one whose parent is gone stays: the child shows that
-- parent as unknown. rb_dep_succeeded (called by rb_ack_deps and
-- rb_ack_batch) is replaced in place to move its edges; the other moves
-- are the nodes' C code (sql_deps.c), so a node of the previous release
-- still running only leaves those out of the graph.
CREATE TABLE rb_edges_used (parent text NOT NULL, child text NOT NULL,
  PRIMARY KEY (parent, child));
CREATE INDEX rb_edges_used_child ON rb_edges_used (child);
-- version 5's, its used-up edges kept for the graph
CREATE OR REPLACE FUNCTION rb_dep_succeeded(p_jid text, p_now bigint, p_ttl_ms bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE c text; w record;
BEGIN
  INSERT INTO rb_dep_done (jid, until_ms) VALUES (p_jid, p_now + p_ttl_ms)
    ON CONFLICT (jid) DO UPDATE SET until_ms = excluded.until_ms;
  FOR c IN SELECT e.child FROM rb_edges e WHERE e.parent = p_jid ORDER BY e.child LOOP
    PERFORM 1 FROM rb_jobs j WHERE j.jid = c FOR UPDATE;
    DELETE FROM rb_edges e WHERE e.parent = p_jid AND e.child = c;
    INSERT INTO rb_edges_used (parent, child) VALUES (p_jid, c) ON CONFLICT DO NOTHING;
    UPDATE rb_wait x SET remaining = greatest(x.remaining - 1, 0),
      dead = least(x.dead, greatest(x.remaining - 1, 0))
      WHERE x.child = c RETURNING x.remaining, x.dead INTO w;
    IF NOT FOUND THEN CONTINUE; END IF;
    IF w.remaining = 0 THEN
      PERFORM rb_dep_release(c, p_now);
    ELSIF w.dead > 0 THEN
      UPDATE rb_jobs j SET state = 7 WHERE j.jid = c AND j.state IN (6, 7);
    ELSE
      UPDATE rb_jobs j SET state = 6 WHERE j.jid = c AND j.state IN (6, 7);
    END IF;
  END LOOP;
END $$;
UPDATE rb_meta SET value = '10' WHERE key = 'schema_version';
