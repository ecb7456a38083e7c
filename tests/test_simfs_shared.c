/* Crash semantics of a disk that several nodes share (sim/simfs.c, rule
 * S9 with S3-S5): which of another node's unsynced operations a crash
 * drops, what an fsync by one node flushes for the others, and the
 * durability promise (an op made durable by any node's fsync, with what it
 * depends on, survives every later crash) as a seeded property over random
 * multi-node op sequences, under both crash models and both sharings.
 * Views here have no simulator except in the machine-crash case.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fault_rule.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/rng.h"
#include "ckh/sim.h"
#include "ckh/sim_testing.h"
#include "ckh/simfs.h"

static int seeds(int full)
{
    return getenv("CKH_VALGRIND") ? full / 8 + 1 : full;
}

static struct ckh_simfs *mkdisk(enum ckh_crash_model model, enum ckh_simfs_sharing sharing, uint64_t seed)
{
    struct ckh_simfs_config cfg = {.name = "shared", .model = model, .sharing = sharing,
                                   .sector_bytes = 512, .seed = seed};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), 0);
    ck_assert_int_eq(ckh_simfs_sharing(d), sharing);
    return d;
}

static struct ckh_fs *mkview(struct ckh_simfs *d, int node)
{
    struct ckh_simfs_mount m = {"/", d};
    struct ckh_fs *v = NULL;
    ck_assert_int_eq(ckh_simfs_view_create(NULL, node, &m, 1, &v), 0);
    return v;
}

/* Writes s at offset off of path (created when missing); no sync. */
static void put_at(struct ckh_fs *fs, const char *path, const char *s, uint64_t off)
{
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, s, strlen(s), off), (int64_t)strlen(s));
    ck_assert_int_eq(ckh_file_close(f), 0);
}

static void fsync_path(struct ckh_fs *fs, const char *path)
{
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_WRONLY, &f), 0);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
}

/* The durable (or live) content of path as a string; "" when absent. */
static const char *content(struct ckh_simfs *d, const char *path, bool durable)
{
    static char buf[256];
    int64_t n = ckh__simfs_test_read(d, path, durable, buf, sizeof buf - 1, NULL);
    buf[n < 0 ? 0 : n < (int64_t)sizeof buf ? n : (int64_t)sizeof buf - 1] = '\0';
    return n < 0 ? "(absent)" : buf;
}

/* A file /f whose entry is durable, and a synced folder /d. */
static void base_tree(struct ckh_simfs *d)
{
    struct ckh_fs *fs = ckh_simfs_fs(d);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/d"), 0);
    put_at(fs, "/f", "........", 0);
    ckh_simfs_sync_all(d);
}

/* ------------------------------------------------------- the sharing rules */

/* S9: on a machine's disk a crash of node 0 loses node 1's unsynced write
 * too (one page cache); on a network disk node 1's write stays pending and
 * visible, and survives node 0's crash. Both crash models. */
START_TEST(test_crash_of_one_node)
{
    for (int machine = 0; machine < 2; machine++) {
        struct ckh_simfs *d = mkdisk(_i ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK,
                                     machine ? CKH_SHARING_MACHINE : CKH_SHARING_NETWORK, 7);
        base_tree(d);
        struct ckh_fs *v0 = mkview(d, 0), *v1 = mkview(d, 1);
        put_at(v0, "/f", "00", 0);
        put_at(v1, "/f", "11", 4);
        ck_assert_uint_eq(ckh_simfs_pending_count(d), 2);
        ck_assert_int_eq(ckh_simfs_crash_uniform(d, 0, CKH_CRASH_DROP), 0);
        if (machine) {
            ck_assert_uint_eq(ckh_simfs_pending_count(d), 0);
            ck_assert_str_eq(content(d, "/f", false), "........");
        } else {
            ck_assert_uint_eq(ckh_simfs_pending_count(d), 1); /* node 1's write */
            ck_assert_str_eq(content(d, "/f", false), "....11..");
            ck_assert_str_eq(content(d, "/f", true), "........");
            fsync_path(v1, "/f");
            ck_assert_int_eq(ckh_simfs_crash_uniform(d, -1, CKH_CRASH_DROP), 0);
            ck_assert_str_eq(content(d, "/f", true), "....11..");
        }
        ckh_simfs_view_destroy(v0);
        ckh_simfs_view_destroy(v1);
        ckh_simfs_destroy(d);
    }
}
END_TEST

/* S9: node 1's fsync of a file flushes node 0's pending write to it on a
 * machine's disk (the file's dirty pages are one set), not on a network
 * disk (node 0's client cache is out of reach). */
START_TEST(test_fsync_by_another_node)
{
    for (int machine = 0; machine < 2; machine++) {
        struct ckh_simfs *d = mkdisk(_i ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK,
                                     machine ? CKH_SHARING_MACHINE : CKH_SHARING_NETWORK, 8);
        base_tree(d);
        struct ckh_fs *v0 = mkview(d, 0), *v1 = mkview(d, 1);
        put_at(v0, "/f", "00", 0);
        fsync_path(v1, "/f");
        ck_assert_str_eq(content(d, "/f", true), machine ? "00......" : "........");
        ck_assert_uint_eq(ckh_simfs_pending_count(d), machine ? 0 : 1);
        /* the durable write survives every later crash, of either node */
        ck_assert_int_eq(ckh_simfs_crash_uniform(d, 1, CKH_CRASH_DROP), 0);
        ck_assert_int_eq(ckh_simfs_crash_uniform(d, 0, CKH_CRASH_DROP), 0);
        ck_assert_str_eq(content(d, "/f", true), machine ? "00......" : "........");
        ckh_simfs_view_destroy(v0);
        ckh_simfs_view_destroy(v1);
        ckh_simfs_destroy(d);
    }
}
END_TEST

/* S9 with S4: node 1's fsync_dir flushes node 0's new entry on a
 * machine's disk; on a network disk only node 1's own (posix-weak), or
 * node 1's own journal (ext4-ordered). */
START_TEST(test_fsync_dir_by_another_node)
{
    for (int machine = 0; machine < 2; machine++) {
        struct ckh_simfs *d = mkdisk(_i ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK,
                                     machine ? CKH_SHARING_MACHINE : CKH_SHARING_NETWORK, 9);
        base_tree(d);
        struct ckh_fs *v0 = mkview(d, 0), *v1 = mkview(d, 1);
        put_at(v0, "/d/a", "a", 0);
        put_at(v1, "/d/b", "b", 0);
        ck_assert_int_eq(ckh_fs_fsync_dir(v1, "/d"), 0);
        ck_assert_int_eq(ckh_simfs_crash_uniform(d, -1, CKH_CRASH_DROP), 0);
        /* entries persist, data was never fsynced (ext4 keeps none either:
         * no entry op on the file came after its write) */
        ck_assert_int_eq(ckh__simfs_test_read(d, "/d/a", true, NULL, 0, NULL), machine ? 0 : -ENOENT);
        ck_assert_int_eq(ckh__simfs_test_read(d, "/d/b", true, NULL, 0, NULL), 0);
        ckh_simfs_view_destroy(v0);
        ckh_simfs_view_destroy(v1);
        ckh_simfs_destroy(d);
    }
}
END_TEST

/* S3 across caches (network): node 1 renames the file node 0 created and
 * has not synced; node 0's crash drops the create, so node 1's rename is
 * dropped with it, now and for good (a later fsync_dir of node 1 finds
 * nothing to make durable), while node 1's unrelated write stays. */
START_TEST(test_dependent_op_of_other_node_dropped)
{
    struct ckh_simfs *d = mkdisk(_i ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK, CKH_SHARING_NETWORK, 10);
    base_tree(d);
    struct ckh_fs *v0 = mkview(d, 0), *v1 = mkview(d, 1);
    put_at(v0, "/d/tmp", "new", 0);
    ck_assert_int_eq(ckh_fs_rename(v1, "/d/tmp", "/d/final"), 0);
    put_at(v1, "/f", "11", 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 4); /* create, write, rename, write */
    ck_assert_int_eq(ckh_simfs_crash_uniform(d, 0, CKH_CRASH_DROP), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 1); /* node 1's write to /f */
    ck_assert_int_eq(ckh__simfs_test_read(d, "/d/final", false, NULL, 0, NULL), -ENOENT);
    ck_assert_int_eq(ckh_fs_fsync_dir(v1, "/d"), 0);
    fsync_path(v1, "/f");
    ck_assert_int_eq(ckh_simfs_crash_uniform(d, -1, CKH_CRASH_APPLY), 0);
    ck_assert_int_eq(ckh__simfs_test_read(d, "/d/final", true, NULL, 0, NULL), -ENOENT);
    ck_assert_str_eq(content(d, "/f", true), "11......");
    ckh_simfs_view_destroy(v0);
    ckh_simfs_view_destroy(v1);
    ckh_simfs_destroy(d);
}
END_TEST

/* A bad sharing value is refused; a clone keeps the disk's sharing. */
START_TEST(test_bad_sharing)
{
    struct ckh_simfs_config cfg = {.name = "x", .sharing = (enum ckh_simfs_sharing)7};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), CKH_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(ckh_simfs_sharing(NULL), CKH_SHARING_NETWORK);
    /* a clone keeps the sharing (sim/simfs_clone.c copies the config) */
    d = mkdisk(CKH_CRASH_POSIX_WEAK, CKH_SHARING_MACHINE, 1);
    struct ckh_simfs *c = NULL;
    ck_assert_int_eq(ckh_simfs_clone(d, &c), 0);
    ck_assert_int_eq(ckh_simfs_sharing(c), CKH_SHARING_MACHINE);
    ckh_simfs_destroy(c);
    ckh_simfs_destroy(d);
}
END_TEST

/* ------------------------------------------------ with the simulator */

static int prog_crasher(struct ckh_env *env, void *arg)
{
    (void)arg;
    struct ckh_file *f;
    if (ckh_fs_open(env->fs, "/a", CKH_O_WRONLY | CKH_O_CREAT, &f) == 0) {
        ckh_file_pwrite(f, "a", 1, 0);
        ckh_file_fsync(f); /* CRASH_BEFORE */
        ckh_file_close(f);
    }
    return 0;
}

static int prog_busy(struct ckh_env *env, void *arg)
{
    (void)arg;
    struct ckh_file *f;
    if (ckh_fs_open(env->fs, "/b", CKH_O_WRONLY | CKH_O_CREAT, &f) == 0) {
        ckh_file_pwrite(f, "b", 1, 0);
        ckh_file_close(f);
    }
    struct ckh_stat st;
    for (int i = 0; i < 200; i++)
        ckh_fs_stat(env->fs, "/b", &st);
    return 0;
}

/* A machine crash of node 0 on a machine's disk is the crash of every
 * process of that machine: node 1 crashes with it (a CRASH line of its
 * own) and its unsynced file is gone. On a network disk node 1 runs on. */
START_TEST(test_sim_machine_crash_takes_mates)
{
    bool machine = _i;
    struct ckh_sim_config sc = {.seed = 4, .keep_trace = true};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&sc, &sim), 0);
    struct ckh_simfs_config dc = {.name = "shared", .sector_bytes = 512, .latency_ns = 1000,
                                  .sharing = machine ? CKH_SHARING_MACHINE : CKH_SHARING_NETWORK};
    struct ckh_simfs *disk = NULL;
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, &disk), 0);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = disk};
    struct ckh_node_config nc0 = {.name = "n0", .main = prog_crasher, .rank = -1, .mounts = &m, .nmounts = 1};
    struct ckh_node_config nc1 = {.name = "n1", .main = prog_busy, .rank = -1, .mounts = &m, .nmounts = 1};
    int id0 = -1, id1 = -1;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc0, &id0), 0);
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc1, &id1), 0);
    struct ckh_fault_rule r = {.node = id0, .kind = CKH_OP_FSYNC, .epoch = -1, .step = -1};
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_CRASH_BEFORE, .crash_keep = CKH_CRASH_KEEP_SYNCED};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    struct ckh_node_status st0, st1;
    ck_assert_int_eq(ckh_sim_node_status(sim, id0, &st0), 0);
    ck_assert_int_eq(ckh_sim_node_status(sim, id1, &st1), 0);
    ck_assert_int_eq(st0.state, CKH_NODE_KILLED);
    ck_assert_int_eq(st1.state, machine ? CKH_NODE_KILLED : CKH_NODE_EXITED);
    int crashes[2] = {0, 0};
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec rec;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &rec), 0);
        if (rec.kind == CKH_OP_CRASH && rec.node >= 0 && rec.node < 2)
            crashes[rec.node]++;
    }
    ck_assert_int_eq(crashes[id0], 1);
    ck_assert_int_eq(crashes[id1], machine ? 1 : 0);
    ck_assert_int_eq(ckh__simfs_test_read(disk, "/a", false, NULL, 0, NULL), -ENOENT);
    ck_assert_int_eq(ckh__simfs_test_read(disk, "/b", false, NULL, 0, NULL), machine ? -ENOENT : 1);
    ckh_sim_destroy(sim);
}
END_TEST

/* ------------------------------------------------- the durability property */

#define NDIRS 2
#define NNAMES 4
#define NPATHS (NDIRS * NNAMES)
#define MAXN 3
#define MAXINO 4096
#define CAP 8192

/* What the test knows, by the rules of S4, S4' and S9 alone (never by
 * looking at the disk's pending table): which caches may still hold
 * unsynced ops. Conservative: extra durability (dependencies committed
 * with an entry op, data=ordered) only makes it say "maybe pending" longer. */
struct model {
    bool machine, ext4;
    int n;                               /* nodes */
    uint32_t dirty[MAXINO];              /* by inode: caches that may hold data ops on it */
    bool since_sync[MAXN][NDIRS];        /* cache issued entry ops in the dir since it synced it */
    int nren[MAXN];                      /* posix: cache's pending cross-folder renames */
    uint8_t ren_bits[MAXN][64];          /* bit k: folder k synced since the rename */
    /* facts: what the durable copy must hold at a path from now on */
    bool fact[NPATHS];
    int64_t fact_size[NPATHS];           /* -1: absent */
    unsigned char fact_data[NPATHS][CAP];
    bool dead[MAXINO];                   /* inodes whose create was dropped: never durable again */
    uint64_t create_ino[1024];           /* by op seq (< 1024): inode a pending create made */
};

static int cache_of(const struct model *m, int node)
{
    return m->machine ? 0 : node;
}

static void path_of(int p, char *buf, size_t n)
{
    snprintf(buf, n, "/d%d/f%d", p / NNAMES, p % NNAMES);
}

/* No cache may hold an entry op in dir (a pending cross-folder rename
 * touches both folders until it is durable). */
static bool dir_clean(const struct model *m, int dir)
{
    for (int c = 0; c < m->n; c++)
        if (m->since_sync[c][dir] || m->nren[c] > 0)
            return false;
    return true;
}

static void synced_dir(struct model *m, int c, int dir)
{
    m->since_sync[c][dir] = false;
    int j = 0;
    for (int k = 0; k < m->nren[c]; k++) {
        m->ren_bits[c][k] |= (uint8_t)(1u << dir);
        if (m->ren_bits[c][k] != 3)
            m->ren_bits[c][j++] = m->ren_bits[c][k];
    }
    m->nren[c] = j;
}

static void journal_commit(struct model *m, int c)
{
    for (int dir = 0; dir < NDIRS; dir++)
        m->since_sync[c][dir] = false;
    m->nren[c] = 0;
}

/* Every fact holds in both copies (no pending op touches its path), and
 * no inode whose create was dropped is reachable. */
static void check_facts(struct ckh_simfs *d, struct model *m, const char *when)
{
    static unsigned char buf[CAP];
    for (int p = 0; p < NPATHS; p++) {
        char path[32];
        path_of(p, path, sizeof path);
        uint64_t ino = 0;
        int64_t n = ckh__simfs_test_read(d, path, true, buf, CAP, &ino);
        ck_assert_msg(n >= 0 || n == -ENOENT, "%s: %s: %lld", when, path, (long long)n);
        if (n >= 0)
            ck_assert_msg(ino >= MAXINO || !m->dead[ino],
                          "%s: %s durably names inode %llu whose create was dropped", when, path,
                          (unsigned long long)ino);
        if (!m->fact[p])
            continue;
        int64_t want = m->fact_size[p];
        ck_assert_msg(n == (want < 0 ? -ENOENT : want), "%s: %s durable size %lld, made durable as %lld", when,
                      path, (long long)n, (long long)want);
        if (want > 0)
            ck_assert_msg(!memcmp(buf, m->fact_data[p], (size_t)(want < CAP ? want : CAP)),
                          "%s: %s durable content changed", when, path);
    }
}

/* Paths that the rules say are durable now become facts: the durable copy
 * must equal the live one there, and keep it until an op touches the path. */
static void establish(struct ckh_simfs *d, struct model *m, const char *when)
{
    static unsigned char live[CAP], dur[CAP];
    for (int p = 0; p < NPATHS; p++) {
        if (m->fact[p] || !dir_clean(m, p / NNAMES))
            continue;
        char path[32];
        path_of(p, path, sizeof path);
        uint64_t ino = 0;
        int64_t n = ckh__simfs_test_read(d, path, false, live, CAP, &ino);
        ck_assert(n >= 0 || n == -ENOENT);
        if (n >= 0 && (ino >= MAXINO || m->dirty[ino]))
            continue;
        int64_t dn = ckh__simfs_test_read(d, path, true, dur, CAP, NULL);
        ck_assert_msg(dn == (n < 0 ? -ENOENT : n), "%s: %s synced by every cache but durable size %lld, live %lld",
                      when, path, (long long)dn, (long long)n);
        if (n > 0)
            ck_assert_msg(!memcmp(live, dur, (size_t)(n < CAP ? n : CAP)),
                          "%s: %s synced by every cache but durable content differs", when, path);
        m->fact[p] = true;
        m->fact_size[p] = n < 0 ? -1 : n;
        if (n > 0)
            memcpy(m->fact_data[p], live, (size_t)(n < CAP ? n : CAP));
    }
}

static uint64_t live_ino(struct ckh_simfs *d, const char *path)
{
    uint64_t ino = 0;
    return ckh__simfs_test_read(d, path, false, NULL, 0, &ino) >= 0 ? ino : 0;
}

static bool is_entry_kind(int kind)
{
    return kind == CKH_OP_OPEN || kind == CKH_OP_MKDIR || kind == CKH_OP_SYMLINK || kind == CKH_OP_UNLINK ||
           kind == CKH_OP_RMDIR || kind == CKH_OP_RENAME;
}

/* The newest pending op, if it is a create, maps to the inode at path. */
static void note_create(struct ckh_simfs *d, struct model *m, const char *path)
{
    size_t n = ckh_simfs_pending_count(d);
    struct ckh_simfs_pending_info pi;
    if (n == 0 || ckh_simfs_pending_get(d, n - 1, &pi) != 0 || pi.kind != CKH_OP_OPEN || pi.seq >= 1024)
        return;
    m->create_ino[pi.seq] = live_ino(d, path);
}

/* What a crash is about to resolve: the pending ops (their node, kind and
 * which test names they touch), and the explicit choice of each affected
 * one. held[i]: op i is left pending or dropped by its choice. */
struct plan {
    size_t np, na;                      /* pending ops, affected ones */
    struct ckh_simfs_pending_info *pi;  /* the ops (strings not kept: borrowed) */
    int (*pidx)[2];                     /* name index of path and of a rename's path2 (NPATHS: none) */
    enum ckh_crash_choice *ch;          /* choices of the affected ops, in order */
    bool *held;                         /* left pending, or dropped by its choice */
    bool *affected;                     /* resolved by the crash */
    uint64_t before[NPATHS];            /* durable inode at each name (0: none) */
};

static uint64_t dur_ino(struct ckh_simfs *d, int p)
{
    char path[32];
    uint64_t ino = 0;
    path_of(p, path, sizeof path);
    return ckh__simfs_test_read(d, path, true, NULL, 0, &ino) >= 0 ? ino : 0;
}

static void plan_crash(struct ckh_simfs *d, const struct model *m, struct ckh_rng *rng, int node, struct plan *pl)
{
    size_t np = ckh_simfs_pending_count(d), cap = np ? np : 1;
    *pl = (struct plan){.np = np};
    pl->pi = calloc(cap, sizeof *pl->pi);
    pl->pidx = calloc(cap, sizeof *pl->pidx);
    pl->ch = calloc(cap, sizeof *pl->ch);
    pl->held = calloc(cap, sizeof *pl->held);
    pl->affected = calloc(cap, sizeof *pl->affected);
    ck_assert(pl->pi && pl->pidx && pl->ch && pl->held && pl->affected);
    for (size_t i = 0; i < np; i++) {
        struct ckh_simfs_pending_info *pi = &pl->pi[i];
        ck_assert_int_eq(ckh_simfs_pending_get(d, i, pi), 0);
        pl->pidx[i][0] = pl->pidx[i][1] = NPATHS;
        for (int p = 0; p < NPATHS; p++) {
            char path[32];
            path_of(p, path, sizeof path);
            if (!strcmp(pi->path, path))
                pl->pidx[i][0] = p;
            if (pi->kind == CKH_OP_RENAME && pi->path2 && !strcmp(pi->path2, path))
                pl->pidx[i][1] = p;
        }
        pi->path = pi->path2 = NULL; /* borrowed until the disk changes */
        pl->affected[i] = node == -1 || m->machine || pi->node == node;
        pl->held[i] = !pl->affected[i];
        if (!pl->affected[i])
            continue;
        uint64_t r = ckh_rng_below(rng, 10);
        enum ckh_crash_choice c = r < 5 ? CKH_CRASH_APPLY : CKH_CRASH_DROP;
        if (pi->kind == CKH_OP_PWRITE && pi->sectors > 0 && r == 9)
            c = ckh_rng_below(rng, 2) ? CKH_CRASH_TORN_ZERO : CKH_CRASH_TORN_GARBAGE;
        pl->ch[pl->na++] = c;
        pl->held[i] = c == CKH_CRASH_DROP;
    }
    for (int p = 0; p < NPATHS; p++)
        pl->before[p] = dur_ino(d, p);
}

static void plan_free(struct plan *pl)
{
    free(pl->pi);
    free(pl->pidx);
    free(pl->ch);
    free(pl->held);
    free(pl->affected);
}

/* S3 on the result of a crash with explicit choices: a name whose first
 * pending op was left pending or dropped keeps its durable binding; an
 * inode whose pending create was left pending or dropped is durable at no
 * name (and, once dropped, never becomes so: m->dead). */
static void check_dependencies(struct ckh_simfs *d, struct model *m, const struct plan *pl, const char *when)
{
    for (int p = 0; p < NPATHS; p++) {
        size_t first = SIZE_MAX;
        for (size_t i = 0; i < pl->np && first == SIZE_MAX; i++)
            if (is_entry_kind(pl->pi[i].kind) && (pl->pidx[i][0] == p || pl->pidx[i][1] == p))
                first = i;
        if (first == SIZE_MAX || !pl->held[first])
            continue;
        ck_assert_msg(dur_ino(d, p) == pl->before[p],
                      "%s: name %d's durable entry changed though its first pending op (seq %llu) was %s", when, p,
                      (unsigned long long)pl->pi[first].seq, pl->affected[first] ? "dropped" : "left pending");
    }
    for (size_t i = 0; i < pl->np; i++) {
        uint64_t seq = pl->pi[i].seq, ino = seq < 1024 ? m->create_ino[seq] : 0;
        if (pl->pi[i].kind != CKH_OP_OPEN || !pl->held[i] || ino == 0 || ino >= MAXINO)
            continue;
        if (pl->affected[i])
            m->dead[ino] = true;
        for (int p = 0; p < NPATHS; p++)
            ck_assert_msg(dur_ino(d, p) != ino, "%s: name %d durably holds inode %llu whose create (seq %llu) was %s",
                          when, p, (unsigned long long)ino, (unsigned long long)seq,
                          pl->affected[i] ? "dropped" : "left pending");
    }
}

/* A crash of node (-1: power loss), with explicit random choices (S3
 * checked on the result) or the disk's own draws; then every fact must
 * still hold. */
static void crash(struct ckh_simfs *d, struct model *m, struct ckh_rng *rng, int node, uint64_t step)
{
    struct plan pl;
    plan_crash(d, m, rng, node, &pl);
    bool drawn = ckh_rng_below(rng, 3) == 0;
    ck_assert_int_eq(ckh_simfs_crash(d, node, drawn ? NULL : pl.ch, drawn ? 0 : pl.na), 0);
    char when[96];
    snprintf(when, sizeof when, "step %llu: crash of node %d (%s)", (unsigned long long)step, node,
             drawn ? "drawn" : "explicit");
    if (!drawn)
        check_dependencies(d, m, &pl, when);
    /* the crashed caches hold nothing any more */
    for (int c = 0; c < m->n; c++) {
        if (node != -1 && !m->machine && c != node)
            continue;
        for (int i = 0; i < MAXINO; i++)
            m->dirty[i] &= ~(1u << c);
        journal_commit(m, c);
    }
    check_facts(d, m, when);
    plan_free(&pl);
}

static void retire(struct model *m, int p)
{
    m->fact[p] = false;
}

/* One random data op by node on the existing file p (write, truncate or
 * fsync/fdatasync, r picks); the model follows. */
static void data_op(struct ckh_simfs *d, struct model *m, struct ckh_fs *v, struct ckh_rng *rng, int node,
                    int p, uint64_t r)
{
    static unsigned char data[2048];
    char path[32];
    path_of(p, path, sizeof path);
    uint64_t ino = live_ino(d, path);
    int c = cache_of(m, node);
    struct ckh_file *f = NULL;
    ck_assert_uint_lt(ino, MAXINO);
    ck_assert_int_eq(ckh_fs_open(v, path, CKH_O_WRONLY, &f), 0);
    if (r < 40) {
        uint64_t off = ckh_rng_below(rng, 3000), len = 1 + ckh_rng_below(rng, sizeof data);
        for (uint64_t k = 0; k < len; k++)
            data[k] = (unsigned char)ckh_rng_next(rng);
        ck_assert_int_eq(ckh_file_pwrite(f, data, len, off), (int64_t)len);
    } else if (r < 46) {
        ck_assert_int_eq(ckh_file_ftruncate(f, ckh_rng_below(rng, 4000)), 0);
    } else {
        ck_assert_int_eq(r % 2 ? ckh_file_fsync(f) : ckh_file_fdatasync(f), 0);
    }
    ck_assert_int_eq(ckh_file_close(f), 0);
    if (r < 46) {
        m->dirty[ino] |= 1u << c;
        retire(m, p);
        return;
    }
    m->dirty[ino] &= ~(1u << c);
    if (m->ext4)
        journal_commit(m, c);
}

/* One random step: a crash, or an op by a random node on a random name
 * (create, write, truncate, rename, unlink, fsync, fdatasync, fsync_dir);
 * false when the drawn op does not apply (nothing done). */
static bool random_step(struct ckh_simfs *d, struct model *m, struct ckh_fs **v, struct ckh_rng *rng,
                        uint64_t step, int *crashes)
{
    int node = (int)ckh_rng_below(rng, (uint64_t)m->n), c = cache_of(m, node);
    int p = (int)ckh_rng_below(rng, NPATHS), q = (int)ckh_rng_below(rng, NPATHS);
    int dir = p / NNAMES, dir2 = q / NNAMES;
    char path[32], path2[32];
    path_of(p, path, sizeof path);
    path_of(q, path2, sizeof path2);
    struct ckh_stat st;
    bool exists = ckh_fs_stat(v[node], path, &st) == 0;
    uint64_t r = ckh_rng_below(rng, 100);
    if (r < 8) {
        crash(d, m, rng, (int)ckh_rng_below(rng, (uint64_t)m->n + 1) - 1, step);
        (*crashes)++;
    } else if (!exists) {
        struct ckh_file *f = NULL;
        ck_assert_int_eq(ckh_fs_open(v[node], path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f), 0);
        ck_assert_int_eq(ckh_file_close(f), 0);
        note_create(d, m, path);
        m->since_sync[c][dir] = true;
        retire(m, p);
    } else if (r < 16) {
        return false;
    } else if (r < 46 || (r >= 62 && r < 82)) {
        data_op(d, m, v[node], rng, node, p, r < 46 ? r : 46 + r % 2);
    } else if (r < 56) {
        if (p == q)
            return false;
        ck_assert_int_eq(ckh_fs_rename(v[node], path, path2), 0);
        m->since_sync[c][dir] = m->since_sync[c][dir2] = true;
        if (!m->ext4 && dir != dir2) {
            ck_assert_int_lt(m->nren[c], 64);
            m->ren_bits[c][m->nren[c]++] = 0;
        }
        retire(m, p);
        retire(m, q);
    } else if (r < 62) {
        ck_assert_int_eq(ckh_fs_unlink(v[node], path), 0);
        m->since_sync[c][dir] = true;
        retire(m, p);
    } else {
        ck_assert_int_eq(ckh_fs_fsync_dir(v[node], dir ? "/d1" : "/d0"), 0);
        if (m->ext4)
            journal_commit(m, c);
        else
            synced_dir(m, c, dir);
    }
    return true;
}

/* Seeded random op sequences from 2-3 nodes on one shared disk, random
 * crashes between them; after every op and every crash each fact (a path
 * every cache had synced, by the rules) still holds. _i: seed; the crash
 * model and the sharing come from it too. */
START_TEST(test_durable_survives_every_crash)
{
    uint64_t seed = (uint64_t)_i;
    struct model *m = calloc(1, sizeof *m);
    ck_assert_ptr_nonnull(m);
    m->ext4 = _i % 2;
    m->machine = (_i / 2) % 2;
    m->n = 2 + (_i / 4) % 2;
    struct ckh_rng rng;
    ckh_rng_seed(&rng, ckh_seed_derive(seed, "test.shared"));
    struct ckh_simfs *d = mkdisk(m->ext4 ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK,
                                 m->machine ? CKH_SHARING_MACHINE : CKH_SHARING_NETWORK, seed);
    ck_assert_int_eq(ckh_fs_mkdir(ckh_simfs_fs(d), "/d0"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(ckh_simfs_fs(d), "/d1"), 0);
    ckh_simfs_sync_all(d);
    struct ckh_fs *v[MAXN];
    for (int i = 0; i < m->n; i++)
        v[i] = mkview(d, i);
    int crashes = 0, facts_checked = 0;
    for (uint64_t step = 0; step < 160; step++) {
        if (!random_step(d, m, v, &rng, step, &crashes))
            continue;
        char when[64];
        snprintf(when, sizeof when, "step %llu", (unsigned long long)step);
        check_facts(d, m, when);
        establish(d, m, when);
        for (int k = 0; k < NPATHS; k++)
            facts_checked += m->fact[k];
    }
    /* the property was exercised: crashes happened and facts were held */
    ck_assert_int_gt(crashes, 0);
    ck_assert_int_gt(facts_checked, 0);
    for (int i = 0; i < m->n; i++)
        ckh_simfs_view_destroy(v[i]);
    ckh_simfs_destroy(d);
    free(m);
}
END_TEST

static Suite *simfs_shared_suite(void)
{
    Suite *s = suite_create("simfs_shared");
    TCase *tc = tcase_create("rules");
    tcase_add_loop_test(tc, test_crash_of_one_node, 0, 2);
    tcase_add_loop_test(tc, test_fsync_by_another_node, 0, 2);
    tcase_add_loop_test(tc, test_fsync_dir_by_another_node, 0, 2);
    tcase_add_loop_test(tc, test_dependent_op_of_other_node_dropped, 0, 2);
    tcase_add_test(tc, test_bad_sharing);
    tcase_add_loop_test(tc, test_sim_machine_crash_takes_mates, 0, 2);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("property");
    tcase_set_timeout(tp, 120);
    tcase_add_loop_test(tp, test_durable_survives_every_crash, 0, seeds(160));
    suite_add_tcase(s, tp);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(simfs_shared_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
