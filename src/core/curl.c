/*
 * libcurl, once: the process-wide curl_global_init guard and the cancellable transfer that
 * the HTTP skill runner and the MCP client share (the providers run their own streaming loop
 * but take the same guard).
 */
#include "core/internal.h"

#include <pthread.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

rein_err rein__curl_global_init(rein_error *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return rein_error_set(err, REIN_EINTERNAL, "libcurl could not be initialised: %s",
                              curl_easy_strerror(curl_init_rc));
    return REIN_OK;
}

CURLcode rein__curl_perform(CURL *easy, rein_cancel *cancel, bool *cancelled)
{
    CURLM *multi = curl_multi_init();
    CURLcode result = CURLE_FAILED_INIT;
    int running = 1;

    *cancelled = false;
    if (!multi)
        return CURLE_OUT_OF_MEMORY;
    if (curl_multi_add_handle(multi, easy) != CURLM_OK) {
        curl_multi_cleanup(multi);
        return CURLE_OUT_OF_MEMORY;
    }
    while (running) {
        struct curl_waitfd extra = {.fd = rein_cancel_fd(cancel), .events = CURL_WAIT_POLLIN};
        if (curl_multi_perform(multi, &running) != CURLM_OK)
            break;
        if (!running)
            break;
        if (rein_cancel_is_set(cancel)) {
            *cancelled = true;
            result = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        if (curl_multi_poll(multi, cancel ? &extra : NULL, cancel ? 1 : 0, 1000, NULL) != CURLM_OK)
            break;
    }
    if (!*cancelled) {
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy)
                result = msg->data.result;
        }
    }
    curl_multi_remove_handle(multi, easy);
    curl_multi_cleanup(multi);
    return result;
}
