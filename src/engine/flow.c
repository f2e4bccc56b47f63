/* Flow control's backend-dependent checks (engine/flow.h). */
#include "engine/flow.h"

#include "engine/debounce.h"
#include "engine/group.h"
#include "engine/engine.h"

int rb_eng_flow_check(const rb_eng *eng, const json_t *job, int64_t now, rb_err *err)
{
    (void)now;
    const json_t *custom = json_object_get(job, "custom");
    if (!json_is_object(custom) || !json_object_size(custom))
        return 0;
    const char *jid = json_string_value(json_object_get(job, "jid"));
    const char *group;
    int rc = rb_group_of_job(job, &group, err);
    if (rc == 0 && group && !eng->backend->groups)
        rc = rb_err_set(err, RB_EINVAL, "%s", RB_GROUP_UNSUPPORTED);
    rb_debounce_spec ds;
    if (rc == 0 && json_object_get(custom, "debounce") &&
        (rc = rb_debounce_parse(job, &ds, err)) == 0 && ds.on && !eng->backend->debounce)
        rc = rb_err_set(err, RB_EINVAL, "%s", RB_DEBOUNCE_UNSUPPORTED);
    if (rc)
        rb_err_prefix(err, "job %s", jid ? jid : "?");
    return rc;
}

int rb_eng_flow_limits_check(const rb_eng *eng, rb_err *err)
{
    if (!rb_config_has_flow_limits(eng->cfg) || eng->backend->flow_limits)
        return 0;
    return rb_err_set(err, RB_EINVAL, "%s", RB_FLOW_LIMITS_UNSUPPORTED);
}
