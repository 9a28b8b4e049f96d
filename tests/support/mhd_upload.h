/*
 * mhd_upload.h: what the small test servers on libmicrohttpd (cred_server, otlp_receiver,
 * skill_http) do alike: a daemon on 127.0.0.1 at a free port, one thread per connection, and
 * each request's body collected before the server answers.
 */
#ifndef REIN_TEST_MHD_UPLOAD_H
#define REIN_TEST_MHD_UPLOAD_H

#include <microhttpd.h>
#include <stddef.h>

/* A request's body as it arrived: NUL-terminated (data is NULL while nothing came). */
struct mhd_upload {
    char *data;
    size_t len;
};

/*
 * The body part of an access handler (its con_cls, data and size): the request's first call
 * makes its upload in *con_cls, a call with body bytes appends them. Returns the upload once
 * the body is complete (the handler answers now); else NULL with *rc what the handler
 * returns (MHD_NO when memory ran out).
 */
struct mhd_upload *mhd_upload_take(void **con_cls, const char *data, size_t *size,
                                   enum MHD_Result *rc);

/*
 * Starts a daemon on 127.0.0.1 at a free port (*port receives it) with handler(cls) and a
 * completion callback that frees each request's upload. NULL when it cannot start.
 */
struct MHD_Daemon *mhd_upload_daemon(MHD_AccessHandlerCallback handler, void *cls, int *port);

#endif
