/* Tiny plugins of every kind for the loader's tests (tests/test_plugin.c):
 * one source, built once per (kind, variant) by CMake as
 * libpl_<kind>_<variant>.so with PL_KIND (0 backend, 1 workload, 2 saver)
 * and PL_VARIANT defined. Nothing here is ever called except the entry
 * point; the methods exist only so that a table can be complete.
 *
 * Variants:
 *   PL_GOOD       a valid table
 *   PL_BAD_ABI    table version 7
 *   PL_NO_ENTRY   exports no entry point (another symbol instead)
 *   PL_NO_METHOD  a required method is NULL (the last one the loader checks)
 *   PL_NO_NAME    the table's name is ""
 *   PL_SEGV       the entry point raises SIGSEGV
 *   PL_HANG       the entry point never returns
 *   PL_CTOR_SEGV  a constructor raises SIGSEGV while the library loads
 *   PL_USES_API   valid, and refers to the public API a plugin may call
 *   PL_CTOR_HANG  a constructor never returns while the library loads
 *                 (records, savers, background tasks, collectives, clock,
 *                 atomic saves): RTLD_NOW resolves each from the host, so
 *                 the load fails if the host does not export one
 */
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

#include "ckh/atomic.h"
#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/plugin.h"
#include "ckh/record.h"
#include "ckh/saver.h"
#include "ckh/workload.h"

#define PL_GOOD 0
#define PL_BAD_ABI 1
#define PL_NO_ENTRY 2
#define PL_NO_METHOD 3
#define PL_NO_NAME 4
#define PL_SEGV 5
#define PL_HANG 6
#define PL_CTOR_SEGV 7
#define PL_USES_API 8
#define PL_CTOR_HANG 9

/* Methods some variants leave out of the table, and the entry point's
 * prologue, which PL_NO_ENTRY never calls. */
#define PL_MAYBE_UNUSED static __attribute__((unused))

#if PL_VARIANT == PL_BAD_ABI
#define PL_VERSION 7
#else
#define PL_VERSION 1
#endif
#if PL_VARIANT == PL_NO_NAME
#define PL_NAME ""
#else
#define PL_NAME "pl_test"
#endif

#if PL_VARIANT == PL_CTOR_SEGV
__attribute__((constructor)) static void pl_ctor(void)
{
    raise(SIGSEGV);
}
#endif

#if PL_VARIANT == PL_CTOR_HANG
__attribute__((constructor)) static void pl_ctor(void)
{
    for (;;)
        pause();
}
#endif

#if PL_VARIANT == PL_USES_API
/* Where the entry point stores the API's addresses (so none is optimized away). */
__attribute__((visibility("default"))) const void *volatile pl_api[16];
#endif

/* What the entry point does before it returns its table. */
PL_MAYBE_UNUSED void pl_enter(void)
{
#if PL_VARIANT == PL_USES_API
    const void *api[] = {
        (const void *)ckh_record_step,  (const void *)ckh_record_save,
        (const void *)ckh_record_final, (const void *)ckh_record_jsonl_open,
        (const void *)ckh_saver_create, (const void *)ckh_saver_commit,
        (const void *)ckh_node_spawn,   (const void *)ckh_node_join,
        (const void *)ckh_coll_barrier, (const void *)ckh_clock_now_ns,
        (const void *)ckh_rand_stream_seed, (const void *)ckh_atomic_init,
        (const void *)ckh_adir_create,  (const void *)ckh_wl_option_error,
        (const void *)ckh_node_phase,   (const void *)&ckh_atomic_dir_saver_ops,
    };
    for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++)
        pl_api[i] = api[i];
#elif PL_VARIANT == PL_SEGV
    raise(SIGSEGV);
#elif PL_VARIANT == PL_HANG
    for (volatile int spin = 1; spin;)
        ;
#endif
}

#if PL_KIND == 0 /* ---- backend ---- */
static int pl_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    (void)cfg;
    (void)out;
    return CKH_EUNSUPPORTED;
}
static void pl_close(struct ckh_backend *b) { (void)b; }
static int pl_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    (void)b, (void)node, (void)epoch, (void)ws, (void)names, (void)count;
    return CKH_EUNSUPPORTED;
}
static int pl_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                   const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    (void)b, (void)node, (void)epoch, (void)ws, (void)names, (void)count, (void)flags,
        (void)loaded;
    return CKH_EUNSUPPORTED;
}
PL_MAYBE_UNUSED int pl_list(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count)
{
    (void)b, (void)node, (void)epochs, (void)count;
    return CKH_EUNSUPPORTED;
}
static const struct ckh_backend_ops pl_ops = {
    .version = PL_VERSION, .name = PL_NAME, .open = pl_open, .close = pl_close, .save = pl_save,
    .load = pl_load,
#if PL_VARIANT != PL_NO_METHOD
    .list_epochs = pl_list,
#endif
};
#define PL_OPS_TYPE struct ckh_backend_ops
#define PL_ENTRY ckh_backend_plugin_v1

#elif PL_KIND == 1 /* ---- workload ---- */
static int pl_create(const struct ckh_workload_job *job, void **inst, char *msg, size_t msglen)
{
    (void)job, (void)inst, (void)msg, (void)msglen;
    return CKH_EUNSUPPORTED;
}
static void pl_destroy(void *inst) { (void)inst; }
static int pl_node_count(void *inst) { (void)inst; return 1; }
static int pl_node(void *inst, int i, char *name, size_t namelen, int *rank)
{
    (void)inst, (void)i, (void)name, (void)namelen, (void)rank;
    return CKH_EUNSUPPORTED;
}
PL_MAYBE_UNUSED int pl_node_main(struct ckh_env *env, void *inst, int i)
{
    (void)env, (void)inst, (void)i;
    return CKH_EUNSUPPORTED;
}
static const struct ckh_workload_ops pl_ops = {
    .version = PL_VERSION, .name = PL_NAME, .description = "loader test", .create = pl_create,
    .destroy = pl_destroy, .node_count = pl_node_count, .node = pl_node,
#if PL_VARIANT != PL_NO_METHOD
    .node_main = pl_node_main,
#endif
};
#define PL_OPS_TYPE struct ckh_workload_ops
#define PL_ENTRY ckh_workload_plugin_v1

#else /* ---- saver ---- */
static int pl_create(struct ckh_env *env, const struct ckh_saver_config *cfg,
                     struct ckh_saver **out)
{
    (void)env, (void)cfg, (void)out;
    return CKH_EUNSUPPORTED;
}
static void pl_destroy(struct ckh_saver *s) { (void)s; }
static int pl_prepare(struct ckh_saver *s, bool force, char *buf, size_t n)
{
    (void)s, (void)force, (void)buf, (void)n;
    return CKH_EUNSUPPORTED;
}
static int pl_commit(struct ckh_saver *s, const char *folder)
{
    (void)s, (void)folder;
    return CKH_EUNSUPPORTED;
}
PL_MAYBE_UNUSED int pl_latest(struct ckh_saver *s, char *buf, size_t n)
{
    (void)s, (void)buf, (void)n;
    return CKH_ENOTFOUND;
}
static const struct ckh_saver_ops pl_ops = {
    .version = PL_VERSION, .name = PL_NAME, .create = pl_create, .destroy = pl_destroy,
    .prepare = pl_prepare, .commit = pl_commit,
#if PL_VARIANT != PL_NO_METHOD
    .latest = pl_latest,
#endif
};
#define PL_OPS_TYPE struct ckh_saver_ops
#define PL_ENTRY ckh_saver_plugin_v1
#endif

#if PL_VARIANT == PL_NO_ENTRY
/* Some other exported function, so the library itself loads. */
__attribute__((visibility("default"))) const PL_OPS_TYPE *pl_not_the_entry_point(void);
__attribute__((visibility("default"))) const PL_OPS_TYPE *pl_not_the_entry_point(void)
{
    return &pl_ops;
}
#else
__attribute__((visibility("default"))) const PL_OPS_TYPE *PL_ENTRY(void)
{
    pl_enter();
    return &pl_ops;
}
#endif
