/* A test workload plugin whose node program crashes (SIGSEGV with the
 * default action, as an unhandled invalid access ends a process, whatever
 * handlers a sanitizer build installed): ckh must report an error verdict
 * for the scenario, not die. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckh/err.h"
#include "ckh/workload.h"

static int create(const struct ckh_workload_job *job, void **out, char *msg, size_t msglen)
{
    (void)job, (void)msg, (void)msglen;
    *out = malloc(1);
    return *out ? 0 : CKH_ENOMEM;
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
    (void)env, (void)p, (void)i;
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
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
};

CKH_WORKLOAD_PLUGIN(ops)
