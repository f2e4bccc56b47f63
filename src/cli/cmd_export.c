/* `rebound export` and `rebound import`: every job, the workflows' edges
 * and records, the batches and the counters of a database as JSON lines, and back into either backend (engine/export.h;
 * docs/operations.md "Moving from a single node to distributed mode").
 * Both run offline, on the database named by --db (or storage.url). */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "engine/export.h"
#include "engine/job_state.h"

/* PostgreSQL URLs and conninfo strings; everything else is SQLite's. */
static int is_postgres_url(const char *url)
{
    return !strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13) ||
           strchr(url, '=') != NULL;
}

typedef struct port_args {
    const char *file, *env, *db, *path; /* path: the export file (or "-") */
} port_args;

static int parse_args(int argc, char **argv, const char *what, void (*usage)(FILE *),
                      port_args *a)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"env", required_argument, NULL, 'e'},
        {"db", required_argument, NULL, 'd'},     {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:e:d:o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c': a->file = optarg; break;
        case 'e': a->env = optarg; break;
        case 'd': a->db = optarg; break;
        case 'o':
            if (strcmp(what, "export")) {
                usage(stderr);
                return CLI_USAGE;
            }
            a->path = optarg;
            break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return CLI_USAGE;
        }
    }
    if (!strcmp(what, "import") && optind < argc)
        a->path = argv[optind++];
    if (optind < argc) {
        usage(stderr);
        return cli_error(CLI_USAGE, "%s: unexpected argument '%s'", what, argv[optind]);
    }
    return CLI_OK;
}

/* Opens the database: --db, else the config's storage.url. */
static int open_port(const port_args *a, const char *what, bool create, rb_port **p,
                     char **url_out)
{
    rb_config cfg;
    int code = cli_load_config(&cfg, what, a->file, a->env);
    if (code != CLI_OK)
        return code;
    const char *url = a->db ? a->db : cfg.storage.url;
    if (!url || !*url) {
        rb_config_release(&cfg);
        return cli_error(CLI_USAGE, "%s: no database (--db FILE or --db postgresql://...)", what);
    }
    *url_out = rb_xstrdup(url);
    rb_config_release(&cfg);
    rb_err err = {0};
    int rc = is_postgres_url(*url_out) ? rb_port_pg_open(*url_out, p, &err)
                                       : rb_port_sqlite_open(*url_out, create, p, &err);
    if (rc)
        return cli_error(rc == RB_EINVAL ? CLI_USAGE : CLI_FAIL, "%s: %s", what, rb_err_msg(&err));
    return CLI_OK;
}

/* "scheduled 1, enqueued 2, ..." for the states with jobs; "none" else. */
static void print_states(FILE *f, const size_t *by_state)
{
    bool any = false;
    for (int s = RB_JOB_SCHEDULED; s <= RB_JOB_BLOCKED; s++)
        if (by_state[s]) {
            fprintf(f, "%s%s %zu", any ? ", " : "", rb_job_state_name((rb_job_state)s),
                    by_state[s]);
            any = true;
        }
}

static void export_usage(FILE *f)
{
    fprintf(f, "usage: rebound export [--config F] [--env NAME] [--db FILE|URL] [--output FILE]\n"
               "  --db FILE|URL  the SQLite file or postgresql:// database; default: storage.url\n"
               "  --output FILE  write the JSON lines to FILE (default: standard output)\n"
               "every job (all states, attempts, history, schedules), the workflows' edges and\n"
               "succeeded records, the batches and the counters, as JSON lines\n"
               "(docs/operations.md); run it with the server stopped\n");
}

int cmd_export(int argc, char **argv)
{
    port_args a;
    int code = parse_args(argc, argv, "export", export_usage, &a);
    if (code)
        return code < 0 ? CLI_OK : code;
    rb_port *p = NULL;
    char *url = NULL;
    if ((code = open_port(&a, "export", false, &p, &url)) != CLI_OK) {
        free(url);
        return code;
    }
    FILE *out = stdout;
    const char *name = a.path && strcmp(a.path, "-") ? a.path : NULL;
    if (name && !(out = fopen(name, "w"))) {
        code = cli_error(CLI_FAIL, "export: cannot write '%s': %s", name, strerror(errno));
        goto done;
    }
    rb_export_stats st;
    rb_err err = {0};
    int rc = rb_export_run(p, out, &st, &err);
    if (name && fclose(out) != 0 && rc == 0)
        rc = rb_err_set(&err, RB_EIO, "cannot write '%s': %s", name, strerror(errno));
    if (rc) {
        code = cli_error(CLI_FAIL, "export: %s", rb_err_msg(&err));
        goto done;
    }
    fprintf(stderr, "exported %zu jobs (", st.jobs);
    print_states(stderr, st.by_state);
    fprintf(stderr, "%s), %zu dependency lines, %zu succeeded records, %zu batches, %zu paused"
                    " queues and the counters (processed %lld, failures %lld) from %s '%s'\n",
            st.jobs ? "" : "none", st.deps, st.done, st.batches, st.paused,
            (long long)st.processed, (long long)st.failures, p->ops->name, url);
    if (st.debounce || st.aliases)
        fprintf(stderr, "with %zu pending debounce keys and %zu aliases of debounced pushes\n",
                st.debounce, st.aliases);
done:
    p->ops->close(p);
    free(url);
    return code;
}

static void import_usage(FILE *f)
{
    fprintf(f, "usage: rebound import [--config F] [--env NAME] [--db FILE|URL] [FILE|-]\n"
               "  --db FILE|URL  the SQLite file (created if missing) or postgresql:// database\n"
               "                 (its schema made by `rebound migrate`); default: storage.url\n"
               "  FILE           a `rebound export` file (default: standard input)\n"
               "loads the jobs, workflows, batches and counters of an export; a job identical\n"
               "to the stored one is skipped, one whose jid is stored with other content is\n"
               "refused (exit 1); a waiting job whose parent is neither in the file nor stored\n"
               "is left out and listed\n");
}

int cmd_import(int argc, char **argv)
{
    port_args a;
    int code = parse_args(argc, argv, "import", import_usage, &a);
    if (code)
        return code < 0 ? CLI_OK : code;
    const char *name = a.path && strcmp(a.path, "-") ? a.path : NULL;
    FILE *in = stdin;
    if (name && !(in = fopen(name, "r")))
        return cli_error(CLI_FAIL, "import: cannot read '%s': %s", name, strerror(errno));
    rb_port *p = NULL;
    char *url = NULL;
    if ((code = open_port(&a, "import", true, &p, &url)) != CLI_OK) {
        free(url);
        if (name)
            fclose(in);
        return code;
    }
    rb_import_report rep;
    rb_err err = {0};
    int rc = rb_import_run(p, in, name ? name : "<stdin>", &rep, &err);
    if (name)
        fclose(in);
    if (rc) {
        code = cli_error(rc == RB_EINVAL || rc == RB_EVERSION ? CLI_USAGE : CLI_FAIL,
                         "import: %s; nothing imported", rb_err_msg(&err));
        rb_import_report_release(&rep);
        goto done;
    }
    printf("imported %zu of %zu jobs into %s '%s'", rep.imported, rep.jobs, p->ops->name, url);
    if (rep.imported) {
        printf(" (");
        print_states(stdout, rep.by_state);
        printf(")");
    }
    printf("\nskipped %zu jobs identical to the stored ones\n", rep.same);
    if (rep.deps || rep.done || rep.batches || rep.graph_same)
        printf("workflows and batches: %zu dependency lines, %zu succeeded records, %zu batches"
               " imported; %zu identical skipped\n", rep.deps, rep.done, rep.batches,
               rep.graph_same);
    if (rep.debounce || rep.aliases)
        printf("debounced jobs: %zu pending keys, %zu aliases imported\n", rep.debounce,
               rep.aliases);
    if (rep.paused_set || rep.paused_same)
        printf("paused queues: %zu paused, %zu already paused\n", rep.paused_set,
               rep.paused_same);
    printf("counters (processed %lld, failures %lld): %s\n", (long long)rep.processed,
           (long long)rep.failures,
           rep.counters == 1 ? "set" : rep.counters == 0 ? "identical, unchanged"
                                                         : "refused, the stored ones differ");
    if (rep.unique_dropped)
        printf("note: %zu imported jobs name custom.unique_for; their unique locks are not"
               " carried\n", rep.unique_dropped);
    if (rep.not_carried) {
        printf("not carried: %zu jobs\n", rep.not_carried);
        fputs(rb_buf_str(&rep.skipped_text), stdout);
    }
    if (rep.conflicts || rep.counters < 0) {
        fprintf(stderr, "rebound: import: refused %zu conflicting jobs, records or batches%s"
                        " (stored with other content; left unchanged):\n",
                rep.conflicts, rep.counters < 0 ? " and the counters" : "");
        fputs(rb_buf_str(&rep.conflict_text), stderr);
        code = CLI_FAIL;
    }
    rb_import_report_release(&rep);
done:
    p->ops->close(p);
    free(url);
    return code;
}
