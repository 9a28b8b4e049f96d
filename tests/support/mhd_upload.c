/* The test servers' request bodies and daemon (mhd_upload.h). */
#include "mhd_upload.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

struct mhd_upload *mhd_upload_take(void **con_cls, const char *data, size_t *size,
                                   enum MHD_Result *rc)
{
    struct mhd_upload *u = *con_cls;
    char *d;

    *rc = MHD_YES;
    if (!u) {
        *con_cls = calloc(1, sizeof(*u));
        if (!*con_cls)
            *rc = MHD_NO;
        return NULL;
    }
    if (!*size)
        return u;
    d = realloc(u->data, u->len + *size + 1);
    if (!d) {
        *rc = MHD_NO;
        return NULL;
    }
    memcpy(d + u->len, data, *size);
    u->len += *size;
    d[u->len] = '\0';
    u->data = d;
    *size = 0;
    return NULL;
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

struct MHD_Daemon *mhd_upload_daemon(MHD_AccessHandlerCallback handler, void *cls, int *port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    const union MHD_DaemonInfo *info;
    struct MHD_Daemon *d;

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, handler, cls, MHD_OPTION_SOCK_ADDR, &addr,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (d) {
        info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        *port = info ? (int)info->port : 0;
    }
    return d;
}
