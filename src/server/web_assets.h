/*
 * web_assets.h: the files of web/ (the chat page) built into librein. The table is generated
 * at build time by cmake/ReinEmbed.cmake (docs/decisions/0009) into the build tree; the route
 * that serves it is routes_web.c.
 */
#ifndef REIN_SERVER_WEB_ASSETS_H
#define REIN_SERVER_WEB_ASSETS_H

#include <stddef.h>

/* One embedded file. data holds len bytes followed by a NUL; etag is a quoted ETag value. */
struct rein__web_asset {
    const char *name; /* the file name, "index.html" */
    const unsigned char *data;
    size_t len;
    const char *etag;
};

/* Sorted by name, rein__web_asset_count entries, then one all-zero entry. */
extern const struct rein__web_asset rein__web_assets[];
extern const size_t rein__web_asset_count;

#endif /* REIN_SERVER_WEB_ASSETS_H */
