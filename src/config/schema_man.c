/* The manual page rebound.toml(5), written from the same schema table that
 * validates the configuration (schema.c) and the dialects' own key lists,
 * so the page names every setting and cannot drift from the checker.
 * `rebound config reference --man` prints it; `make` installs it. */
#include <string.h>

#include "common/buf.h"
#include "common/version.h"
#include "config/schema.h"
#include "policy/dialect.h"

/* Appends s as roff text: backslashes and minus signs escaped, and a line
 * that would start with a control character ('.' or '\'') protected. */
static void roff(rb_buf *out, const char *s)
{
    bool bol = out->len == 0 || out->data[out->len - 1] == '\n';
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            rb_buf_adds(out, "\\&");
        bol = *s == '\n';
        if (*s == '\\')
            rb_buf_adds(out, "\\e");
        else if (*s == '-')
            rb_buf_adds(out, "\\-");
        else
            rb_buf_addc(out, *s);
    }
}

static const char *const intro =
    ".SH NAME\n"
    "rebound.toml \\- configuration file of the Rebound job server\n"
    ".SH SYNOPSIS\n"
    ".B rebound serve \\-\\-config\n"
    ".I /etc/rebound/rebound.toml\n"
    ".RB [ \\-\\-env\n"
    ".IR NAME ]\n"
    ".SH DESCRIPTION\n"
    "Rebound reads one TOML 1.0 file, the single source of truth for the server's\n"
    "settings and its retry policies. Every setting has a built\\-in default, so the\n"
    "server also runs with no file at all.\n"
    ".PP\n"
    "With \\-\\-env NAME (or REBOUND_ENV=NAME) the overlay\n"
    ".BI rebound. NAME .toml\n"
    "in the same directory is merged over the file key by key: a table merges\n"
    "into the same table, any other value (an array too) replaces the base's.\n"
    ".PP\n"
    "Validation is strict: an unknown section or key is an error naming the\n"
    "nearest known one, and a wrong type or a value out of range names what is\n"
    "allowed, with the file and line.\n"
    ".B rebound config check\n"
    ".I FILE\n"
    "validates a file and prints every setting with where its value came from.\n"
    ".PP\n"
    "Durations are strings with units (\"250ms\", \"90s\", \"30m\", \"1m30s\", \"2h\", \"1d\")\n"
    "or numbers of seconds.\n"
    ".SH SETTINGS\n";

/* The section of a schema name ("server" of "server.listen"), into sec. */
static void section_of(const char *name, char *sec, size_t n)
{
    size_t l = strcspn(name, ".");
    if (l >= n)
        l = n - 1;
    memcpy(sec, name, l);
    sec[l] = '\0';
}

static void settings(rb_buf *out)
{
    char done[16][32];
    size_t ndone = 0;
    /* each section once, in the order of its first key; its keys in table order */
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        char sec[32];
        section_of(rb_config_schema[i].name, sec, sizeof sec);
        bool seen = false;
        for (size_t d = 0; d < ndone && !seen; d++)
            seen = !strcmp(done[d], sec);
        if (seen || ndone == sizeof done / sizeof done[0])
            continue;
        memcpy(done[ndone++], sec, sizeof sec);
        rb_buf_adds(out, ".SS [");
        roff(out, sec);
        rb_buf_adds(out, "]\n");
        for (size_t j = i; j < rb_config_schema_len; j++) {
            const rb_config_key *k = &rb_config_schema[j];
            char ksec[32];
            section_of(k->name, ksec, sizeof ksec);
            if (strcmp(ksec, sec))
                continue;
            rb_buf rule = RB_BUF_INIT;
            rb_config_key_rule(k, &rule);
            rb_buf_adds(out, ".TP\n.B ");
            roff(out, k->name + strlen(sec) + 1);
            rb_buf_adds(out, "\n");
            roff(out, k->doc);
            rb_buf_adds(out, ".\n.br\nDefault: ");
            roff(out, k->def);
            rb_buf_adds(out, "; allowed: ");
            roff(out, rb_buf_str(&rule));
            rb_buf_adds(out, k->secret ? ". Printed as \"********\" by config check.\n" : ".\n");
            rb_buf_release(&rule);
        }
    }
}

static void key_list(rb_buf *out, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++) {
        rb_buf_adds(out, i ? ", " : "");
        rb_buf_adds(out, "\\fB");
        roff(out, keys[i]);
        rb_buf_adds(out, "\\fR");
    }
}

static void policies(rb_buf *out)
{
    rb_buf_adds(out,
                ".SH RETRY POLICIES\n"
                "Each of\n.BR [retry] ,\n.BI [retry.queues. NAME ]\nand\n"
                ".BI [retry.jobtypes. NAME ]\n"
                "holds one policy in any dialect of\n.BR \"rebound policy\" .\n"
                "The policy for a job is the first of: the job's own retry_policy field,\n"
                "[retry.jobtypes.TYPE], [retry.queues.QUEUE], [retry], and the built\\-in\n"
                "default (Faktory's 25 retries with Sidekiq's backoff). The job's Faktory\n"
                "retry field then caps the retries (0: discard on failure, \\-1: dead on\n"
                "failure, N: at most N retries). A table may name its dialect with\n"
                "\\fBdialect = \"NAME\"\\fR or be recognised from its keys:\n"
                ".TP\n.B temporal\n");
    key_list(out, rb_dialect_temporal_keys);
    rb_buf_adds(out, "\n.TP\n.B tasker\n");
    key_list(out, rb_dialect_tasker_keys);
    rb_buf_adds(out, " (defaults from [backoff])\n.TP\n.B tutorial\n");
    key_list(out, rb_dialect_tutorial_keys);
    rb_buf_adds(out, "\n.TP\n.B faktory\n");
    key_list(out, rb_dialect_faktory_keys);
    rb_buf_adds(out, ", or alone: \\fBfaktory\\fR = N\n.TP\n.B ftl\n");
    key_list(out, rb_dialect_ftl_keys);
    rb_buf_adds(out, " = \"RETRIES [INITIAL [MAX]]\", alone in its table\n");
}

static const char *const outro =
    ".SH CRON\n"
    "Each\n.B [[cron]]\n"
    "table is a periodic job: \\fBschedule\\fR (five cron fields\n"
    "or @hourly, @daily, ...; required), \\fBtimezone\\fR (an IANA name, default\n"
    "\"UTC\"), \\fBmissed\\fR (\"skip\" or \"run_once\"), \\fBname\\fR, and the table\n"
    ".B [cron.job]\n"
    "with \\fBtype\\fR (or \\fBjobtype\\fR), \\fBqueue\\fR, \\fBargs\\fR, \\fBcustom\\fR,\n"
    "\\fBretry\\fR, \\fBretry_policy\\fR, \\fBreserve_for\\fR, \\fBpriority\\fR and\n"
    "\\fBbacktrace\\fR, as in a pushed job.\n"
    ".B rebound cron\n.I FILE\n"
    "lists the entries with their next run times.\n"
    ".SH THROTTLES\n"
    ".BI [throttles. QUEUE ]\n"
    "limits how many jobs of a queue are working at once, across every worker:\n"
    "\\fBconcurrency\\fR (an integer from 1 to 1000000, required) and \\fBtimeout\\fR\n"
    "(a duration from 1s to 7d after which a slot is free again even if the job\n"
    "still runs).\n"
    ".SH EXAMPLE\n"
    ".nf\n"
    "[server]\n"
    "listen = \"0.0.0.0:7419\"\n"
    "password = \"s3cret\"\n"
    "\n"
    "[storage]\n"
    "url = \"/var/lib/rebound/rebound.db\"\n"
    "\n"
    "[retry.queues.critical]\n"
    "maximum_attempts = 10\n"
    "initial_interval = \"1s\"\n"
    ".fi\n"
    ".SH FILES\n"
    ".TP\n.I /etc/rebound/rebound.toml\n"
    "the packaged service's configuration (every setting commented out at its default)\n"
    ".TP\n.I /usr/share/doc/rebound/examples/rebound.toml\n"
    "the annotated example, with a retry policy in each dialect\n"
    ".SH SEE ALSO\n"
    ".BR rebound (1)\n";

void rb_config_reference_man(rb_buf *out)
{
    rb_buf_adds(out, ".\\\" Generated from src/config/schema.c by 'rebound config reference "
                     "\\-\\-man'; do not edit.\n");
    rb_buf_printf(out, ".TH REBOUND.TOML 5 \"\" \"rebound %s\" \"File Formats\"\n", RB_VERSION);
    rb_buf_adds(out, intro);
    settings(out);
    policies(out);
    rb_buf_adds(out, outro);
}
