/* What a command job's programs leave behind (exec/command.h): their result
 * files (the JSON-lines protocol of include/ckh/record.h), read as they
 * grow for the progress that faults trigger on, and read whole after each
 * run into the record store; the checkpoint directory's files, whose
 * content digests join each node's final values for `reference`; and a
 * look at the programs' working folder for checkpoints written outside the
 * mount.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/record.h"
#include "ckh/rng.h"
#include "exec/command_result.h"
#include "exec/prog_file.h"
#include "exec/run_ctx.h"

#define READ_CHUNK (64u * 1024u)
#define RESULT_BYTES_MAX (1ull << 30) /* the result file limit: past 1 GiB it is refused */
/* The progress reader's buffer: the longest line the protocol allows
 * (CKH_RECORD_JSONL_LINE_MAX) and one read more. */
#define PARTIAL_CAP_MAX ((size_t)CKH_RECORD_JSONL_LINE_MAX + 2 * READ_CHUNK)

/* ---- progress, as the result file grows ---- */

struct progress_ctx {
    struct ckh__cmd_progress *p; /* the node's */
    bool step_based;             /* progress in steps (else epochs) */
};

static int progress_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    struct progress_ctx *pc = ctx;
    struct ckh__cmd_progress *p = pc->p;
    if (kind == CKH_REC_STEP) {
        const struct ckh_rec_step *s = rec;
        int64_t v = pc->step_based ? s->step : s->epoch;
        p->step = s->step;
        p->epoch = s->epoch;
        if (v > p->progress)
            p->progress = v;
        if (!p->resume_known) { /* a step without a resume record: from scratch */
            p->resume_known = true;
            p->resume_point = 0;
        }
    } else if (kind == CKH_REC_RESUME) {
        const struct ckh_rec_resume *r = rec;
        p->step = r->step;
        p->epoch = r->epoch;
        p->resume_known = true;
        p->resume_point = pc->step_based ? r->step : r->epoch;
    } else if (kind == CKH_REC_SAVE) {
        const struct ckh_rec_save *s = rec;
        int64_t v = pc->step_based ? s->step : s->epoch;
        if (s->rc == 0 && v > p->last_save) {
            if (v - p->last_save > p->save_gap_max)
                p->save_gap_max = v - p->last_save;
            p->last_save = v;
            p->saves_ok++;
        }
    } else if (kind == CKH_REC_FINAL) {
        p->has_final = true;
    }
    return 0;
}

/* Parses the complete lines of text[0..n) for progress; malformed lines
 * are left to the final read, which names them. Returns 0 or CKH_ENOMEM
 * (the progress is then incomplete). */
static int progress_parse(struct ckh__cmd *c, int i, const char *text, size_t n)
{
    struct progress_ctx pc = {&c->nodes[i].prog, c->step_based};
    char msg[8];
    int rc = ckh_record_jsonl_parse(text, n, NULL, progress_sink, &pc, msg, sizeof msg);
    return rc == CKH_ENOMEM ? rc : 0;
}

/* Node i's result file broke a limit (lock held): the message (the first
 * failure wins) and no more reading; the wait loop stops the job. */
static void result_over(struct ckh__cmd *c, int i, int code, const char *why)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    nd->result_over = true;
    ckh__cmd_fail(c, code, "$CKH_RESULT of %s in run %d (%s) %s; ckh stopped the job (docs/SCENARIOS.md, "
                  "\"Result protocol\")", nd->name, c->run, nd->result, why);
}

/* Room for one more read at the end of nd's partial line: false when
 * memory ran out. The buffer grows by doubling up to the longest line the
 * protocol allows and one read more. */
static bool partial_room(struct ckh__cmd_node *nd)
{
    if (nd->cpartial - nd->npartial >= READ_CHUNK)
        return true;
    size_t cap = nd->cpartial ? nd->cpartial * 2 : 4 * READ_CHUNK;
    if (cap > PARTIAL_CAP_MAX)
        cap = PARTIAL_CAP_MAX;
    if (cap - nd->npartial < READ_CHUNK)
        return false; /* cannot happen: a longer partial line is refused first */
    char *np = realloc(nd->partial, cap);
    if (!np)
        return false;
    nd->partial = np;
    nd->cpartial = cap;
    return true;
}

bool ckh__cmd_progress_read(struct ckh__cmd *c, int i, uint64_t budget)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    struct stat st;
    if (nd->result_fd < 0 || nd->result_over)
        return false;
    struct ckh__cmd_progress before = nd->prog;
    /* A file past the limit (a sparse terabyte) is refused before a byte
     * of it is read. */
    if (fstat(nd->result_fd, &st) != 0)
        return false;
    if ((uint64_t)st.st_size > RESULT_BYTES_MAX) {
        char why[160];
        snprintf(why, sizeof why, "holds %" PRIu64 " bytes, over the result file limit of 1 GiB (%llu bytes)",
                 (uint64_t)st.st_size, RESULT_BYTES_MAX);
        result_over(c, i, CKH_EINVAL, why);
        return false;
    }
    /* At most budget bytes per call, so that the loop that enforces
     * job.timeout keeps its pace, and never past the size just looked at
     * (a file that grows meanwhile is looked at again first); each byte
     * is read once, and only the new bytes are searched for a newline. */
    uint64_t there = (uint64_t)st.st_size > nd->result_read ? (uint64_t)st.st_size - nd->result_read : 0;
    if (budget > there)
        budget = there;
    for (uint64_t taken = 0; taken < budget;) {
        if (!partial_room(nd)) {
            result_over(c, i, CKH_ENOMEM, "could not be read further: out of memory");
            break;
        }
        size_t want = READ_CHUNK;
        if (budget - taken < want)
            want = (size_t)(budget - taken);
        ssize_t r = read(nd->result_fd, nd->partial + nd->npartial, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        taken += (uint64_t)r;
        nd->result_read += (uint64_t)r;
        char *fresh = nd->partial + nd->npartial;
        nd->npartial += (size_t)r;
        char *last = memrchr(fresh, '\n', (size_t)r);
        if (last) { /* complete lines only; the rest waits for its newline */
            size_t done = (size_t)(last - nd->partial) + 1;
            if (progress_parse(c, i, nd->partial, done) != 0) {
                result_over(c, i, CKH_ENOMEM, "could not be read further: out of memory");
                break;
            }
            memmove(nd->partial, nd->partial + done, nd->npartial - done);
            nd->npartial -= done;
        }
        if (nd->npartial > CKH_RECORD_JSONL_LINE_MAX) {
            char why[200];
            snprintf(why, sizeof why, "holds a line longer than 1 MiB (%u bytes, the result protocol's line "
                     "limit) with no newline yet", CKH_RECORD_JSONL_LINE_MAX);
            result_over(c, i, CKH_EPARSE, why);
            break;
        }
    }
    return memcmp(&before, &nd->prog, sizeof before) != 0;
}

bool ckh__cmd_progress_refresh(struct ckh__cmd *c, int i)
{
    return ckh__cmd_progress_read(c, i, UINT64_MAX);
}

/* ---- the whole result file, into the record store ---- */

int ckh__cmd_read_results(struct ckh__cmd *c)
{
    for (int i = 0; i < c->n; i++) {
        struct ckh__cmd_node *nd = &c->nodes[i];
        if (!nd->start)
            continue;
        /* A program that exited completed its last line. */
        bool exited = nd->end == CKH__CMD_EXITED;
        char *text = NULL, label[128], msg[900];
        size_t len = 0;
        snprintf(label, sizeof label, "$CKH_RESULT of %s in run %d", nd->name, c->run);
        int rc = ckh__prog_file_read(nd->result, label, RESULT_BYTES_MAX,
                                     "the result file limit of 1 GiB (1073741824 bytes)", exited, &text, &len, msg,
                                     sizeof msg);
        if (rc == CKH_ELIMIT)
            return ckh__cmd_fail(c, CKH_EINVAL, "%s", msg);
        if (rc)
            return ckh__cmd_fail(c, rc == -ENOENT ? CKH_EINVAL : rc, "%s", msg);
        /* Progress sees every complete line, the last one too. */
        memset(&nd->prog, 0, sizeof nd->prog);
        nd->prog.step = nd->prog.epoch = nd->prog.progress = -1;
        rc = progress_parse(c, i, text, len);
        msg[0] = '\0';
        if (rc == 0)
            rc = ckh_records_read_jsonl(c->records, (size_t)i, text, len, label, msg, sizeof msg);
        free(text);
        if (rc == CKH_ENOMEM)
            return ckh__cmd_fail(c, rc, "out of memory");
        if (rc)
            return ckh__cmd_fail(c, CKH_EPARSE, "%s (the result protocol: docs/SCENARIOS.md, "
                                 "\"Result protocol\")", msg[0] ? msg : ckh_strerror(rc));
    }
    return 0;
}

/* ---- the checkpoint directory's files ---- */

/* Files of one disk under one directory, as final values. */
struct file_set {
    struct ckh_step_quantity *q; /* the entries */
    size_t n, cap;               /* in use, allocated */
    const struct ckh_scenario *sc; /* for compare.ignore and compare.content */
    const struct ckh__cmd *c;    /* its mounts, for link targets */
};

/* Whether compare.content asks for rel's bytes to be compared. */
static bool content_compared(const struct file_set *fs, const char *rel)
{
    for (size_t i = 0; i < fs->sc->compare.ncontent; i++)
        if (fnmatch(fs->sc->compare.content[i], rel, FNM_PATHNAME) == 0)
            return true;
    return false;
}

/* Whether target is path or lies below it; *rest: what follows path. */
static bool target_under(const char *target, const char *path, const char **rest)
{
    size_t len = strlen(path);
    if (!path[0] || strncmp(target, path, len) || (target[len] && target[len] != '/'))
        return false;
    *rest = target + len;
    return true;
}

/* An absolute target into job.checkpoint_mount (where the programs see
 * the root of the checkpoint directory's disk in their own mount
 * namespace, exec/command_ns.h): "disk NAME:" and the path in that disk,
 * as link_digest gives for the same link written through a run's folder. */
static bool fixed_path_digest(const struct file_set *fs, const char *target, uint64_t h, uint64_t *out)
{
    const struct ckh_scn_job *job = &fs->sc->job;
    const char *rest, *below;
    if (!fs->c || fs->c->ns_mode == 0 || !job->checkpoint_mount ||
        !target_under(target, job->checkpoint_mount, &rest))
        return false;
    /* The disk of checkpoint_dir: the longest mount point it lies under. */
    size_t best = job->ndisks, best_len = 0;
    for (size_t d = 0; d < job->ndisks; d++) {
        const char *m = job->disks[d].mount;
        size_t len = strlen(m);
        if ((!strcmp(m, "/") || target_under(job->checkpoint_dir, m, &below)) &&
            (best == job->ndisks || len > best_len)) {
            best = d;
            best_len = len;
        }
    }
    if (best == job->ndisks)
        return false;
    const char *name = job->disks[best].name;
    h = ckh_hash64(ckh_hash64(h, "disk ", 5), name, strlen(name) + 1);
    *out = ckh_hash64(h, rest, strlen(rest));
    return true;
}

/* A link target as the same link in another run reads: an absolute path
 * into one of this run's mounts becomes "disk NAME:" and the path in the
 * disk (each run mounts its disks in another folder), and so does one
 * into job.checkpoint_mount; anything else is kept as written. */
static uint64_t link_digest(const struct file_set *fs, const char *target)
{
    uint64_t h = ckh_hash64(CKH_HASH_INIT, "link", 4), fixed;
    if (fixed_path_digest(fs, target, h, &fixed))
        return fixed;
    for (size_t m = 0; fs->c && m < fs->c->nmounts; m++) {
        const struct ckh__cmd_mount *mt = &fs->c->mounts[m];
        size_t len = strlen(mt->dir);
        if (!mt->dir[0] || strncmp(target, mt->dir, len) || (target[len] && target[len] != '/'))
            continue;
        const char *name = fs->sc->job.disks[mt->disk_index].name;
        h = ckh_hash64(ckh_hash64(h, "disk ", 5), name, strlen(name) + 1);
        return ckh_hash64(h, target + len, strlen(target + len));
    }
    return ckh_hash64(h, target, strlen(target));
}

static bool file_ignored(const struct file_set *fs, const char *rel)
{
    for (size_t i = 0; i < fs->sc->compare.nignore; i++) {
        const char *g = fs->sc->compare.ignore[i];
        if (!strncmp(g, "file:", 5) && fnmatch(g + 5, rel, FNM_PATHNAME) == 0)
            return true;
    }
    return false;
}

static int file_add(struct file_set *fs, const char *rel, uint64_t digest)
{
    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? fs->cap * 2 : 32;
        struct ckh_step_quantity *v = realloc(fs->q, cap * sizeof *v);
        if (!v)
            return CKH_ENOMEM;
        fs->q = v;
        fs->cap = cap;
    }
    struct ckh_step_quantity *e = &fs->q[fs->n++];
    memset(e, 0, sizeof *e);
    size_t len = strlen(rel), room = sizeof e->name - 1 - 5;
    /* A long path keeps its end, which names the file. */
    if (len <= room)
        snprintf(e->name, sizeof e->name, "file:%s", rel);
    else
        snprintf(e->name, sizeof e->name, "file:...%s", rel + len - (room - 3));
    e->bits = digest;
    return 0;
}

/* Content digest of the file at path on fs: by block, holes never read
 * (ckh_file_digest), so a huge sparse file costs what its data costs. */
static int file_digest(struct ckh_fs *fs, const char *path, uint64_t *out)
{
    static char buf[READ_CHUNK];
    struct ckh_stat st;
    struct ckh_file *f = NULL;
    int rc = ckh_fs_stat(fs, path, &st);
    if (rc == 0)
        rc = ckh_fs_open(fs, path, CKH_O_RDONLY, &f);
    if (rc)
        return rc;
    rc = ckh_file_digest(f, st.size_bytes, buf, sizeof buf, out);
    ckh_file_close(f);
    return rc;
}

/* Every entry under dir (disk path) into fs, relative to root. */
static int walk(struct ckh_fs *fs, const char *dir, size_t root_len, struct file_set *set, int depth)
{
    struct ckh_listing l;
    int rc = ckh_fs_listdir(fs, dir, &l);
    if (rc)
        return rc == -ENOENT ? 0 : rc;
    for (size_t k = 0; k < l.count && rc == 0; k++) {
        char path[CKH_PATH_MAX], target[CKH_PATH_MAX];
        snprintf(path, sizeof path, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", l.entries[k].name);
        const char *rel = path + root_len + (path[root_len] == '/');
        uint64_t d = 0;
        if (file_ignored(set, rel))
            continue;
        if (l.entries[k].type == CKH_FT_DIR) {
            d = ckh_hash64(CKH_HASH_INIT, "dir", 3);
            rc = depth < 64 ? walk(fs, path, root_len, set, depth + 1) : 0;
        } else if (l.entries[k].type == CKH_FT_SYMLINK) {
            int64_t t = ckh_fs_readlink(fs, path, target, sizeof target);
            d = link_digest(set, t > 0 ? target : "");
        } else if (content_compared(set, rel)) {
            rc = file_digest(fs, path, &d);
        } else { /* by default a file is compared by its name: serialisers do not write the same bytes twice */
            d = ckh_hash64(CKH_HASH_INIT, "file", 4);
        }
        if (rc == 0)
            rc = file_add(set, rel, d);
    }
    ckh_fs_listing_free(&l);
    return rc;
}

/* Appends each node's files to its final values in jc (a new pool). */
static int append_values(struct ckh_job_copy *jc, struct file_set *sets, size_t nsets)
{
    size_t extra = 0;
    for (size_t i = 0; i < nsets; i++)
        extra += sets[i].n;
    size_t total = jc->r.nfinal_values + extra;
    struct ckh_step_quantity *v = calloc(total ? total : 1, sizeof *v);
    if (!v)
        return CKH_ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i < jc->r.nnodes; i++) {
        struct ckh_node_result *nr = &jc->nodes[i];
        size_t own = (size_t)nr->vfirst + nr->vcount <= jc->r.nfinal_values ? nr->vcount : 0;
        if (own)
            memcpy(v + at, jc->final_values + nr->vfirst, own * sizeof *v);
        nr->vfirst = (uint32_t)at;
        at += own;
        if (i < nsets && sets[i].n) {
            memcpy(v + at, sets[i].q, sets[i].n * sizeof *v);
            at += sets[i].n;
        }
        nr->vcount = (uint32_t)(at - nr->vfirst);
    }
    free(jc->final_values);
    jc->final_values = v;
    jc->r.final_values = v;
    jc->r.nfinal_values = at;
    return 0;
}

int ckh__cmd_add_file_digests(struct ckh__cmd *c, struct ckh_job_copy *jc)
{
    size_t nsets = jc->r.nnodes;
    struct file_set *sets = calloc(nsets ? nsets : 1, sizeof *sets);
    struct ckh_simfs **seen = calloc((size_t)c->n + 1, sizeof *seen);
    int rc = sets && seen ? 0 : CKH_ENOMEM;
    size_t nseen = 0;
    for (size_t i = 0; rc == 0 && i < nsets && (int)i < c->n; i++) {
        char dpath[CKH_PATH_MAX];
        struct ckh_simfs *d = ckh_fault_resolve(&c->env, (int)i, c->sc->job.checkpoint_dir, dpath, sizeof dpath);
        bool dup = false;
        for (size_t k = 0; k < nseen; k++)
            dup |= seen[k] == d;
        sets[i].sc = c->sc;
        sets[i].c = c;
        if (!d || dup)
            continue; /* a shared disk's files belong to node 0 */
        seen[nseen++] = d;
        rc = walk(ckh_simfs_fs(d), dpath, strcmp(dpath, "/") ? strlen(dpath) : 0, &sets[i], 0);
    }
    if (rc == 0)
        rc = append_values(jc, sets, nsets);
    for (size_t i = 0; sets && i < nsets; i++)
        free(sets[i].q);
    free(sets);
    free(seen);
    if (rc)
        ckh__cmd_fail(c, rc, "reading the checkpoint directory: %s", ckh_strerror(rc));
    return rc;
}

/* ---- the working folder: checkpoints written outside the mount ---- */

/* A file of the folder: its path, size and modification time. */
struct snap_entry {
    char *path;          /* relative to the folder (owned) */
    uint64_t size;       /* bytes */
    int64_t mtime_ns;    /* modification time */
};

struct ckh__cmd_snapshot {
    struct snap_entry *v; /* sorted by path */
    size_t n, cap;        /* in use, allocated */
    bool truncated;       /* the folder was too large (or memory too short) to look at whole */
};

#define SNAP_ENTRIES_MAX 20000
#define SNAP_DEPTH_MAX 6

/* Bytecode caches that interpreters write beside the program are not
 * checkpoints; neither are ckh's own run folders ("ckh-PID-XXXXXX",
 * harness/exec/tmpdir.c), there when TMPDIR is inside the working folder. */
bool ckh__cmd_snapshot_skipped(const char *name)
{
    size_t len = strlen(name);
    return !strcmp(name, "__pycache__") || (len > 4 && !strcmp(name + len - 4, ".pyc")) ||
           !strcmp(name, ".git") || (!strncmp(name, "ckh-", 4) && name[4] >= '0' && name[4] <= '9');
}

static void snap_walk(struct ckh__cmd_snapshot *s, const char *root, const char *rel, int depth)
{
    char dirpath[CKH__CMD_PATH_MAX * 2];
    snprintf(dirpath, sizeof dirpath, "%s%s%s", root, rel[0] ? "/" : "", rel);
    /* A folder a program swapped for a link since lstat is not followed. */
    int fd = open(dirpath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || ckh__cmd_snapshot_skipped(de->d_name))
            continue;
        if (s->n >= SNAP_ENTRIES_MAX) {
            s->truncated = true;
            break;
        }
        char path[CKH__CMD_PATH_MAX * 2], sub[CKH__CMD_PATH_MAX];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        snprintf(path, sizeof path, "%s/%s", root, sub);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < SNAP_DEPTH_MAX)
                snap_walk(s, root, sub, depth + 1);
            continue;
        }
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 256;
            struct snap_entry *v = realloc(s->v, cap * sizeof *v);
            if (!v) {
                s->truncated = true; /* not looked at whole: nothing is compared */
                break;
            }
            s->v = v;
            s->cap = cap;
        }
        char *p = strdup(sub);
        if (!p) {
            s->truncated = true;
            break;
        }
        s->v[s->n++] = (struct snap_entry){p, (uint64_t)st.st_size,
                                           (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
    }
    closedir(d);
}

static int snap_cmp(const void *a, const void *b)
{
    return strcmp(((const struct snap_entry *)a)->path, ((const struct snap_entry *)b)->path);
}

int ckh__cmd_snapshot_take(const char *dir, struct ckh__cmd_snapshot **out)
{
    struct ckh__cmd_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return CKH_ENOMEM;
    snap_walk(s, dir, "", 0);
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, snap_cmp);
    *out = s;
    return 0;
}

int ckh__cmd_snapshot_compare(const struct ckh__cmd_snapshot *s, const char *dir, char *msg, size_t n)
{
    struct ckh__cmd_snapshot *now = NULL;
    int rc = ckh__cmd_snapshot_take(dir, &now);
    if (rc)
        return rc;
    rc = 0;
    for (size_t i = 0; i < now->n && rc == 0 && !s->truncated && !now->truncated; i++) {
        const struct snap_entry *e = &now->v[i];
        /* An empty snapshot has no array (bsearch wants one). */
        const struct snap_entry *was = s->n ? bsearch(e, s->v, s->n, sizeof *s->v, snap_cmp) : NULL;
        if (was && was->size == e->size && was->mtime_ns == e->mtime_ns)
            continue;
        rc = ckh_errf(msg, n, CKH_EINVAL, "%s/%s %s during the fault-free reference run", dir, e->path,
                      was ? "changed" : "appeared");
    }
    ckh__cmd_snapshot_free(now);
    return rc;
}

void ckh__cmd_snapshot_free(struct ckh__cmd_snapshot *s)
{
    for (size_t i = 0; s && i < s->n; i++)
        free(s->v[i].path);
    if (s)
        free(s->v);
    free(s);
}
