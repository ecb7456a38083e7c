/* The simulator's private state, shared by the files that implement it:
 * sim/sched.c (scheduler, lifecycle, faults), sim/node_env.c (the ops
 * tables a node sees: clock, rand, node, alloc), sim/coll.c (collectives)
 * and sim/trace.c (trace and its hash). Nothing outside sim/ includes it;
 * devices use sim/sim_internal.h.
 */
#ifndef CKH_SIM_CORE_H
#define CKH_SIM_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/err.h"
#include "ckh/env.h"
#include "ckh/op.h"
#include "ckh/rng.h"
#include "ckh/sim.h"
#include "coro.h"

#define CKH__CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* One block of a node's accounting allocator (header before the payload). */
struct ckh__mem_hdr {
    struct ckh__mem_hdr *prev; /* previous live block of the node */
    struct ckh__mem_hdr *next; /* next live block of the node */
    size_t size_bytes;         /* payload size */
    size_t pad;                /* keeps the payload 16-byte aligned */
};

/* A point-to-point call waiting for its counterpart. */
struct ckh__p2p {
    bool active;        /* a send or recv is posted */
    bool is_send;       /* send (else recv) */
    int peer;           /* peer rank */
    int tag;            /* tag */
    size_t size_bytes;  /* bytes */
    const void *sbuf;   /* send: data */
    void *rbuf;         /* recv: destination */
    uint64_t gen;       /* generation of the poster */
    int result;         /* set by the counterpart when matched */
};

/* Background tasks a node may hold at once (spawned and not yet joined). */
#define CKH__TASK_MAX 8

struct ckh__node;

/* One program running on a node: its main program or one of its
 * background tasks. The scheduler's unit: it runs on its own coroutine
 * and sits in the run queue; everything else (memory, environment,
 * filesystem view, collectives, phase) belongs to the node. */
struct ckh__thread {
    struct ckh__node *node;          /* the node it runs on */
    uint32_t task;                   /* 0: the main program; else the task's number in
                                        this incarnation (1, 2, ...) */
    uint64_t wake_ns;                /* when it runs next (in the heap) */
    uint64_t tie;                    /* seeded tie-break key */
    size_t heap_pos;                 /* index in the heap, SIZE_MAX if absent */
    bool has_coro;                   /* co holds a live stack */
    bool blocked;                    /* waiting (device or join) */
    bool woken;                      /* woken while blocked */
    bool kill_after;                 /* KILL_AFTER armed for the current op */
    const char *pending;             /* blocked: what it waits for */
    struct ckh__coro co;             /* coroutine */
};

/* A background task (ckh_node_spawn); struct ckh_task * points at one. */
struct ckh__task {
    struct ckh__thread th;           /* its program (first member) */
    bool used;                       /* spawned and not yet joined */
    bool done;                       /* fn returned (status holds its value) */
    int status;                      /* fn's return value */
    ckh_bg_fn fn;                    /* the program */
    void *arg;                       /* its argument (borrowed) */
    struct ckh__thread *joiner;      /* the thread blocked joining it, or NULL */
    char join_what[64];              /* the joiner's pending text ("join trainer_0#1") */
};

struct ckh__node {
    struct ckh_sim *sim;             /* owner */
    int id;                          /* node id */
    char *name;                      /* node name (owned) */
    ckh_node_main main;              /* program */
    void *arg;                       /* its argument (borrowed) */
    struct ckh_simfs_mount *mounts;  /* mounts (prefixes owned) */
    size_t nmounts;                  /* number of mounts */
    int rank;                        /* collective rank or -1 */
    enum ckh_node_state state;       /* lifecycle */
    int exit_status;                 /* exit status */
    uint64_t ops;                    /* ops in this incarnation */
    uint64_t incarnation;            /* restarts so far */

    /* programs */
    struct ckh__thread main_th;      /* the main program */
    struct ckh__task *tasks;         /* CKH__TASK_MAX task slots (owned), allocated at the
                                        node's first spawn; NULL until then */
    uint32_t tasks_spawned;          /* tasks started in this incarnation */
    struct ckh__thread *dev_waiter;  /* the thread in ckh__sim_block, or NULL */
    bool coll_busy;                  /* one of its threads is inside a collective */

    /* where the program is (ckh_node_phase) */
    const char *phase;               /* static string or NULL */
    int64_t epoch;                   /* -1 unknown */
    int64_t step;                    /* -1 unknown */

    /* the environment handed to main */
    struct ckh_env env;              /* bundle */
    struct ckh_clock clock;          /* clock ops */
    struct ckh_rand rand;            /* rand ops */
    struct ckh_coll coll;            /* coll ops */
    struct ckh_node node;            /* node ops */
    struct ckh_alloc alloc;          /* accounting allocator */
    struct ckh_fs *view;             /* filesystem view of this incarnation */
    uint64_t rand_seed;              /* base of the named streams */

    /* memory of this incarnation */
    struct ckh__mem_hdr *mem_head;   /* live blocks */
    uint64_t mem_bytes;              /* live payload bytes */
    uint64_t mem_peak_bytes;         /* peak of mem_bytes */
    uint64_t mem_at_end_bytes;       /* mem_bytes when the incarnation ended */

    /* collectives */
    uint64_t coll_gen;               /* generation joined at start */
    uint64_t coll_seq;               /* collectives called in this incarnation */
    uint64_t p2p_seq;                /* send/recv calls in this incarnation */
    int coll_result;                 /* set by the completing rank */
    struct ckh__p2p p2p;             /* posted send/recv */
    char pending_buf[160];           /* text of the pending op */
};

struct ckh__fault {
    struct ckh_fault_rule rule;      /* the rule (strings owned below) */
    char *path_glob;                 /* owned copy */
    char *phase;                     /* owned copy */
    struct ckh_fault_state state;    /* the matcher's counters and probability stream
                                        (ckh/fault_rule.h) */
};

/* One arrival at a collective. */
struct ckh__arrival {
    bool present;                    /* waiting with live buffers */
    bool seen;                       /* arrived at some point (signature valid) */
    int kind;                        /* enum ckh_op_kind */
    size_t count;                    /* elements or bytes */
    int dtype;                       /* allreduce dtype */
    int redop;                       /* allreduce op */
    int root;                        /* broadcast root */
    const void *sbuf;                /* send data */
    void *rbuf;                      /* destination */
    int node;                        /* node id */
    bool faulty;                     /* joined under a MISMATCH fault: never completes */
};

/* The collective #seq of generation gen. */
struct ckh__slot {
    uint64_t gen;                    /* generation */
    uint64_t seq;                    /* sequence number (1-based) */
    int present;                     /* arrivals present */
    bool mismatch;                   /* two arrivals disagreed */
    struct ckh__arrival *arr;        /* world entries, by rank */
};

struct ckh__coll_state {
    int world;                       /* number of ranks */
    int *rank_node;                  /* rank -> node id */
    uint64_t gen;                    /* current generation */
    bool broken;                     /* a member of gen stopped: next launch opens a new one */
    struct ckh__slot *slots;         /* active slots */
    size_t nslots;                   /* in use */
    size_t cap_slots;                /* allocated */
    unsigned char *scratch;          /* reduction buffer */
    bool oom;                        /* a slot or the buffer could not be allocated */
    size_t scratch_bytes;            /* its size */
};

struct ckh__trace_item {
    uint64_t time_ns;                /* virtual time */
    int node;                        /* node id */
    uint32_t task;                   /* 0: the node's main program; else the task number */
    int kind;                        /* op */
    const char *path;                /* arena string or NULL */
    const char *path2;               /* arena string or NULL */
    uint64_t off;                    /* offset / peer / root */
    uint64_t len;                    /* length */
    int64_t arg;                     /* op-specific */
    int64_t result;                  /* result */
};

struct ckh__arena_chunk {
    struct ckh__arena_chunk *next;   /* older chunk */
    size_t used;                     /* bytes used */
    size_t cap;                      /* bytes available in data */
    char data[];                     /* strings */
};

struct ckh__trace {
    uint64_t hash;                   /* running hash */
    uint64_t len;                    /* records so far */
    bool keep;                       /* keep records */
    struct ckh__trace_item *items;   /* kept records */
    size_t cap;                      /* allocated items */
    struct ckh__arena_chunk *arena;  /* string storage, newest first */
    bool oom;                        /* a record or string could not be kept */
};

struct ckh_sim {
    struct ckh_sim_config cfg;       /* configuration (defaults applied) */
    uint64_t now_ns;                 /* global virtual time */
    uint64_t time_limit_ns;          /* effective limit (UINT64_MAX: none) */
    struct ckh_rng sched_rng;        /* tie-breaks */
    struct ckh__node **nodes;        /* by id */
    int nnodes;                      /* count */
    int cap_nodes;                   /* allocated */
    struct ckh__thread **heap;       /* runnable threads ordered by (wake, tie, node, task);
                                        room for every thread of every node */
    size_t heap_len;                 /* entries */
    bool host_oom;                   /* a node allocator's malloc of ckh's process failed
                                        (ckh_sim_host_out_of_memory) */
    struct ckh_simfs **disks;        /* owned disks */
    size_t ndisks;                   /* count */
    struct ckh__fault *faults;       /* rules */
    size_t nfaults;                  /* count */
    bool alloc_faults;               /* some rule matches ALLOC ops */
    int crash_keep;                  /* CKH_CRASH_KEEP_* of the crash being carried out */
    ckh_fault_hook hook;             /* hook */
    void *hook_ctx;                  /* its context */
    ckh_sched_hook sched_hook;       /* explicit schedule (NULL: the seeded heap decides) */
    void *sched_ctx;                 /* its context (borrowed) */
    int *sched_ids;                  /* runnable ids handed to sched_hook (cap_nodes) */

    struct ckh__coro host;           /* the context that called ckh_sim_run */
    struct ckh__thread *cur;         /* running thread, NULL in the host */
    struct ckh__thread *zombie;      /* dead thread whose stack awaits freeing */
    bool running;                    /* inside ckh_sim_run */
    bool stopping;                   /* the run ends at the next scheduling point */
    enum ckh_sim_outcome outcome;    /* why it ends */
    uint64_t run_ops;                /* ops entered in this run */
    uint64_t ops;                    /* ops entered in all runs */

    struct ckh__coll_state coll;     /* collectives */
    struct ckh__trace trace;         /* trace */
    char errmsg[CKH_ERRMSG_BYTES];   /* last error */
};

/* sched.c */
struct ckh__node *ckh__sim_node(const struct ckh_sim *sim, int id);
/* The node of the running thread, NULL in the host. */
struct ckh__node *ckh__sim_cur_node(const struct ckh_sim *sim);
/* Background tasks (node ops spawn and join) for node n, called by one of
 * its threads. */
int ckh__sim_task_spawn(struct ckh__node *n, ckh_bg_fn fn, void *arg, struct ckh__task **out);
int ckh__sim_task_join(struct ckh__node *n, struct ckh__task *t, int *status);
/* Ends the running node's program normally (main returned or exit()). */
_Noreturn void ckh__sim_exit_current(struct ckh_sim *sim, int status);
/* Ends node n (not running) normally; used when exit() is misused. */
void ckh__sim_exit_other(struct ckh_sim *sim, struct ckh__node *n, int status);
/* True when a rule of kind ALLOC fires for this allocation of size_bytes
 * by node n (counts the match; records the FAULT line). */
bool ckh__sim_alloc_fault(struct ckh_sim *sim, struct ckh__node *n, uint64_t size_bytes);
int ckh__sim_err(struct ckh_sim *sim, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The scheduler's side of threads (sched.c), for sim/task.c. */
/* Frees the stack of a thread that died just before this one ran. */
void ckh__sched_reap(struct ckh_sim *sim);
/* Makes thread t (with a fresh coroutine) runnable now. */
void ckh__sched_thread_start(struct ckh_sim *sim, struct ckh__thread *t);
/* Blocks the running thread until ckh__sched_thread_wake or the absolute
 * deadline (UINT64_MAX: none); 0 when woken, CKH_ETIMEOUT at the deadline.
 * `what` stays valid while blocked (deadlock reports). */
int ckh__sched_thread_block(struct ckh_sim *sim, const char *what, uint64_t deadline_ns);
/* Makes blocked thread t runnable now (no-op when it is not blocked). */
void ckh__sched_thread_wake(struct ckh_sim *sim, struct ckh__thread *t);
/* Ends the running thread (not its node): its stack is freed once the
 * simulator runs on another. Does not return. */
_Noreturn void ckh__sched_thread_end(struct ckh_sim *sim);

/* node_env.c */
void ckh__env_init(struct ckh__node *n);
/* Frees every block of the incarnation; mem_at_end_bytes keeps the total. */
void ckh__env_free_memory(struct ckh__node *n);

/* coll.c */
extern const struct ckh_coll_ops ckh__coll_ops;
/* Recomputes the world at the start of a run; CKH_EINVAL for bad ranks. */
int ckh__coll_prepare(struct ckh_sim *sim);
/* A node is about to start: joins the current generation. */
void ckh__coll_node_start(struct ckh_sim *sim, struct ckh__node *n);
/* A node stopped: its arrivals and posted p2p calls are withdrawn. */
void ckh__coll_node_stop(struct ckh_sim *sim, struct ckh__node *n);
void ckh__coll_free(struct ckh_sim *sim);

/* trace.c */
void ckh__trace_init(struct ckh__trace *t, bool keep);
void ckh__trace_free(struct ckh__trace *t);
/* Appends one record at the current virtual time. Its task is the running
 * thread's when that thread runs on node, else 0. */
void ckh__trace_add(struct ckh_sim *sim, int node, int kind, const char *path, const char *path2,
                    uint64_t off, uint64_t len, int64_t arg, int64_t result);

#endif
