-- Version 20: forwarding to a leader node (issue 29, session 14;
-- docs/distributed.md "Forwarding to a leader").
--
-- rb_leader: the one node that serves the cluster's client connections
-- when nodes run with storage.forward = true. At most one row (id 1): the
-- holder's name (node, "host:pid" as in rb_workers), the address of its
-- client port other nodes connect to (addr, "host:port"), whether that
-- port speaks TLS (tls), and when its lease ends (until_ms, the database's
-- clock in ms since the epoch). A node takes the row when it is free or
-- its lease has ended and renews it while it holds it, in one statement
-- about every second from its maintenance thread; it deletes the row when
-- it stops. UNLOGGED: a hint, lost with a crash of PostgreSQL (the nodes
-- take it again within a second); correctness never depends on it, since
-- every connection is served whole by one node.
CREATE UNLOGGED TABLE rb_leader (
  id int PRIMARY KEY CHECK (id = 1),
  node text NOT NULL,
  addr text NOT NULL,
  tls boolean NOT NULL DEFAULT false,
  until_ms bigint NOT NULL
);

UPDATE rb_meta SET value = '20' WHERE key = 'schema_version';
