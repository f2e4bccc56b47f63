/* The pure rules of progress tracking both backends share (engine/track.h):
 * TRACK GET's answer from what a backend found (rb_track_get), when TRACK
 * SET stores (rb_track_set_stores), the lease reserve_until asks for, and
 * SET's argument checks. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/job_state.h"
#include "engine/track.h"

#define NOW 1764000000000LL
#define MIN (60 * 1000LL)

/* rb_track_get's reply as compact text (caller frees). */
static char *get_text(const rb_track_seen *v, int64_t now)
{
    json_t *o = rb_track_get("j1", v, now);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static void expect_get(const rb_track_seen *v, int64_t now, const char *want)
{
    char *s = get_text(v, now);
    cr_assert_str_eq(s, want);
    free(s);
}

#define UNKNOWN "{\"jid\":\"j1\",\"state\":\"unknown\",\"updated_at\":\"\"}"

Test(track, a_live_tracked_job_answers_its_rows_state_with_its_record)
{
    char t[RB_TIME_STRLEN], want[256];
    rb_track_seen v = {.live = true, .job_state = RB_JOB_WORKING, .tracked = true,
                       .state_ms = NOW - 5 * MIN};
    snprintf(want, sizeof want, "{\"jid\":\"j1\",\"state\":\"working\",\"updated_at\":\"%s\"}",
             rb_time_format(NOW - 5 * MIN, t));
    expect_get(&v, NOW, want); /* no record: no percent, no desc */
    v.has_rec = true;
    v.percent = 40;
    v.desc = "half";
    v.updated_ms = NOW - MIN; /* later than the state: the SET's time */
    snprintf(want, sizeof want,
             "{\"jid\":\"j1\",\"percent\":40,\"desc\":\"half\",\"state\":\"working\","
             "\"updated_at\":\"%s\"}",
             rb_time_format(NOW - MIN, t));
    expect_get(&v, NOW, want);
    /* a record that ended (an earlier job of this jid): still the row's state */
    v.ended_ms = NOW - 2 * MIN;
    v.ended = RB_TRACK_SUCCESS;
    v.job_state = RB_JOB_RETRIES;
    char *s = get_text(&v, NOW);
    cr_assert(strstr(s, "\"state\":\"failed\""), "%s", s);
    free(s);
    /* untracked: unknown, whatever the record */
    v.tracked = false;
    expect_get(&v, NOW, UNKNOWN);
}

Test(track, a_gone_job_answers_its_record_for_30_minutes)
{
    char t[RB_TIME_STRLEN], want[256];
    rb_track_seen v = {.has_rec = true, .percent = -1, .desc = "done", .updated_ms = NOW - 40 * MIN,
                       .ended_ms = NOW - 20 * MIN, .ended = RB_TRACK_DEAD};
    snprintf(want, sizeof want,
             "{\"jid\":\"j1\",\"desc\":\"done\",\"state\":\"dead\",\"updated_at\":\"%s\"}",
             rb_time_format(NOW - 20 * MIN, t));
    expect_get(&v, NOW, want);
    cr_assert(rb_track_set_stores(&v, NOW));
    /* past the retention: unknown, and a SET stores nothing */
    expect_get(&v, NOW + 10 * MIN, UNKNOWN);
    cr_assert_not(rb_track_set_stores(&v, NOW + 10 * MIN));
    /* a record whose job still lives is not an end */
    rb_track_seen live_rec = {.has_rec = true, .percent = 5, .updated_ms = NOW};
    expect_get(&live_rec, NOW, UNKNOWN);
    cr_assert_not(rb_track_set_stores(&live_rec, NOW));
    /* nothing at all */
    rb_track_seen none = {0};
    expect_get(&none, NOW, UNKNOWN);
    cr_assert_not(rb_track_set_stores(&none, NOW));
}

Test(track, set_stores_for_a_live_job_only_when_tracked)
{
    rb_track_seen v = {.live = true, .job_state = RB_JOB_ENQUEUED, .tracked = true};
    cr_assert(rb_track_set_stores(&v, NOW));
    v.tracked = false;
    cr_assert_not(rb_track_set_stores(&v, NOW));
    v.has_rec = true; /* a remembered record of the jid does not make it tracked */
    v.ended_ms = NOW;
    cr_assert_not(rb_track_set_stores(&v, NOW));
}

Test(track, updated_at_is_never_after_now_nor_empty_for_a_known_job)
{
    char t[RB_TIME_STRLEN], want[256];
    rb_track_seen v = {.live = true, .job_state = RB_JOB_SCHEDULED, .tracked = true,
                       .state_ms = NOW + 60 * MIN}; /* a clock ahead */
    snprintf(want, sizeof want, "{\"jid\":\"j1\",\"state\":\"enqueued\",\"updated_at\":\"%s\"}",
             rb_time_format(NOW, t));
    expect_get(&v, NOW, want);
    v.state_ms = 0; /* unknown */
    expect_get(&v, NOW, want);
}

Test(track, lease_end_is_never_shortened_and_capped_at_24_hours)
{
    int64_t lease = NOW + MIN;
    cr_assert_eq(rb_track_lease_end(NOW, lease, NOW + 10 * MIN), NOW + 10 * MIN);
    cr_assert_eq(rb_track_lease_end(NOW, lease, NOW + 10), lease);
    cr_assert_eq(rb_track_lease_end(NOW, lease, NOW + 48 * 60 * MIN),
                 NOW + RB_TRACK_RESERVE_MAX_MS);
}

Test(track, parse_set_keeps_absent_fields_and_refuses_bad_ones)
{
    json_t *o = json_loads("{\"jid\":\"a\",\"percent\":33.7,\"desc\":null}", 0, NULL);
    rb_track_set in;
    rb_err err = {0};
    cr_assert_eq(rb_track_parse_set(o, &in, &err), 0, "%s", rb_err_msg(&err));
    cr_assert(in.has_percent);
    cr_assert_eq(in.percent, 33);
    cr_assert_null(in.desc);
    cr_assert_eq(in.reserve_until, 0);
    json_decref(o);
    o = json_loads("{\"jid\":\"a\",\"percent\":\"5\"}", 0, NULL);
    cr_assert_eq(rb_track_parse_set(o, &in, &err), RB_EINVAL);
    cr_assert_str_eq(rb_err_msg(&err), "TRACK SET: percent must be a number from 0 to 100");
    json_decref(o);
}
