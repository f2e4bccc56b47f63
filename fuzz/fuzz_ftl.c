/* Fuzzes FTL's retry directive parser (src/policy/dialect_ftl.c) directly and
 * through rb_policy_parse_spec's "ftl:" and "//ftl:retry" prefixes.
 * Properties: the three ways agree (same result, same canonical policy); a
 * parsed FTL policy is valid (FTL dialect, non-negative delays, a capped
 * exponential); a failure says why. */
#include <jansson.h>

#include "fuzz.h"
#include "policy/dialect.h"

/* The canonical JSON of spec's policy, or NULL when it does not parse. */
static char *parse_to_text(const char *spec)
{
    rb_policy p;
    if (rb_policy_parse_spec(spec, NULL, &p, NULL))
        return NULL;
    json_t *j = rb_policy_to_json(&p);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    rb_policy_release(&p);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    if (strlen(text) != size) { /* a C string cannot carry NULs: nothing to compare */
        free(text);
        return 0;
    }
    rb_policy p;
    memset(&p, 0, sizeof p);
    rb_err err = {0};
    int rc = rb_dialect_parse_ftl_text(text, &p, &err);
    char *direct = NULL;
    if (rc == 0) {
        FUZZ_CHECK(p.dialect == RB_DIALECT_FTL);
        FUZZ_CHECK(p.initial_ms >= 0 && p.max_interval_ms >= 0 && p.max_attempts >= 0);
        FUZZ_CHECK(p.backoff != RB_BACKOFF_EXPONENTIAL || p.coefficient >= 1.0);
        json_t *j = rb_policy_to_json(&p);
        direct = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
    } else {
        FUZZ_CHECK(rc < 0 && err.msg[0]);
    }
    rb_policy_release(&p);

    /* "ftl:retry X" strips a leading "retry" word: compare only other texts,
     * and only well under the 512-byte directive limit the prefixes move. */
    if (strncmp(text, "retry", 5) != 0 && size < 480) {
        size_t n = size + 16;
        char *a = malloc(n), *b = malloc(n);
        snprintf(a, n, "ftl:%s", text);
        snprintf(b, n, "//ftl:retry %s", text);
        char *via_a = parse_to_text(a), *via_b = parse_to_text(b);
        if (direct) {
            FUZZ_CHECK(via_a && strcmp(direct, via_a) == 0);
            FUZZ_CHECK(via_b && strcmp(direct, via_b) == 0);
        } else {
            FUZZ_CHECK(!via_a && !via_b);
        }
        free(via_a);
        free(via_b);
        free(a);
        free(b);
    }
    free(direct);
    free(text);
    return 0;
}
