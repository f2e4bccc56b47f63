/* The in-memory server seam (srv.h: rb_srv_alloc, rb_sq_open_store,
 * rb_srv_loop_new, rb_srv_free) on the null store (backend/sqlite/null.h), as
 * fuzz/fuzz_protocol.c uses it: a session over a socketpair gets its
 * replies, and the null store refuses writes outside a transaction. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "backend/sqlite/backend.h"
#include "backend/sqlite/null.h"
#include "backend/sqlite/sq.h"
#include "common/log.h"
#include "server/srv.h"

/* Sends send, then runs the loop until want_lines CRLF-ended lines of
 * reply arrived at peer (or 10000 rounds passed); returns them. */
static char *exchange(rb_srv *srv, int peer, const char *send, size_t want_lines)
{
    if (send)
        cr_assert_eq(write(peer, send, strlen(send)), (ssize_t)strlen(send));
    static char buf[65536];
    size_t n = 0, lines = 0;
    for (int i = 0; i < 10000 && lines < want_lines; i++) {
        event_base_loop(srv->eng->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        ssize_t r = read(peer, buf + n, sizeof buf - 1 - n);
        if (r > 0) {
            n += (size_t)r;
            buf[n] = '\0';
            lines = 0;
            for (const char *p = buf; (p = strstr(p, "\r\n")); p += 2)
                lines++;
        } else if (srv->conns.head) {
            rb_conn *c = rb_container_of(srv->conns.head, rb_conn, link);
            if (c->busy && !(c->fetch_op && c->fetch_op->wait_ev))
                event_base_loop(srv->eng->base, EVLOOP_ONCE); /* wait for the commit */
        }
    }
    buf[n] = '\0';
    return strdup(buf);
}

Test(srv_memory, session_on_the_null_store)
{
    rb_log_set_level(RB_LOG_WARN); /* not "recovered 0 jobs from ./rebound.db" */
    rb_srv *srv = rb_srv_alloc();
    rb_config_init(&srv->cfg);
    rb_err err = {0};
    cr_assert_eq(rb_sq_open_store(srv->eng, rb_store_null_new(), &err), 0, "%s", err.msg);
    rb_srv_loop_new(srv);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    rb_conn_accept(srv, sv[0]);

    char *r = exchange(srv, sv[1], "HELLO {\"v\":2}\r\n", 2);
    cr_assert_str_eq(r, "+HI {\"v\":2}\r\n+OK\r\n");
    free(r);
    r = exchange(srv, sv[1],
                 "PUSH {\"jid\":\"mem-00000001\",\"jobtype\":\"t\",\"args\":[7]}\r\nFETCH default\r\n", 3);
    cr_assert(!strncmp(r, "+OK\r\n$", 6), "got %s", r);
    cr_assert(strstr(r, "\"jid\":\"mem-00000001\""), "got %s", r);
    cr_assert(strstr(r, "\"args\":[7]"), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "ACK {\"jid\":\"mem-00000001\"}\r\n", 1);
    cr_assert_str_eq(r, "+OK\r\n");
    free(r);
    cr_assert_eq(rb_sq_of(srv->eng)->total_processed, 1);
    cr_assert_eq(rb_sq_of(srv->eng)->jobs.by_jid.size, 0);

    rb_srv_free(srv); /* closes the connection */
    char c;
    cr_assert_eq(read(sv[1], &c, 1), 0, "the server's end is closed");
    close(sv[1]);
}

Test(srv_memory, null_store_checks_the_calling_order)
{
    rb_store *s = rb_store_null_new();
    rb_err err = {0};
    rb_job_row row = {.id = 1, .jid = "x", .queue = "q", .json = "{}", .priority = 5};
    cr_assert_eq(s->ops->put_job(s, &row, &err), RB_ESTORE);
    cr_assert(strstr(err.msg, "outside a transaction"), "%s", err.msg);
    cr_assert_eq(s->ops->begin(s, &err), 0);
    cr_assert_eq(s->ops->begin(s, &err), RB_ESTORE);
    cr_assert_eq(s->ops->put_job(s, &row, &err), 0);
    cr_assert_eq(s->ops->set_counter(s, "c", 1, &err), 0);
    cr_assert_eq(s->ops->commit(s, &err), 0);
    cr_assert_eq(s->ops->del_job(s, 1, "x", &err), RB_ESTORE);
    s->ops->close(s);
}

Test(srv_memory, injected_commit_failure_is_a_storage_error_and_undone)
{
    rb_log_set_level((rb_log_level)(RB_LOG_ERROR + 1)); /* "commit failed" is expected */
    rb_srv *srv = rb_srv_alloc();
    rb_config_init(&srv->cfg);
    rb_store *store = rb_store_null_new();
    rb_store_null_fail_commits(store, 1); /* the first commit: the PUSH's */
    rb_err err = {0};
    cr_assert_eq(rb_sq_open_store(srv->eng, store, &err), 0, "%s", err.msg);
    rb_srv_loop_new(srv);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    rb_conn_accept(srv, sv[0]);
    free(exchange(srv, sv[1], "HELLO {\"v\":2}\r\n", 2));

    char *r = exchange(srv, sv[1], "PUSH {\"jid\":\"mem-00000002\",\"jobtype\":\"t\",\"args\":[]}\r\n", 1);
    cr_assert(!strncmp(r, "-ERR storage error: null store: commit 0 fails", 46), "got %s", r);
    free(r);
    cr_assert_eq(rb_sq_of(srv->eng)->jobs.by_jid.size, 0, "the refused push left no job");
    r = exchange(srv, sv[1], "PUSH {\"jid\":\"mem-00000002\",\"jobtype\":\"t\",\"args\":[]}\r\n", 1);
    cr_assert_str_eq(r, "+OK\r\n"); /* commit 1 succeeds: the same jid is free */
    free(r);
    cr_assert_eq(rb_sq_of(srv->eng)->jobs.enqueued, 1);
    rb_srv_free(srv);
    close(sv[1]);
}

/* MUTATE, FLUSH and QUEUE whose commit fails answer the storage error
 * too; reads (INFO, JOB, JOBS, QUEUE LATENCY) need no commit and keep
 * working (docs/protocol.md, "Durability"). */
Test(srv_memory, admin_commit_failure_is_a_storage_error)
{
    rb_log_set_level((rb_log_level)(RB_LOG_ERROR + 1)); /* "commit failed" is expected */
    rb_srv *srv = rb_srv_alloc();
    rb_config_init(&srv->cfg);
    rb_store *store = rb_store_null_new();
    rb_store_null_fail_commits(store, 14); /* commits 1, 2 and 3 */
    rb_err err = {0};
    cr_assert_eq(rb_sq_open_store(srv->eng, store, &err), 0, "%s", err.msg);
    rb_srv_loop_new(srv);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    rb_conn_accept(srv, sv[0]);
    free(exchange(srv, sv[1], "HELLO {\"v\":2}\r\n", 2));
    char *r = exchange(srv, sv[1], "PUSH {\"jid\":\"mem-00000003\",\"jobtype\":\"t\",\"args\":[],"
                                   "\"at\":\"2999-01-01T00:00:00Z\"}\r\n", 1);
    cr_assert_str_eq(r, "+OK\r\n"); /* commit 0 */
    free(r);
    r = exchange(srv, sv[1], "MUTATE {\"cmd\":\"kill\",\"target\":\"scheduled\"}\r\n", 1);
    cr_assert(!strncmp(r, "-ERR storage error: null store: commit 1 fails", 46), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "FLUSH\r\n", 1);
    cr_assert(!strncmp(r, "-ERR storage error: null store: commit 2 fails", 46), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "QUEUE PAUSE q\r\n", 1);
    cr_assert(!strncmp(r, "-ERR storage error: null store: commit 3 fails", 46), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "JOB {\"jid\":\"nowhere-1\"}\r\nINFO\r\n", 3);
    cr_assert(!strncmp(r, "$-1\r\n$", 6) && strstr(r, "\"group_commit\""), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "JOBS {\"state\":\"dead\"}\r\nQUEUE LATENCY q\r\n", 4);
    cr_assert(strstr(r, "{\"total\":0,\"jobs\":[]}\r\n") && strstr(r, "{\"q\":0.0}"), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "FLUSH\r\n", 1);
    cr_assert_str_eq(r, "+OK\r\n");
    free(r);
    rb_srv_free(srv);
    close(sv[1]);
}

/* EXTEND, SNOOZE, FAIL, ACK and FETCH whose commit fails answer the storage
 * error (the job engine's single-node backend), and the server goes on: a
 * job whose FETCH failed is fetched again. */
Test(srv_memory, job_commit_failure_is_a_storage_error)
{
    rb_log_set_level((rb_log_level)(RB_LOG_ERROR + 1)); /* "commit failed" is expected */
    rb_srv *srv = rb_srv_alloc();
    rb_config_init(&srv->cfg);
    rb_store *store = rb_store_null_new();
    rb_store_null_fail_commits(store, 0x1f0); /* commits 4 to 8 */
    rb_err err = {0};
    cr_assert_eq(rb_sq_open_store(srv->eng, store, &err), 0, "%s", err.msg);
    rb_srv_loop_new(srv);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    rb_conn_accept(srv, sv[0]);
    free(exchange(srv, sv[1], "HELLO {\"v\":2,\"wid\":\"w1\"}\r\n", 2));
    char *r = exchange(srv, sv[1], "PUSHB [{\"jid\":\"mem-job-a\",\"jobtype\":\"t\",\"args\":[]},"
                                   "{\"jid\":\"mem-job-b\",\"jobtype\":\"t\",\"args\":[]},"
                                   "{\"jid\":\"mem-job-c\",\"jobtype\":\"t\",\"args\":[]}]\r\n", 2);
    cr_assert_str_eq(r, "$2\r\n{}\r\n"); /* commit 0 */
    free(r);
    for (int i = 0; i < 3; i++) { /* commits 1 to 3 */
        r = exchange(srv, sv[1], "FETCH default\r\n", 2);
        cr_assert_eq(r[0], '$', "got %s", r);
        free(r);
    }
    static const char *const cmds[] = {
        "EXTEND {\"jid\":\"mem-job-a\",\"reserve_for\":60}\r\n",
        "SNOOZE {\"jid\":\"mem-job-a\",\"seconds\":0}\r\n",
        "FAIL {\"jid\":\"mem-job-b\",\"errtype\":\"E\"}\r\n",
        "ACK {\"jid\":\"mem-job-c\"}\r\n",
    };
    for (int i = 0; i < 4; i++) { /* commits 4 to 7 */
        char want[64];
        snprintf(want, sizeof want, "-ERR storage error: null store: commit %d fails", 4 + i);
        r = exchange(srv, sv[1], cmds[i], 1);
        cr_assert(!strncmp(r, want, strlen(want)), "%s got %s", cmds[i], r);
        free(r);
    }
    r = exchange(srv, sv[1], "ACK {\"jid\":\"mem-job-nope\"}\r\n", 1);
    cr_assert_str_eq(r, "+OK\r\n"); /* nothing to commit */
    free(r);
    r = exchange(srv, sv[1], "FETCH default\r\n", 1); /* commit 8: the job goes back */
    cr_assert(!strncmp(r, "-ERR storage error: null store: commit 8 fails", 46), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "FETCH default\r\n", 2); /* commit 9: mem-job-a, snoozed in memory */
    cr_assert(strstr(r, "\"jid\":\"mem-job-a\""), "got %s", r);
    free(r);
    r = exchange(srv, sv[1], "ACK {\"jid\":\"mem-job-a\"}\r\n", 1);
    cr_assert_str_eq(r, "+OK\r\n");
    free(r);
    rb_srv_free(srv);
    close(sv[1]);
}
