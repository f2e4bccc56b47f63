/* engine/batch_view.c: the batches' listing order and a batch page's
 * members (sorted, capped, truncated) and JSON, as both backends get them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/batch_view.h"
#include "engine/job_state.h"

static rb_batch *mk(const char *bid, int64_t created, int64_t finished)
{
    rb_batch *b = calloc(1, sizeof *b);
    b->bid = strdup(bid);
    b->created_ms = created;
    b->finished_ms = finished;
    return b;
}

Test(batch_view, the_listing_puts_open_batches_first_newest_first_then_finished_ones)
{
    rb_batch *v[] = {mk("b-fin-old", 1000, 5000), mk("b-open-old", 1000, 0),
                     mk("b-fin-new", 2000, 9000), mk("b-open-new", 3000, 0),
                     mk("b-open-tie2", 2000, 0), mk("b-open-tie1", 2000, 0)};
    qsort(v, 6, sizeof *v, rb_batch_list_cmp);
    const char *want[] = {"b-open-new", "b-open-tie1", "b-open-tie2", "b-open-old",
                          "b-fin-new", "b-fin-old"};
    for (int i = 0; i < 6; i++) {
        cr_assert_str_eq(v[i]->bid, want[i], "position %d", i);
        rb_batch_free(v[i]);
    }
}

Test(batch_view, a_page_sorts_members_by_jid_and_cuts_them_at_the_cap)
{
    rb_batch_view v = {.b = mk("b-page", 1000, 0), .max_members = 2};
    v.b->total = 5;
    v.b->pending = 3;
    v.b->failed = 1;
    rb_batch_view_add_member(&v, "j-3", "T", "q", RB_JOB_RETRIES, 2);
    rb_batch_view_add_member(&v, "j-1", NULL, NULL, RB_JOB_ENQUEUED, 0);
    rb_batch_view_add_member(&v, "j-2", "T", "q", RB_JOB_DEAD, 1);
    rb_batch_view_add_child(&v, "b-kid-2");
    rb_batch_view_add_child(&v, "b-kid-1");
    rb_batch_view_finish(&v, false);
    cr_assert(v.truncated);
    cr_assert_eq(v.n_members, 2);
    json_t *o = rb_batch_view_json(&v);
    char *text = json_dumps(o, JSON_COMPACT);
    cr_assert(strstr(text, "\"members\":[{\"jid\":\"j-1\",\"jobtype\":null,\"queue\":\"default\","
                           "\"state\":\"enqueued\",\"attempts\":0},{\"jid\":\"j-2\""),
              "%s", text);
    cr_assert(strstr(text, "\"children\":[\"b-kid-1\",\"b-kid-2\"]"), "%s", text);
    cr_assert(strstr(text, "\"truncated\":true,\"max_members\":2"), "%s", text);
    cr_assert(strstr(text, "\"callbacks\":[]"), "%s", text);
    cr_assert(strstr(text, "\"finished_at\":null"), "%s", text);
    free(text);
    json_decref(o);
    rb_batch_view_release(&v);
    cr_assert_null(v.b);
}

Test(batch_view, a_page_under_the_cap_is_not_truncated_unless_the_backend_says_so)
{
    rb_batch_view v = {.b = mk("b-small", 1000, 0)};
    rb_batch_view_add_member(&v, "j-1", "T", "q", RB_JOB_ENQUEUED, 0);
    rb_batch_view_finish(&v, false);
    cr_assert_not(v.truncated);
    cr_assert_eq(v.max_members, RB_BATCH_VIEW_MAX_MEMBERS);
    rb_batch_view_release(&v);
    v = (rb_batch_view){.b = mk("b-more", 1000, 0)};
    rb_batch_view_finish(&v, true); /* PostgreSQL read one more row than the cap */
    cr_assert(v.truncated);
    rb_batch_view_release(&v);
}
