/* TOML trees as JSON (jansson): plain, and toml-test's tagged form. */
#ifndef RB_CONFIG_TOML_JSON_H
#define RB_CONFIG_TOML_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "config/toml.h"

/* v as plain JSON (new reference): tables -> objects, arrays -> arrays,
 * integers, floats (inf/nan as the strings "inf", "-inf", "nan"), booleans,
 * strings, and dates/times as their canonical text. */
json_t *rb_toml_to_json(const rb_toml_value *v);

/* v in toml-test's tagged form (new reference): every scalar becomes
 * {"type": T, "value": "text"}; tables and arrays stay objects and arrays. */
json_t *rb_toml_to_tagged_json(const rb_toml_value *v);

/* The shortest text that reads back as f ("0.1", "1e+300"), or "inf",
 * "-inf", "nan"; written into out (cap >= 32). */
void rb_toml_format_float(double f, char *out, size_t cap);

#endif
