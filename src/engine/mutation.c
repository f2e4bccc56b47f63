/* MUTATE's request: parsing, checks and the filter (mutation.h). */
#include "engine/mutation.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "engine/job_state.h"

static const char *str_field(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

int rb_mutation_check(const rb_mutation *m, rb_err *err)
{
    if (!m->cmd || (strcmp(m->cmd, "kill") && strcmp(m->cmd, "requeue") &&
                    strcmp(m->cmd, "discard") && strcmp(m->cmd, "clear")))
        return rb_err_set(err, RB_EINVAL, "cmd must be kill, requeue, discard or clear");
    if (m->target != RB_JOB_SCHEDULED && m->target != RB_JOB_RETRIES && m->target != RB_JOB_DEAD)
        return rb_err_set(err, RB_EINVAL, "target must be scheduled, retries or dead");
    return 0;
}

int rb_mutation_parse(json_t *o, rb_mutation *m, rb_err *err)
{
    const char *target = str_field(o, "target");
    *m = (rb_mutation){.cmd = str_field(o, "cmd"), .target = target ? rb_job_state_parse(target) : -1};
    if (rb_mutation_check(m, err)) {
        rb_err_prefix(err, "MUTATE");
        return RB_EINVAL;
    }
    json_t *filter = json_object_get(o, "filter"), *jids = NULL;
    if (filter && !json_is_null(filter)) {
        if (!json_is_object(filter))
            return rb_err_set(err, RB_EINVAL, "MUTATE: filter must be an object");
        json_t *re = json_object_get(filter, "regexp"), *jt = json_object_get(filter, "jobtype");
        jids = json_object_get(filter, "jids");
        if ((re && !json_is_string(re)) || (jt && !json_is_string(jt)) ||
            (jids && !json_is_array(jids)))
            return rb_err_set(err, RB_EINVAL,
                              "MUTATE: filter has jids (array), regexp (string), jobtype (string)");
        m->pattern = re && *json_string_value(re) ? json_string_value(re) : NULL;
        m->jobtype = jt && *json_string_value(jt) ? json_string_value(jt) : NULL;
    }
    if (!strcmp(m->cmd, "clear")) {
        m->pattern = m->jobtype = NULL;
        return 0;
    }
    if (jids && json_array_size(jids) > 0) {
        const char **arr = rb_xcalloc(json_array_size(jids), sizeof *arr);
        size_t i;
        json_t *v;
        json_array_foreach(jids, i, v) {
            if (json_is_string(v))
                arr[m->n_jids++] = json_string_value(v);
        }
        m->jids = arr;
        m->own_jids = true;
    }
    return 0;
}

bool rb_mutation_matches(const rb_mutation *m, const char *json)
{
    if (m->pattern && fnmatch(m->pattern, json, 0) != 0)
        return false;
    if (m->jobtype) {
        json_t *o = json_loads(json, 0, NULL);
        const char *jt = str_field(o, "jobtype");
        bool same = jt && !strcmp(jt, m->jobtype);
        json_decref(o);
        if (!same)
            return false;
    }
    return true;
}

void rb_mutation_release(rb_mutation *m)
{
    if (m->own_jids)
        free((void *)m->jids);
    m->jids = NULL;
    m->n_jids = 0;
    m->own_jids = false;
}
