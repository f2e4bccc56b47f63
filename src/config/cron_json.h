/* A [[cron]] entry as JSON, the one shape `rebound cron --json` and GET
 * /api/cron list (docs/cli.md, docs/http.md). */
#ifndef RB_CONFIG_CRON_JSON_H
#define RB_CONFIG_CRON_JSON_H

#include <stdint.h>

#include <jansson.h>

#include "config/config.h"

/* The most run times an entry lists (`--count`, `?count=`). */
#define RB_CRON_NEXT_MAX 1000

/* e as {"name", "schedule", "timezone", "missed", "jobtype", "queue",
 * "job", "next"}: next holds its first n run times strictly after now_s
 * (Unix seconds) as RFC 3339 texts, fewer when the schedule has no more
 * within ten years (engine/cron.h). n is clamped to 0..RB_CRON_NEXT_MAX.
 * The caller owns the result. */
json_t *rb_cron_entry_json(const rb_cron_entry *e, int64_t now_s, int n);

#endif
