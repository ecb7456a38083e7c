/* libckh_fakegpu.so: a test double of the CUDA runtime and NCCL, the few
 * functions real/coll_nccl.c loads with dlopen, so that ckh's NCCL path
 * (docs/REAL.md, "NCCL") runs on a machine without a GPU:
 *
 *   CKH_NCCL_LIB=build/libckh_fakegpu.so CKH_CUDART_LIB=build/libckh_fakegpu.so \
 *   CKH_FAKE_GPU_DIR=/tmp/job1 ckh run --platform real nccl.yaml
 *
 * The ranks are real processes (mpirun on one machine); device memory is
 * host memory, and what the processes share lives in files under one
 * folder. It behaves like the real libraries where ckh could get them
 * wrong, and fails loudly (an error code and one line on stderr starting
 * "fakegpu: ") where ckh misuses them.
 *
 * Specification (what it models):
 *   - the job's folder: CKH_FAKE_GPU_DIR, shared by every process of one
 *     job, holds everything they share. Without it cudaMalloc and
 *     cudaMemGetInfo are cudaErrorInitializationError and ncclCommInitRank
 *     ncclSystemError, each with a line naming the variable.
 *   - devices: CKH_FAKE_GPUS of them (default 2, at most 64; "0":
 *     cudaGetDeviceCount sets 0 and returns cudaErrorNoDevice); the
 *     current device is per process, 0 until cudaSetDevice (out of range:
 *     cudaErrorInvalidDevice). A bad setting is cudaErrorInitializationError.
 *   - memory: CKH_FAKE_GPU_MEM bytes per device (default 1 GiB), shared by
 *     every process of the job as a real GPU's is: each process's usage of
 *     device D is the file <dir>/mem.<D>.<pid>, read and written under
 *     flock(<dir>/mem.<D>.lock); it counts while the pid lives (kill(pid, 0)
 *     succeeds or fails with EPERM), so a killed rank's memory comes back
 *     as the driver gives it back (a zombie still holds it until reaped; a
 *     reused pid would hold it again). cudaMalloc past the capacity is
 *     cudaErrorMemoryAllocation and allocates nothing; cudaMemGetInfo is
 *     (capacity - usage of every live process, capacity) of the current
 *     device. New device memory holds 0xA5 bytes, not zeros (blocks up to
 *     64 MiB; larger ones hold what malloc gave, unfilled, so that a
 *     ballast taking most of a device costs the host nothing).
 *   - pointers: a device pointer is a host block registered in this
 *     process's table (base, size, device). cudaMemcpy checks its kind
 *     against the table (H2D: dst..dst+n inside one block, src in none;
 *     D2H the reverse; D2D both; H2H neither; cudaMemcpyDefault: any) and
 *     waits for the process's streams first, as the legacy default stream
 *     does; cudaFree of anything but a block's start is cudaErrorInvalidValue
 *     (NULL: success) and also waits for the streams, as the real one does.
 *   - streams: cudaStreamCreate'd objects (NULL is the default stream); an
 *     unknown handle is cudaErrorInvalidResourceHandle. A stream holds at
 *     most one all-gather; cudaStreamQuery tries to complete it (success,
 *     cudaErrorNotReady, or the error it failed with, sticky until the
 *     communicator is aborted); cudaStreamSynchronize and
 *     cudaDeviceSynchronize poll until it completes or fails. A stream
 *     destroyed with a gather pending is freed when the gather ends, as
 *     the real one finishes its work in the background.
 *   - communicators: ncclGetUniqueId writes "fakegpu-<pid>-<n>-<ns>";
 *     ncclCommInitRank accepts only such an id (a rank that never received
 *     rank 0's id is ncclInvalidArgument), does not wait for its peers, and
 *     claims <dir>/nccl-<id>/rank.<r> and dev.<d> with O_EXCL: a second
 *     live claim of a rank or a device is ncclInvalidUsage ("rank R and
 *     rank Q both use device D"), as NCCL refuses duplicate GPUs; a dead
 *     process's claim is taken over.
 *   - all-gathers: ncclAllGather checks its arguments (a live communicator,
 *     a datatype 0..8, a live stream of the communicator's device, sendbuff
 *     and recvbuff inside device blocks of that device of count and
 *     nranks * count elements: else ncclInvalidArgument), publishes the
 *     rank's block of its nth call as <dir>/nccl-<id>/<n>.<rank> (written
 *     to a temporary name, then renamed), enqueues the gather on the
 *     stream and returns without waiting. The gather completes when every
 *     rank's block <n> is there: they are copied into recvbuff in rank
 *     order. A peer's block of another size (or nranks) fails it with
 *     cudaErrorUnknown, as does sendbuff changing while it is in flight
 *     (NCCL reads it on the device); a dead peer never publishes, and the
 *     stream stays not ready.
 *     A second ncclAllGather first waits for the communicator's and the
 *     stream's previous one (a failed one makes it ncclUnhandledCudaError).
 *   - ncclCommDestroy waits for its gather, ncclCommAbort drops it; both
 *     remove the rank's claims and the blocks no peer can still read, and
 *     the last rank to leave removes the communicator's folder.
 *
 * What it does not model: kernels or any other device work, asynchrony
 * beyond the all-gather, more than one host, the other collectives, and
 * NCCL's blocking initialization (ncclCommInitRank returns at once; a
 * missing peer shows at the first all-gather). It is thread-safe by one
 * lock, released while it polls. Nothing runs before the first call; a
 * forked child starts with no device state (CUDA does not survive fork).
 *
 * Map: the API · configuration · this process's state · device memory
 * shared between processes · pointers and copies · streams ·
 * communicators · all-gathers · the CUDA runtime · NCCL.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ---- the API (as NCCL 2 and the CUDA runtime declare it, in plain types) ---- */

#define FAKE_API __attribute__((visibility("default")))

typedef struct {
    char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} fake_unique_id;       /* ncclUniqueId */

/* *n = the devices (CKH_FAKE_GPUS); cudaErrorNoDevice with *n = 0 when none. */
FAKE_API int cudaGetDeviceCount(int *n);
/* Makes d this process's current device (cudaErrorInvalidDevice out of range). */
FAKE_API int cudaSetDevice(int d);
/* *d = this process's current device. */
FAKE_API int cudaGetDevice(int *d);
/* *p = a new block of n bytes charged to the current device, the caller's
 * until cudaFree; n == 0: *p = NULL. Past the capacity: out of memory, *p
 * untouched. */
FAKE_API int cudaMalloc(void **p, size_t n);
/* Frees a block cudaMalloc returned (waiting for the streams first); NULL: nothing. */
FAKE_API int cudaFree(void *p);
/* Copies n bytes of kind (0 H2H, 1 H2D, 2 D2H, 3 D2D, 4 default) after
 * the streams complete; a side in the wrong memory is invalid argument. */
FAKE_API int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
/* The current device's free bytes (every live process counted) and capacity. */
FAKE_API int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
/* *s = a new stream of the current device, the caller's until cudaStreamDestroy. */
FAKE_API int cudaStreamCreate(void **s);
/* Tries to complete s's all-gather: success, device not ready, or its error. */
FAKE_API int cudaStreamQuery(void *s);
/* Frees s now, or when its pending all-gather ends. */
FAKE_API int cudaStreamDestroy(void *s);
/* Polls s until its all-gather completes or fails. */
FAKE_API int cudaStreamSynchronize(void *s);
/* Polls every stream of the current device until none has work. */
FAKE_API int cudaDeviceSynchronize(void);
/* The CUDA runtime's text for e (a static string). */
FAKE_API const char *cudaGetErrorString(int e);
/* id->internal = a new id's text (the rest zeros); rank 0 makes it, the
 * others receive it. */
FAKE_API int ncclGetUniqueId(fake_unique_id *id);
/* *comm = rank's communicator of nranks on the current device, the
 * caller's until ncclCommDestroy or ncclCommAbort. Returns at once. */
FAKE_API int ncclCommInitRank(void **comm, int nranks, fake_unique_id id, int rank);
/* Enqueues the all-gather of count elements of datatype per rank on
 * stream (NULL: the default stream); returns without waiting. */
FAKE_API int ncclAllGather(const void *send, void *recv, size_t count, int datatype, void *comm, void *stream);
/* Waits for comm's pending all-gather, leaves it and frees it; NULL: nothing. */
FAKE_API int ncclCommDestroy(void *comm);
/* Drops comm's pending all-gather, leaves it and frees it; NULL: nothing. */
FAKE_API int ncclCommAbort(void *comm);
/* NCCL's text for r (a static string). */
FAKE_API const char *ncclGetErrorString(int r);

/* cudaError_t values returned here. */
enum {
    CUDA_OK = 0,
    CUDA_INVALID_VALUE = 1,
    CUDA_OUT_OF_MEMORY = 2,
    CUDA_NOT_INITIALIZED = 3,
    CUDA_INVALID_MEMCPY_DIRECTION = 21,
    CUDA_NO_DEVICE = 100,
    CUDA_INVALID_DEVICE = 101,
    CUDA_INVALID_HANDLE = 400,
    CUDA_NOT_READY = 600,
    CUDA_UNKNOWN = 999,
};
/* cudaMemcpyKind. */
enum { COPY_H2H = 0, COPY_H2D = 1, COPY_D2H = 2, COPY_D2D = 3, COPY_DEFAULT = 4 };
/* ncclResult_t values returned here. */
enum {
    NCCL_OK = 0,
    NCCL_CUDA_ERROR = 1,
    NCCL_SYSTEM_ERROR = 2,
    NCCL_INVALID_ARGUMENT = 4,
    NCCL_INVALID_USAGE = 5,
};

/* ---- configuration ---- */

enum { MAX_DEVICES = 64, ID_PREFIX_LEN = 8 };
#define ID_PREFIX "fakegpu-"
#define DEFAULT_MEM_BYTES ((size_t)1 << 30)
/* Larger blocks are left as malloc gives them, so that a ballast holding
 * most of a device costs the host no memory. */
#define FILL_BYTES_MAX ((size_t)64 << 20)

/* One line "fakegpu: ..." on stderr, written at once. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    char line[1024] = "fakegpu: ";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + 9, sizeof line - 10, fmt, ap);
    va_end(ap);
    size_t n = strlen(line);
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

/* buf = the formatted path; false (and a line on stderr) when it does not fit. */
__attribute__((format(printf, 3, 4))) static bool pathf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        say("a path under CKH_FAKE_GPU_DIR is too long (%d bytes)", k);
        return false;
    }
    return true;
}

/* The number of devices, or -1 after saying (once) why CKH_FAKE_GPUS is bad. */
static int config_devices(void)
{
    static bool said;
    const char *v = getenv("CKH_FAKE_GPUS");
    if (!v || !*v)
        return 2;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < 0 || n > MAX_DEVICES) {
        if (!said)
            say("CKH_FAKE_GPUS: expected a number of devices from 0 to %d, got \"%s\"", MAX_DEVICES, v);
        said = true;
        return -1;
    }
    return (int)n;
}

/* Bytes per device, or 0 after saying (once) why CKH_FAKE_GPU_MEM is bad. */
static size_t config_mem_bytes(void)
{
    static bool said;
    const char *v = getenv("CKH_FAKE_GPU_MEM");
    if (!v || !*v)
        return DEFAULT_MEM_BYTES;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || v[0] < '0' || v[0] > '9' || *end || n == 0 || n > SIZE_MAX) {
        if (!said)
            say("CKH_FAKE_GPU_MEM: expected a number of bytes per device (a plain integer above 0), got \"%s\"", v);
        said = true;
        return 0;
    }
    return (size_t)n;
}

/* The job's shared folder, or NULL after a line naming the variable and
 * what (the function) needed it. */
static const char *config_dir(const char *what)
{
    const char *d = getenv("CKH_FAKE_GPU_DIR");
    if (!d || !*d) {
        say("%s: CKH_FAKE_GPU_DIR is not set (the folder every process of the job shares)", what);
        return NULL;
    }
    return d;
}

/* Whether pid is a live process (one we may not signal is live too). */
static bool alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* ---- this process's state ---- */

struct fake_comm;

struct dev_block {
    uintptr_t base;            /* first byte */
    size_t size;               /* bytes (never 0) */
    int dev;                   /* the device it is charged to */
};

struct gather {
    struct fake_comm *comm;    /* the communicator (NULL: nothing pending) */
    uint64_t seq;              /* its number on the communicator */
    const unsigned char *send; /* sendbuff (device memory) */
    unsigned char *recv;       /* recvbuff (device memory) */
    size_t bytes;              /* one rank's block */
    uint64_t send_hash;        /* of sendbuff when enqueued */
    int error;                 /* cudaError_t it failed with (0: none); sticky */
};

struct fake_stream {
    int dev;                   /* the device current at creation */
    bool destroyed;            /* destroyed with a gather pending: freed when it ends */
    struct gather g;           /* the pending all-gather */
    struct fake_stream *next;  /* the process's streams */
};

struct fake_comm {
    char id[sizeof(fake_unique_id)]; /* the unique id's text */
    char path[PATH_MAX];       /* <dir>/nccl-<id> */
    int nranks, rank, dev;     /* as initialized */
    uint64_t seq;              /* all-gathers published */
    uint64_t done;             /* all-gathers completed (seq or seq - 1) */
    struct fake_stream *pending_on; /* the stream holding gather seq - 1 (NULL: none) */
    bool failed;               /* a gather failed: later ones are refused */
    struct fake_comm *next;    /* the process's communicators */
};

static struct {
    long pid;                  /* the process this state belongs to (0: none yet) */
    int dev;                   /* the current device */
    struct dev_block *blocks;  /* device memory (owned) */
    size_t nblocks, cap_blocks; /* used and allocated entries */
    size_t used_bytes[MAX_DEVICES]; /* this process's usage per device */
    struct fake_stream *streams; /* owned */
    struct fake_comm *comms;   /* owned */
    unsigned ids;              /* unique ids made */
} st;
static struct fake_stream default_stream; /* the NULL stream */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Frees what a forked child inherited: its parent's blocks, streams and
 * communicators are not the child's (CUDA does not survive fork either);
 * their files are the parent's and stay. */
static void forget_inherited(void)
{
    for (size_t i = 0; i < st.nblocks; i++)
        free((void *)st.blocks[i].base);
    free(st.blocks);
    for (struct fake_stream *s = st.streams, *n; s; s = n) {
        n = s->next;
        free(s);
    }
    for (struct fake_comm *c = st.comms, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    memset(&st, 0, sizeof st);
    memset(&default_stream, 0, sizeof default_stream);
}

static void enter(void)
{
    pthread_mutex_lock(&mu);
    if (st.pid != (long)getpid()) {
        if (st.pid != 0)
            forget_inherited();
        st.pid = (long)getpid();
    }
}

static void leave(void)
{
    pthread_mutex_unlock(&mu);
}

/* A pause between polls, with the lock released. */
static void nap(void)
{
    struct timespec ts = {.tv_nsec = 100000};
    pthread_mutex_unlock(&mu);
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&mu);
}

/* ---- device memory shared between processes ---- */

/* Opens and locks <dir>/mem.<dev>.lock: the descriptor, or -1 (said). */
static int mem_lock(const char *dir, int dev)
{
    char path[PATH_MAX];
    if (!pathf(path, sizeof path, "%s/mem.%d.lock", dir, dev))
        return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        say("%s: %s (CKH_FAKE_GPU_DIR must be a writable folder)", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void mem_unlock(int fd)
{
    flock(fd, LOCK_UN);
    close(fd);
}

/* The pid of a usage file name "mem.<dev>.<pid>" (0: not one of dev's). */
static long mem_file_pid(const char *name, int dev)
{
    char prefix[32];
    int k = snprintf(prefix, sizeof prefix, "mem.%d.", dev);
    if (k < 0 || strncmp(name, prefix, (size_t)k) != 0 || name[k] < '1' || name[k] > '9')
        return 0;
    char *end;
    long pid = strtol(name + k, &end, 10);
    return *end ? 0 : pid;
}

/* *used = the bytes every live process holds on dev; the files of dead
 * ones are removed. Under mem_lock. 0, or -1 (said). */
static int mem_used(const char *dir, int dev, size_t *used)
{
    *used = 0;
    DIR *d = opendir(dir);
    if (!d) {
        say("%s: %s", dir, strerror(errno));
        return -1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        long pid = mem_file_pid(e->d_name, dev);
        char path[PATH_MAX];
        if (pid == 0 || !pathf(path, sizeof path, "%s/%s", dir, e->d_name))
            continue;
        if (!alive(pid)) {
            unlink(path); /* the driver gave a dead process's memory back */
            continue;
        }
        FILE *f = fopen(path, "r");
        unsigned long long n = 0;
        if (!f || fscanf(f, "%llu", &n) != 1)
            say("%s: unreadable usage file, counted as 0 bytes", path);
        if (f)
            fclose(f);
        *used += (size_t)n;
    }
    closedir(d);
    return 0;
}

/* This process's usage of dev becomes bytes (0: its file goes). Under
 * mem_lock. 0, or -1 (said). */
static int mem_set_own(const char *dir, int dev, size_t bytes)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!pathf(path, sizeof path, "%s/mem.%d.%ld", dir, dev, st.pid) ||
        !pathf(tmp, sizeof tmp, "%s.tmp", path))
        return -1;
    if (bytes == 0)
        return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "%zu\n", bytes) > 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        say("%s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Charges delta bytes (added or, when !add, taken back) to dev for this
 * process, refusing a charge past the capacity. CUDA_OK,
 * CUDA_OUT_OF_MEMORY or CUDA_NOT_INITIALIZED (said). */
static int mem_charge(const char *dir, int dev, size_t delta, bool add, size_t capacity)
{
    int fd = mem_lock(dir, dev);
    if (fd < 0)
        return CUDA_NOT_INITIALIZED;
    size_t used = 0;
    int rc = CUDA_OK;
    if (add && mem_used(dir, dev, &used) != 0)
        rc = CUDA_NOT_INITIALIZED;
    else if (add && (used > capacity || delta > capacity - used))
        rc = CUDA_OUT_OF_MEMORY;
    else if (mem_set_own(dir, dev, add ? st.used_bytes[dev] + delta : st.used_bytes[dev] - delta) != 0)
        rc = CUDA_NOT_INITIALIZED;
    if (rc == CUDA_OK)
        st.used_bytes[dev] = add ? st.used_bytes[dev] + delta : st.used_bytes[dev] - delta;
    mem_unlock(fd);
    return rc;
}

/* ---- pointers and copies ---- */

/* The block holding p, or NULL. */
static struct dev_block *block_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < st.nblocks; i++)
        if (a >= st.blocks[i].base && a - st.blocks[i].base < st.blocks[i].size)
            return &st.blocks[i];
    return NULL;
}

/* Whether p..p+n is device memory: 1, 0 (host), or -1 when it starts in a
 * block and runs past its end (said, for fn's argument name). */
static int device_range(const char *fn, const char *name, const void *p, size_t n)
{
    const struct dev_block *b = block_of(p);
    if (!b)
        return 0;
    size_t off = (uintptr_t)p - b->base;
    if (n > b->size - off) {
        say("%s: %s %p + %zu bytes runs past the end of its device allocation (%zu bytes at %p)", fn, name, p, n,
            b->size, (void *)b->base);
        return -1;
    }
    return 1;
}

static const char *copy_kind_name(int kind)
{
    static const char *const names[] = {"cudaMemcpyHostToHost", "cudaMemcpyHostToDevice",
                                        "cudaMemcpyDeviceToHost", "cudaMemcpyDeviceToDevice",
                                        "cudaMemcpyDefault"};
    return names[kind];
}

static int sync_streams(int dev);

static int dev_memcpy(void *dst, const void *src, size_t n, int kind)
{
    if (kind < COPY_H2H || kind > COPY_DEFAULT) {
        say("cudaMemcpy: kind %d is not a cudaMemcpyKind (0 to 4)", kind);
        return CUDA_INVALID_MEMCPY_DIRECTION;
    }
    if (n == 0)
        return CUDA_OK;
    if (!dst || !src) {
        say("cudaMemcpy: %s of %zu bytes with a NULL %s", copy_kind_name(kind), n, dst ? "src" : "dst");
        return CUDA_INVALID_VALUE;
    }
    /* A misused copy is reported at once, before any waiting. */
    int d = device_range("cudaMemcpy", "dst", dst, n), s = device_range("cudaMemcpy", "src", src, n);
    if (d < 0 || s < 0)
        return CUDA_INVALID_VALUE;
    bool want_d = kind == COPY_H2D || kind == COPY_D2D, want_s = kind == COPY_D2H || kind == COPY_D2D;
    if (kind != COPY_DEFAULT && (d != want_d || s != want_s)) {
        say("cudaMemcpy: %s of %zu bytes: dst %p is %s memory and src %p is %s memory, expected %s and %s",
            copy_kind_name(kind), n, dst, d ? "device" : "host", src, s ? "device" : "host",
            want_d ? "device" : "host", want_s ? "device" : "host");
        return CUDA_INVALID_VALUE;
    }
    int rc = sync_streams(-1); /* the legacy default stream waits for the others */
    if (rc != CUDA_OK)
        return rc;
    memmove(dst, src, n);
    return CUDA_OK;
}

/* The device checks of cudaMalloc and friends: CUDA_OK with *ndev, or the error. */
static int current_device_ok(int *ndev)
{
    *ndev = config_devices();
    if (*ndev < 0)
        return CUDA_NOT_INITIALIZED;
    if (*ndev == 0)
        return CUDA_NO_DEVICE;
    return st.dev < *ndev ? CUDA_OK : CUDA_INVALID_DEVICE;
}

static int dev_malloc(void **p, size_t n)
{
    int ndev, rc;
    if (!p)
        return CUDA_INVALID_VALUE;
    if ((rc = current_device_ok(&ndev)) != CUDA_OK)
        return rc;
    if (n == 0) {
        *p = NULL; /* as the real one: success, no memory */
        return CUDA_OK;
    }
    size_t capacity = config_mem_bytes();
    const char *dir = config_dir("cudaMalloc");
    if (!capacity || !dir)
        return CUDA_NOT_INITIALIZED;
    if (n > capacity)
        return CUDA_OUT_OF_MEMORY;
    if (st.nblocks == st.cap_blocks) {
        size_t cap = st.cap_blocks ? 2 * st.cap_blocks : 16;
        struct dev_block *nb = realloc(st.blocks, cap * sizeof *nb);
        if (!nb)
            return CUDA_OUT_OF_MEMORY;
        st.blocks = nb;
        st.cap_blocks = cap;
    }
    void *host = malloc(n);
    if (!host)
        return CUDA_OUT_OF_MEMORY;
    if ((rc = mem_charge(dir, st.dev, n, true, capacity)) != CUDA_OK) {
        free(host);
        return rc;
    }
    if (n <= FILL_BYTES_MAX)
        memset(host, 0xA5, n); /* device memory is not zeroed */
    st.blocks[st.nblocks++] = (struct dev_block){.base = (uintptr_t)host, .size = n, .dev = st.dev};
    *p = host;
    return CUDA_OK;
}

static int dev_free(void *p)
{
    if (!p)
        return CUDA_OK;
    struct dev_block *b = block_of(p);
    if (!b || b->base != (uintptr_t)p) {
        if (b)
            say("cudaFree: %p is inside the device allocation at %p, not its start", p, (void *)b->base);
        else
            say("cudaFree: %p is not device memory from cudaMalloc (or was freed already)", p);
        return CUDA_INVALID_VALUE;
    }
    sync_streams(-1); /* cudaFree synchronizes the device; a gather's error stays on its stream */
    b = block_of(p);  /* again: the lock was out while it waited */
    if (!b || b->base != (uintptr_t)p) {
        say("cudaFree: %p was freed by another thread meanwhile", p);
        return CUDA_INVALID_VALUE;
    }
    int dev = b->dev;
    size_t size = b->size;
    const char *dir = config_dir("cudaFree");
    if (dir)
        mem_charge(dir, dev, size, false, 0);
    else
        st.used_bytes[dev] -= size;
    *b = st.blocks[--st.nblocks];
    free(p);
    return CUDA_OK;
}

static int dev_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    int ndev, rc;
    if (!free_bytes || !total_bytes)
        return CUDA_INVALID_VALUE;
    if ((rc = current_device_ok(&ndev)) != CUDA_OK)
        return rc;
    size_t capacity = config_mem_bytes();
    const char *dir = config_dir("cudaMemGetInfo");
    if (!capacity || !dir)
        return CUDA_NOT_INITIALIZED;
    int fd = mem_lock(dir, st.dev);
    if (fd < 0)
        return CUDA_NOT_INITIALIZED;
    size_t used = 0;
    rc = mem_used(dir, st.dev, &used) == 0 ? CUDA_OK : CUDA_NOT_INITIALIZED;
    mem_unlock(fd);
    if (rc == CUDA_OK) {
        *free_bytes = used >= capacity ? 0 : capacity - used;
        *total_bytes = capacity;
    }
    return rc;
}

/* ---- streams ---- */

/* The stream of handle h (NULL: the default stream), or NULL (said, for fn). */
static struct fake_stream *stream_of(const char *fn, void *h)
{
    if (!h) {
        if (!default_stream.g.comm)
            default_stream.dev = st.dev;
        return &default_stream;
    }
    for (struct fake_stream *s = st.streams; s; s = s->next)
        if (s == h && !s->destroyed)
            return s;
    say("%s: %p is not a live stream of this process (never created, or destroyed)", fn, h);
    return NULL;
}

static void stream_free(struct fake_stream *s)
{
    if (s == &default_stream)
        return;
    for (struct fake_stream **pp = &st.streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            free(s);
            return;
        }
}

static int gather_complete(struct gather *g);

/* Drops s's gather without completing it (its communicator is aborted,
 * or its stream gone). */
static void gather_drop(struct fake_stream *s)
{
    struct gather *g = &s->g;
    if (!g->comm)
        return;
    if (g->comm->pending_on == s)
        g->comm->pending_on = NULL;
    memset(g, 0, sizeof *g);
    if (s->destroyed)
        stream_free(s);
}

/* Tries to complete s's gather: CUDA_OK (nothing pending any more; s may
 * be freed), CUDA_NOT_READY, or the error it failed with. */
static int gather_try(struct fake_stream *s)
{
    struct gather *g = &s->g;
    if (!g->comm)
        return CUDA_OK;
    if (g->error)
        return g->error;
    int rc = gather_complete(g);
    if (rc == CUDA_NOT_READY)
        return rc;
    if (rc != CUDA_OK) {
        g->error = rc;
        g->comm->failed = true;
        return rc;
    }
    g->comm->done = g->seq + 1;
    g->comm->pending_on = NULL;
    memset(g, 0, sizeof *g);
    if (s->destroyed)
        stream_free(s);
    return CUDA_OK;
}

/* Polls s until its gather completes or fails. */
static int gather_wait(struct fake_stream *s)
{
    int rc;
    while ((rc = gather_try(s)) == CUDA_NOT_READY)
        nap();
    return rc;
}

/* Polls every stream of dev (-1: every stream) until none has a gather
 * pending: CUDA_OK, or the first error one failed with. */
static int sync_streams(int dev)
{
    for (;;) {
        bool pending = false;
        int rc = CUDA_OK;
        for (struct fake_stream *s = &default_stream, *next; s; s = next) {
            next = s == &default_stream ? st.streams : s->next; /* gather_try may free s */
            if (!s->g.comm || (dev >= 0 && s->dev != dev))
                continue;
            int e = gather_try(s);
            if (e == CUDA_NOT_READY)
                pending = true;
            else if (e != CUDA_OK && rc == CUDA_OK)
                rc = e;
        }
        if (!pending)
            return rc;
        nap();
    }
}

static int stream_create(void **out)
{
    int ndev, rc;
    if (!out)
        return CUDA_INVALID_VALUE;
    if ((rc = current_device_ok(&ndev)) != CUDA_OK)
        return rc;
    struct fake_stream *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_OUT_OF_MEMORY;
    s->dev = st.dev;
    s->next = st.streams;
    st.streams = s;
    *out = s;
    return CUDA_OK;
}

static int stream_destroy(void *h)
{
    if (!h) {
        say("cudaStreamDestroy: the default stream (NULL) cannot be destroyed");
        return CUDA_INVALID_HANDLE;
    }
    struct fake_stream *s = stream_of("cudaStreamDestroy", h);
    if (!s)
        return CUDA_INVALID_HANDLE;
    if (s->g.comm && !s->g.error) {
        s->destroyed = true; /* the real one finishes the work in the background */
        return CUDA_OK;
    }
    gather_drop(s);
    stream_free(s);
    return CUDA_OK;
}

/* ---- communicators ---- */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* only to make ids unique */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether id is one ncclGetUniqueId made: "fakegpu-" then [0-9-], NUL-terminated. */
static bool id_valid(const fake_unique_id *id)
{
    size_t n = strnlen(id->internal, sizeof id->internal);
    if (n == sizeof id->internal || n <= ID_PREFIX_LEN || memcmp(id->internal, ID_PREFIX, ID_PREFIX_LEN) != 0)
        return false;
    for (size_t i = ID_PREFIX_LEN; i < n; i++)
        if ((id->internal[i] < '0' || id->internal[i] > '9') && id->internal[i] != '-')
            return false;
    return true;
}

static struct fake_comm *comm_of(void *h)
{
    for (struct fake_comm *c = st.comms; c; c = c->next)
        if (c == h)
            return c;
    return NULL;
}

/* Opens and locks <c->path>/lock, which orders the claims and departures
 * of a communicator's ranks: the descriptor, or -1 (said). */
static int comm_lock(const struct fake_comm *c)
{
    char path[PATH_MAX];
    if (!pathf(path, sizeof path, "%s/lock", c->path))
        return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        say("%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Claims <c->path>/<name> for this rank, created with O_EXCL, under
 * comm_lock: 0; or, when a live process holds it, 1 with *holder its rank
 * and *holder_pid its pid; or -1 (said). A dead process's claim (or one
 * it died writing) is taken over. */
static int claim(struct fake_comm *c, const char *name, int *holder, long *holder_pid)
{
    char path[PATH_MAX];
    if (!pathf(path, sizeof path, "%s/%s", c->path, name))
        return -1;
    for (int tries = 0; tries < 2; tries++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            char text[64];
            int k = snprintf(text, sizeof text, "%d %ld\n", c->rank, st.pid);
            bool ok = k > 0 && write(fd, text, (size_t)k) == k;
            close(fd);
            if (!ok) {
                say("%s: %s", path, strerror(errno));
                unlink(path);
                return -1;
            }
            return 0;
        }
        if (errno != EEXIST) {
            say("%s: %s", path, strerror(errno));
            return -1;
        }
        FILE *f = fopen(path, "r");
        int got = f ? fscanf(f, "%d %ld", holder, holder_pid) : 0;
        if (f)
            fclose(f);
        if (got == 2 && alive(*holder_pid))
            return 1;
        unlink(path);
    }
    say("%s: could not be claimed", path);
    return -1;
}

/* Removes <c->path>/<name> when it holds this process's claim. */
static void unclaim(struct fake_comm *c, const char *name)
{
    char path[PATH_MAX];
    int rank = -1;
    long pid = 0;
    if (!pathf(path, sizeof path, "%s/%s", c->path, name))
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    int got = fscanf(f, "%d %ld", &rank, &pid);
    fclose(f);
    if (got == 2 && rank == c->rank && pid == st.pid)
        unlink(path);
}

/* Makes the rank's two claims (rank.<r>, dev.<d>): NCCL_OK, or the code (said). */
static int comm_claim(struct fake_comm *c)
{
    char rank_name[32], dev_name[32];
    int q = -1;
    long pid = 0;
    snprintf(rank_name, sizeof rank_name, "rank.%d", c->rank);
    snprintf(dev_name, sizeof dev_name, "dev.%d", c->dev);
    int fd = comm_lock(c);
    if (fd < 0)
        return NCCL_SYSTEM_ERROR;
    int r = claim(c, rank_name, &q, &pid);
    if (r > 0)
        say("ncclCommInitRank: rank %d of communicator %s joined twice (pids %ld and %ld)", c->rank, c->id, pid,
            st.pid);
    if (r == 0 && (r = claim(c, dev_name, &q, &pid)) != 0) {
        if (r > 0)
            say("ncclCommInitRank: rank %d and rank %d both use device %d", c->rank, q, c->dev);
        unclaim(c, rank_name);
    }
    flock(fd, LOCK_UN);
    close(fd);
    return r > 0 ? NCCL_INVALID_USAGE : r < 0 ? NCCL_SYSTEM_ERROR : NCCL_OK;
}

static int comm_init(void **out, int nranks, const fake_unique_id *id, int rank)
{
    if (!out) {
        say("ncclCommInitRank: comm is NULL");
        return NCCL_INVALID_ARGUMENT;
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        say("ncclCommInitRank: rank %d of %d ranks: expected nranks >= 1 and 0 <= rank < nranks", rank, nranks);
        return NCCL_INVALID_ARGUMENT;
    }
    if (!id_valid(id)) {
        say("ncclCommInitRank: rank %d: the unique id is not one ncclGetUniqueId made (every rank must get "
            "rank 0's id)", rank);
        return NCCL_INVALID_ARGUMENT;
    }
    int ndev, rc;
    if ((rc = current_device_ok(&ndev)) != CUDA_OK) {
        say("ncclCommInitRank: rank %d: %s", rank, cudaGetErrorString(rc));
        return NCCL_CUDA_ERROR;
    }
    const char *dir = config_dir("ncclCommInitRank");
    if (!dir)
        return NCCL_SYSTEM_ERROR;
    struct fake_comm *c = calloc(1, sizeof *c);
    if (!c)
        return NCCL_SYSTEM_ERROR;
    memcpy(c->id, id->internal, sizeof c->id);
    c->nranks = nranks;
    c->rank = rank;
    c->dev = st.dev;
    rc = NCCL_SYSTEM_ERROR;
    if (!pathf(c->path, sizeof c->path, "%s/nccl-%s", dir, c->id))
        goto out_free;
    if (mkdir(c->path, 0700) != 0 && errno != EEXIST) {
        say("ncclCommInitRank: %s: %s", c->path, strerror(errno));
        goto out_free;
    }
    if ((rc = comm_claim(c)) != NCCL_OK)
        goto out_free;
    c->next = st.comms;
    st.comms = c;
    *out = c;
    return NCCL_OK;
out_free:
    free(c);
    return rc;
}

/* Removes the folder and everything in it (the blocks, claims and marks of
 * a communicator every rank has left). */
static void remove_folder(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char p[PATH_MAX];
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            pathf(p, sizeof p, "%s/%s", path, e->d_name))
            unlink(p);
    }
    closedir(d);
    rmdir(path);
}

/* Under comm_lock: removes the rank's claims, marks it gone (left.<r>),
 * and, when it is the last rank to leave, removes the communicator's
 * folder. */
static void comm_depart(struct fake_comm *c)
{
    char name[32], path[PATH_MAX];
    int fd = comm_lock(c);
    if (fd < 0)
        return;
    snprintf(name, sizeof name, "rank.%d", c->rank);
    unclaim(c, name);
    snprintf(name, sizeof name, "dev.%d", c->dev);
    unclaim(c, name);
    if (pathf(path, sizeof path, "%s/left.%d", c->path, c->rank)) {
        int mark = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (mark >= 0)
            close(mark);
    }
    int left = 0;
    DIR *d = opendir(c->path);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        left += strncmp(e->d_name, "left.", 5) == 0;
    if (d)
        closedir(d);
    if (left == c->nranks)
        remove_folder(c->path); /* its lock file too: no rank will take it again */
    flock(fd, LOCK_UN);
    close(fd);
}

static void block_remove(const struct fake_comm *c, uint64_t seq);

/* Ends this rank's part in c (its pending gather already completed or
 * dropped) and frees c. */
static void comm_leave(struct fake_comm *c)
{
    /* Blocks a peer may still read stay (block_publish says which): with
     * everything completed, the last one only. */
    if (c->done == c->seq && c->seq >= 2)
        block_remove(c, c->seq - 2);
    comm_depart(c);
    for (struct fake_comm **pp = &st.comms; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    free(c);
}

/* ---- all-gathers ---- */

/* Bytes of NCCL datatype dt (0: not one). */
static size_t dtype_size(int dt)
{
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8}; /* ncclInt8 .. ncclFloat64 */
    return dt >= 0 && dt < (int)(sizeof sizes / sizeof sizes[0]) ? sizes[dt] : 0;
}

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void block_remove(const struct fake_comm *c, uint64_t seq)
{
    char path[PATH_MAX];
    if (pathf(path, sizeof path, "%s/%llu.%d", c->path, (unsigned long long)seq, c->rank))
        unlink(path);
}

/* Publishes this rank's block of gather c->seq as <path>/<seq>.<rank>:
 * a header line "fakegpu-block nranks=N count=C datatype=T bytes=B", then
 * the bytes; written under a temporary name and renamed, so a reader sees
 * all of it or nothing. NCCL_OK, or NCCL_SYSTEM_ERROR (said).
 *
 * The rank's block of seq - 2 goes now, as no peer can still read it:
 * this rank publishes seq only after completing seq - 1 (ncclAllGather
 * waits for the communicator's previous gather), so every peer had
 * published seq - 1; every peer, by the same rule, had completed seq - 2
 * before that, and a gather completes only after copying every rank's
 * block. The blocks of seq - 1 and seq stay: a peer may not have completed
 * seq - 1 yet. */
static int block_publish(struct fake_comm *c, const void *send, size_t count, int dt, size_t bytes)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!pathf(path, sizeof path, "%s/%llu.%d", c->path, (unsigned long long)c->seq, c->rank) ||
        !pathf(tmp, sizeof tmp, "%s.tmp", path))
        return NCCL_SYSTEM_ERROR;
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "fakegpu-block nranks=%d count=%zu datatype=%d bytes=%zu\n", c->nranks, count, dt,
                           bytes) > 0;
    ok = ok && (bytes == 0 || fwrite(send, 1, bytes, f) == bytes);
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        say("ncclAllGather: %s: %s", path, strerror(errno));
        unlink(tmp);
        return NCCL_SYSTEM_ERROR;
    }
    if (c->seq >= 2)
        block_remove(c, c->seq - 2);
    return NCCL_OK;
}

struct block_header {
    int nranks, dt;            /* as the publisher had them */
    size_t count, bytes;       /* elements and bytes of its block */
};

/* Opens rank q's block of gather seq: the stream positioned at its bytes
 * with *h, or NULL with *rc CUDA_NOT_READY (not published yet) or
 * CUDA_UNKNOWN (a damaged block, said). */
static FILE *block_open(const struct fake_comm *c, uint64_t seq, int q, struct block_header *h, int *rc)
{
    char path[PATH_MAX];
    *rc = CUDA_UNKNOWN;
    if (!pathf(path, sizeof path, "%s/%llu.%d", c->path, (unsigned long long)seq, q))
        return NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            *rc = CUDA_NOT_READY;
        else
            say("ncclAllGather: %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fscanf(f, "fakegpu-block nranks=%d count=%zu datatype=%d bytes=%zu", &h->nranks, &h->count, &h->dt,
               &h->bytes) != 4 || fgetc(f) != '\n') {
        say("ncclAllGather: %s: not a block this library wrote", path);
        fclose(f);
        return NULL;
    }
    return f;
}

/* Whether every rank's block of g is there and agrees with this rank's:
 * CUDA_OK, CUDA_NOT_READY, or CUDA_UNKNOWN (said). */
static int gather_check_peers(const struct gather *g)
{
    const struct fake_comm *c = g->comm;
    bool missing = false;
    for (int q = 0; q < c->nranks; q++) {
        struct block_header h;
        int rc;
        FILE *f = block_open(c, g->seq, q, &h, &rc);
        if (!f) {
            if (rc != CUDA_NOT_READY)
                return rc;
            missing = true;
            continue;
        }
        fclose(f);
        if (h.bytes != g->bytes || h.nranks != c->nranks) {
            say("ncclAllGather: communicator %s, all-gather %llu: rank %d sends %zu bytes (%zu of datatype %d) "
                "in %d ranks, rank %d sends %zu bytes in %d: every rank must send the same count and datatype",
                c->id, (unsigned long long)g->seq, q, h.bytes, h.count, h.dt, h.nranks, c->rank, g->bytes,
                c->nranks);
            return CUDA_UNKNOWN;
        }
    }
    return missing ? CUDA_NOT_READY : CUDA_OK;
}

/* Completes g when every block is there: the blocks into recvbuff in rank
 * order. CUDA_OK, CUDA_NOT_READY, or CUDA_UNKNOWN (said). */
static int gather_complete(struct gather *g)
{
    const struct fake_comm *c = g->comm;
    int rc = gather_check_peers(g);
    if (rc != CUDA_OK)
        return rc;
    if (hash_bytes(g->send, g->bytes) != g->send_hash) {
        say("ncclAllGather: communicator %s, all-gather %llu, rank %d: sendbuff %p changed while the all-gather "
            "was in flight (NCCL reads it on the device until the stream completes)",
            c->id, (unsigned long long)g->seq, c->rank, (const void *)g->send);
        return CUDA_UNKNOWN;
    }
    for (int q = 0; q < c->nranks; q++) {
        struct block_header h;
        FILE *f = block_open(c, g->seq, q, &h, &rc);
        if (!f)
            return CUDA_UNKNOWN; /* it was there a moment ago: nobody removes a block still needed */
        bool ok = g->bytes == 0 || fread(g->recv + (size_t)q * g->bytes, 1, g->bytes, f) == g->bytes;
        ok = ok && fgetc(f) == EOF;
        fclose(f);
        if (!ok) {
            say("ncclAllGather: communicator %s, all-gather %llu: rank %d's block is not %zu bytes long", c->id,
                (unsigned long long)g->seq, q, g->bytes);
            return CUDA_UNKNOWN;
        }
    }
    return CUDA_OK;
}

/* Whether n bytes at p are device memory of dev, for ncclAllGather's
 * argument name. */
static bool gather_buffer_ok(const char *name, const void *p, size_t n, int dev)
{
    if (n == 0)
        return true;
    int d = device_range("ncclAllGather", name, p, n);
    if (d == 0)
        say("ncclAllGather: %s %p is not device memory", name, p);
    else if (d > 0 && block_of(p)->dev != dev)
        say("ncclAllGather: %s %p is memory of device %d, the communicator's device is %d", name, p,
            block_of(p)->dev, dev);
    return d > 0 && block_of(p)->dev == dev;
}

/* The checks before an all-gather: NCCL_OK with *c, *s and *bytes, or
 * NCCL_INVALID_ARGUMENT (said). */
static int gather_args(const void *send, void *recv, size_t count, int dt, void *comm, void *stream,
                       struct fake_comm **c, struct fake_stream **s, size_t *bytes)
{
    size_t esize = dtype_size(dt);
    if (!(*c = comm_of(comm))) {
        say("ncclAllGather: %p is not a live communicator of this process", comm);
        return NCCL_INVALID_ARGUMENT;
    }
    if (!esize) {
        say("ncclAllGather: datatype %d is not an ncclDataType_t (0 to 8)", dt);
        return NCCL_INVALID_ARGUMENT;
    }
    if (count > SIZE_MAX / esize / (size_t)(*c)->nranks) {
        say("ncclAllGather: count %zu overflows", count);
        return NCCL_INVALID_ARGUMENT;
    }
    *bytes = count * esize;
    if (!(*s = stream_of("ncclAllGather", stream)))
        return NCCL_INVALID_ARGUMENT;
    if (*s != &default_stream && (*s)->dev != (*c)->dev) {
        say("ncclAllGather: the stream belongs to device %d, the communicator to device %d", (*s)->dev, (*c)->dev);
        return NCCL_INVALID_ARGUMENT;
    }
    if (!gather_buffer_ok("sendbuff", send, *bytes, (*c)->dev) ||
        !gather_buffer_ok("recvbuff", recv, *bytes * (size_t)(*c)->nranks, (*c)->dev))
        return NCCL_INVALID_ARGUMENT;
    return NCCL_OK;
}

static int all_gather(const void *send, void *recv, size_t count, int dt, void *comm, void *stream)
{
    struct fake_comm *c;
    struct fake_stream *s;
    size_t bytes;
    int rc = gather_args(send, recv, count, dt, comm, stream, &c, &s, &bytes);
    if (rc != NCCL_OK)
        return rc;
    /* One gather in flight per communicator and per stream: the previous
     * ones complete first (the rule block_publish relies on). */
    if ((c->pending_on && gather_wait(c->pending_on) != CUDA_OK) || c->failed) {
        say("ncclAllGather: communicator %s, rank %d: an earlier all-gather failed; abort the communicator",
            c->id, c->rank);
        return NCCL_CUDA_ERROR;
    }
    if (s->g.comm && gather_wait(s) != CUDA_OK) {
        say("ncclAllGather: the stream's earlier all-gather failed");
        return NCCL_CUDA_ERROR;
    }
    if ((rc = block_publish(c, send, count, dt, bytes)) != NCCL_OK)
        return rc;
    s->dev = c->dev;
    s->g = (struct gather){.comm = c, .seq = c->seq, .send = send, .recv = recv, .bytes = bytes,
                           .send_hash = hash_bytes(send, bytes)};
    c->pending_on = s;
    c->seq++;
    return NCCL_OK;
}

/* ncclCommDestroy (waits for the pending gather) or ncclCommAbort (drops it). */
static int comm_end(const char *fn, void *h, bool abort_it)
{
    if (!h)
        return NCCL_OK;
    struct fake_comm *c = comm_of(h);
    if (!c) {
        say("%s: %p is not a live communicator of this process", fn, h);
        return NCCL_INVALID_ARGUMENT;
    }
    if (c->pending_on && !abort_it)
        gather_wait(c->pending_on);
    if (c->pending_on)
        gather_drop(c->pending_on);
    comm_leave(c);
    return NCCL_OK;
}

/* ---- the CUDA runtime ---- */

int cudaGetDeviceCount(int *n)
{
    if (!n)
        return CUDA_INVALID_VALUE;
    enter();
    int ndev = config_devices();
    *n = ndev > 0 ? ndev : 0;
    leave();
    return ndev < 0 ? CUDA_NOT_INITIALIZED : ndev == 0 ? CUDA_NO_DEVICE : CUDA_OK;
}

int cudaSetDevice(int d)
{
    enter();
    int ndev = config_devices();
    int rc = ndev < 0 ? CUDA_NOT_INITIALIZED : ndev == 0 ? CUDA_NO_DEVICE
             : d < 0 || d >= ndev                        ? CUDA_INVALID_DEVICE
                                                         : CUDA_OK;
    if (rc == CUDA_OK)
        st.dev = d;
    leave();
    return rc;
}

int cudaGetDevice(int *d)
{
    if (!d)
        return CUDA_INVALID_VALUE;
    enter();
    *d = st.dev;
    leave();
    return CUDA_OK;
}

int cudaMalloc(void **p, size_t n)
{
    enter();
    int rc = dev_malloc(p, n);
    leave();
    return rc;
}

int cudaFree(void *p)
{
    enter();
    int rc = dev_free(p);
    leave();
    return rc;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
    enter();
    int rc = dev_memcpy(dst, src, n, kind);
    leave();
    return rc;
}

int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    enter();
    int rc = dev_mem_info(free_bytes, total_bytes);
    leave();
    return rc;
}

int cudaStreamCreate(void **s)
{
    enter();
    int rc = stream_create(s);
    leave();
    return rc;
}

int cudaStreamQuery(void *h)
{
    enter();
    struct fake_stream *s = stream_of("cudaStreamQuery", h);
    int rc = s ? gather_try(s) : CUDA_INVALID_HANDLE;
    leave();
    return rc;
}

int cudaStreamSynchronize(void *h)
{
    enter();
    struct fake_stream *s = stream_of("cudaStreamSynchronize", h);
    int rc = s ? gather_wait(s) : CUDA_INVALID_HANDLE;
    leave();
    return rc;
}

int cudaStreamDestroy(void *h)
{
    enter();
    int rc = stream_destroy(h);
    leave();
    return rc;
}

int cudaDeviceSynchronize(void)
{
    enter();
    int rc = sync_streams(st.dev);
    leave();
    return rc;
}

const char *cudaGetErrorString(int e)
{
    switch (e) {
    case CUDA_OK: return "no error";
    case CUDA_INVALID_VALUE: return "invalid argument";
    case CUDA_OUT_OF_MEMORY: return "out of memory";
    case CUDA_NOT_INITIALIZED: return "initialization error";
    case CUDA_INVALID_MEMCPY_DIRECTION: return "invalid copy direction for memcpy";
    case CUDA_NO_DEVICE: return "no CUDA-capable device is detected";
    case CUDA_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_NOT_READY: return "device not ready";
    case CUDA_UNKNOWN: return "unknown error";
    default: return "unrecognized error code";
    }
}

/* ---- NCCL ---- */

int ncclGetUniqueId(fake_unique_id *id)
{
    if (!id)
        return NCCL_INVALID_ARGUMENT;
    enter();
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, ID_PREFIX "%ld-%u-%llu", st.pid, ++st.ids,
             (unsigned long long)mono_ns());
    leave();
    return NCCL_OK;
}

int ncclCommInitRank(void **comm, int nranks, fake_unique_id id, int rank)
{
    enter();
    int rc = comm_init(comm, nranks, &id, rank);
    leave();
    return rc;
}

int ncclAllGather(const void *send, void *recv, size_t count, int datatype, void *comm, void *stream)
{
    enter();
    int rc = all_gather(send, recv, count, datatype, comm, stream);
    leave();
    return rc;
}

int ncclCommDestroy(void *comm)
{
    enter();
    int rc = comm_end("ncclCommDestroy", comm, false);
    leave();
    return rc;
}

int ncclCommAbort(void *comm)
{
    enter();
    int rc = comm_end("ncclCommAbort", comm, true);
    leave();
    return rc;
}

const char *ncclGetErrorString(int r)
{
    switch (r) {
    case 0: return "no error";
    case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 3: return "internal error - please report this issue to the NCCL developers";
    case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case 6: return "remote process exited or there was a network error";
    case 7: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}
