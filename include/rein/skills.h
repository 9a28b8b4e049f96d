/*
 * rein/skills.h: the built-in skills (docs/DESIGN.md [skill-host]) and their configuration.
 *
 *   echo          {text} → the text
 *   file_search   {query, root_dir?, limit? = 20, regex? = false, glob?, case_sensitive? = false}
 *                 search file contents under the allowed roots: file, line number and line;
 *                 binary and oversized files skipped and counted; a root_dir outside the roots
 *                 (.., an absolute path elsewhere, a symbolic link that leads out) is denied;
 *                 symbolic links that lead outside are skipped while walking, and counted
 *   calculator    {op: mean|sum|min|max|median|stdev|count|product, values: [number]} or
 *                 {expression: "2*(3+4)/5"}, parsed by rein (no eval)
 *   log_transform {path | text, format: auto|json|logfmt|syslog|apache|plain, level?, match?,
 *                 fields?, limit?}: lines parsed into records, filtered, counted by level;
 *                 unparsable lines counted and listed
 *
 * The runners for external skills, "process" (a program, JSON on stdin and stdout) and "http"
 * (POST to a URL), join a registry with rein_skills_register_runners(), before skill folders
 * are loaded into it (rein_registry_load_dir).
 *
 * Threading: registering happens while the registry is being filled; the skills themselves
 * run on many threads at once.
 */
#ifndef REIN_SKILLS_H
#define REIN_SKILLS_H

#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rein_skills_config {
    /* Folders file_search and log_transform may read (borrowed, NULL-terminated list; each
     * must exist). NULL or empty: the current directory. A relative root_dir or path is taken
     * relative to the first root. */
    const char *const *roots;
    /* Files larger than this are skipped by file_search and refused by log_transform.
     * 0: 16 MiB. */
    size_t max_file_bytes;
};

/*
 * Registers echo, file_search, calculator and log_transform in reg. cfg may be NULL (the
 * defaults above). REIN_ENOTFOUND when a root does not exist (err names it), REIN_EEXIST when
 * one of the names is already registered.
 */
REIN_EXTERN rein_err rein_skills_register_builtins(rein_registry *reg,
                                                   const struct rein_skills_config *cfg,
                                                   rein_error *err) REIN_WUR;

/*
 * Registers the runner kinds "process" and "http" in reg (rein_registry_add_runner_kind), so
 * manifests that name them can be added. REIN_EEXIST when one of them is already there.
 */
REIN_EXTERN rein_err rein_skills_register_runners(rein_registry *reg, rein_error *err) REIN_WUR;

/*
 * The allowed roots as file_search and log_transform check them, for other readers of files
 * (the MCP server's file resources). A path is allowed when it lies under a root both as
 * written ("." and ".." folded, before the file system is touched) and after symbolic links
 * are followed. Roots are resolved once, when made. Safe for many threads once made.
 */
typedef struct rein_skills_roots rein_skills_roots;
/* New roots from cfg (cfg->roots NULL or empty: the current folder). NULL with err set when a
 * root does not exist (REIN_ENOTFOUND) or memory is exhausted. */
REIN_EXTERN rein_skills_roots *rein_skills_roots_new(const struct rein_skills_config *cfg,
                                                     rein_error *err);
/* NULL is a no-op. */
REIN_EXTERN void rein_skills_roots_free(rein_skills_roots *r);
REIN_EXTERN size_t rein_skills_roots_count(const rein_skills_roots *r);
/* Root i's real path (borrowed, valid while r is). */
REIN_EXTERN const char *rein_skills_roots_at(const rein_skills_roots *r, size_t i);
/*
 * The real path of path (absolute, or relative to the first root) when it is allowed; *real
 * is new (rein_free it). REIN_EDENIED outside the roots (also through a symbolic link),
 * REIN_ENOTFOUND when it does not exist, REIN_EINVALID when it is too long.
 */
REIN_EXTERN rein_err rein_skills_roots_resolve(const rein_skills_roots *r, const char *path,
                                               char **real, rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_SKILLS_H */
