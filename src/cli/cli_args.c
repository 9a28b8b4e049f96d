/*
 * The command line as other Unix tools read it, for every `rein` command alike: one argument
 * loop driven by a command's table (struct cli_args), subcommand dispatch, and the values
 * commands share (numbers, durations, text from stdin).
 *
 * What every command gets from here, as git, curl and jq behave:
 *   -h, --help          the command's usage, options and exit status on stdout, exit 0
 *   --opt value, --opt=value
 *   --                  ends the options: `rein chat -- "-5 plus 3"`
 *   -                   where a text is expected, the text is read from stdin
 *   an unknown option or subcommand is refused with the nearest known one suggested
 *   --config FILE       rein's configuration file, checked before anything runs
 *   text that is not UTF-8 is refused: "message: not valid UTF-8 at byte N"
 *   old spellings keep working with a warning on stderr (struct cli_alias)
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STDIN_MAX_BYTES ((size_t)16 << 20)
#define MAX_NAMES       96

/* The text read from stdin for "-" (one per run: stdin can be read once). */
static char *stdin_text;

void cli_args_release(void)
{
    rein_free(stdin_text);
    stdin_text = NULL;
}

static bool listed(const char *const *list, const char *a)
{
    for (size_t k = 0; list && list[k]; k++) {
        if (strcmp(a, list[k]) == 0)
            return true;
    }
    return false;
}

/* The shared options a command takes, by group. */
static const char *const model_opts[] = {"--provider", "--model", "--base-url", NULL};
static const char *const tool_opts[] = {"--skills", "--root", NULL};

static bool shared_valued(const struct cli_args *ca, const char *a)
{
    return strcmp(a, "--config") == 0 || ((ca->shared & CLI_OPT_MODEL) && listed(model_opts, a)) ||
           ((ca->shared & CLI_OPT_TOOLS) && listed(tool_opts, a));
}

static bool shared_switch(const struct cli_args *ca, const char *a)
{
    return ((ca->shared & CLI_OPT_JSON) && strcmp(a, "--json") == 0) ||
           ((ca->shared & CLI_OPT_EVENTS) && strcmp(a, "--events") == 0) ||
           ((ca->shared & CLI_OPT_YES) && strcmp(a, "--yes") == 0);
}

static void take_switch(struct cli_setup *s, const char *a)
{
    if (strcmp(a, "--json") == 0)
        s->json = true;
    else if (strcmp(a, "--events") == 0)
        s->events = true;
    else
        s->yes = true;
}

/* Every option name the command knows, for suggestions. */
static size_t known_names(const struct cli_args *ca, const char **out, size_t max)
{
    static const char *const always[] = {"--config", "--help", "--json", "--events", "--yes", NULL};
    const char *const *lists[] = {model_opts, tool_opts, ca->valued, ca->switches};
    size_t n = 0;

    for (size_t k = 0; always[k] && n < max; k++) {
        if (k == 0 || k == 1 || shared_switch(ca, always[k]))
            out[n++] = always[k];
    }
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        if ((l == 0 && !(ca->shared & CLI_OPT_MODEL)) || (l == 1 && !(ca->shared & CLI_OPT_TOOLS)))
            continue;
        for (size_t k = 0; lists[l] && lists[l][k] && n < max; k++)
            out[n++] = lists[l][k];
    }
    for (size_t k = 0; ca->aliases && ca->aliases[k].old && n < max; k++)
        out[n++] = ca->aliases[k].old;
    return n;
}

static int unknown_option(const struct cli_args *ca, const char *a)
{
    const char *names[MAX_NAMES];
    size_t n = known_names(ca, names, MAX_NAMES);
    char name[64];
    const char *eq = strchr(a, '=');
    size_t len = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
    const char *near;

    snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), a);
    near = rein_suggest(name, names, n);
    if (near)
        return cli_usage_error("%s: unknown option '%s' (did you mean %s?)", ca->name, name, near);
    if (strchr(a, ' ') && ca->max_pos > 0)
        return cli_usage_error("%s: unknown option '%s' (to pass a %s that starts with '-', put "
                               "-- before it: rein %s -- '%s')",
                               ca->name, a, ca->positional ? ca->positional : "value", ca->name, a);
    return cli_usage_error("%s: unknown option '%s' (see rein %s --help)", ca->name, name,
                           ca->name);
}

void cli_deprecated(const char *cmd, const char *old, const char *now)
{
    fprintf(stderr, "rein: warning: %s%s%s%s is deprecated; use %s\n", cmd ? "rein " : "",
            cmd ? cmd : "", cmd ? ": " : "", old, now);
}

/* The alias entry for a, or NULL. */
static const struct cli_alias *alias_of(const struct cli_args *ca, const char *a)
{
    for (size_t k = 0; ca->aliases && ca->aliases[k].old; k++) {
        if (strcmp(a, ca->aliases[k].old) == 0)
            return &ca->aliases[k];
    }
    return NULL;
}

int cli_read_stdin(char **text, size_t *len)
{
    size_t cap = 0, used = 0, n;
    char *buf = NULL, *grown;

    *text = NULL;
    *len = 0;
    for (;;) {
        if (used + 1 >= cap) {
            cap = cap ? cap * 2 : 4096;
            if (cap > STDIN_MAX_BYTES * 2 || !(grown = rein_realloc(buf, cap))) {
                rein_free(buf);
                return cli_usage_error("stdin is larger than %zu MiB or memory ran out",
                                       STDIN_MAX_BYTES >> 20);
            }
            buf = grown;
        }
        n = fread(buf + used, 1, cap - used - 1, stdin);
        used += n;
        if (n == 0)
            break;
    }
    if (ferror(stdin) || used > STDIN_MAX_BYTES) {
        rein_free(buf);
        return cli_usage_error("cannot read stdin%s%s", ferror(stdin) ? ": " : "",
                               ferror(stdin) ? strerror(errno) : " (larger than 16 MiB)");
    }
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return CLI_EXIT_OK;
}

/* Reads stdin whole for "-" (kept in stdin_text until cli_args_release). */
static int read_stdin(const struct cli_args *ca, bool text, const char **out)
{
    size_t used = 0;
    int rc;

    if (stdin_text)
        return cli_usage_error("%s: only one argument can be read from stdin", ca->name);
    rc = cli_read_stdin(&stdin_text, &used);
    if (rc)
        return rc;
    /* A text typed or piped ends with a newline that is not part of it. */
    while (text && used > 0 && (stdin_text[used - 1] == '\n' || stdin_text[used - 1] == '\r'))
        stdin_text[--used] = '\0';
    *out = stdin_text;
    return CLI_EXIT_OK;
}

int cli_text_check(const char *cmd, const char *what, const char *text, size_t len)
{
    size_t good = rein_utf8_valid_prefix(text, len);

    if (good == len)
        return CLI_EXIT_OK;
    return cli_usage_error("%s%s%s: not valid UTF-8 at byte %zu", cmd ? cmd : "", cmd ? ": " : "",
                           what, good + 1);
}

/* One option (argv[*i], its value inline after '=' or in the next argument). */
static int take_option(const struct cli_args *ca, int argc, char **argv, int *i, void *opts,
                       struct cli_setup *s)
{
    char name[64];
    const char *a = argv[*i], *inline_value = NULL, *value;
    const struct cli_alias *al;
    size_t len = strlen(a);

    if (a[1] == '-' && strchr(a, '=')) {
        len = (size_t)(strchr(a, '=') - a);
        inline_value = a + len + 1;
    }
    if (len >= sizeof(name))
        return unknown_option(ca, a);
    memcpy(name, a, len);
    name[len] = '\0';
    al = alias_of(ca, name);
    if (al && al->now) {
        if (!al->short_form)
            cli_deprecated(ca->name, name, al->now);
        snprintf(name, sizeof(name), "%s", al->now);
    }
    if (shared_switch(ca, name) || listed(ca->switches, name)) {
        if (inline_value)
            return cli_usage_error("%s: %s takes no value", ca->name, name);
        if (shared_switch(ca, name)) {
            take_switch(s, name);
            return CLI_EXIT_OK;
        }
        return ca->option(opts, name, NULL);
    }
    if (!shared_valued(ca, name) && !listed(ca->valued, name) && !al)
        return unknown_option(ca, a);
    if (inline_value) {
        value = inline_value;
    } else if (*i + 1 < argc) {
        value = argv[++*i];
    } else {
        return cli_usage_error("%s: %s needs a value (see rein %s --help)", ca->name, name,
                               ca->name);
    }
    /* A command that lists a shared name itself (verify's old --config) decides first. */
    if (listed(ca->valued, name) || !shared_valued(ca, name))
        return ca->option(opts, name, value);
    if (strcmp(name, "--config") == 0) {
        s->config = value;
        s->config_origin = NULL;
        return CLI_EXIT_OK;
    }
    return cli_setup_option(s, name, value);
}

int cli_args_parse(const struct cli_args *ca, int argc, char **argv, void *opts,
                   struct cli_setup *s, const char **pos, unsigned *npos)
{
    unsigned n = 0;
    bool options = true;

    cli_setup_init(s);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (options && strcmp(a, "--") == 0) {
            options = false;
            continue;
        }
        if (options && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            ca->usage(stdout);
            return CLI_ARGS_HELP;
        }
        if (options && a[0] == '-' && a[1] != '\0') {
            rc = take_option(ca, argc, argv, &i, opts, s);
            if (rc)
                return rc;
            continue;
        }
        if (n >= ca->max_pos) {
            if (ca->max_pos == 0)
                return cli_usage_error("%s: unexpected argument '%s' (see rein %s --help)",
                                       ca->name, a, ca->name);
            if (ca->max_pos == 1)
                return cli_usage_error("%s: one %s at a time, but '%s' came too (quote the %s)",
                                       ca->name, ca->positional, a, ca->positional);
            return cli_usage_error("%s: unexpected argument '%s' (see rein %s --help)", ca->name, a,
                                   ca->name);
        }
        pos[n++] = a;
    }
    if (n < ca->min_pos) {
        /* Nothing at all: the usage, as git does; some of it: what is missing. */
        if (n > 0)
            return cli_usage_error("%s: need %s (see rein %s --help)", ca->name, ca->positional,
                                   ca->name);
        ca->usage(stderr);
        return CLI_EXIT_USAGE;
    }
    for (unsigned k = 0; k < n; k++) {
        bool is_path = (ca->path_pos >> k) & 1u;
        int rc;
        if ((ca->stdin_pos >> k) & 1u && strcmp(pos[k], "-") == 0) {
            rc = read_stdin(ca, !((ca->json_pos >> k) & 1u), &pos[k]);
            if (rc)
                return rc;
        }
        if (!is_path && (rc = cli_text_check(ca->name, ca->positional ? ca->positional : "argument",
                                             pos[k], strlen(pos[k]))) != CLI_EXIT_OK)
            return rc;
    }
    if (npos)
        *npos = n;
    return cli_config_load(s->config, s->config_origin);
}

/* ---- subcommands ---- */

int cli_dispatch(const char *cmd, const struct cli_command *subs, void (*usage)(FILE *out),
                 int argc, char **argv)
{
    const char *names[MAX_NAMES];
    size_t n = 0;
    const char *near;

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; subs[i].name; i++) {
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run(argc - 1, argv + 1);
        if (n < MAX_NAMES)
            names[n++] = subs[i].name;
    }
    near = rein_suggest(argv[1], names, n);
    if (near)
        return cli_usage_error("%s: '%s' is not a %s command (did you mean '%s'?)", cmd, argv[1],
                               cmd, near);
    return cli_usage_error("%s: '%s' is not a %s command (see rein %s --help)", cmd, argv[1], cmd,
                           cmd);
}

/* ---- values ---- */

bool cli_parse_number(const char *text, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    long long v;

    if (!text || !*text)
        return false;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool cli_parse_duration(const char *text, int64_t lo, int64_t hi, int64_t *ms)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char *end = NULL;
    double v;

    if (!text || !*text || !((*text >= '0' && *text <= '9') || *text == '.'))
        return false;
    errno = 0;
    v = strtod(text, &end);
    if (errno || !isfinite(v) || v < 0)
        return false;
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        double total;
        if (strcmp(end, units[u].unit) != 0)
            continue;
        total = v * units[u].ms;
        if (total < (double)lo || total > (double)hi || total != floor(total))
            return false;
        *ms = (int64_t)total;
        return true;
    }
    return false;
}

int cli_duration_error(const char *cmd, const char *flag, const char *value)
{
    return cli_usage_error("%s: %s takes a duration: milliseconds (1500) or a number with a unit "
                           "(250ms, 30s, 2m, 1h), not '%s'",
                           cmd, flag, value);
}
