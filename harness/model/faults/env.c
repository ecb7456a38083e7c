/* What fault descriptors share when they touch the disks at rest: paths
 * resolved to disks, one call per distinct disk, firing counts, located
 * errors, and quoted strings for the writer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "model/fault.h"

struct ckh_simfs *ckh_fault_resolve(const struct ckh_fault_env *env, int node, const char *path,
                                    char *dpath, size_t n)
{
    const struct ckh_scn_job *job = &env->sc->job;
    size_t best = (size_t)-1, best_len = 0;
    for (size_t d = 0; d < job->ndisks; d++) {
        const char *m = job->disks[d].mount;
        size_t ml = strlen(m);
        bool root = ml == 1 && m[0] == '/';
        if (!root && (strncmp(path, m, ml) != 0 || (path[ml] != '/' && path[ml] != '\0')))
            continue;
        if (best == (size_t)-1 || ml > best_len) {
            best = d;
            best_len = root ? 0 : ml;
        }
    }
    if (best == (size_t)-1)
        return NULL;
    const char *rest = path + best_len;
    snprintf(dpath, n, "%s", rest[0] ? rest : "/");
    return env->disks[best * (size_t)env->nnodes + (size_t)(node < 0 ? 0 : node)];
}

int ckh_fault_for_each_disk(struct ckh_fault_env *env, int node, const char *path,
                            int (*fn)(struct ckh_fault_env *env, struct ckh_simfs *d,
                                      const char *dpath, const void *arg),
                            const void *arg)
{
    struct ckh_simfs *seen = NULL;
    int rc = 0;
    for (int i = 0; i < env->nnodes; i++) {
        if (node >= 0 && i != node)
            continue;
        char dpath[CKH_PATH_MAX];
        struct ckh_simfs *d = ckh_fault_resolve(env, i, path, dpath, sizeof dpath);
        if (!d)
            return ckh_errf(env->err, env->errlen, CKH_EINVAL, "path %s is on no disk", path);
        if (d == seen)
            continue; /* a shared disk: once */
        seen = d;
        if ((rc = fn(env, d, dpath, arg)) != 0)
            return rc;
    }
    return 0;
}

void ckh_fault_hit(struct ckh_fault_env *env)
{
    if (env->fired)
        (*env->fired)++;
}

int ckh_fault_errf(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int code,
                   const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    ckh_verrf(msg, sizeof msg, code, fmt, ap);
    va_end(ap);
    return ckh_errf(env->err, env->errlen, code, "%d:%d: %s", f->line, f->column, msg);
}

void ckh_fault_write_str(FILE *out, const char *key, const char *s)
{
    fprintf(out, "    %s: \"", key);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputs("\"\n", out);
}

int ckh_fault_store_change(struct ckh_fault_env *env, const struct ckh_scn_fault *f, const char *path, bool corrupt,
                           uint64_t off)
{
    const char *name = corrupt ? "s3-corrupt" : "s3-expire";
    if (!env->store)
        return ckh_fault_errf(env, f, CKH_EINVAL, "'do: %s' needs job.object_store", name);
    const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;
    char bucket[64];
    if (!slash || slash - path - 1 >= (ptrdiff_t)sizeof bucket || slash[1] == '\0')
        return ckh_fault_errf(env, f, CKH_EINVAL, "%s %s: expected /BUCKET/KEY", name, path);
    memcpy(bucket, path + 1, (size_t)(slash - path - 1));
    bucket[slash - path - 1] = '\0';
    int rc = corrupt ? ckh_objstore_corrupt(env->store, bucket, slash + 1, off)
                     : ckh_objstore_expire(env->store, bucket, slash + 1);
    if (rc == 0)
        ckh_fault_hit(env);
    if (rc == 0 || rc == CKH_S3_NO_SUCH_KEY)
        return 0; /* nothing there to change */
    return ckh_fault_errf(env, f, rc < 0 ? rc : CKH_EINVAL, "%s %s: %s", name, path,
                          rc < 0 ? ckh_strerror(rc) : ckh_s3_err_message(rc));
}
