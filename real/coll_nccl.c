/* struct ckh_coll over NCCL, loaded at run time (real_nccl.h has the
 * specification). Map: the libraries (declarations, dlopen) · device
 * buffers · calls with a deadline · collectives · set-up · the table.
 *
 * Only the types and functions below are used, declared as NCCL 2 and the
 * CUDA runtime (11, 12) define them; nothing here needs their headers.
 */
#include "real_nccl.h"

#include <dlfcn.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "real_faults.h"

/* ---- the libraries ---- */

typedef int nccl_result;                 /* ncclResult_t: 0 ncclSuccess */
typedef struct nccl_comm *nccl_comm;     /* ncclComm_t */
typedef struct {
    char internal[128];                  /* NCCL_UNIQUE_ID_BYTES */
} nccl_unique_id;
enum { NCCL_INT8 = 0 };                  /* ncclInt8: all-gathers move bytes */
typedef int cuda_error;                  /* cudaError_t: 0 cudaSuccess */
typedef void *cuda_stream;               /* cudaStream_t */
enum { CUDA_SUCCESS = 0, CUDA_ERROR_MEMORY_ALLOCATION = 2, CUDA_ERROR_NOT_READY = 600 };
enum { CUDA_H2D = 1, CUDA_D2H = 2, CUDA_D2D = 3 }; /* cudaMemcpyKind */

struct nccl_lib {
    void *nccl, *cudart;                 /* dlopen handles (kept loaded) */
    nccl_result (*get_unique_id)(nccl_unique_id *id);
    nccl_result (*comm_init_rank)(nccl_comm *comm, int nranks, nccl_unique_id id, int rank);
    nccl_result (*all_gather)(const void *send, void *recv, size_t count, int dtype, nccl_comm comm,
                              cuda_stream s);
    nccl_result (*comm_destroy)(nccl_comm comm);
    nccl_result (*comm_abort)(nccl_comm comm);
    const char *(*nccl_error)(nccl_result r);
    nccl_result (*async_error)(nccl_comm comm, nccl_result *err); /* NULL: not offered */
    cuda_error (*device_count)(int *n);
    cuda_error (*set_device)(int dev);
    cuda_error (*malloc_dev)(void **p, size_t n);
    cuda_error (*free_dev)(void *p);
    cuda_error (*memcpy_)(void *dst, const void *src, size_t n, int kind);
    cuda_error (*mem_get_info)(size_t *free_bytes, size_t *total_bytes);
    cuda_error (*stream_create)(cuda_stream *s);
    cuda_error (*stream_query)(cuda_stream s);
    cuda_error (*stream_destroy)(cuda_stream s);
    const char *(*cuda_error_string)(cuda_error e);
};

static struct nccl_lib lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static char lib_err[512]; /* why loading failed ("" when it did not) */

/* lib.field = the symbol name of lib.handle; what names the library. */
#define SYM(handle, field, name, what)                                                     \
    do {                                                                                   \
        *(void **)(&lib.field) = dlsym(lib.handle, name);                                  \
        if (!lib.field) {                                                                  \
            snprintf(lib_err, sizeof lib_err, "%s lacks %s", what, name);                  \
            return;                                                                        \
        }                                                                                  \
    } while (0)

/* dlopen of $env when set, else of each of names in turn; the last
 * dlerror into why. */
static void *open_lib(const char *env, const char *const *names, size_t n, char *why, size_t whyn)
{
    const char *forced = getenv(env);
    void *h = NULL;
    for (size_t i = 0; i < (forced && *forced ? 1 : n) && !h; i++) {
        h = dlopen(forced && *forced ? forced : names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            snprintf(why, whyn, "%s", dlerror());
    }
    return h;
}

static void load(void)
{
    static const char *const nccls[] = {"libnccl.so.2"};
    static const char *const cudarts[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                          "libcudart.so.11.0"};
    char why[400] = "";
    if (!(lib.nccl = open_lib("CKH_NCCL_LIB", nccls, 1, why, sizeof why))) {
        snprintf(lib_err, sizeof lib_err, "libnccl.so.2 not found (%s%s)",
                 getenv("CKH_NCCL_LIB") ? "CKH_NCCL_LIB: " : "", why);
        return;
    }
    if (!(lib.cudart = open_lib("CKH_CUDART_LIB", cudarts, sizeof cudarts / sizeof cudarts[0], why, sizeof why))) {
        snprintf(lib_err, sizeof lib_err, "the CUDA runtime not found (%s%s)",
                 getenv("CKH_CUDART_LIB") ? "CKH_CUDART_LIB: " : "libcudart.so, .so.13, .so.12, .so.11.0: ", why);
        return;
    }
    SYM(nccl, get_unique_id, "ncclGetUniqueId", "libnccl.so.2");
    SYM(nccl, comm_init_rank, "ncclCommInitRank", "libnccl.so.2");
    SYM(nccl, all_gather, "ncclAllGather", "libnccl.so.2");
    SYM(nccl, comm_destroy, "ncclCommDestroy", "libnccl.so.2");
    SYM(nccl, comm_abort, "ncclCommAbort", "libnccl.so.2");
    SYM(nccl, nccl_error, "ncclGetErrorString", "libnccl.so.2");
    *(void **)(&lib.async_error) = dlsym(lib.nccl, "ncclCommGetAsyncError");
    SYM(cudart, device_count, "cudaGetDeviceCount", "the CUDA runtime");
    SYM(cudart, set_device, "cudaSetDevice", "the CUDA runtime");
    SYM(cudart, malloc_dev, "cudaMalloc", "the CUDA runtime");
    SYM(cudart, free_dev, "cudaFree", "the CUDA runtime");
    SYM(cudart, memcpy_, "cudaMemcpy", "the CUDA runtime");
    SYM(cudart, mem_get_info, "cudaMemGetInfo", "the CUDA runtime");
    SYM(cudart, stream_create, "cudaStreamCreate", "the CUDA runtime");
    SYM(cudart, stream_query, "cudaStreamQuery", "the CUDA runtime");
    SYM(cudart, stream_destroy, "cudaStreamDestroy", "the CUDA runtime");
    SYM(cudart, cuda_error_string, "cudaGetErrorString", "the CUDA runtime");
}

/* The device count (0 with msg when there is none). */
static int devices(char *msg, size_t msglen)
{
    int n = 0;
    cuda_error e = lib.device_count(&n);
    if (e != CUDA_SUCCESS || n <= 0) {
        ckh_errf(msg, msglen, CKH_EINTERNAL, "no CUDA device (cudaGetDeviceCount: %s)",
                 e != CUDA_SUCCESS ? lib.cuda_error_string(e) : "0 devices");
        return 0;
    }
    return n;
}

int ckh_real_nccl_probe(int *ndevices, char *msg, size_t msglen)
{
    pthread_once(&lib_once, load);
    if (ndevices)
        *ndevices = 0;
    if (lib_err[0])
        return ckh_errf(msg, msglen, CKH_EINTERNAL, "%s", lib_err);
    int n = devices(msg, msglen);
    if (ndevices)
        *ndevices = n;
    return n > 0 ? 0 : CKH_EINTERNAL;
}

/* ---- the collectives' state ---- */

enum { MAX_DEV = 64 };

struct nccl_coll {
    struct ckh_coll base;      /* must be first */
    struct ckh_gpu gpu;        /* the same process's device memory (env->gpu) */
    struct ckh_coll *mpi;      /* barrier, broadcast, send, recv; the id exchange (borrowed) */
    int rank, world;           /* of the group */
    int dev, ndev;             /* this rank's device; the devices this process sees */
    void *ballast[MAX_DEV];    /* per physical device: what limit took (NULL: none) */
    uint64_t limit[MAX_DEV];   /* per physical device: what limit left (0: no limit) */
    nccl_comm comm;            /* the communicator */
    cuda_stream stream;        /* its stream */
    void *dsend, *drecv;       /* device buffers (kept between calls) */
    size_t dsend_bytes, drecv_bytes; /* their sizes */
    unsigned char *host;       /* world blocks coming back (kept) */
    size_t host_bytes;         /* its size */
    bool failed;               /* a call failed: the communicator is gone */
    ckh_real_gate_fn gate;     /* fault gate (NULL: none) */
    void *gate_ctx;            /* its context */
};

#define NC(c) ((struct nccl_coll *)(void *)(c))
#define NG(g) ((struct nccl_coll *)(void *)((char *)(g) - offsetof(struct nccl_coll, gpu)))

/* ---- device buffers ---- */

static int grow_dev(void **p, size_t *have, size_t want)
{
    if (*have >= want && *p)
        return 0;
    if (*p)
        lib.free_dev(*p);
    *p = NULL;
    *have = 0;
    if (lib.malloc_dev(p, want ? want : 1) != CUDA_SUCCESS)
        return CKH_EOOM_DEVICE;
    *have = want;
    return 0;
}

/* ---- calls with a deadline ---- */

enum { NCCL_IN_PROGRESS = 7 }; /* ncclInProgress: not an error */

/* The communicator is unusable: aborted now, every later call refused. */
static int fail_comm(struct nccl_coll *c, int code)
{
    if (c->comm)
        lib.comm_abort(c->comm);
    c->comm = NULL;
    c->failed = true;
    return code;
}

/* Waits for the stream until the deadline (timeout 0: none). A CUDA error
 * is -EIO; an asynchronous NCCL error (a peer or its link lost) is
 * CKH_EPEER_DEAD; the deadline is CKH_ETIMEOUT. Each aborts the
 * communicator. */
static int wait_stream(struct nccl_coll *c, uint64_t t0, uint64_t timeout_ns)
{
    for (unsigned spins = 0;; spins++) {
        cuda_error e = lib.stream_query(c->stream);
        if (e == CUDA_SUCCESS)
            return 0;
        if (e != CUDA_ERROR_NOT_READY)
            return fail_comm(c, -EIO);
        nccl_result ae = 0;
        if (lib.async_error && lib.async_error(c->comm, &ae) == 0 && ae != 0 && ae != NCCL_IN_PROGRESS)
            return fail_comm(c, CKH_EPEER_DEAD);
        if (timeout_ns && ckh_posix_now_ns() - t0 > timeout_ns)
            return fail_comm(c, CKH_ETIMEOUT);
        if (spins > 1000) {
            struct timespec ts = {.tv_nsec = 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* One all-gather of bytes per rank into c->host, from send: host memory,
 * or device memory when on_device (then it goes out as it is). */
static int gather(struct nccl_coll *c, const void *send, bool on_device, size_t bytes, uint64_t timeout_ns)
{
    uint64_t t0 = ckh_posix_now_ns();
    size_t all = bytes * (size_t)c->world;
    int rc;
    if ((!on_device && (rc = grow_dev(&c->dsend, &c->dsend_bytes, bytes)) != 0) ||
        (rc = grow_dev(&c->drecv, &c->drecv_bytes, all)) != 0)
        return rc;
    if (c->host_bytes < all) {
        unsigned char *h = realloc(c->host, all ? all : 1);
        if (!h)
            return CKH_ENOMEM;
        c->host = h;
        c->host_bytes = all;
    }
    if (!on_device && bytes && lib.memcpy_(c->dsend, send, bytes, CUDA_H2D) != CUDA_SUCCESS)
        return -EIO;
    if (lib.all_gather(on_device ? send : c->dsend, c->drecv, bytes, NCCL_INT8, c->comm, c->stream) != 0)
        return fail_comm(c, -EIO);
    if ((rc = wait_stream(c, t0, timeout_ns)) != 0)
        return rc;
    if (all && lib.memcpy_(c->host, c->drecv, all, CUDA_D2H) != CUDA_SUCCESS)
        return -EIO;
    return 0;
}

/* The gate, then whether the call goes on (0) or its code. */
static int enter(struct nccl_coll *c, enum ckh_op_kind kind, uint64_t len, int64_t arg,
                 struct ckh_fault_action *act)
{
    struct ckh_op op = {.kind = kind, .len = len, .arg = arg};
    memset(act, 0, sizeof *act);
    if (c->gate)
        c->gate(c->gate_ctx, &op, act);
    if (act->kind == CKH_FAULT_ERRNO)
        return -act->err;
    if (act->kind == CKH_FAULT_MISMATCH)
        return CKH_EMISMATCH;
    return c->failed ? CKH_ESTATE : 0;
}

static void leave(const struct ckh_fault_action *act)
{
    if (act->kind == CKH_FAULT_KILL_AFTER)
        ckh_real_faults_kill();
}

/* ---- collectives ---- */

static int n_rank(struct ckh_coll *c)
{
    return NC(c)->rank;
}

static int n_world(struct ckh_coll *c)
{
    return NC(c)->world;
}

static int n_barrier(struct ckh_coll *c, uint64_t timeout_ns)
{
    return ckh_coll_barrier(NC(c)->mpi, timeout_ns);
}

static int n_broadcast(struct ckh_coll *c, void *buf, size_t size_bytes, int root, uint64_t timeout_ns)
{
    return ckh_coll_broadcast(NC(c)->mpi, buf, size_bytes, root, timeout_ns);
}

/* The all-reduce of buf (host memory, or device memory when on_device). */
static int allreduce(struct nccl_coll *c, void *buf, bool on_device, size_t count, enum ckh_dtype dt,
                     enum ckh_redop op, uint64_t timeout_ns)
{
    size_t esize = ckh_dtype_size(dt);
    if (esize == 0 || (unsigned)op > CKH_RED_MIN || (buf == NULL && count > 0) || count > SIZE_MAX / 64)
        return CKH_EINVAL;
    struct ckh_fault_action act;
    size_t bytes = count * esize;
    int rc = enter(c, CKH_OP_ALLREDUCE, bytes, (int64_t)dt * 16 + (int64_t)op, &act);
    if (rc == 0)
        rc = gather(c, buf, on_device, bytes, timeout_ns);
    if (rc == 0) {
        /* The simulator's fold: rank 0's buffer, then ranks 1, 2, ... */
        for (int r = 1; r < c->world; r++)
            ckh_coll_reduce(c->host, c->host + (size_t)r * bytes, count, dt, op);
        if (!on_device)
            memcpy(buf, c->host, bytes);
        else if (bytes && lib.memcpy_(buf, c->host, bytes, CUDA_H2D) != CUDA_SUCCESS)
            rc = -EIO;
    }
    leave(&act);
    return rc;
}

static int n_allreduce(struct ckh_coll *cc, void *buf, size_t count, enum ckh_dtype dt, enum ckh_redop op,
                       uint64_t timeout_ns)
{
    return allreduce(NC(cc), buf, false, count, dt, op, timeout_ns);
}

static int n_allgather(struct ckh_coll *cc, const void *send, void *recv, size_t size_bytes, uint64_t timeout_ns)
{
    struct nccl_coll *c = NC(cc);
    if ((size_bytes && (!send || !recv)) || size_bytes > SIZE_MAX / 64)
        return CKH_EINVAL;
    struct ckh_fault_action act;
    int rc = enter(c, CKH_OP_ALLGATHER, size_bytes, 0, &act);
    if (rc == 0)
        rc = gather(c, send, false, size_bytes, timeout_ns);
    if (rc == 0 && size_bytes)
        memcpy(recv, c->host, size_bytes * (size_t)c->world);
    leave(&act);
    return rc;
}

static int n_send(struct ckh_coll *c, const void *buf, size_t size_bytes, int peer, int tag, uint64_t timeout_ns)
{
    return ckh_coll_send(NC(c)->mpi, buf, size_bytes, peer, tag, timeout_ns);
}

static int n_recv(struct ckh_coll *c, void *buf, size_t size_bytes, int peer, int tag, uint64_t timeout_ns)
{
    return ckh_coll_recv(NC(c)->mpi, buf, size_bytes, peer, tag, timeout_ns);
}

static const struct ckh_coll_ops nccl_ops = {
    .version = 1,
    .rank = n_rank,
    .world_size = n_world,
    .barrier = n_barrier,
    .broadcast = n_broadcast,
    .allreduce = n_allreduce,
    .allgather = n_allgather,
    .send = n_send,
    .recv = n_recv,
};

/* ---- device memory (struct ckh_gpu) ---- */

/* The physical device of the job's device d: this rank's own for its
 * rank, else d modulo the devices seen (one host, one rank per GPU). */
static int phys(const struct nccl_coll *c, int d)
{
    return d == c->rank ? c->dev : d % c->ndev;
}

/* Runs on physical device p's context: switches to it (and back, in
 * done_dev). The first switch to a device makes its context, which takes
 * device memory: no room for it is CKH_EOOM_DEVICE. */
static int on_dev(const struct nccl_coll *c, int p)
{
    if (p == c->dev)
        return 0;
    cuda_error e = lib.set_device(p);
    return e == CUDA_SUCCESS ? 0 : e == CUDA_ERROR_MEMORY_ALLOCATION ? CKH_EOOM_DEVICE : -EIO;
}

static void done_dev(const struct nccl_coll *c, int p)
{
    if (p != c->dev)
        lib.set_device(c->dev);
}

static int g_alloc(struct ckh_gpu *g, int dev, uint64_t bytes, void **dptr)
{
    struct nccl_coll *c = NG(g);
    if (dev >= MAX_DEV || bytes > SIZE_MAX)
        return CKH_EINVAL;
    int p = phys(c, dev), rc = on_dev(c, p);
    if (rc)
        return rc;
    cuda_error e = lib.malloc_dev(dptr, bytes ? (size_t)bytes : 1);
    done_dev(c, p);
    if (e != CUDA_SUCCESS)
        *dptr = NULL;
    return e == CUDA_SUCCESS ? 0 : e == CUDA_ERROR_MEMORY_ALLOCATION ? CKH_EOOM_DEVICE : -EIO;
}

static void g_free(struct ckh_gpu *g, void *dptr)
{
    (void)g;
    lib.free_dev(dptr);
}

static int g_copy(struct ckh_gpu *g, void *dst, const void *src, uint64_t bytes, enum ckh_gpu_copy dir)
{
    (void)g;
    int kind = dir == CKH_GPU_TO_DEVICE ? CUDA_H2D : dir == CKH_GPU_TO_HOST ? CUDA_D2H : CUDA_D2D;
    return lib.memcpy_(dst, src, (size_t)bytes, kind) == CUDA_SUCCESS ? 0 : -EIO;
}

static void g_mem(struct ckh_gpu *g, int dev, uint64_t *used, uint64_t *capacity)
{
    struct nccl_coll *c = NG(g);
    size_t free_b = 0, total = 0;
    int p = dev < MAX_DEV ? phys(c, dev) : -1;
    if (p < 0 || on_dev(c, p))
        return;
    if (lib.mem_get_info(&free_b, &total) == CUDA_SUCCESS) {
        uint64_t cap = c->limit[p] ? c->limit[p] : total;
        *capacity = cap;
        *used = cap > free_b ? cap - free_b : 0;
    }
    done_dev(c, p);
}

/* Takes what is free on the device beyond bytes (the allocation may need
 * a little less than all that is free: it tries in 1 MiB steps down). */
static int g_limit(struct ckh_gpu *g, int dev, uint64_t bytes)
{
    struct nccl_coll *c = NG(g);
    if (dev >= MAX_DEV)
        return CKH_EINVAL;
    int p = phys(c, dev);
    if (bytes == 0 || c->ballast[p])
        return 0;
    int rc = on_dev(c, p);
    if (rc)
        return rc;
    size_t free_b = 0, total = 0;
    if (lib.mem_get_info(&free_b, &total) != CUDA_SUCCESS) {
        rc = -EIO;
    } else if (free_b > bytes) {
        size_t take = free_b - (size_t)bytes;
        for (int tries = 0; tries < 16 && take; tries++) {
            if (lib.malloc_dev(&c->ballast[p], take) == CUDA_SUCCESS)
                break;
            c->ballast[p] = NULL;
            take = take > (1u << 20) ? take - (1u << 20) : 0;
        }
        if (!c->ballast[p])
            rc = CKH_EOOM_DEVICE;
    }
    c->limit[p] = rc == 0 ? bytes : 0;
    done_dev(c, p);
    return rc;
}

static int g_allreduce(struct ckh_gpu *g, void *dptr, size_t count, enum ckh_dtype dt, enum ckh_redop op,
                       uint64_t timeout_ns)
{
    return allreduce(NG(g), dptr, true, count, dt, op, timeout_ns);
}

static int g_prepare(struct ckh_gpu *g, size_t max_bytes)
{
    struct nccl_coll *c = NG(g);
    if (max_bytes > SIZE_MAX / 64)
        return CKH_EINVAL;
    int rc = grow_dev(&c->dsend, &c->dsend_bytes, max_bytes);
    return rc ? rc : grow_dev(&c->drecv, &c->drecv_bytes, max_bytes * (size_t)c->world);
}

static const struct ckh_gpu_ops gpu_ops = {
    .version = 1,
    .alloc = g_alloc,
    .free = g_free,
    .copy = g_copy,
    .mem = g_mem,
    .limit = g_limit,
    .allreduce = g_allreduce,
    .prepare = g_prepare,
};

/* ---- set-up ---- */

/* The rank's device: its local rank (as the launcher says) modulo the
 * devices it sees. */
static int local_device(int rank, int ndev)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"};
    int local = rank;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            local = atoi(v);
            break;
        }
    }
    return (local < 0 ? 0 : local) % ndev;
}

int ckh_real_nccl_create(struct ckh_coll *base, uint64_t setup_timeout_ns, struct ckh_coll **out, char *msg,
                         size_t msglen)
{
    *out = NULL;
    int ndev = 0, rc = ckh_real_nccl_probe(&ndev, msg, msglen);
    if (rc)
        return rc;
    struct nccl_coll *c = calloc(1, sizeof *c);
    if (!c)
        return CKH_ENOMEM;
    c->base.ops = &nccl_ops;
    c->gpu.ops = &gpu_ops;
    c->mpi = base;
    c->rank = ckh_coll_rank(base);
    c->world = ckh_coll_world_size(base);
    c->ndev = ndev;
    int dev = c->dev = local_device(c->rank, c->ndev);
    cuda_error e = lib.set_device(dev);
    if (e == CUDA_SUCCESS)
        e = lib.stream_create(&c->stream);
    if (e != CUDA_SUCCESS) {
        rc = ckh_errf(msg, msglen, CKH_EINTERNAL, "CUDA device %d: %s", dev, lib.cuda_error_string(e));
        goto out_free;
    }
    nccl_unique_id id;
    memset(&id, 0, sizeof id);
    nccl_result r = c->rank == 0 ? lib.get_unique_id(&id) : 0;
    if (r != 0) {
        rc = ckh_errf(msg, msglen, CKH_EINTERNAL, "ncclGetUniqueId: %s", lib.nccl_error(r));
        goto out_free;
    }
    /* Every rank takes the broadcast, whatever rank 0 got. */
    if ((rc = ckh_coll_broadcast(base, &id, sizeof id, 0, setup_timeout_ns)) != 0) {
        ckh_errf(msg, msglen, rc, "the NCCL id exchange over MPI: %s", ckh_strerror(rc));
        goto out_free;
    }
    if ((r = lib.comm_init_rank(&c->comm, c->world, id, c->rank)) != 0) {
        c->comm = NULL;
        rc = ckh_errf(msg, msglen, CKH_EINTERNAL, "ncclCommInitRank (rank %d of %d, device %d): %s", c->rank,
                      c->world, dev, lib.nccl_error(r));
        goto out_free;
    }
    /* NCCL connects its ranks and allocates its buffers at the first
     * collective: one all-gather of a byte now, under the set-up deadline,
     * so that a peer that never comes is a set-up failure and a limit set
     * later (ckh_gpu_limit) leaves NCCL's memory out. */
    unsigned char one = (unsigned char)c->rank;
    if ((rc = gather(c, &one, false, 1, setup_timeout_ns)) != 0) {
        ckh_errf(msg, msglen, rc, "the first NCCL all-gather (rank %d of %d, device %d): %s", c->rank, c->world,
                 dev, ckh_strerror(rc));
        goto out_free;
    }
    *out = &c->base;
    return 0;
out_free:
    ckh_real_nccl_destroy(&c->base);
    return rc;
}

void ckh_real_nccl_destroy(struct ckh_coll *cc)
{
    struct nccl_coll *c = NC(cc);
    if (!c)
        return;
    if (c->comm)
        (c->failed ? lib.comm_abort : lib.comm_destroy)(c->comm);
    if (c->dsend)
        lib.free_dev(c->dsend);
    if (c->drecv)
        lib.free_dev(c->drecv);
    if (c->stream)
        lib.stream_destroy(c->stream);
    for (int p = 0; p < MAX_DEV; p++)
        if (c->ballast[p])
            lib.free_dev(c->ballast[p]);
    free(c->host);
    free(c);
}

struct ckh_gpu *ckh_real_nccl_gpu(struct ckh_coll *c)
{
    return c ? &NC(c)->gpu : NULL;
}

void ckh_real_nccl_set_gate(struct ckh_coll *c, ckh_real_gate_fn fn, void *ctx)
{
    NC(c)->gate = fn;
    NC(c)->gate_ctx = ctx;
}

bool ckh_real_nccl_failed(const struct ckh_coll *c)
{
    return c && ((const struct nccl_coll *)(const void *)c)->failed;
}
