/* `rebound push --file JOBS.jsonl`: bulk import through PUSHB. Each line is one
 * job object (a missing jid is generated); lines that are not JSON objects and
 * jobs the server rejects are reported by line number. A progress bar goes to
 * stderr when it is a terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/buf.h"

/* A PUSHB line must stay well under the server's 1 MiB command limit. */
#define BATCH_BYTES (512u * 1024u)
/* Rejections listed one by one in the human summary; the rest are counted. */
#define LIST_MAX 20

typedef struct pending {
    size_t line;
    char *jid; /* owned */
} pending;

typedef struct import {
    rb_client *c;
    rb_buf body;      /* "[job,job,...]" being built */
    pending *batch;   /* the batch's jobs, in order */
    size_t nbatch, cap;
    size_t pushed;
    json_t *rejected; /* [{"line", "jid"?, "error"}] */
    int progress;     /* draw the bar */
    long long total_bytes, done_bytes;
    size_t lines;
} import;

static void reject(import *im, size_t line, const char *jid, const char *why)
{
    json_t *r = json_pack("{s:I, s:s}", "line", (json_int_t)line, "error", why);
    if (jid)
        json_object_set_new(r, "jid", json_string(jid));
    json_array_append_new(im->rejected, r);
}

static void draw(import *im)
{
    if (!im->progress)
        return;
    if (im->total_bytes > 0) {
        int pct = (int)(im->done_bytes * 100 / im->total_bytes);
        int fill = pct * 30 / 100;
        fprintf(stderr, "\r[%.*s%*s] %3d%%  %zu lines, %zu pushed", fill,
                "##############################", 30 - fill, "", pct, im->lines, im->pushed);
    } else {
        fprintf(stderr, "\r%zu lines, %zu pushed", im->lines, im->pushed);
    }
    fflush(stderr);
}

/* Sends the batch; server rejections are mapped back to their lines. */
static int flush_batch(import *im, rb_err *err)
{
    if (im->nbatch == 0)
        return 0;
    rb_buf_addc(&im->body, ']');
    json_t *rej = NULL;
    int rc = rb_client_pushb(im->c, im->body.data, &rej, err);
    if (rc == RB_EPROTO) {
        /* The whole batch was refused (e.g. too large): every line says why. */
        for (size_t i = 0; i < im->nbatch; i++)
            reject(im, im->batch[i].line, im->batch[i].jid, rb_err_msg(err));
        rc = 0;
    } else if (rc == 0) {
        size_t refused = 0;
        for (size_t i = 0; i < im->nbatch; i++) {
            json_t *why = json_object_get(rej, im->batch[i].jid);
            if (why) {
                reject(im, im->batch[i].line, im->batch[i].jid,
                       json_is_string(why) ? json_string_value(why) : "rejected");
                json_object_del(rej, im->batch[i].jid); /* a duplicate jid counts once */
                refused++;
            }
        }
        im->pushed += im->nbatch - refused;
    }
    json_decref(rej);
    for (size_t i = 0; i < im->nbatch; i++)
        free(im->batch[i].jid);
    im->nbatch = 0;
    rb_buf_reset(&im->body);
    draw(im);
    return rc;
}

/* Adds one line's job to the batch (or its rejection). */
static int add_line(import *im, size_t lineno, const char *text, size_t batch, rb_err *err)
{
    json_error_t jerr;
    json_t *job = json_loads(text, 0, &jerr);
    if (!json_is_object(job)) {
        char why[300];
        if (job)
            snprintf(why, sizeof why, "not a JSON object");
        else
            snprintf(why, sizeof why, "invalid JSON: %s", jerr.text);
        json_decref(job);
        reject(im, lineno, NULL, why);
        return 0;
    }
    json_t *jid = json_object_get(job, "jid");
    if (!jid) {
        char fresh[25];
        rb_jid_new(fresh);
        json_object_set_new(job, "jid", json_string(fresh));
    } else if (!json_is_string(jid)) {
        json_decref(job);
        reject(im, lineno, NULL, "jid must be a string");
        return 0;
    }
    char *enc = json_dumps(job, JSON_COMPACT);
    size_t len = strlen(enc);
    if (im->nbatch && (im->nbatch >= batch || im->body.len + len + 2 > BATCH_BYTES)) {
        int rc = flush_batch(im, err);
        if (rc) {
            free(enc);
            json_decref(job);
            return rc;
        }
    }
    rb_buf_addc(&im->body, im->nbatch ? ',' : '[');
    rb_buf_add(&im->body, enc, len);
    free(enc);
    if (im->nbatch == im->cap) {
        im->cap = im->cap ? im->cap * 2 : 64;
        im->batch = rb_xrealloc(im->batch, im->cap * sizeof *im->batch);
    }
    im->batch[im->nbatch].line = lineno;
    im->batch[im->nbatch].jid = rb_xstrdup(json_string_value(json_object_get(job, "jid")));
    im->nbatch++;
    json_decref(job);
    return 0;
}

static void summarize(const cli_common *co, import *im, int failed)
{
    size_t nrej = json_array_size(im->rejected);
    if (co->json) {
        json_t *res = json_pack("{s:I, s:I, s:O, s:b}", "lines", (json_int_t)im->lines,
                                "pushed", (json_int_t)im->pushed, "rejected", im->rejected,
                                "complete", !failed);
        cli_print_json(res);
        json_decref(res);
        return;
    }
    printf("pushed %zu of %zu job line(s)", im->pushed, im->pushed + nrej + im->nbatch);
    if (nrej)
        printf("; %zu rejected:", nrej);
    printf("\n");
    size_t i;
    json_t *r;
    json_array_foreach(im->rejected, i, r) {
        if (i == LIST_MAX) {
            printf("  ... and %zu more\n", nrej - LIST_MAX);
            break;
        }
        const char *jid = json_string_value(json_object_get(r, "jid"));
        printf("  line %lld%s%s%s: %s\n", (long long)json_integer_value(json_object_get(r, "line")),
               jid ? " (jid " : "", jid ? jid : "", jid ? ")" : "",
               json_string_value(json_object_get(r, "error")));
    }
}

int cli_push_file(const cli_common *co, const char *path, size_t batch)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f)
        return cli_error(CLI_USAGE, "push: cannot open '%s': %m", path);
    import im = {.rejected = json_array()};
    rb_buf_init(&im.body);
    struct stat st;
    if (f != stdin && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
        im.total_bytes = st.st_size;
    im.progress = !co->json && isatty(STDERR_FILENO);
    int code = CLI_OK, failed = 0;
    rb_err err = {0};
    code = cli_connect(co, &im.c);
    if (code != CLI_OK)
        goto out;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        im.lines++;
        im.done_bytes += n;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (line[strspn(line, " \t")] == '\0')
            continue; /* blank lines are fine */
        if (add_line(&im, im.lines, line, batch, &err)) {
            failed = 1;
            break;
        }
    }
    free(line);
    if (!failed && ferror(f)) {
        rb_err_set(&err, RB_EIO, "reading '%s' failed", path);
        failed = 1;
    }
    if (!failed && flush_batch(&im, &err))
        failed = 1;
    if (im.progress)
        fputc('\n', stderr);
    summarize(co, &im, failed);
    if (failed)
        code = cli_error(CLI_FAIL, "push: import stopped after line %zu: %s", im.lines,
                         rb_err_msg(&err));
    else if (json_array_size(im.rejected))
        code = CLI_USAGE;
out:
    for (size_t i = 0; i < im.nbatch; i++)
        free(im.batch[i].jid);
    free(im.batch);
    rb_buf_release(&im.body);
    json_decref(im.rejected);
    rb_client_close(im.c);
    if (f != stdin)
        fclose(f);
    return code;
}
