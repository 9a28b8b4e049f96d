/*
 * Google Vertex AI's address and credentials, shared by the two presets that reach a
 * publisher's models there: `vertex` (Gemini, publishers/google, the gemini wire) and
 * `vertex-anthropic` (Claude, publishers/anthropic, the anthropic wire's Vertex form in
 * anthropic.c; docs/decisions/0104).
 *
 * Both take a bearer token: the configured key or the preset's variable (GOOGLE_ACCESS_TOKEN),
 * else Application Default Credentials (gcpcreds.c). The base URL, unless one is configured
 * (a test, a proxy), is made from the project and the region:
 * https://REGION-aiplatform.googleapis.com/v1/projects/PROJECT/locations/REGION/publishers/P,
 * and for the region "global" the host has no region prefix. Each preset names where its
 * project and region come from, as the tools its users already run read them.
 */
#include "provider_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * Where one preset's project and region come from. The project is the first variable of
 * project_env that is set, else the credentials file's when file_first says so (Claude Code
 * ranks GOOGLE_APPLICATION_CREDENTIALS's file above its own variable), else the first of
 * project_late, else the credentials file's.
 */
struct vertex_place {
    const char *preset;
    const char *publisher;
    const char *const *project_env;
    const char *const *project_late; /* may be NULL */
    const char *const *region_env;
    const char *default_region;
    bool file_first;
};

static const char *first_env(const char *const *names)
{
    for (size_t i = 0; names && names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && v[0])
            return v;
    }
    return NULL;
}

/* The project for pl, the credentials g (may be NULL) read last. Borrowed; NULL: none. */
static const char *vertex_project(const struct vertex_place *pl, const struct rein__gcp *g)
{
    const char *v = first_env(pl->project_env);
    const char *named = getenv("GOOGLE_APPLICATION_CREDENTIALS");

    if (!v && g && pl->file_first && named && named[0])
        v = rein__gcp_project(g);
    if (!v)
        v = first_env(pl->project_late);
    if (!v && g)
        v = rein__gcp_project(g);
    return v;
}

/* The base URL made from the project and the region (new; NULL when memory is exhausted). */
static char *vertex_base(const struct vertex_place *pl, const char *project, const char *region)
{
    bool global = strcmp(region, "global") == 0;

    return rein_asprintf("https://%s%saiplatform.googleapis.com/v1/projects/%s/locations/%s/"
                         "publishers/%s",
                         global ? "" : region, global ? "" : "-", project, region, pl->publisher);
}

static rein_err vertex_setup(rein_provider *p, const struct vertex_place *pl, rein_error *err)
{
    const char *env = p->cfg.api_key_env ? p->cfg.api_key_env : p->cfg.preset->key_env;
    const char *tok = env ? getenv(env) : NULL;
    const char *project, *region;

    /* Without a token given, Application Default Credentials (gcpcreds.c), as Google's
     * libraries: a token from the credentials file, fetched again before it expires. */
    if (!p->cfg.api_key && (!tok || !tok[0])) {
        rein_err rc = rein__gcp_load(&p->gcp, err);
        if (rc && rc != REIN_ENOTFOUND)
            return rc;
    }
    if (!p->cfg.base_url) {
        project = vertex_project(pl, p->gcp);
        region = first_env(pl->region_env);
        if (!project)
            return rein_error_set(err, REIN_EINVAL,
                                  "the %s provider needs a project: set %s%s%s (and %s) or a "
                                  "base URL ending in /publishers/%s",
                                  pl->preset, pl->project_env[0], pl->project_late ? " or " : "",
                                  pl->project_late ? pl->project_late[0] : "", pl->region_env[0],
                                  pl->publisher);
        p->cfg.base_url = vertex_base(pl, project, region ? region : pl->default_region);
        if (!p->cfg.base_url)
            return REIN_ENOMEM;
        /* Google's own address: a token is needed (http_setup lets a configured base go
         * without one, for proxies). */
        if (!p->cfg.api_key && (!tok || !tok[0]) && !p->gcp)
            return rein_error_set(err, REIN_EINVAL,
                                  "the %s provider needs an access token: set %s (gcloud auth "
                                  "print-access-token) or REIN_API_KEY, or Application Default "
                                  "Credentials (GOOGLE_APPLICATION_CREDENTIALS, or gcloud auth "
                                  "application-default login)",
                                  pl->preset, env ? env : "GOOGLE_ACCESS_TOKEN");
    }
    return rein__http_setup(p, err);
}

/* Gemini: GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION, as Google's Gen AI SDKs read them. */
rein_err rein__vertex_open(rein_provider *p, rein_error *err)
{
    static const char *const project[] = {"GOOGLE_CLOUD_PROJECT", NULL};
    static const char *const region[] = {"GOOGLE_CLOUD_LOCATION", NULL};
    static const struct vertex_place pl = {"vertex", "google",      project, NULL,
                                           region,   "us-central1", false};

    return vertex_setup(p, &pl, err);
}

/*
 * Claude: as Claude Code finds them (its Vertex AI page). The project is GCLOUD_PROJECT or
 * GOOGLE_CLOUD_PROJECT, else the file GOOGLE_APPLICATION_CREDENTIALS names, else
 * ANTHROPIC_VERTEX_PROJECT_ID, else gcloud's credentials file; the region CLOUD_ML_REGION (the
 * Anthropic SDKs' variable), else GOOGLE_CLOUD_LOCATION, else us-east5, Claude Code's default.
 */
rein_err rein__vertex_anthropic_open(rein_provider *p, rein_error *err)
{
    static const char *const project[] = {"GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", NULL};
    static const char *const late[] = {"ANTHROPIC_VERTEX_PROJECT_ID", NULL};
    static const char *const region[] = {"CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION", NULL};
    static const struct vertex_place pl = {"vertex-anthropic", "anthropic", project, late, region,
                                           "us-east5",         true};

    return vertex_setup(p, &pl, err);
}
