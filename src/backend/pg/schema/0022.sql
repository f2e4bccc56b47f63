-- Version 22: forwarding with TLS (issue 29, session 15; docs/distributed.md
-- "Forwarding to a leader").
--
-- rb_leader.tls_id: which certificate the leader's client port presents,
-- "sha256:" and the hex SHA-256 of its DER ("" for plain TCP). A relay
-- carries a client's bytes unchanged, so a TLS client's session ends at
-- the leader, which must present what the node the client dialled would
-- have: a node relays only to a leader whose tls_id is its own (the same
-- certificate, or both plain) and serves its clients itself otherwise.
-- tls (version 20) stays, written as tls_id <> ''.
ALTER TABLE rb_leader ADD COLUMN tls_id text NOT NULL DEFAULT '';

UPDATE rb_meta SET value = '22' WHERE key = 'schema_version';
