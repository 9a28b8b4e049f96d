/*
 * Terminal manners for the `rein` command: what a progress display may send to stderr.
 * Escape codes (clearing a line, moving the cursor, colour) go only to a terminal, and never
 * with NO_COLOR set (https://no-color.org: present and not empty) or TERM=dumb (or no TERM):
 * there a status line is redrawn with a carriage return and spaces alone. Not a terminal:
 * no status line at all; a command that waits says that it still does once in a while with
 * REIN_LOG=info (cli_heartbeat_due).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum cli_term cli_term_of(int fd)
{
    const char *no_color = getenv("NO_COLOR");
    const char *term = getenv("TERM");

    if (!isatty(fd))
        return CLI_TERM_NONE;
    if ((no_color && no_color[0]) || !term || !term[0] || strcmp(term, "dumb") == 0)
        return CLI_TERM_PLAIN;
    return CLI_TERM_FULL;
}

void cli_status_draw(struct cli_status *s, const char *text)
{
    int len = (int)strlen(text);

    if (s->mode == CLI_TERM_FULL) {
        fprintf(stderr, "\r\033[K%s", text);
    } else if (s->mode == CLI_TERM_PLAIN) {
        /* Spaces over what the longer line before left. */
        fprintf(stderr, "\r%s%*s", text, s->width > len ? s->width - len : 0, "");
        if (s->width > len)
            fprintf(stderr, "\r%s", text);
    } else {
        return;
    }
    fflush(stderr);
    s->width = len;
    s->shown = true;
}

void cli_status_clear(struct cli_status *s)
{
    if (!s->shown)
        return;
    if (s->mode == CLI_TERM_FULL)
        fputs("\r\033[K", stderr);
    else
        fprintf(stderr, "\r%*s\r", s->width, "");
    fflush(stderr);
    s->shown = false;
    s->width = 0;
}

bool cli_heartbeat_due(int64_t *last_ms, int64_t now_ms)
{
    if (now_ms - *last_ms < CLI_HEARTBEAT_MS)
        return false;
    *last_ms = now_ms;
    return true;
}
