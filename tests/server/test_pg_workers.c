/* The cluster-wide worker registry in distributed mode (docs/distributed.md,
 * "Workers"): two `rebound serve` nodes with HTTP on one schema of a
 * throwaway PostgreSQL cluster. A worker that says HELLO and BEATs on node
 * A is listed, counted and signalled through node B (WORKERS and the HTTP
 * API), its next BEAT on A answers the signal, unknown workers get the
 * single node's errors, and a stale worker is dropped by the maintenance.
 * The liveness window (60 s) has no setting: the tests age rows in the
 * table directly. */
#define RBH_PG 1
#include "test_http_harness.h"

#include <criterion/criterion.h>

static rbh_server node[2];
static int hport[2];

/* Starts node 1 on node 0's schema, with HTTP. */
static int launch_second(void)
{
    rbh_server s;
    rbh_init(&s); /* its own schema is left unused */
    snprintf(s.db, sizeof s.db, "%s", node[0].db);
    node[1] = s;
    static char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", node[1].dir);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    if (rbh_launch(&node[1], extra))
        return -1;
    FILE *f = fopen(hpf, "r");
    int ok = f && fscanf(f, "%d", &hport[1]) == 1;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

static void setup(void)
{
    cr_assert_eq(rbh_start_http(&node[0], NULL, &hport[0]), 0, "node 0 did not start");
    cr_assert_eq(launch_second(), 0, "node 1 did not start (see %s)", node[1].log);
}

static void teardown(void)
{
    for (int i = 0; i < 2; i++)
        if (node[i].dir[0])
            rbh_stop(&node[i]);
}

TestSuite(workers, .init = setup, .fini = teardown, .timeout = 60);

/* Stops both nodes: each must exit cleanly (no sanitizer report). */
static void stop_nodes(void)
{
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rbh_stop(&node[i]), 0, "node %d did not exit cleanly", i);
        node[i].dir[0] = '\0';
    }
}

/* Runs one SQL statement on the nodes' schema; the first value or "". */
static char *sql(const char *text)
{
    char *v = rbh_pg_value(node[0].db, text);
    cr_assert_not_null(v, "%s failed", text);
    return v;
}

/* GET /api/workers on node i: the array (new reference). */
static json_t *api_workers(int i)
{
    rbh_resp *r = rbh_http(hport[i], "GET", "/api/workers", NULL, NULL);
    cr_assert(r && r->status == 200, "GET /api/workers: %s", r ? r->body : "no reply");
    json_t *w = json_incref(rbh_get(r->json, "workers"));
    rbh_resp_free(r);
    cr_assert(json_is_array(w));
    return w;
}

/* The entry for wid in node i's /api/workers, or NULL (new reference). */
static json_t *listed(int i, const char *wid)
{
    json_t *arr = api_workers(i), *found = NULL;
    for (size_t k = 0; k < json_array_size(arr) && !found; k++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(arr, k), "wid")), wid))
            found = json_incref(json_array_get(arr, k));
    json_decref(arr);
    return found;
}

Test(workers, seen_listed_and_signalled_across_nodes)
{
    rbh_conn *w = rbh_connect(&node[0], "wk-1"); /* its HELLO is answered once recorded */
    rbh_conn *adm = rbh_connect(&node[1], NULL);
    cr_assert(w && adm);
    cr_assert(rbh_expect(w, "+OK", "BEAT {\"wid\":\"wk-1\"}"));

    json_t *e = listed(1, "wk-1");
    cr_assert_not_null(e, "node 1 does not list the worker of node 0");
    cr_assert_str_eq(json_string_value(json_object_get(e, "signal")), "none");
    cr_assert_eq(json_integer_value(json_object_get(e, "connections")), 0, "none to node 1");
    cr_assert_str_eq(json_string_value(rbh_get(e, "info.hostname")), "test");
    cr_assert(json_is_string(json_object_get(e, "last_beat")));
    cr_assert(json_is_string(json_object_get(e, "node")));
    json_decref(e);
    e = listed(0, "wk-1");
    cr_assert_eq(json_integer_value(json_object_get(e, "connections")), 1);
    json_decref(e);
    cr_assert_eq(rbh_info_int(adm, "faktory.tasks.Workers.size"), 1);
    rbh_resp *r = rbh_http(hport[1], "GET", "/api/info", NULL, NULL);
    cr_assert_eq(json_integer_value(rbh_get(r->json, "server.workers")), 1, "%s", r->body);
    rbh_resp_free(r);

    /* quiet through node 1's WORKERS, said by the next BEAT on node 0 */
    cr_assert(rbh_expect(adm, "+OK", "WORKERS {\"cmd\":\"quiet\",\"wid\":\"wk-1\"}"));
    cr_assert(rbh_expect(w, "{\"state\":\"quiet\"}", "BEAT {\"wid\":\"wk-1\"}"));
    e = listed(0, "wk-1");
    cr_assert_str_eq(json_string_value(json_object_get(e, "signal")), "quiet");
    json_decref(e);
    /* terminate through node 1's HTTP API, for every worker */
    r = rbh_http(hport[1], "POST", "/api/workers/terminate", "{}", NULL);
    cr_assert_eq(r->status, 200, "%s", r->body);
    cr_assert_eq(json_integer_value(rbh_get(r->json, "workers")), 1);
    rbh_resp_free(r);
    cr_assert(rbh_expect(w, "{\"state\":\"terminate\"}", "BEAT {\"wid\":\"wk-1\"}"));
    /* a BEAT naming it on node 1, which has no connection from it, gets it too */
    cr_assert(rbh_expect(adm, "{\"state\":\"terminate\"}", "BEAT {\"wid\":\"wk-1\"}"));

    /* unknown workers: the single node's errors */
    cr_assert(rbh_expect(adm, "-ERR WORKERS: unknown worker ghost",
                         "WORKERS {\"cmd\":\"quiet\",\"wid\":\"ghost\"}"));
    cr_assert(rbh_expect(adm, "-ERR unknown worker ghost (say HELLO with this wid first)",
                         "BEAT {\"wid\":\"ghost\"}"));
    cr_assert(rbh_expect(adm, "-ERR WORKERS: cmd must be quiet or terminate",
                         "WORKERS {\"cmd\":\"sleep\"}"));
    r = rbh_http(hport[1], "POST", "/api/workers/quiet", "{\"wid\":\"ghost\"}", NULL);
    cr_assert_eq(r->status, 404);
    cr_assert(strstr(r->body, "no worker 'ghost'"), "%s", r->body);
    rbh_resp_free(r);
    rbh_close(w);
    rbh_close(adm);
    stop_nodes();
}

/* A worker whose connection closed and that stopped beating is listed
 * until its row is older than the liveness window; then no node knows it
 * and the maintenance deletes the row. A worker still connected to node 0
 * whose row is gone is recorded again by its next BEAT there. (Node 0
 * refreshes its connected workers' rows every 15 s, so nothing here
 * asserts that a connected worker is unknown.) */
Test(workers, stale_workers_are_forgotten)
{
    rbh_conn *gone = rbh_connect(&node[0], "wk-gone");
    rbh_conn *held = rbh_connect(&node[0], "wk-held");
    rbh_conn *adm = rbh_connect(&node[1], NULL);
    cr_assert(gone && held && adm);
    rbh_close(gone);
    json_t *e = listed(1, "wk-gone");
    cr_assert_not_null(e, "listed within the window after its connection closed");
    json_decref(e);

    free(sql("UPDATE rb_workers SET seen_ms = seen_ms - 120000, beat_ms = beat_ms - 120000"
             " WHERE wid = 'wk-gone'"));
    cr_assert_null(listed(1, "wk-gone"));
    cr_assert_null(listed(0, "wk-gone"));
    cr_assert(rbh_expect(adm, "-ERR WORKERS: unknown worker wk-gone",
                         "WORKERS {\"cmd\":\"quiet\",\"wid\":\"wk-gone\"}"));
    cr_assert(rbh_expect(adm, "-ERR unknown worker wk-gone (say HELLO with this wid first)",
                         "BEAT {\"wid\":\"wk-gone\"}"));
    /* the maintenance thread deletes the stale row (every few seconds) */
    int64_t deadline = rbh_now_ms() + 20000;
    char *n = NULL;
    while (rbh_now_ms() < deadline) {
        free(n);
        n = sql("SELECT count(*) FROM rb_workers WHERE wid = 'wk-gone'");
        if (!strcmp(n, "0"))
            break;
        rbh_sleep_ms(100);
    }
    cr_assert_str_eq(n, "0", "the stale row was not deleted");
    free(n);
    n = sql("SELECT count(*) FROM rb_workers WHERE wid = 'wk-held'");
    cr_assert_str_eq(n, "1", "a live row was deleted");
    free(n);

    /* node 0 still holds wk-held's connection: its BEAT records it again */
    free(sql("DELETE FROM rb_workers WHERE wid = 'wk-held'"));
    cr_assert(rbh_expect(held, "+OK", "BEAT {\"wid\":\"wk-held\"}"));
    e = listed(1, "wk-held");
    cr_assert_not_null(e);
    json_decref(e);
    cr_assert(rbh_expect(adm, "+OK", "BEAT {\"wid\":\"wk-held\"}"));
    rbh_close(held);
    rbh_close(adm);
    stop_nodes();
}

/* The batch of BEATs of many workers arriving together: each gets its own
 * signal. */
Test(workers, many_workers_each_get_their_signal)
{
    enum { N = 24 };
    rbh_conn *c[N];
    char wid[32];
    for (int i = 0; i < N; i++) {
        snprintf(wid, sizeof wid, "many-%02d", i);
        c[i] = rbh_connect(&node[i % 2], wid);
        cr_assert_not_null(c[i]);
    }
    rbh_conn *adm = rbh_connect(&node[1], NULL);
    for (int i = 0; i < N; i += 3)
        cr_assert(rbh_expect(adm, "+OK", "WORKERS {\"cmd\":\"%s\",\"wid\":\"many-%02d\"}",
                             i % 2 ? "terminate" : "quiet", i));
    for (int i = 0; i < N; i++) { /* every BEAT sent before any reply is read */
        char line[64];
        int len = snprintf(line, sizeof line, "BEAT {\"wid\":\"many-%02d\"}\r\n", i);
        cr_assert_eq(rbh_send(c[i], line, (size_t)len), 0);
    }
    for (int i = 0; i < N; i++) {
        char *r = rbh_reply(c[i]);
        const char *want = i % 3   ? "+OK"
                           : i % 2 ? "{\"state\":\"terminate\"}"
                                   : "{\"state\":\"quiet\"}";
        cr_assert(r && !strcmp(r, want), "worker %d: %s, want %s", i, r ? r : "(none)", want);
        free(r);
        rbh_close(c[i]);
    }
    json_t *arr = api_workers(0);
    cr_assert_eq(json_array_size(arr), N);
    json_decref(arr);
    rbh_close(adm);
    stop_nodes();
}
