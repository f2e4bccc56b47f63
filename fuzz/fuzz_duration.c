/* Fuzzes the duration parsers (src/policy/duration.h): the general grammar,
 * FTL's stricter one and the JSON form. Properties: a parsed duration formats
 * and parses back to itself; FTL's grammar is a subset of the general one
 * (same value); a failure leaves *ms untouched and says why. */
#include <jansson.h>

#include "fuzz.h"
#include "policy/duration.h"

static void check_general(const char *s)
{
    int64_t ms = 12345, back = -1;
    rb_err err = {0};
    int rc = rb_duration_parse(s, &ms, &err);
    if (rc) {
        FUZZ_CHECK(rc == RB_EPARSE || rc == RB_ERANGE);
        FUZZ_CHECK(ms == 12345);
        FUZZ_CHECK(err.code == rc && err.msg[0]);
        return;
    }
    char text[RB_DURATION_STRLEN];
    rb_duration_format(ms, text, sizeof text);
    FUZZ_CHECK(strlen(text) < sizeof text);
    FUZZ_CHECK(rb_duration_parse(text, &back, NULL) == 0);
    FUZZ_CHECK(back == ms);
}

static void check_ftl(const char *s)
{
    int64_t ms = 777, general = -1;
    rb_err err = {0};
    int rc = rb_duration_parse_ftl(s, &ms, &err);
    if (rc) {
        FUZZ_CHECK(rc == RB_EPARSE || rc == RB_ERANGE);
        FUZZ_CHECK(ms == 777);
        FUZZ_CHECK(err.msg[0]);
        return;
    }
    FUZZ_CHECK(ms >= 0);
    FUZZ_CHECK(rb_duration_parse(s, &general, NULL) == 0);
    FUZZ_CHECK(general == ms);
}

static void check_json(const uint8_t *data, size_t size)
{
    json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!v)
        return;
    int64_t ms = 99;
    rb_err err = {0};
    int rc = rb_duration_from_json(v, &ms, &err);
    if (rc) {
        FUZZ_CHECK(ms == 99 && err.msg[0]);
    } else if (json_is_string(v)) {
        int64_t again = -1; /* a string means what the text parser says */
        FUZZ_CHECK(rb_duration_parse(json_string_value(v), &again, NULL) == 0 && again == ms);
    }
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    check_general(s);
    check_ftl(s);
    check_json(data, size);
    free(s);
    return 0;
}
