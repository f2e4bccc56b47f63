/* The dashboard's files (web/), compiled into the binary by scripts/embed.sh
 * so the server needs no files and no network to serve its UI. */
#ifndef RB_SERVER_ASSETS_H
#define RB_SERVER_ASSETS_H

#include <stddef.h>

typedef struct rb_asset {
    const char *path;          /* "/index.html": web/ stripped, leading slash */
    const unsigned char *data; /* the bytes, NUL-terminated (NUL not counted) */
    size_t len;
    const char *content_type;
} rb_asset;

/* Every embedded file, then a terminator with path NULL. */
extern const rb_asset rb_web_assets[];
extern const size_t rb_web_n_assets;

#endif
