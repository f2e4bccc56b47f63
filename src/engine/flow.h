/* Flow control's checks that depend on the backend (engine/group.h has
 * the rules): what a PUSH may name and what a configuration may set where
 * a backend keeps no groups or applies no limits. The one place these
 * refusals are made, for every backend. Loop thread. */
#ifndef RB_ENGINE_FLOW_H
#define RB_ENGINE_FLOW_H

#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

typedef struct rb_eng rb_eng;

/* PUSH's flow fields of job, for every backend: custom.group read
 * (rb_group_of_job), refused with RB_GROUP_UNSUPPORTED where eng's backend
 * keeps no groups (rb_backend.groups), and custom.debounce checked
 * (rb_debounce_parse), refused with RB_DEBOUNCE_UNSUPPORTED where the
 * backend keeps none (rb_backend.debounce). 0, or RB_EINVAL with err
 * "job J: ..."; job unchanged. */
int rb_eng_flow_check(const rb_eng *eng, const json_t *job, int64_t now, rb_err *err);

/* At start-up, once the backend is chosen: 0 when eng's configuration sets
 * no [groups] concurrency or rate and no [throttles] rate, or its backend
 * applies them (rb_backend.flow_limits); else RB_EINVAL with err
 * RB_FLOW_LIMITS_UNSUPPORTED. */
int rb_eng_flow_limits_check(const rb_eng *eng, rb_err *err);

/* The refusal of custom.debounce where the backend keeps none. */
#define RB_DEBOUNCE_UNSUPPORTED "custom.debounce is not supported in distributed mode yet"

#endif
