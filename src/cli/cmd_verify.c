/*
 * `rein verify`: runs the verification protocols of rein-verify.yaml (or --protocols FILE) in
 * the current directory, checks the claims of a text when --claims is given (against the
 * agent's ledger with --ledger, and with the model's list of claims too with --claims-judge),
 * and prints a table and the verdict (or, with --json, the report as JSON).
 *
 * Exit codes: 0 SUCCESS, 1 FAILED, 3 SUCCESS_WITH_WARNINGS, 2 an unusable configuration or
 * command line. Everything here goes through the public <rein/verify.h> API.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_EXIT_WARNINGS 3
#define CLAIMS_MAX_BYTES  ((size_t)4 << 20)
#define TAIL_LINES        12

struct verify_args {
    /* --config (rein's configuration), --json, the judges' model (--provider, --model,
     * --base-url) and --skills (tools claims may name) */
    struct cli_setup setup;
    const char *protocols;
    const char *claims;
    const char *ledger;
    const char *base;
    const char *goal;
    const char *judge_model;
    char *only_text;
    const char **only;
    enum rein_verify_mode mode;
    bool json, judge, claims_judge, init, force;
};

static void verify_usage(FILE *out)
{
    fprintf(
        out,
        "usage: rein verify [--protocols FILE] [--verify-mode minimal|standard|thorough|full]\n"
        "                   [--only NAME[,NAME...]] [--claims FILE|-] [--ledger FILE]\n"
        "                   [--base REV] [--claims-judge] [--skills DIR] [--goal TEXT]\n"
        "                   [--judge] [--judge-model M] [--provider P] [--model M]\n"
        "                   [--base-url URL] [--config FILE] [--json]\n"
        "       rein verify --init [--force]\n\n"
        "Runs the verification protocols (BUILD, LINT, TEST, FUNCTIONALITY, ARCHITECT and\n"
        "custom ones) declared in rein-verify.yaml (or .yml, .json) in the current\n"
        "directory, and prints each protocol's status, duration and counts and the verdict.\n\n"
        "  --protocols FILE     the protocol file to use\n"
        "  --verify-mode MODE   which layers run: minimal (BUILD, LINT), standard (+ TEST,\n"
        "                       FUNCTIONALITY, ARCHITECT), thorough (+ layer 3 and the review\n"
        "                       flag), full (everything)\n"
        "  --only NAMES         run just these protocols, whatever the mode and conditions\n"
        "  --claims FILE        check the claims in an agent's text (\"-\" reads stdin): tools\n"
        "                       that ran, files written or deleted, functions added, tests,\n"
        "                       build, lint or type checks passing (English and Chinese)\n"
        "  --ledger FILE        the agent's tool calls to check tool claims against: a JSON\n"
        "                       array of ledger entries, a `rein chat --json` result, or a\n"
        "                       saved plan; without it tool claims are unverifiable\n"
        "  --base REV           compare changes and claims with this revision instead of HEAD\n"
        "  --claims-judge       also ask the configured model (--provider, --model, --base-url\n"
        "                       or --config) to list the claims; rein checks each one itself\n"
        "  --skills DIR         skills whose tool names the claims may mention (besides the\n"
        "                       built-in ones and those in the ledger)\n"
        "  --goal TEXT          what was asked: the behaviour FUNCTIONALITY is judged against\n"
        "  --judge              judge FUNCTIONALITY and ARCHITECT without steps with the model\n"
        "                       of --provider/--model/--base-url/--config (or REIN_PROVIDER,\n"
        "                       REIN_MODEL, REIN_CONFIG; used whenever one is configured);\n"
        "                       without a model they are unverifiable; --judge-model M names\n"
        "                       the judge's model\n"
        "  --json               print the report as JSON\n"
        "  --config FILE        rein's configuration file (default REIN_CONFIG)\n"
        "  --init               look at the project (CMake, Make, npm/yarn/pnpm, TypeScript,\n"
        "                       ESLint, pytest/tox, ruff, cargo, go, Maven, Gradle, clang-tidy)\n"
        "                       and write rein-verify.yaml with the BUILD, TYPECHECK, LINT and\n"
        "                       TEST steps it implies; --force replaces an existing one\n"
        "Old spellings that still work, with a warning: --mode (--verify-mode), -c and\n"
        "--config with a protocol file (--protocols), --provider-config (--config).\n\n"
        "A minimal rein-verify.yaml:\n"
        "  protocols:\n"
        "    BUILD: {priority: P0, steps: [{command: make all, timeout: 300}]}\n"
        "    TEST:  {priority: P1, steps: [{command: make test, on_failure: retry}]}\n\n"
        "Exit status: 0 SUCCESS, 1 FAILED, 3 SUCCESS_WITH_WARNINGS, 2 usage or unusable\n"
        "configuration.\n");
}

/* Splits "TEST,LINT" into a NULL-terminated list pointing into a->only_text. */
static int split_only(struct verify_args *a, const char *text)
{
    size_t n = 1;
    char *p;

    rein_free(a->only_text);
    rein_free(a->only);
    a->only = NULL;
    a->only_text = rein_strdup(text);
    if (!a->only_text)
        return cli_usage_error("out of memory");
    for (const char *c = text; *c; c++)
        n += *c == ',';
    a->only = rein_calloc(n + 1, sizeof(*a->only));
    if (!a->only)
        return cli_usage_error("out of memory");
    n = 0;
    for (p = a->only_text; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p)
            a->only[n++] = p;
        p = comma ? comma + 1 : NULL;
    }
    if (n == 0)
        return cli_usage_error("--only needs protocol names, e.g. --only TEST,LINT");
    return CLI_EXIT_OK;
}

static int verify_option(void *opts, const char *flag, const char *val)
{
    struct verify_args *a = opts;

    if (!val) { /* --judge, --init, --force */
        a->judge |= strcmp(flag, "--judge") == 0;
        a->claims_judge |= strcmp(flag, "--claims-judge") == 0;
        a->init |= strcmp(flag, "--init") == 0;
        a->force |= strcmp(flag, "--force") == 0;
    } else if (strcmp(flag, "--protocols") == 0) {
        a->protocols = val;
    } else if (strcmp(flag, "--config") == 0) {
        /* --config once named the protocol file here; such a file still works that way. */
        if (cli_is_protocol_file(val)) {
            cli_deprecated("verify", "--config with a protocol file", "--protocols FILE");
            a->protocols = val;
        } else {
            a->setup.config = val;
            a->setup.config_origin = NULL;
        }
    } else if (strcmp(flag, "--claims") == 0) {
        a->claims = val;
    } else if (strcmp(flag, "--ledger") == 0) {
        a->ledger = val;
    } else if (strcmp(flag, "--base") == 0) {
        a->base = val;
    } else if (strcmp(flag, "--goal") == 0) {
        a->goal = val;
    } else if (strcmp(flag, "--judge-model") == 0) {
        a->judge_model = val;
        a->judge = true;
    } else if (strcmp(flag, "--only") == 0) {
        return split_only(a, val);
    } else if (!rein_verify_mode_parse(val, &a->mode)) {
        return cli_usage_error("verify: --verify-mode must be minimal, standard, thorough or "
                               "full, not '%s'",
                               val);
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct verify_args *a)
{
    static const char *const valued[] = {
        "--protocols", "--config", "--verify-mode", "--only",   "--claims",
        "--base",      "--goal",   "--judge-model", "--ledger", NULL};
    static const char *const switches[] = {"--judge", "--claims-judge", "--init", "--force", NULL};
    static const struct cli_alias aliases[] = {{"--mode", "--verify-mode", false},
                                               {"-c", "--protocols", false},
                                               {"--provider-config", "--config", false},
                                               {NULL, NULL, false}};
    static const struct cli_args args = {
        .name = "verify",
        .usage = verify_usage,
        .shared = CLI_OPT_JSON | CLI_OPT_MODEL | CLI_OPT_TOOLS,
        .valued = valued,
        .switches = switches,
        .aliases = aliases,
        .option = verify_option,
    };
    int rc = cli_args_parse(&args, argc, argv, a, &a->setup, NULL, NULL);

    a->json = a->setup.json;
    return rc == CLI_ARGS_HELP ? -1 : rc;
}

/* Reads the claims text (a file, or stdin for "-") into new memory. */
static char *read_claims(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf;

    if (!f) {
        cli_usage_error("verify: --claims %s: %s", path, strerror(errno));
        return NULL;
    }
    buf = rein_malloc(CLAIMS_MAX_BYTES + 1);
    if (buf) {
        *len = fread(buf, 1, CLAIMS_MAX_BYTES, f);
        buf[*len] = '\0';
    }
    if (f != stdin)
        fclose(f);
    if (!buf)
        cli_usage_error("verify: out of memory");
    return buf;
}

static void print_duration(FILE *out, const struct rein_verify_protocol_info *p)
{
    if (p->started_ms < 0)
        fprintf(out, "%-9s", "-");
    else
        fprintf(out, "%-9.2f", (double)p->duration_ms / 1000);
}

/* "3 passed, 1 failed of 4; 0 errors, 2 warnings", or the reason when it did not run. */
static void counts_text(const struct rein_verify_protocol_info *p, char *out, size_t n)
{
    const struct rein_verify_counts *c = &p->counts;
    size_t used = 0;

    out[0] = '\0';
    if (p->status == REIN_VERIFY_STATUS_SKIPPED || p->status == REIN_VERIFY_STATUS_NOT_RUN ||
        p->status == REIN_VERIFY_STATUS_UNVERIFIABLE) {
        snprintf(out, n, "%s", p->reason);
        return;
    }
    if (c->has_tests)
        used += (size_t)snprintf(out, n, "%lld passed, %lld failed, %lld skipped of %lld",
                                 (long long)c->passed, (long long)c->failed, (long long)c->skipped,
                                 (long long)c->total);
    if (c->has_diagnostics && used < n)
        used += (size_t)snprintf(out + used, n - used, "%s%lld errors, %lld warnings",
                                 used ? "; " : "", (long long)c->errors, (long long)c->warnings);
    if (c->has_coverage && used < n)
        used += (size_t)snprintf(out + used, n - used, "%scoverage %.1f%%", used ? "; " : "",
                                 c->coverage);
    if (!used)
        snprintf(out, n, "-");
}

static void print_tail(FILE *out, const char *tail)
{
    const char *start = tail + strlen(tail);
    int lines = 0;

    while (start > tail && (start[-1] == '\n' || start[-1] == ' '))
        start--;
    {
        const char *end = start;
        while (start > tail && lines < TAIL_LINES)
            lines += *--start == '\n';
        if (*start == '\n')
            start++;
        while (start < end) {
            const char *nl = memchr(start, '\n', (size_t)(end - start));
            size_t len = nl ? (size_t)(nl - start) : (size_t)(end - start);
            fprintf(out, "    | %.*s\n", (int)len, start);
            start += len + (nl ? 1 : 0);
        }
    }
}

static void print_table(FILE *out, const rein_verify_report *r)
{
    struct rein_verify_protocol_info p;

    fprintf(out, "%-15s %-4s %-8s %-9s %s\n", "PROTOCOL", "PRIO", "STATUS", "TIME(s)", "COUNTS");
    for (size_t i = 0; rein_verify_report_protocol(r, i, &p); i++) {
        char counts[300];
        const char *status = rein_verify_status_name(p.status);
        counts_text(&p, counts, sizeof(counts));
        fprintf(out, "%-15s %-4s %-8s ", p.name, rein_verify_priority_name(p.priority),
                strcmp(status, "not_run") == 0 ? "not run" : status);
        print_duration(out, &p);
        fprintf(out, "%s%s\n", counts, p.for_claim ? " (run to check a claim)" : "");
        if (p.status == REIN_VERIFY_STATUS_FAILED) {
            fprintf(out, "    why: %s\n", p.reason);
            print_tail(out, p.output_tail);
        } else if (p.status == REIN_VERIFY_STATUS_PASSED && p.reason[0]) {
            fprintf(out, "    note: %s\n", p.reason);
        }
    }
}

static void print_claims(FILE *out, const rein_verify_report *r)
{
    const rein_claims *cl = rein_verify_report_claims(r);
    const struct rein_claim *c;

    if (!cl)
        return;
    fprintf(out, "\nCLAIMS (%zu)\n", rein_claims_count(cl));
    for (size_t i = 0; (c = rein_claims_get(cl, i)); i++)
        fprintf(out, "  %-12s %-14s %s: \"%s\"\n               %s\n",
                rein_claim_status_name(c->status), rein_claim_kind_name(c->kind), c->subject,
                c->text, c->evidence);
}

static void print_footer(FILE *out, const rein_verify_report *r)
{
    json_t *j = rein_verify_report_json(r);
    json_t *notes = json_object_get(j, "notes"), *review = json_object_get(j, "review");
    size_t i;
    json_t *n;

    json_array_foreach(notes, i, n)
    {
        fprintf(out, "note: %s\n", json_string_value(n));
    }
    if (json_is_true(json_object_get(review, "required"))) {
        fprintf(out, "review: a person should look at this change:");
        json_array_foreach(json_object_get(review, "reasons"), i, n)
        {
            fprintf(out, "%s %s", i ? ";" : "", json_string_value(n));
        }
        fputc('\n', out);
    }
    json_decref(j);
    fprintf(out, "\nverdict: %s (confidence %.2f, %s, mode %s)\n",
            rein_verify_verdict_name(rein_verify_report_verdict(r)),
            rein_verify_report_confidence(r),
            rein_verify_confidence_label(rein_verify_report_confidence(r)),
            rein_verify_mode_name(rein_verify_report_mode(r)));
}

static void on_event(enum rein_verify_event ev, const struct rein_verify_protocol_info *info,
                     void *userdata)
{
    (void)userdata;
    if (ev == REIN_VERIFY_EVENT_START)
        fprintf(stderr, "verify: running %s ...\n", info->name);
    else
        fprintf(stderr, "verify: %s %s\n", info->name, rein_verify_status_name(info->status));
}

static rein_verify_config *load_config(const struct verify_args *a, rein_error *err)
{
    rein_verify_config *cfg;

    if (a->protocols)
        return rein_verify_config_load(a->protocols, err);
    cfg = rein_verify_config_find(NULL, err);
    /* Claims about files can be checked without any protocol. */
    if (!cfg && err->code == REIN_ENOTFOUND && a->claims)
        cfg = rein_verify_config_new_empty();
    return cfg;
}

/* The judge's model, when one is configured (flags, environment, provider file); else NULL,
 * and the judged protocols are unverifiable. */
static rein_provider *judge_provider(const struct verify_args *a)
{
    rein_provider *p;
    rein_error err = {0};

    if (!cli_provider_configured(&a->setup)) {
        if (a->judge)
            fprintf(stderr, "rein: verify: --judge, but no model is configured (--provider and "
                            "--model, REIN_PROVIDER and REIN_MODEL, or REIN_CONFIG): "
                            "FUNCTIONALITY and ARCHITECT without steps are unverifiable\n");
        return NULL;
    }
    rein_error_clear(&err);
    p = cli_provider_new(&a->setup, a->judge_model, &err);
    if (!p)
        fprintf(stderr,
                "rein: verify: the judge's model cannot be used (%s): judged "
                "protocols are unverifiable\n",
                err.msg);
    return p;
}

/* The ledger of --ledger in any of its three shapes (new), or NULL after saying why. */
static json_t *read_ledger(const char *path)
{
    rein_error err;
    json_t *doc, *ledger = NULL;

    rein_error_clear(&err);
    doc = rein_json_load_file(path, &err);
    if (!doc) {
        cli_usage_error("verify: --ledger %s: %s", path, err.msg[0] ? err.msg : "cannot read it");
        return NULL;
    }
    if (rein_claims_ledger_from_json(doc, &ledger, &err) != REIN_OK)
        cli_usage_error("verify: --ledger %s: %s", path, err.msg);
    json_decref(doc);
    return ledger;
}

/* --claims-judge: the claims the model lists (new), or NULL (said why on stderr). */
static rein_claims *judge_claims(const struct verify_args *a, const char *claims, size_t len)
{
    rein_claims *more = rein_claims_new();
    rein_provider *p;
    rein_error err;
    size_t n = 0;

    rein_error_clear(&err);
    p = more ? cli_provider_new(&a->setup, NULL, &err) : NULL;
    if (!p || rein_claims_judge(p, claims, len, NULL, more, &n, &err) != REIN_OK) {
        fprintf(stderr,
                "rein: verify: --claims-judge: %s; checking the claims rein found "
                "itself\n",
                err.msg[0] ? err.msg : "out of memory");
        rein_claims_free(more);
        more = NULL;
    } else if (!a->json) {
        fprintf(stderr, "verify: the model listed %zu claim%s rein had not found\n", n,
                n == 1 ? "" : "s");
    }
    rein_provider_free(p);
    return more;
}

static int run(const struct verify_args *a, const char *claims, size_t claims_len)
{
    struct rein_verify_opts o = {.mode = a->mode,
                                 .only = a->only,
                                 .claims_text = claims,
                                 .claims_len = claims_len,
                                 .base = a->base,
                                 .goal = a->goal};
    rein_verify_report *report = NULL;
    rein_verify_config *cfg;
    rein_registry *reg = NULL;
    rein_claims *more = NULL;
    json_t *ledger = NULL;
    rein_error err = {0};
    rein_pool *pool;
    int code;

    rein_error_clear(&err);
    if (a->ledger && !(ledger = read_ledger(a->ledger)))
        return CLI_EXIT_USAGE;
    cfg = load_config(a, &err);
    /* the tools claims may name: the built-in ones, --skills, REIN_SKILLS_PATH */
    if (cfg && claims) {
        reg = cli_registry_new(&a->setup, &err);
        if (!reg) {
            rein_verify_config_free(cfg);
            cfg = NULL;
        }
    }
    if (!cfg) {
        cli_print_error(&err);
        json_decref(ledger);
        return CLI_EXIT_USAGE;
    }
    if (claims && a->claims_judge)
        more = judge_claims(a, claims, claims_len);
    o.ledger = ledger;
    o.registry = reg;
    o.claims_more = more;
    pool = rein_pool_new(0, &err);
    o.pool = pool;
    o.judge = judge_provider(a);
    if (!a->json && isatty(STDERR_FILENO))
        o.on_event = on_event;
    code = rein_verify_run(cfg, &o, &report, &err);
    rein_claims_free(more);
    json_decref(ledger);
    rein_registry_free(reg);
    if (code) {
        cli_print_error(&err);
        rein_pool_free(pool);
        rein_provider_free(o.judge);
        rein_verify_config_free(cfg);
        return code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    if (a->json) {
        json_t *j = rein_verify_report_json(report);
        if (!j)
            fprintf(stderr, "rein: verify: cannot write the report\n");
        cli_print_json(j);
        json_decref(j);
    } else {
        print_table(stdout, report);
        print_claims(stdout, report);
        print_footer(stdout, report);
    }
    switch (rein_verify_report_verdict(report)) {
    case REIN_VERIFY_SUCCESS:
        code = CLI_EXIT_OK;
        break;
    case REIN_VERIFY_SUCCESS_WITH_WARNINGS:
        code = CLI_EXIT_WARNINGS;
        break;
    default:
        code = CLI_EXIT_FAIL;
        break;
    }
    rein_verify_report_free(report);
    rein_pool_free(pool);
    rein_provider_free(o.judge);
    rein_verify_config_free(cfg);
    return code;
}

/* --init: writes rein-verify.yaml for the project in the current directory. */
static int init_protocols(const struct verify_args *a)
{
    static const char path[] = "rein-verify.yaml";
    rein_verify_project *pj;
    rein_verify_config *check;
    bool written;
    char *yaml;
    rein_error err = {0};
    FILE *f;

    rein_error_clear(&err);
    if (!a->force &&
        (access("rein-verify.yaml", F_OK) == 0 || access("rein-verify.yml", F_OK) == 0 ||
         access("rein-verify.json", F_OK) == 0))
        return cli_usage_error("verify: a protocol file is already here; --init --force "
                               "replaces it");
    pj = rein_verify_project_detect(NULL, &err);
    if (!pj) {
        cli_print_error(&err);
        return CLI_EXIT_FAIL;
    }
    yaml = rein_verify_project_yaml(pj);
    rein_verify_project_free(pj);
    if (!yaml)
        return cli_usage_error("verify: found nothing to check here (no CMakeLists.txt, "
                               "Makefile, package.json, pyproject.toml, tox.ini, Cargo.toml, "
                               "go.mod, pom.xml or build.gradle)");
    /* What is written must load: the same rules as any protocol file. */
    check = rein_verify_config_parse(yaml, strlen(yaml), path, &err);
    if (!check) {
        rein_free(yaml);
        cli_print_error(&err);
        return CLI_EXIT_FAIL;
    }
    rein_verify_config_free(check);
    f = fopen(path, "w");
    written = f && fputs(yaml, f) != EOF;
    if (f && fclose(f) != 0)
        written = false;
    if (!written) {
        rein_free(yaml);
        return cli_usage_error("verify: cannot write %s", path);
    }
    fputs(yaml, stdout);
    fprintf(stderr, "rein: wrote %s; run `rein verify` to check the project\n", path);
    rein_free(yaml);
    return CLI_EXIT_OK;
}

int cmd_verify(int argc, char **argv)
{
    struct verify_args a = {0};
    char *claims = NULL;
    size_t claims_len = 0;
    int code;

    code = parse_args(argc, argv, &a);

    if (code < 0) {
        code = CLI_EXIT_OK; /* --help */
        goto out;
    }
    if (code)
        goto out;
    if (a.init) {
        code = init_protocols(&a);
        goto out;
    }
    if ((a.ledger || a.claims_judge) && !a.claims) {
        code =
            cli_usage_error("verify: %s needs --claims", a.ledger ? "--ledger" : "--claims-judge");
        goto out;
    }
    if (a.claims_judge && !cli_provider_configured(&a.setup)) {
        code = cli_usage_error("verify: --claims-judge needs a model: --provider and --model (or "
                               "--config, REIN_CONFIG, REIN_PROVIDER)");
        goto out;
    }
    if (a.claims) {
        claims = read_claims(a.claims, &claims_len);
        if (!claims || cli_text_check("verify", "--claims", claims, claims_len) != CLI_EXIT_OK) {
            code = CLI_EXIT_USAGE;
            goto out;
        }
    }
    code = run(&a, claims, claims_len);
out:
    rein_free(claims);
    rein_free(a.only_text);
    rein_free(a.only);
    return code;
}
