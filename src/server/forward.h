/* Distributed mode's forwarding (storage.forward; docs/distributed.md
 * "Forwarding to a leader"): a client connection accepted by a node that
 * is not the cluster's leader is relayed, bytes unchanged both ways, to the
 * leader's client port, so that the leader batches every client's
 * requests; the leader greets it, checks its password and runs its
 * commands. The leader itself, a node that knows no leader (or whose
 * leader did not answer within RB_FORWARD_CONNECT_MS: remembered for
 * RB_FORWARD_BACKOFF_MS) and a node with forward off serve the connection
 * here, on the usual path (conn.c): every connection is served whole by
 * one node. Once relaying, an end or error on either side closes both.
 * The lease itself is the engine's backend's (rb_eng_leader_of). Owned by
 * the server (srv->fwd); loop thread only. */
#ifndef RB_SERVER_FORWARD_H
#define RB_SERVER_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "common/error.h"

struct rb_srv;
typedef struct rb_forward rb_forward; /* srv->fwd: the relays (forward.c) */

#define RB_FORWARD_CONNECT_MS 1000
#define RB_FORWARD_BACKOFF_MS 5000
/* A side's output above this stops reading the other side until it has
 * drained to RB_FORWARD_LOW (bytes). */
#define RB_FORWARD_HIGH (1u << 20)
#define RB_FORWARD_LOW (256u << 10)

/* What INFO and /metrics show of it. */
typedef struct rb_forward_stats {
    bool leader;           /* this node holds the lease */
    char leader_addr[256]; /* the holder's client port, "" when none is known */
    uint64_t open;         /* relays open (connecting or relaying) */
    uint64_t total;        /* relays that reached the leader */
    uint64_t fallbacks;    /* connections served here because the leader could not
                              be reached (or was recently unreachable) */
} rb_forward_stats;

/* At start, once the storage url and listen address are final (after
 * --db and --listen) and the backend chosen, before it opens: with
 * storage.forward, the backend must keep a leader lease (distributed
 * mode), and the address to advertise (storage.advertise, else
 * server.listen) must be one IP address, not every interface. 0 or
 * RB_EINVAL with a message naming the key. Sets srv->fwd when on. */
int rb_forward_check(struct rb_srv *srv, rb_err *err);
/* Once the client port is bound: this node competes for the lease,
 * advertising its address (port 0 there: the port bound). No-op when off. */
void rb_forward_start(struct rb_srv *srv);
/* A client connection was accepted (fd, counted against max_connections
 * by the caller): true when the forwarding took it (relayed, or served
 * here after the leader did not answer); false: the caller serves it. */
bool rb_forward_accept(struct rb_srv *srv, evutil_socket_t fd);
/* Relays open, for max_connections (0 when off). */
size_t rb_forward_open(const struct rb_srv *srv);
/* Fills st; false (st zeroed) when forwarding is off. */
bool rb_forward_stats_of(const struct rb_srv *srv, rb_forward_stats *st);
/* Closes every relay and frees srv->fwd. */
void rb_forward_free(struct rb_srv *srv);

#endif
