/* toml_decode: reads TOML on stdin (or from FILE) and prints it as
 * toml-test's tagged JSON on stdout. Exit 1 with "line L, column C: ..." on
 * stderr for invalid TOML, 2 for bad usage or an unreadable file. */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "common/buf.h"
#include "config/toml.h"
#include "config/toml_json.h"

int main(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "usage: toml_decode [FILE] < file.toml\n");
        return 2;
    }
    FILE *f = argc == 2 ? fopen(argv[1], "rb") : stdin;
    if (!f) {
        fprintf(stderr, "toml_decode: cannot open '%s'\n", argv[1]);
        return 2;
    }
    rb_buf in = RB_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rb_buf_add(&in, chunk, n);
    if (f != stdin)
        fclose(f);
    rb_err err = {0};
    rb_toml_value *root = rb_toml_parse(in.data ? in.data : "", in.len, &err);
    rb_buf_release(&in);
    if (!root) {
        fprintf(stderr, "%s\n", rb_err_msg(&err));
        return 1;
    }
    json_t *j = rb_toml_to_tagged_json(root);
    rb_toml_free(root);
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputc('\n', stdout);
    json_decref(j);
    return 0;
}
