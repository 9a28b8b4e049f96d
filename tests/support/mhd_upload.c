/* The test servers' daemon and request bodies (mhd_upload.h). */
#include "mhd_upload.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls)
{
    struct mhd_upload_daemon *h = cls;
    struct mhd_upload *u = *con_cls;
    char *d;

    (void)version;
    if (!u) {
        *con_cls = calloc(1, sizeof(*u));
        return *con_cls ? MHD_YES : MHD_NO;
    }
    if (!*size)
        return h->answer(h->cls, c, method, url, u);
    d = realloc(u->data, u->len + *size + 1);
    if (!d)
        return MHD_NO;
    memcpy(d + u->len, data, *size);
    u->len += *size;
    d[u->len] = '\0';
    u->data = d;
    *size = 0;
    return MHD_YES;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct mhd_upload *u = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

bool mhd_upload_start(struct mhd_upload_daemon *out, mhd_upload_answer_fn answer, void *cls)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    const union MHD_DaemonInfo *info;

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *out = (struct mhd_upload_daemon){.answer = answer, .cls = cls};
    out->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                              NULL, NULL, handler, out, MHD_OPTION_SOCK_ADDR, &addr,
                              MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!out->d)
        return false;
    info = MHD_get_daemon_info(out->d, MHD_DAEMON_INFO_BIND_PORT);
    out->port = info ? (int)info->port : 0;
    return true;
}

void mhd_upload_stop(struct mhd_upload_daemon *d)
{
    if (d->d)
        MHD_stop_daemon(d->d);
    d->d = NULL;
}
