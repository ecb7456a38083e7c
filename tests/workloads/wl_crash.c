/* A test workload plugin whose node program crashes (SIGSEGV with the
 * default action, as an unhandled invalid access ends a process, whatever
 * handlers a sanitizer build installed): ckh must report an error verdict
 * for the scenario, not die.
 *
 * Option: crash (bool, default true); false: the node writes nothing and
 * ends. For `ckh fuzz` it draws one node and crash true one time in four,
 * so that some seeds of a campaign crash their worker and the others
 * pass. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/workload.h"

static int create(const struct ckh_workload_job *job, void **out, char *msg, size_t msglen)
{
    bool crash = true;
    for (size_t i = 0; i < job->noptions; i++) {
        const struct ckh_wl_option *o = &job->options[i];
        if (strcmp(o->key, "crash") != 0 || o->type != CKH_WL_OPT_BOOL)
            return ckh_wl_option_error(msg, msglen, o, "expected crash (a bool)");
        crash = o->b;
    }
    bool *p = malloc(sizeof *p);
    if (!p)
        return CKH_ENOMEM;
    *p = crash;
    *out = p;
    return 0;
}

static void destroy(void *p)
{
    free(p);
}

static int node_count(void *p)
{
    (void)p;
    return 1;
}

static int node(void *p, int i, char *name, size_t n, int *rank)
{
    (void)p;
    snprintf(name, n, "node_%d", i);
    *rank = -1;
    return 0;
}

static int node_main(struct ckh_env *env, void *p, int i)
{
    (void)env, (void)i;
    if (!*(const bool *)p)
        return 0;
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    return 0;
}

static int generate(struct ckh_rng *rng, struct ckh_workload_shape *shape)
{
    shape->nodes = 1;
    shape->epochs = 1;
    snprintf(shape->options[0].key, sizeof shape->options[0].key, "crash");
    snprintf(shape->options[0].value, sizeof shape->options[0].value, "%s",
             ckh_rng_below(rng, 4) == 0 ? "true" : "false");
    shape->noptions = 1;
    return 0;
}

static const struct ckh_workload_ops ops = {
    .version = CKH_WORKLOAD_ABI_VERSION,
    .name = "crash",
    .description = "test plugin: the node program crashes",
    .create = create,
    .destroy = destroy,
    .node_count = node_count,
    .node = node,
    .node_main = node_main,
    .generate = generate,
};

CKH_WORKLOAD_PLUGIN(ops)
