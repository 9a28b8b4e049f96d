/*
 * mhd_upload.h: what the small test servers on libmicrohttpd (cred_server, otlp_receiver,
 * skill_http) do alike: a daemon on 127.0.0.1 at a free port, one thread per connection, that
 * collects each request's body and then calls the server's answer.
 */
#ifndef REIN_TEST_MHD_UPLOAD_H
#define REIN_TEST_MHD_UPLOAD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* A request's body as it arrived: NUL-terminated (data is NULL while nothing came). */
struct mhd_upload {
    char *data;
    size_t len;
};

/* Answers a request whose body u (borrowed) is complete, on the connection's thread: queues
 * the response and returns what an access handler returns. */
typedef enum MHD_Result (*mhd_upload_answer_fn)(void *cls, struct MHD_Connection *c,
                                                const char *method, const char *url,
                                                struct mhd_upload *u);

struct mhd_upload_daemon {
    struct MHD_Daemon *d;
    int port;
    mhd_upload_answer_fn answer;
    void *cls;
};

/* Starts the daemon in *out (filled, the caller's storage, which must stay put until
 * mhd_upload_stop) that answers with answer(cls). False when it cannot start. */
bool mhd_upload_start(struct mhd_upload_daemon *out, mhd_upload_answer_fn answer, void *cls);
/* Stops the daemon (waiting for its connections' threads). */
void mhd_upload_stop(struct mhd_upload_daemon *d);

#endif
