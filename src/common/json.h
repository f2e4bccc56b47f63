/* Small jansson helpers shared by every layer. */
#ifndef RB_COMMON_JSON_H
#define RB_COMMON_JSON_H

#include <jansson.h>

/* The string value of o's key, or NULL when absent, not a string, or o is
 * not an object. Borrowed from o. */
static inline const char *rb_json_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

#endif
