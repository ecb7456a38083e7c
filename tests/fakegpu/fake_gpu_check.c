/* fakegpu_check: the behaviour of libckh_fakegpu.so (fake_gpu.c has its
 * specification), loaded with dlopen as real/coll_nccl.c loads NCCL and
 * the CUDA runtime, and driven by forked processes that share a mkdtemp
 * folder as the ranks of one job do.
 *
 *   fakegpu_check build/libckh_fakegpu.so
 *
 * Prints one line per check ("ok   NAME" or "FAIL NAME: what"); exits 0
 * when every check passes, 1 when one fails, 2 on bad usage, 3 when the
 * library cannot be loaded. Each process writes its stderr (the library's
 * "fakegpu: " lines, and this file's "check: " lines saying what it
 * expected) to NAME.err in the check's folder, which the parent reads
 * back. The temporary folder is removed at the end.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the library ---- */

typedef struct {
    char internal[128];
} unique_id;

static struct {
    int (*get_device_count)(int *n);
    int (*set_device)(int d);
    int (*get_device)(int *d);
    int (*malloc_dev)(void **p, size_t n);
    int (*free_dev)(void *p);
    int (*memcpy_)(void *dst, const void *src, size_t n, int kind);
    int (*mem_info)(size_t *free_bytes, size_t *total_bytes);
    int (*stream_create)(void **s);
    int (*stream_query)(void *s);
    int (*stream_destroy)(void *s);
    int (*stream_sync)(void *s);
    int (*device_sync)(void);
    const char *(*cuda_error)(int e);
    int (*get_unique_id)(unique_id *id);
    int (*comm_init_rank)(void **comm, int nranks, unique_id id, int rank);
    int (*all_gather)(const void *send, void *recv, size_t count, int dt, void *comm, void *stream);
    int (*comm_destroy)(void *comm);
    int (*comm_abort)(void *comm);
    const char *(*nccl_error)(int r);
} api;

enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3 };
enum { NCCL_INT8 = 0, NCCL_FLOAT32 = 7 };
enum { NOT_READY = 600 };

/* Loads the library at path into api: 0, or -1 with a line on stderr. */
static int load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "fakegpu_check: %s\n", dlerror());
        return -1;
    }
#define SYM(field, name)                                                                \
    do {                                                                                \
        *(void **)(&api.field) = dlsym(h, name);                                        \
        if (!api.field) {                                                               \
            fprintf(stderr, "fakegpu_check: %s lacks %s\n", path, name);                \
            return -1;                                                                  \
        }                                                                               \
    } while (0)
    SYM(get_device_count, "cudaGetDeviceCount");
    SYM(set_device, "cudaSetDevice");
    SYM(get_device, "cudaGetDevice");
    SYM(malloc_dev, "cudaMalloc");
    SYM(free_dev, "cudaFree");
    SYM(memcpy_, "cudaMemcpy");
    SYM(mem_info, "cudaMemGetInfo");
    SYM(stream_create, "cudaStreamCreate");
    SYM(stream_query, "cudaStreamQuery");
    SYM(stream_destroy, "cudaStreamDestroy");
    SYM(stream_sync, "cudaStreamSynchronize");
    SYM(device_sync, "cudaDeviceSynchronize");
    SYM(cuda_error, "cudaGetErrorString");
    SYM(get_unique_id, "ncclGetUniqueId");
    SYM(comm_init_rank, "ncclCommInitRank");
    SYM(all_gather, "ncclAllGather");
    SYM(comm_destroy, "ncclCommDestroy");
    SYM(comm_abort, "ncclCommAbort");
    SYM(nccl_error, "ncclGetErrorString");
#undef SYM
    return 0; /* the handle stays open for the program's life */
}

/* ---- processes ---- */

static char root[PATH_MAX]; /* the mkdtemp folder */
static char job[PATH_MAX];  /* this check's folder under it (CKH_FAKE_GPU_DIR) */

/* In a child: says what was expected (into its .err file) and fails. */
#define EXPECT(cond, ...)                                                               \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "check: line %d: ", __LINE__);                              \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/* buf = the formatted path; a path too long for it ends the program
 * (exit 3: the temporary folder's place). */
__attribute__((format(printf, 3, 4))) static void pathf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        fprintf(stderr, "fakegpu_check: a path under %s is too long\n", root);
        exit(3);
    }
}

/* A new check: its folder, CKH_FAKE_GPU_DIR naming it, and the device
 * settings (NULL: the library's default). */
static void job_begin(const char *name, const char *gpus, const char *mem)
{
    pathf(job, sizeof job, "%s/%s", root, name);
    mkdir(job, 0700);
    setenv("CKH_FAKE_GPU_DIR", job, 1);
    if (gpus)
        setenv("CKH_FAKE_GPUS", gpus, 1);
    else
        unsetenv("CKH_FAKE_GPUS");
    if (mem)
        setenv("CKH_FAKE_GPU_MEM", mem, 1);
    else
        unsetenv("CKH_FAKE_GPU_MEM");
}

/* Forks a process running fn(arg) with its stderr in <job>/<name>.err;
 * its exit status is fn's result. */
static pid_t spawn(const char *name, int (*fn)(void *), void *arg)
{
    char err[PATH_MAX];
    pathf(err, sizeof err, "%s/%s.err", job, name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives the check */
    if (getppid() == 1)
        _exit(1);
    int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    int rc = fn(arg);
    fflush(NULL);
    exit(rc); /* atexit handlers run: a sanitizer build checks the process for leaks */
}

/* The exit status of pid (128 + signal when killed). */
static int reap(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void kill_and_reap(pid_t pid)
{
    kill(pid, SIGKILL);
    reap(pid);
}

/* <job>/<name>.err as text (static buffer, "" when missing). */
static const char *err_of(const char *name)
{
    static char text[8192];
    char path[PATH_MAX];
    pathf(path, sizeof path, "%s/%s.err", job, name);
    text[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    for (char *p = text; *p; p++)
        if (*p == '\n' && p[1])
            *p = '|'; /* one line in the report */
    size_t n = strlen(text);
    if (n && text[n - 1] == '\n')
        text[n - 1] = '\0';
    return text;
}

/* Whether <job>/<name>.err contains needle. */
static bool err_has(const char *name, const char *needle)
{
    return strstr(err_of(name), needle) != NULL;
}

/* A pipe between parent and child: one byte says "ready" or "go". */
struct chan {
    int fd[2];                 /* read end, write end */
};

static void chan_open(struct chan *c)
{
    if (pipe(c->fd) != 0) {
        perror("fakegpu_check: pipe");
        exit(3);
    }
}

static void chan_send(struct chan *c)
{
    ssize_t w = write(c->fd[1], "x", 1);
    (void)w;
}

/* Waits for a byte: false when the other side closed without one. */
static bool chan_wait(struct chan *c)
{
    char b;
    ssize_t r;
    while ((r = read(c->fd[0], &b, 1)) < 0 && errno == EINTR)
        ;
    return r == 1;
}

static void chan_close(struct chan *c)
{
    close(c->fd[0]);
    close(c->fd[1]);
}

/* Polls cudaStreamQuery until it is not "not ready" (a bounded number of
 * times, so a broken library cannot hang the check); its last result. */
static int query_until_done(void *s)
{
    struct timespec ts = {.tv_nsec = 50000};
    int rc = NOT_READY;
    for (long i = 0; i < 400000 && (rc = api.stream_query(s)) == NOT_READY; i++)
        if (i > 100)
            nanosleep(&ts, NULL);
    return rc;
}

/* ---- results ---- */

static int failures;

/* Prints the check's line; what says why it failed (NULL: it passed). */
static void report(const char *name, const char *what)
{
    if (what)
        failures++;
    printf("%s %s%s%s\n", what ? "FAIL" : "ok  ", name, what ? ": " : "", what ? what : "");
    fflush(stdout);
}

/* Reaps the named process: NULL when it exited 0, else why (static). */
static const char *child_failed(pid_t pid, const char *name)
{
    static char why[9000];
    int rc = reap(pid);
    if (rc == 0)
        return NULL;
    snprintf(why, sizeof why, "%s exited %d: %s", name, rc, err_of(name));
    return why;
}

/* ---- devices ---- */

static int devices_three(void *arg)
{
    (void)arg;
    int n = -1, d = -1;
    EXPECT(api.get_device_count(&n) == 0 && n == 3, "cudaGetDeviceCount: %d devices, expected 3", n);
    EXPECT(api.get_device(&d) == 0 && d == 0, "the current device starts at 0, got %d", d);
    EXPECT(api.set_device(3) == 101, "cudaSetDevice(3) of 3: expected cudaErrorInvalidDevice");
    EXPECT(api.set_device(-1) == 101, "cudaSetDevice(-1): expected cudaErrorInvalidDevice");
    EXPECT(api.set_device(2) == 0 && api.get_device(&d) == 0 && d == 2, "cudaSetDevice(2): device %d", d);
    EXPECT(strcmp(api.cuda_error(101), "invalid device ordinal") == 0, "%s", api.cuda_error(101));
    EXPECT(strcmp(api.cuda_error(600), "device not ready") == 0, "%s", api.cuda_error(600));
    return 0;
}

static int devices_none(void *arg)
{
    (void)arg;
    int n = -1;
    void *p = NULL, *s = NULL;
    EXPECT(api.get_device_count(&n) == 100 && n == 0, "CKH_FAKE_GPUS=0: expected 100 and 0 devices, got %d", n);
    EXPECT(strcmp(api.cuda_error(100), "no CUDA-capable device is detected") == 0, "%s", api.cuda_error(100));
    EXPECT(api.set_device(0) == 100, "cudaSetDevice(0) without devices: expected 100");
    EXPECT(api.malloc_dev(&p, 16) == 100 && p == NULL, "cudaMalloc without devices: expected 100");
    EXPECT(api.stream_create(&s) == 100, "cudaStreamCreate without devices: expected 100");
    return 0;
}

static int devices_bad_setting(void *arg)
{
    (void)arg;
    int n = -1;
    EXPECT(api.get_device_count(&n) == 3 && n == 0, "CKH_FAKE_GPUS=two: expected cudaErrorInitializationError");
    return 0;
}

static void check_devices(void)
{
    const char *why = NULL;
    job_begin("devices", "3", NULL);
    why = child_failed(spawn("three", devices_three, NULL), "three");
    if (!why) {
        setenv("CKH_FAKE_GPUS", "0", 1);
        why = child_failed(spawn("none", devices_none, NULL), "none");
    }
    if (!why) {
        setenv("CKH_FAKE_GPUS", "two", 1);
        why = child_failed(spawn("bad", devices_bad_setting, NULL), "bad");
        if (!why && !err_has("bad", "fakegpu: CKH_FAKE_GPUS: expected a number of devices"))
            why = "CKH_FAKE_GPUS=two: no line naming the variable";
    }
    report("devices: count, cudaSetDevice range, CKH_FAKE_GPUS=0 and a bad setting", why);
}

/* ---- device memory across processes ---- */

enum { CAPACITY = 1 << 20, BIG = 600000 };

struct mem_args {
    struct chan ready, go;     /* A says it holds its memory; the parent never says go */
};

static int mem_holder(void *arg)
{
    struct mem_args *a = arg;
    void *p = NULL;
    size_t free_b = 0, total_b = 0;
    EXPECT(api.set_device(0) == 0 && api.malloc_dev(&p, BIG) == 0 && p, "A: cudaMalloc of %d bytes", BIG);
    EXPECT(api.mem_info(&free_b, &total_b) == 0 && free_b == CAPACITY - BIG && total_b == CAPACITY,
           "A: cudaMemGetInfo: free %zu total %zu", free_b, total_b);
    chan_send(&a->ready);
    chan_wait(&a->go); /* killed here */
    return 0;
}

static int mem_other(void *arg)
{
    (void)arg;
    void *p = NULL, *q = NULL;
    size_t free_b = 0, total_b = 0;
    EXPECT(api.set_device(0) == 0, "B: cudaSetDevice(0)");
    EXPECT(api.mem_info(&free_b, &total_b) == 0 && free_b == CAPACITY - BIG && total_b == CAPACITY,
           "B: cudaMemGetInfo sees A's allocation: free %zu (expected %d), total %zu", free_b, CAPACITY - BIG,
           total_b);
    EXPECT(api.malloc_dev(&p, BIG) == 2 && p == NULL, "B: cudaMalloc past the capacity: expected 2, nothing");
    EXPECT(strcmp(api.cuda_error(2), "out of memory") == 0, "%s", api.cuda_error(2));
    EXPECT(api.malloc_dev(&p, CAPACITY - BIG) == 0 && p, "B: cudaMalloc of the rest");
    EXPECT(api.mem_info(&free_b, &total_b) == 0 && free_b == 0, "B: cudaMemGetInfo: free %zu, expected 0", free_b);
    EXPECT(api.free_dev(p) == 0, "B: cudaFree");
    EXPECT(api.set_device(1) == 0 && api.malloc_dev(&q, BIG) == 0, "B: device 1 has its own memory");
    EXPECT(api.free_dev(q) == 0, "B: cudaFree on device 1");
    return 0;
}

static int mem_after_kill(void *arg)
{
    (void)arg;
    void *p = NULL, *q = NULL;
    int local = 0;
    size_t free_b = 0, total_b = 0;
    EXPECT(api.mem_info(&free_b, &total_b) == 0 && free_b == CAPACITY, "C: killed A's memory is back: free %zu",
           free_b);
    EXPECT(api.malloc_dev(&p, BIG) == 0 && p, "C: cudaMalloc of what A held");
    EXPECT(api.malloc_dev(&q, BIG) == 2 && q == NULL, "C: its own allocation counts: expected 2");
    EXPECT(api.free_dev((char *)p + 1) == 1, "C: cudaFree inside a block: expected 1");
    EXPECT(api.free_dev(&local) == 1, "C: cudaFree of host memory: expected 1");
    EXPECT(api.free_dev(NULL) == 0, "C: cudaFree(NULL): expected 0");
    EXPECT(api.free_dev(p) == 0, "C: cudaFree");
    EXPECT(api.free_dev(p) == 1, "C: cudaFree twice: expected 1");
    EXPECT(api.mem_info(&free_b, &total_b) == 0 && free_b == CAPACITY, "C: after cudaFree: free %zu", free_b);
    EXPECT(api.malloc_dev(&p, 0) == 0 && p == NULL, "C: cudaMalloc of 0 bytes: success and NULL");
    return 0;
}

static int mem_no_dir(void *arg)
{
    (void)arg;
    void *p = NULL, *comm = NULL;
    unique_id id;
    unsetenv("CKH_FAKE_GPU_DIR");
    EXPECT(api.malloc_dev(&p, 16) != 0 && p == NULL, "D: cudaMalloc without CKH_FAKE_GPU_DIR must fail");
    EXPECT(api.get_unique_id(&id) == 0, "D: ncclGetUniqueId");
    EXPECT(api.comm_init_rank(&comm, 1, id, 0) != 0, "D: ncclCommInitRank without CKH_FAKE_GPU_DIR must fail");
    return 0;
}

static void check_memory(void)
{
    struct mem_args a;
    const char *why = NULL;
    job_begin("memory", "2", "1048576");
    chan_open(&a.ready);
    chan_open(&a.go);
    pid_t pa = spawn("A", mem_holder, &a);
    close(a.ready.fd[1]);
    if (!chan_wait(&a.ready)) {
        why = child_failed(pa, "A");
        pa = 0;
    }
    if (!why)
        why = child_failed(spawn("B", mem_other, NULL), "B");
    if (pa)
        kill_and_reap(pa); /* SIGKILL: its memory must come back */
    if (!why)
        why = child_failed(spawn("C", mem_after_kill, NULL), "C");
    if (!why)
        why = child_failed(spawn("D", mem_no_dir, NULL), "D");
    if (!why && (!err_has("D", "fakegpu: cudaMalloc: CKH_FAKE_GPU_DIR is not set") ||
                 !err_has("D", "fakegpu: ncclCommInitRank: CKH_FAKE_GPU_DIR is not set")))
        why = "without CKH_FAKE_GPU_DIR: no line naming the variable";
    close(a.ready.fd[0]);
    chan_close(&a.go);
    report("memory: shared capacity across processes, out of memory, a killed process's memory back", why);
}

/* ---- copies ---- */

static int memcpy_checks(void *arg)
{
    (void)arg;
    unsigned char h[64], h2[64];
    unsigned char *d = NULL, *d2 = NULL;
    for (int i = 0; i < 64; i++)
        h[i] = (unsigned char)(i * 7 + 1);
    EXPECT(api.malloc_dev((void **)&d, 64) == 0 && api.malloc_dev((void **)&d2, 64) == 0, "cudaMalloc");
    EXPECT(api.memcpy_(h2, d, 64, D2H) == 0 && h2[0] == 0xA5 && h2[63] == 0xA5,
           "new device memory is 0xA5 bytes, got 0x%02x", h2[0]);
    EXPECT(api.memcpy_(d, h, 64, H2D) == 0, "cudaMemcpyHostToDevice");
    EXPECT(api.memcpy_(d2, d, 64, D2D) == 0, "cudaMemcpyDeviceToDevice");
    memset(h2, 0, sizeof h2);
    EXPECT(api.memcpy_(h2, d2, 64, D2H) == 0 && memcmp(h, h2, 64) == 0, "the bytes make the round trip");
    EXPECT(api.memcpy_(h2, h, 64, H2D) == 1, "H2D to host memory: expected 1");
    EXPECT(api.memcpy_(d, d2, 64, H2D) == 1, "H2D from device memory: expected 1");
    EXPECT(api.memcpy_(d, h, 64, D2H) == 1, "D2H to device memory: expected 1");
    EXPECT(api.memcpy_(h2, h, 64, D2H) == 1, "D2H from host memory: expected 1");
    EXPECT(api.memcpy_(d, h, 64, D2D) == 1, "D2D from host memory: expected 1");
    EXPECT(api.memcpy_(h2, d, 64, H2H) == 1, "H2H from device memory: expected 1");
    EXPECT(api.memcpy_(h2, h, 64, H2H) == 0, "H2H between host buffers");
    EXPECT(api.memcpy_(d + 32, h, 64, H2D) == 1, "H2D past the end of the allocation: expected 1");
    EXPECT(api.memcpy_(d + 32, h, 32, H2D) == 0, "H2D to the allocation's second half");
    EXPECT(api.memcpy_(d, h, 64, 7) == 21, "kind 7: expected cudaErrorInvalidMemcpyDirection");
    EXPECT(api.memcpy_(h2, d, 0, D2H) == 0, "0 bytes: success");
    EXPECT(api.free_dev(d) == 0 && api.free_dev(d2) == 0, "cudaFree");
    return 0;
}

static void check_memcpy(void)
{
    job_begin("memcpy", NULL, NULL);
    const char *why = child_failed(spawn("copy", memcpy_checks, NULL), "copy");
    if (!why && !err_has("copy", "fakegpu: cudaMemcpy: cudaMemcpyHostToDevice of 64 bytes: dst "))
        why = "a wrong direction printed no \"fakegpu: cudaMemcpy: ...\" line";
    report("memcpy: direction and range checks against the device table", why);
}

/* ---- all-gathers ---- */

enum { ROUNDS = 6 };

struct rank_args {
    unique_id id;              /* rank 0's id, as ckh broadcasts it */
    int nranks, rank, dev;     /* this rank */
    size_t count[ROUNDS];      /* elements per round (0: stop there) */
    struct chan ready, go;     /* RANK_DIES, RANK_SURVIVES: after round 0; RANK_FAST, RANK_SLOW: ready only */
    int mode;                  /* what the rank does (enum below) */
    int tokens;                /* RANK_SLOW: the rounds its fast peer has published */
};

/* RANK_FAST sends a token on ready after each ncclAllGather returns and
 * after its ncclCommDestroy; RANK_SLOW queries round k only once its fast
 * peer has published round k + 1 (the last round: destroyed its
 * communicator), so the fast rank's block of round k must outlive both. */
enum { RANK_GATHER, RANK_DIES, RANK_SURVIVES, RANK_FAST, RANK_SLOW };

static unsigned char pattern(int rank, int round, size_t i)
{
    return (unsigned char)(rank * 31 + round * 7 + i * 3 + 1);
}

/* One all-gather of a's round k: distinct bytes per rank and round; the
 * result checked block by block. 0, or 1 (said). */
static int gather_round(struct rank_args *a, void *comm, void *s, int k)
{
    int dt = k % 3 == 2 ? NCCL_FLOAT32 : NCCL_INT8;
    size_t esize = dt == NCCL_FLOAT32 ? 4 : 1, bytes = a->count[k] * esize, all = bytes * (size_t)a->nranks;
    unsigned char *host = malloc(all), *dsend = NULL, *drecv = NULL;
    EXPECT(host, "malloc");
    for (size_t i = 0; i < bytes; i++)
        host[i] = pattern(a->rank, k, i);
    EXPECT(api.malloc_dev((void **)&dsend, bytes) == 0 && api.malloc_dev((void **)&drecv, all) == 0,
           "rank %d round %d: cudaMalloc", a->rank, k);
    EXPECT(api.memcpy_(dsend, host, bytes, H2D) == 0, "rank %d round %d: H2D", a->rank, k);
    int rc = api.all_gather(dsend, drecv, a->count[k], dt, comm, s);
    EXPECT(rc == 0, "rank %d round %d: ncclAllGather: %d", a->rank, k, rc);
    if (a->mode == RANK_FAST)
        chan_send(&a->ready);
    for (; a->mode == RANK_SLOW && a->tokens < k + 2; a->tokens++)
        EXPECT(chan_wait(&a->ready), "rank %d round %d: its fast peer is gone", a->rank, k);
    bool sync = k % 2 && a->mode == RANK_GATHER; /* the skewed ranks poll: a wrong library fails, not hangs */
    rc = sync ? api.stream_sync(s) : query_until_done(s);
    EXPECT(rc == 0, "rank %d round %d: %s: %d", a->rank, k, sync ? "cudaStreamSynchronize" : "cudaStreamQuery", rc);
    EXPECT(api.memcpy_(host, drecv, all, D2H) == 0, "rank %d round %d: D2H", a->rank, k);
    for (int q = 0; q < a->nranks; q++)
        for (size_t i = 0; i < bytes; i++)
            EXPECT(host[(size_t)q * bytes + i] == pattern(q, k, i),
                   "rank %d round %d: byte %zu of rank %d's block is %u, expected %u", a->rank, k, i, q,
                   host[(size_t)q * bytes + i], pattern(q, k, i));
    EXPECT(api.free_dev(dsend) == 0 && api.free_dev(drecv) == 0, "rank %d round %d: cudaFree", a->rank, k);
    free(host);
    return 0;
}

/* A rank of the all-gather checks: RANK_GATHER runs every round and
 * leaves; RANK_DIES runs round 0, says ready and waits to be killed;
 * RANK_SURVIVES runs round 0, waits for go (its peer is dead by then),
 * and finds round 1 never ready. */
static int rank_main(void *arg)
{
    struct rank_args *a = arg;
    void *s = NULL, *comm = NULL;
    EXPECT(api.set_device(a->dev) == 0 && api.stream_create(&s) == 0, "rank %d: device %d", a->rank, a->dev);
    int rc = api.comm_init_rank(&comm, a->nranks, a->id, a->rank);
    EXPECT(rc == 0, "rank %d: ncclCommInitRank: %d", a->rank, rc);
    for (int k = 0; k < ROUNDS && a->count[k]; k++) {
        if (gather_round(a, comm, s, k) != 0)
            return 1;
        if (a->mode == RANK_DIES) {
            chan_send(&a->ready);
            chan_wait(&a->go); /* killed here */
            return 1;
        }
        if (a->mode == RANK_SURVIVES)
            break;
    }
    if (a->mode == RANK_SURVIVES) {
        chan_wait(&a->go);
        unsigned char *dsend = NULL, *drecv = NULL;
        EXPECT(api.malloc_dev((void **)&dsend, 8) == 0 && api.malloc_dev((void **)&drecv, 16) == 0, "cudaMalloc");
        EXPECT(api.all_gather(dsend, drecv, 8, NCCL_INT8, comm, s) == 0,
               "ncclAllGather returns at once though its peer is dead");
        for (int i = 0; i < 2000; i++)
            EXPECT((rc = api.stream_query(s)) == NOT_READY, "query %d with a dead peer: %d, expected 600", i, rc);
        EXPECT(api.comm_abort(comm) == 0, "ncclCommAbort");
        EXPECT(api.stream_query(s) == 0, "after ncclCommAbort the stream has nothing pending");
        EXPECT(api.free_dev(dsend) == 0 && api.free_dev(drecv) == 0, "cudaFree after the abort");
    } else {
        EXPECT(api.comm_destroy(comm) == 0, "rank %d: ncclCommDestroy", a->rank);
        if (a->mode == RANK_FAST)
            chan_send(&a->ready); /* the slow rank's last round reads the blocks of a rank gone */
    }
    EXPECT(api.stream_destroy(s) == 0, "rank %d: cudaStreamDestroy", a->rank);
    return 0;
}

/* What the job folder still holds of a communicator's folder or a usage
 * file after every rank left (NULL: nothing). */
static const char *leftovers(void)
{
    static char why[512];
    const char *res = NULL;
    DIR *d = opendir(job);
    for (struct dirent *e; d && !res && (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "nccl-", 5) == 0 || (strncmp(e->d_name, "mem.", 4) == 0 && !strstr(e->d_name, ".lock"))) {
            snprintf(why, sizeof why, "left behind after every rank left: %.200s", e->d_name);
            res = why;
        }
    if (d)
        closedir(d);
    return res;
}

static void check_gather(int nranks, bool skewed)
{
    char name[128];
    struct chan ahead;
    snprintf(name, sizeof name, "allgather%d%s", nranks, skewed ? "skewed" : "");
    chan_open(&ahead);
    job_begin(name, "4", NULL);
    struct rank_args a[4];
    pid_t pid[4];
    unique_id id;
    const char *why = NULL;
    if (api.get_unique_id(&id) != 0)
        why = "ncclGetUniqueId failed";
    for (int r = 0; r < nranks && !why; r++) {
        memset(&a[r], 0, sizeof a[r]);
        a[r].id = id;
        a[r].nranks = nranks;
        a[r].rank = r;
        a[r].dev = (nranks - 1 - r); /* rank and device differ */
        a[r].ready = ahead;
        if (skewed)
            a[r].mode = r == 0 ? RANK_FAST : RANK_SLOW;
        for (int k = 0; k < ROUNDS; k++)
            a[r].count[k] = k == 4 ? 1 : 3 + 41 * (size_t)k;
        snprintf(name, sizeof name, "rank%d", r);
        pid[r] = spawn(name, rank_main, &a[r]);
    }
    for (int r = 0; r < nranks && !why; r++) {
        snprintf(name, sizeof name, "rank%d", r);
        why = child_failed(pid[r], name);
        if (why)
            for (int q = r + 1; q < nranks; q++)
                kill_and_reap(pid[q]);
    }
    if (!why)
        why = leftovers();
    chan_close(&ahead);
    if (skewed)
        snprintf(name, sizeof name, "allgather: a rank a round ahead of its peer (and gone at the end)");
    else
        snprintf(name, sizeof name, "allgather: %d processes, %d rounds of varying sizes, rank order", nranks,
                 ROUNDS);
    report(name, why);
}

static void check_dead_peer(void)
{
    job_begin("deadpeer", "2", NULL);
    struct rank_args a[2];
    unique_id id;
    const char *why = NULL;
    api.get_unique_id(&id);
    for (int r = 0; r < 2; r++) {
        memset(&a[r], 0, sizeof a[r]);
        a[r].id = id;
        a[r].nranks = 2;
        a[r].rank = a[r].dev = r;
        a[r].count[0] = 8;
        a[r].mode = r == 1 ? RANK_DIES : RANK_SURVIVES;
        chan_open(&a[r].ready);
        chan_open(&a[r].go);
    }
    pid_t p1 = spawn("rank1", rank_main, &a[1]);
    pid_t p0 = spawn("rank0", rank_main, &a[0]);
    close(a[1].ready.fd[1]);
    if (!chan_wait(&a[1].ready)) {
        why = child_failed(p1, "rank1");
        kill_and_reap(p0);
    } else {
        kill_and_reap(p1); /* after round 0, before round 1 */
        chan_send(&a[0].go);
        why = child_failed(p0, "rank0");
    }
    close(a[1].ready.fd[0]);
    chan_close(&a[1].go);
    chan_close(&a[0].ready);
    chan_close(&a[0].go);
    report("dead peer: the all-gather returns at once and its stream stays not ready (600)", why);
}

/* ---- duplicate devices, bad ids ---- */

struct dup_args {
    unique_id id;              /* the communicator's */
    struct chan ready, go;     /* rank 0 holds device 0 until go */
};

static int dup_holder(void *arg)
{
    struct dup_args *a = arg;
    void *comm = NULL;
    EXPECT(api.set_device(0) == 0 && api.comm_init_rank(&comm, 2, a->id, 0) == 0, "rank 0 on device 0");
    chan_send(&a->ready);
    chan_wait(&a->go);
    EXPECT(api.comm_destroy(comm) == 0, "rank 0: ncclCommDestroy");
    return 0;
}

static int dup_second(void *arg)
{
    struct dup_args *a = arg;
    void *comm = NULL, *again = NULL;
    unique_id zero;
    memset(&zero, 0, sizeof zero);
    EXPECT(api.set_device(0) == 0, "cudaSetDevice(0)");
    int rc = api.comm_init_rank(&comm, 2, a->id, 1);
    EXPECT(rc == 5, "rank 1 on rank 0's device: %d, expected 5 (ncclInvalidUsage)", rc);
    EXPECT(strcmp(api.nccl_error(5), "invalid usage (run with NCCL_DEBUG=WARN for details)") == 0, "%s",
           api.nccl_error(5));
    EXPECT(api.comm_init_rank(&comm, 2, zero, 1) == 4, "an id ncclGetUniqueId did not make: expected 4");
    EXPECT(api.comm_init_rank(&comm, 0, a->id, 0) == 4, "nranks 0: expected 4");
    EXPECT(api.comm_init_rank(&comm, 2, a->id, 2) == 4, "rank 2 of 2: expected 4");
    EXPECT(api.set_device(1) == 0 && api.comm_init_rank(&comm, 2, a->id, 1) == 0, "rank 1 on device 1");
    EXPECT(api.comm_init_rank(&again, 2, a->id, 1) == 5, "rank 1 twice: expected 5");
    EXPECT(api.comm_destroy(comm) == 0, "rank 1: ncclCommDestroy");
    return 0;
}

/* Rank 0 again on device 0, after the first rank 0 was killed. */
static int dup_takeover(void *arg)
{
    struct dup_args *a = arg;
    void *comm = NULL;
    int rc = api.comm_init_rank(&comm, 2, a->id, 0);
    EXPECT(rc == 0, "a killed rank's claim is taken over: %d", rc);
    EXPECT(api.comm_abort(comm) == 0, "ncclCommAbort");
    return 0;
}

static void check_duplicate(void)
{
    job_begin("duplicate", "2", NULL);
    struct dup_args a;
    const char *why = NULL;
    api.get_unique_id(&a.id);
    chan_open(&a.ready);
    chan_open(&a.go);
    pid_t p0 = spawn("holder", dup_holder, &a);
    close(a.ready.fd[1]);
    if (!chan_wait(&a.ready)) {
        why = child_failed(p0, "holder");
        p0 = 0;
    }
    if (!why) {
        why = child_failed(spawn("second", dup_second, &a), "second");
        if (!why && !err_has("second", "fakegpu: ncclCommInitRank: rank 1 and rank 0 both use device 0"))
            why = "no line \"fakegpu: ncclCommInitRank: rank 1 and rank 0 both use device 0\"";
    }
    if (p0)
        kill_and_reap(p0);
    if (!why)
        why = child_failed(spawn("takeover", dup_takeover, &a), "takeover");
    close(a.ready.fd[0]);
    chan_close(&a.go);
    report("duplicate device: refused while its holder lives, taken over when it is killed; bad ids and ranks", why);
}

/* ---- mismatched sizes, arguments, sendbuff changed in flight ---- */

static int mismatch_rank(void *arg)
{
    struct rank_args *a = arg;
    void *s = NULL, *comm = NULL;
    unsigned char *dsend = NULL, *drecv = NULL;
    size_t bytes = a->count[0];
    EXPECT(api.set_device(a->dev) == 0 && api.stream_create(&s) == 0, "stream");
    EXPECT(api.comm_init_rank(&comm, 2, a->id, a->rank) == 0, "ncclCommInitRank");
    EXPECT(api.malloc_dev((void **)&dsend, bytes) == 0 && api.malloc_dev((void **)&drecv, 2 * bytes) == 0, "malloc");
    EXPECT(api.all_gather(dsend, drecv, bytes, NCCL_INT8, comm, s) == 0, "ncclAllGather");
    int rc = query_until_done(s);
    EXPECT(rc != 0 && rc != NOT_READY, "rank %d sent %zu bytes, its peer other: query %d, expected an error",
           a->rank, bytes, rc);
    EXPECT(api.stream_query(s) == rc, "the stream's error stays");
    EXPECT(api.all_gather(dsend, drecv, bytes, NCCL_INT8, comm, s) == 1,
           "an all-gather after a failed one: expected 1 (ncclUnhandledCudaError)");
    EXPECT(api.comm_abort(comm) == 0 && api.stream_query(s) == 0, "ncclCommAbort clears the stream");
    EXPECT(api.free_dev(dsend) == 0 && api.free_dev(drecv) == 0 && api.stream_destroy(s) == 0, "clean-up");
    return 0;
}

static void check_mismatch(void)
{
    job_begin("mismatch", "2", NULL);
    struct rank_args a[2];
    pid_t pid[2];
    unique_id id;
    const char *why = NULL;
    api.get_unique_id(&id);
    for (int r = 0; r < 2; r++) {
        memset(&a[r], 0, sizeof a[r]);
        a[r].id = id;
        a[r].nranks = 2;
        a[r].rank = a[r].dev = r;
        a[r].count[0] = r == 0 ? 16 : 32;
        pid[r] = spawn(r == 0 ? "rank0" : "rank1", mismatch_rank, &a[r]);
    }
    why = child_failed(pid[0], "rank0");
    const char *why1 = child_failed(pid[1], "rank1");
    if (!why)
        why = why1;
    if (!why && (!err_has("rank0", "rank 1 sends 32 bytes") || !err_has("rank1", "rank 0 sends 16 bytes")))
        why = "no line naming the mismatched sizes";
    report("mismatched sizes: both ranks' streams fail, and stderr says so", why);
}

static int args_checks(void *arg)
{
    (void)arg;
    void *s = NULL, *comm = NULL, *bogus = &arg;
    unsigned char host[16], *dsend = NULL, *drecv = NULL, *small = NULL;
    unique_id id;
    EXPECT(api.get_unique_id(&id) == 0 && api.stream_create(&s) == 0, "set-up");
    EXPECT(api.comm_init_rank(&comm, 1, id, 0) == 0, "a communicator of one rank");
    EXPECT(api.malloc_dev((void **)&dsend, 16) == 0 && api.malloc_dev((void **)&drecv, 16) == 0 &&
           api.malloc_dev((void **)&small, 8) == 0, "malloc");
    EXPECT(api.all_gather(host, drecv, 16, NCCL_INT8, comm, s) == 4, "sendbuff in host memory: expected 4");
    EXPECT(api.all_gather(dsend, small, 16, NCCL_INT8, comm, s) == 4, "recvbuff too small: expected 4");
    EXPECT(api.all_gather(dsend, drecv, 16, 9, comm, s) == 4, "datatype 9: expected 4");
    EXPECT(api.all_gather(dsend, drecv, 16, NCCL_INT8, bogus, s) == 4, "not a communicator: expected 4");
    EXPECT(api.all_gather(dsend, drecv, 16, NCCL_INT8, comm, bogus) == 4, "not a stream: expected 4");
    EXPECT(api.stream_query(bogus) == 400, "cudaStreamQuery of a non-stream: expected 400");
    for (int i = 0; i < 16; i++)
        host[i] = (unsigned char)(100 + i);
    EXPECT(api.memcpy_(dsend, host, 16, H2D) == 0, "H2D");
    EXPECT(api.all_gather(dsend, drecv, 16, NCCL_INT8, comm, s) == 0, "one rank's all-gather");
    EXPECT(api.device_sync() == 0, "cudaDeviceSynchronize");
    EXPECT(api.memcpy_(host, drecv, 16, D2H) == 0 && host[0] == 100 && host[15] == 115, "the block came back");
    EXPECT(api.all_gather(dsend, drecv, 16, NCCL_INT8, comm, s) == 0, "a second all-gather");
    dsend[0] ^= 1; /* as a kernel writing sendbuff while NCCL still reads it */
    int rc = api.stream_query(s);
    EXPECT(rc != 0 && rc != NOT_READY, "sendbuff changed in flight: query %d, expected an error", rc);
    EXPECT(api.comm_destroy(comm) == 0, "ncclCommDestroy");
    EXPECT(api.comm_destroy(bogus) == 4, "ncclCommDestroy of a non-communicator: expected 4");
    EXPECT(api.free_dev(dsend) == 0 && api.free_dev(drecv) == 0 && api.free_dev(small) == 0, "cudaFree");
    EXPECT(api.stream_destroy(s) == 0, "cudaStreamDestroy");
    return 0;
}

static void check_args(void)
{
    job_begin("arguments", NULL, NULL);
    const char *why = child_failed(spawn("args", args_checks, NULL), "args");
    if (!why && !err_has("args", "changed while the all-gather was in flight"))
        why = "no line about sendbuff changing in flight";
    report("allgather arguments: buffers, datatype, handles; sendbuff changed in flight", why);
}

/* ---- main ---- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fakegpu_check PATH/libckh_fakegpu.so\n");
        return 2;
    }
    if (load(argv[1]) != 0)
        return 3;
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/fakegpu_check.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        fprintf(stderr, "fakegpu_check: mkdtemp %s: %s\n", root, strerror(errno));
        return 3;
    }
    check_devices();
    check_memory();
    check_memcpy();
    check_gather(2, false);
    check_gather(4, false);
    check_gather(2, true);
    check_dead_peer();
    check_duplicate();
    check_mismatch();
    check_args();
    if (failures)
        fprintf(stderr, "fakegpu_check: %d check(s) failed; their processes' stderr is in the lines above\n",
                failures);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failures ? 1 : 0;
}
