/* Rebound's version, defined here and nowhere else: `rebound version`,
 * INFO, GET /api/info, the dashboard and /metrics' rebound_build_info all
 * show this one. A build may set it with -DRB_VERSION='"x.y.z"'. */
#ifndef RB_COMMON_VERSION_H
#define RB_COMMON_VERSION_H

#ifndef RB_VERSION
#define RB_VERSION "0.1.0"
#endif

/* The Faktory server release whose work protocol (v2) Rebound speaks: INFO's
 * server.faktory_version, which stock clients read. Not Rebound's version;
 * shown everywhere as the protocol's. */
#define RB_FAKTORY_VERSION "1.10.0"

#endif
