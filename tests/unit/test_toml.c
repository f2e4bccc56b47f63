/* The TOML parser's own contract beyond the conformance corpus: positions of
 * keys and errors, lookup, overlay merging, dates and the JSON forms. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "config/toml.h"
#include "config/toml_json.h"

static rb_toml_value *parse(const char *text)
{
    rb_err err = {0};
    rb_toml_value *v = rb_toml_parse(text, strlen(text), &err);
    cr_assert_not_null(v, "parse failed: %s", rb_err_msg(&err));
    return v;
}

static void expect_error(const char *text, const char *msg)
{
    rb_err err = {0};
    rb_toml_value *v = rb_toml_parse(text, strlen(text), &err);
    cr_assert_null(v, "accepted: %s", text);
    cr_assert_eq(err.code, RB_EPARSE);
    cr_assert_str_eq(err.msg, msg);
}

Test(toml, scalars_have_types_values_and_positions)
{
    rb_toml_value *t = parse("# c\n"
                             "s = \"a\\tb\"\n"
                             "  i = -0\n"
                             "h = 0xff\n"
                             "f = 6.5e-1\n"
                             "b = false\n"
                             "[sec]\n"
                             "d = 2024-02-29\n"
                             "lt = 07:32:00.25\n"
                             "odt = 1979-05-27 07:32:00-07:30\n");
    cr_assert_eq(t->type, RB_TOML_TABLE);
    rb_toml_kv *s = rb_toml_get_kv(t, "s");
    cr_assert_not_null(s);
    cr_assert_eq(s->line, 2);
    cr_assert_eq(s->col, 1);
    cr_assert_str_eq(s->val->u.str.s, "a\tb");
    cr_assert_eq(s->val->col, 5);
    rb_toml_kv *h = rb_toml_get_kv(t, "h");
    cr_assert_eq(h->val->u.i, 255);
    cr_assert_eq(rb_toml_get_kv(t, "i")->col, 3);
    cr_assert_float_eq(rb_toml_get(t, "f")->u.f, 0.65, 1e-12);
    cr_assert_eq(rb_toml_get(t, "b")->type, RB_TOML_BOOL);
    cr_assert_not(rb_toml_get(t, "b")->u.b);
    rb_toml_value *sec = rb_toml_get(t, "sec");
    cr_assert_eq(sec->line, 7);
    rb_toml_value *d = rb_toml_get(sec, "d");
    cr_assert_eq(d->type, RB_TOML_DATE_LOCAL);
    cr_assert_eq(d->u.dt.day, 29);
    rb_toml_value *lt = rb_toml_get(sec, "lt");
    cr_assert_eq(lt->type, RB_TOML_TIME_LOCAL);
    cr_assert_str_eq(lt->u.dt.frac, "25");
    rb_toml_value *odt = rb_toml_get(sec, "odt");
    cr_assert_eq(odt->type, RB_TOML_DATETIME);
    cr_assert_eq(odt->u.dt.offset_min, -450);
    char buf[64];
    cr_assert_str_eq(rb_toml_format_datetime(odt->type, &odt->u.dt, buf),
                     "1979-05-27T07:32:00-07:30");
    cr_assert_null(rb_toml_get(t, "missing"));
    cr_assert_null(rb_toml_get(s->val, "x"), "a string has no keys");
    rb_toml_free(t);
}

Test(toml, errors_give_line_and_column_in_characters)
{
    expect_error("a = 1\nb = \n", "line 2, column 5: expected a value");
    expect_error("a = 1\na = 2\n", "line 2, column 1: duplicate key 'a'");
    /* "é" is two bytes but one column */
    expect_error("\"é\" = @\n", "line 1, column 7: expected a value, found '@'");
    expect_error("[a]\nx = 1\n[a]\n", "line 3, column 2: table defined twice 'a'");
    expect_error("a = \"abc\n", "line 1, column 9: newline in a single-line string");
    expect_error("a = 1 b = 2\n", "line 1, column 7: expected a newline after a key/value pair");
    expect_error("a = 2024-02-30\n", "line 1, column 5: invalid date or time '2024-02-30'");
    expect_error("a = 9223372036854775808\n",
                 "line 1, column 5: integer '9223372036854775808' out of range");
    expect_error("a = {b = 1,}\n", "line 1, column 12: trailing comma in an inline table");
    expect_error("a = \"\\q\"\n", "line 1, column 6: invalid escape '\\q'");
    expect_error("x = 1\n\xff = 2\n", "line 2, column 1: invalid UTF-8 byte 0xff");
    expect_error("a = 1\r\n\rb = 2\n", "line 2, column 1: carriage return not followed by a newline");
}

Test(toml, dotted_keys_and_table_rules)
{
    rb_toml_value *t = parse("a.b.c = 1\na.b.d = 2\n[x]\ny.z = 3\n[x.y.w]\nq = 4\n"
                             "[[arr]]\nn = 1\n[[arr]]\nn = 2\n[arr.sub]\nm = 3\n");
    rb_toml_value *b = rb_toml_get(rb_toml_get(t, "a"), "b");
    cr_assert_eq(b->u.table.n, 2);
    rb_toml_value *arr = rb_toml_get(t, "arr");
    cr_assert_eq(arr->type, RB_TOML_ARRAY);
    cr_assert_eq(arr->u.array.n, 2);
    cr_assert_eq(rb_toml_get(rb_toml_get(arr->u.array.items[1], "sub"), "m")->u.i, 3);
    cr_assert_eq(rb_toml_get(rb_toml_get(rb_toml_get(rb_toml_get(t, "x"), "y"), "w"), "q")->u.i, 4);
    rb_toml_free(t);
    expect_error("[x]\ny.z = 3\n[x.y]\n", "line 3, column 4: table defined twice 'x.y'");
    expect_error("a = {b = 1}\na.c = 2\n",
                 "line 2, column 1: cannot add keys with dotted keys to table 'a'");
    expect_error("a = [1]\n[[a]]\n",
                 "line 2, column 3: cannot make an array of tables of existing key 'a'");
}

Test(toml, nesting_is_bounded)
{
    rb_buf b = RB_BUF_INIT;
    rb_buf_adds(&b, "a = ");
    for (int i = 0; i < 200; i++)
        rb_buf_addc(&b, '[');
    for (int i = 0; i < 200; i++)
        rb_buf_addc(&b, ']');
    rb_buf_addc(&b, '\n');
    rb_err err = {0};
    cr_assert_null(rb_toml_parse(b.data, b.len, &err));
    cr_assert(strstr(err.msg, "nesting deeper than 128"), "%s", err.msg);
    rb_buf_release(&b);
}

Test(toml, merge_overlays_key_by_key_and_replaces_arrays)
{
    rb_toml_value *base = parse("[s]\na = 1\nb = [1, 2, 3]\n[s.t]\nx = \"base\"\ny = true\n");
    rb_toml_value *over = parse("[s]\nb = [9]\nc = 3\n[s.t]\nx = \"over\"\n[n]\nk = 1\n");
    rb_toml_set_origin(base, 1);
    rb_toml_set_origin(over, 2);
    rb_toml_merge(base, over);
    rb_toml_value *s = rb_toml_get(base, "s");
    cr_assert_eq(rb_toml_get(s, "a")->u.i, 1);
    cr_assert_eq(rb_toml_get(s, "a")->origin, 1);
    rb_toml_value *b = rb_toml_get(s, "b");
    cr_assert_eq(b->u.array.n, 1, "arrays are replaced whole");
    cr_assert_eq(b->u.array.items[0]->u.i, 9);
    cr_assert_eq(b->origin, 2);
    cr_assert_eq(rb_toml_get(s, "c")->origin, 2);
    rb_toml_value *t = rb_toml_get(s, "t");
    cr_assert_str_eq(rb_toml_get(t, "x")->u.str.s, "over");
    cr_assert_eq(rb_toml_get(t, "y")->origin, 1);
    cr_assert_eq(rb_toml_get(rb_toml_get(base, "n"), "k")->origin, 2);
    cr_assert_eq(rb_toml_get_kv(s, "b")->line, 2, "the key's position follows the overlay");
    rb_toml_free(base);
}

Test(toml, datetime_parsing_is_strict)
{
    rb_toml_datetime dt;
    cr_assert_eq(rb_toml_parse_datetime("2000-02-29", 10, &dt), RB_TOML_DATE_LOCAL);
    cr_assert_eq(rb_toml_parse_datetime("1900-02-29", 10, &dt), -1);
    cr_assert_eq(rb_toml_parse_datetime("2021-13-01", 10, &dt), -1);
    cr_assert_eq(rb_toml_parse_datetime("24:00:00", 8, &dt), -1);
    cr_assert_eq(rb_toml_parse_datetime("2021-01-01t10:00:00z", 20, &dt), RB_TOML_DATETIME);
    cr_assert_eq(rb_toml_parse_datetime("2021-01-01T10:00:00+24:00", 25, &dt), -1);
    cr_assert_eq(rb_toml_parse_datetime("2021-01-01T10:00", 16, &dt), -1, "seconds are required");
    cr_assert_eq(rb_toml_parse_datetime("2021-01-01T10:00:00.", 20, &dt), -1);
    char buf[64];
    cr_assert_eq(rb_toml_parse_datetime("2021-01-01 10:00:00.123", 23, &dt),
                 RB_TOML_DATETIME_LOCAL);
    cr_assert_str_eq(rb_toml_format_datetime(RB_TOML_DATETIME_LOCAL, &dt, buf),
                     "2021-01-01T10:00:00.123");
}

Test(toml, json_forms)
{
    rb_toml_value *t = parse("i = 3\nf = 0.1\nn = -inf\ns = 'x'\nd = 1979-05-27\na = [1, {b = true}]\n");
    json_t *plain = rb_toml_to_json(t);
    char *text = json_dumps(plain, JSON_SORT_KEYS | JSON_COMPACT);
    cr_assert_str_eq(text, "{\"a\":[1,{\"b\":true}],\"d\":\"1979-05-27\",\"f\":0.10000000000000001,"
                           "\"i\":3,\"n\":\"-inf\",\"s\":\"x\"}");
    free(text);
    json_decref(plain);
    json_t *tagged = rb_toml_to_tagged_json(t);
    text = json_dumps(json_object_get(tagged, "f"), JSON_SORT_KEYS | JSON_COMPACT);
    cr_assert_str_eq(text, "{\"type\":\"float\",\"value\":\"0.1\"}");
    free(text);
    text = json_dumps(json_object_get(tagged, "d"), JSON_SORT_KEYS | JSON_COMPACT);
    cr_assert_str_eq(text, "{\"type\":\"date-local\",\"value\":\"1979-05-27\"}");
    free(text);
    json_decref(tagged);
    rb_toml_free(t);
    char b[32];
    rb_toml_format_float(1e300, b, sizeof b);
    cr_assert_str_eq(b, "1e+300");
    rb_toml_format_float(-NAN, b, sizeof b);
    cr_assert_str_eq(b, "nan");
}
