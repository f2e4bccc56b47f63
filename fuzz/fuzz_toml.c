/* Fuzzes the TOML parser (src/config/toml.h) and its JSON views. Properties:
 * either a tree or an error "line L, column C: ..." comes back; a tree has a
 * table at the root and converts to JSON both ways; frees leave no leak. */
#include <jansson.h>

#include "config/toml.h"
#include "config/toml_json.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rb_err err = {0};
    rb_toml_value *root = rb_toml_parse((const char *)data, size, &err);
    if (!root) {
        FUZZ_CHECK(err.code == RB_EPARSE);
        FUZZ_CHECK(strncmp(err.msg, "line ", 5) == 0);
        return 0;
    }
    FUZZ_CHECK(root->type == RB_TOML_TABLE);
    json_t *plain = rb_toml_to_json(root);
    json_t *tagged = rb_toml_to_tagged_json(root);
    FUZZ_CHECK(json_is_object(plain) && json_is_object(tagged));
    char *text = json_dumps(tagged, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(text != NULL);
    free(text);
    json_decref(plain);
    json_decref(tagged);
    rb_toml_set_origin(root, 1);
    rb_toml_free(root);
    return 0;
}
