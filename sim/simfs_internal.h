/* Private structures shared by the simulated filesystem's two files:
 * sim/simfs.c (the disk: inodes, extents, pending operations, the crash
 * model) and sim/simfs_view.c (path resolution and the ckh_fs ops table
 * that nodes use). Nothing outside sim/simfs*.c includes this header.
 */
#ifndef CKH_SIMFS_INTERNAL_H
#define CKH_SIMFS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/rng.h"
#include "ckh/sim.h"
#include "ckh/simfs.h"

/* Which copy of an inode's content an operation reads or changes. */
enum { SF_LIVE = 0, SF_DUR = 1 };

struct sf_sfile;
struct sf_store;

/* Reference-counted literal bytes, shared by extents and pending writes;
 * immutable once written (a store's buffer may grow at its end, B2 in
 * sim/simfs_store.c). */
struct sf_buf {
    uint64_t refs;         /* extents + pending ops + clones that use it (atomic) */
    uint64_t len;          /* bytes (atomic: a store's last buffer grows) */
    struct sf_sfile *file; /* store file holding the bytes, or NULL: in data[] */
    uint64_t at;           /* file: offset of the first byte in it */
    unsigned char data[];  /* in memory: the bytes */
};

/* Where a run of bytes comes from. buf != NULL: literal, the first byte is
 * buf->data[gen.offset]. buf == NULL: generated, the first byte is stream
 * position gen.offset of (gen.seed, gen.stream). */
struct sf_src {
    struct ckh_gen gen;  /* generator, or offset into buf */
    struct sf_buf *buf;  /* literal bytes or NULL */
};

/* One extent of file content: [off, off + len) comes from src. Bytes of a
 * file covered by no extent read as zeros. */
struct sf_ext {
    uint64_t off;      /* file offset of the first byte */
    uint64_t len;      /* bytes */
    struct sf_src src; /* content */
};

/* The content of a file in one copy (live or durable). */
struct sf_data {
    uint64_t size;       /* file size in bytes */
    struct sf_ext *ext;  /* extents sorted by off, non-overlapping */
    uint32_t n;          /* extents used */
    uint32_t cap;        /* extents allocated */
};

/* One directory entry. In the live copy an entry whose name was removed
 * while the removal is still pending stays as a whiteout (ino NULL) so the
 * next operation on that name can depend on the removal. */
struct sf_dent {
    char *name;              /* entry name (owned) */
    struct sf_inode *ino;    /* the inode, NULL for a whiteout */
    uint64_t seq;            /* live copy: last pending op on this name (0: none) */
};

/* The entries of a directory in one copy, sorted bytewise by name. */
struct sf_dir {
    struct sf_dent *v;  /* entries */
    uint32_t n;         /* entries used (whiteouts included) */
    uint32_t cap;       /* entries allocated */
    uint32_t nlive;     /* entries that are not whiteouts */
};

struct sf_op;

/* A file, directory or symlink. Freed when no copy of the tree links it,
 * no handle has it open and no pending op refers to it. */
struct sf_inode {
    uint64_t ino;               /* inode number, unique per disk, increasing */
    enum ckh_ftype type;        /* file, dir or symlink */
    struct sf_data data[2];     /* file content: [SF_LIVE], [SF_DUR] */
    struct sf_dir dir[2];       /* directory entries: [SF_LIVE], [SF_DUR] */
    char *target;               /* symlink target (owned), else NULL */
    char *hint;                 /* a disk path it had (owned), for pending_info */
    uint32_t links[2];          /* entries pointing here in each copy */
    uint32_t opens;             /* open handles (+1 pin for the root) */
    uint32_t oprefs;            /* pending ops that refer to it */
    uint64_t create_seq;        /* pending op that created it (0: durable) */
    struct sf_op *ops_head;     /* pending data ops on it, oldest first */
    struct sf_op *ops_tail;     /* newest pending data op */
    struct sf_op *last_op;      /* newest pending op of any kind on it */
    uint64_t crash_order_seq;   /* crash scratch: newest applied metadata op */
    uint32_t slot;              /* index in the disk's inode table */
    bool counted;               /* live size counted in used_bytes (linked or open) */
};

/* Kinds of pending operations. */
enum sf_opk {
    SF_OP_WRITE = 0, /* data: write [off, off+len) from src */
    SF_OP_TRUNC,     /* data: set size to len */
    SF_OP_LINK,      /* entry: dir/name -> ino (create, mkdir, symlink) */
    SF_OP_UNLINK,    /* entry: remove dir/name (unlink, rmdir) */
    SF_OP_RENAME,    /* entry: move dir/name -> dir2/name2 */
};

/* One pending (not yet durable) operation. */
struct sf_op {
    uint64_t seq;             /* issue order on the disk (first write of a merged run) */
    int32_t node;             /* issuing node (-1: none) */
    uint8_t k;                /* enum sf_opk */
    uint8_t ckind;            /* enum ckh_op_kind for pending_info */
    uint8_t synced;           /* rename: bit 0 source dir fsynced, bit 1 destination */
    uint8_t decision;         /* crash scratch: enum ckh_crash_choice */
    bool affected;            /* crash scratch: resolved by the current crash */
    struct sf_inode *ino;     /* the file written, or the entry's inode */
    struct sf_inode *dir;     /* entry ops: directory of name */
    struct sf_inode *dir2;    /* rename: directory of name2 */
    char *path;               /* entry ops: disk path of the entry (owned) */
    char *path2;              /* rename: destination disk path (owned) */
    const char *name;         /* last component of path */
    const char *name2;        /* last component of path2 */
    uint64_t off;             /* write offset */
    uint64_t len;             /* write length or new size */
    struct sf_src src;        /* write content */
    uint64_t dep[3];          /* seqs of earlier pending ops this one needs (0: none) */
    struct sf_op *iprev;      /* data ops of ino: previous */
    struct sf_op *inext;      /* data ops of ino: next */
};

/* One slot of the pending table (sorted by seq; op NULL once resolved). */
struct sf_pend {
    uint64_t seq;       /* the op's seq */
    struct sf_op *op;   /* the op, NULL: resolved, removed at compaction */
};

/* An injected fault waiting for its op (ckh_simfs_fault_next). */
struct sf_fault {
    int kind;                          /* enum ckh_op_kind or -1 */
    char *path;                        /* disk path or NULL: any (owned) */
    struct ckh_fault_action act;       /* what to do */
};

struct sf_mount {
    const char *prefix;        /* mount point (owned by a view; static in the direct view) */
    size_t plen;               /* strlen(prefix) */
    struct ckh_simfs *disk;    /* the disk */
};

struct sf_file;

/* A node's view of its mounts (also the disk's direct view). */
struct sf_view {
    struct ckh_fs base;        /* ops table; must be first */
    struct ckh_sim *sim;       /* simulator to report to, or NULL */
    int node;                  /* node id ops are attributed to (-1: none) */
    struct sf_mount *mounts;   /* mounts, longest prefix first */
    size_t nmounts;            /* number of mounts */
    struct sf_file *files;     /* open files (doubly linked) */
    bool direct;               /* embedded in a disk, not freed by view_destroy */
};

/* An open file. */
struct sf_file {
    struct ckh_file base;      /* must be first */
    struct sf_view *view;      /* the view that opened it */
    struct ckh_simfs *disk;    /* disk of the inode */
    struct sf_inode *ino;      /* the open inode (holds an open count) */
    int flags;                 /* CKH_O_* flags */
    uint64_t pos;              /* file position for read/write */
    char *vpath;               /* the path it was opened with (owned) */
    char *dpath;               /* its disk path at open (owned) */
    struct sf_file *prev;      /* view's open list */
    struct sf_file *next;      /* view's open list */
};

struct ckh_simfs {
    struct ckh_simfs_config cfg;  /* configuration (name copied) */
    char *name;                   /* owned copy of cfg.name */
    struct sf_inode *root;        /* root directory (pinned) */
    struct sf_inode **inodes;     /* inode table by slot (NULL: free slot) */
    uint32_t ninodes;             /* slots used */
    uint32_t icap;                /* slots allocated */
    uint32_t ifree;               /* NULL slots awaiting compaction */
    uint64_t next_ino;            /* next inode number */
    struct sf_pend *pv;           /* pending ops by seq */
    size_t pn;                    /* slots used in pv */
    size_t pcap;                  /* slots allocated in pv */
    size_t ptomb;                 /* resolved slots awaiting compaction */
    uint64_t next_seq;            /* last issued seq */
    struct ckh_rng rng;           /* crash choices */
    uint64_t garbage_seed;        /* seed of garbage bytes and tear points */
    uint64_t used_bytes;          /* sum of live file sizes */
    uint64_t heap_bytes;          /* heap bytes held by this disk */
    bool host_oom;                /* an allocation of ckh's process for this disk failed:
                                     its state may lack what it was given
                                     (ckh_simfs_host_out_of_memory) */
    uint64_t crashes;             /* crashes so far */
    bool gc_hold;                 /* defer freeing inodes (during rebuilds) */
    struct sf_fault *faults;      /* injected faults, in order */
    size_t nfaults;               /* number of injected faults */
    struct sf_store *store;       /* where literal bytes live (NULL: in memory; shared with clones) */
    struct sf_buf *tail_buf;      /* store: the buffer the next write may extend (holds a ref) */
    const void *tail_key;         /* store: the inode of the last write (compared, never followed) */
    uint64_t tail_end;            /* store: the file offset where the last write ended */
    struct sf_view direct;        /* ckh_simfs_fs view */
    struct sf_mount direct_mount; /* its single mount "/" */
    char errmsg[CKH_ERRMSG_BYTES]; /* last error description */
};

/* ---- sim/simfs.c, used by sim/simfs_view.c ---- */
void *ckh__sf_malloc(struct ckh_simfs *d, size_t n);
void ckh__sf_free(struct ckh_simfs *d, void *p, size_t n);
char *ckh__sf_strdup(struct ckh_simfs *d, const char *s);
void ckh__sf_strfree(struct ckh_simfs *d, char *s);

struct sf_inode *ckh__sf_inode_new(struct ckh_simfs *d, enum ckh_ftype type);
void ckh__sf_inode_maybe_free(struct ckh_simfs *d, struct sf_inode *ino);
/* Counts ino's live size in used_bytes exactly while it is linked in the
 * live tree or open; call after changing either. */
void ckh__sf_inode_account(struct ckh_simfs *d, struct sf_inode *ino);
void ckh__sf_inode_set_hint(struct ckh_simfs *d, struct sf_inode *ino, const char *path);
struct sf_dent *ckh__sf_dir_find(struct sf_dir *dir, const char *name);
struct sf_inode *ckh__sf_lookup(struct sf_inode *dir, int which, const char *name);
bool ckh__sf_dir_contains(struct sf_inode *top, int which, const struct sf_inode *x);
/* Reads up to n bytes of dt at off into buf: the count (0 at or past the
 * end) or -errno when the store cannot be read (B5). */
int64_t ckh__sf_read(const struct sf_data *dt, void *buf, uint64_t n, uint64_t off);
/* Where the next data (hole false) or hole (hole true) of dt at or after
 * off starts: extents are data, the rest holes; the size when none. */
uint64_t ckh__sf_seek(const struct sf_data *dt, uint64_t off, bool hole);

/* Issuing operations from a view: each records a pending op (attributed
 * to node) and applies it to the live copy. Callers validated them. */
int ckh__sf_issue_write(struct ckh_simfs *d, int node, struct sf_inode *ino, uint64_t off,
                        uint64_t len, const struct sf_src *src);
int ckh__sf_issue_trunc(struct ckh_simfs *d, int node, struct sf_inode *ino, uint64_t len);
int ckh__sf_issue_link(struct ckh_simfs *d, int node, int ckind, struct sf_inode *dir,
                       const char *path, struct sf_inode *ino);
int ckh__sf_issue_unlink(struct ckh_simfs *d, int node, int ckind, struct sf_inode *dir,
                         const char *path, struct sf_inode *ino);
int ckh__sf_issue_rename(struct ckh_simfs *d, int node, struct sf_inode *dir, const char *path,
                         struct sf_inode *dir2, const char *path2, struct sf_inode *ino);
/* Durability requests. */
void ckh__sf_fsync(struct ckh_simfs *d, int node, struct sf_inode *ino);
void ckh__sf_fsync_dir(struct ckh_simfs *d, int node, struct sf_inode *dir);
/* Linux fsync error: drops node's dirty data of ino without persisting it. */
void ckh__sf_fsync_lost(struct ckh_simfs *d, int node, struct sf_inode *ino);
/* Takes the first injected fault matching (kind, disk path) into *act. */
void ckh__sf_fault_take(struct ckh_simfs *d, int kind, const char *dpath,
                        struct ckh_fault_action *act);
int ckh__sf_set_err(struct ckh_simfs *d, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- sim/simfs_view.c, used by sim/simfs.c ---- */
extern const struct ckh_fs_ops ckh__sf_view_ops;

/* Result of resolving a path. */
struct sf_res {
    struct ckh_simfs *d;            /* disk holding the result */
    struct sf_inode *dir;           /* parent directory (NULL: the disk's root) */
    struct sf_inode *ino;           /* the inode, NULL when the last name is missing */
    char dpath[CKH_PATH_MAX + 1];   /* disk path of the result */
    const char *name;               /* last component (points into dpath) */
};
int ckh__sf_resolve(struct sf_view *v, const char *vpath, bool follow_final, struct sf_res *r);

/* ---- shared between simfs.c and simfs_crash.c ---- */
int ckh__sf_apply_op(struct ckh_simfs *d, struct sf_op *op, int w, enum ckh_crash_choice choice);
int ckh__sf_data_copy(struct ckh_simfs *d, struct sf_data *to, const struct sf_data *from);
void ckh__sf_dir_clear(struct ckh_simfs *d, struct sf_inode *dirino, int w, bool free_children);
int ckh__sf_ent_set(struct ckh_simfs *d, struct sf_inode *dirino, int w, const char *name,
                   struct sf_inode *ino, uint64_t seq);
struct sf_op *ckh__sf_op_by_seq(const struct ckh_simfs *d, uint64_t seq);
bool ckh__sf_op_is_data(const struct sf_op *op);
void ckh__sf_op_retire(struct ckh_simfs *d, struct sf_op *op);
void ckh__sf_pv_compact(struct ckh_simfs *d);
/* Whether a crash of node (-1: a power loss) resolves op (S5, S9). */
bool ckh__sf_op_affected(const struct ckh_simfs *d, const struct sf_op *op, int node);
/* Whether ops of node a sit in node b's cache (S9): always on a machine's
 * disk, else when a == b. */
static inline bool ckh__sf_same_cache(const struct ckh_simfs *d, int a, int b)
{
    return d->cfg.sharing == CKH_SHARING_MACHINE || a == b;
}

/* ---- sim/simfs_store.c: where literal bytes live ---- */
/* A store in folder dir (*out owned, ckh__sf_store_unref); -errno when dir
 * is no folder. Its files are made at the first write. */
int ckh__sf_store_new(const char *dir, struct sf_store **out);
/* One more disk shares s (a clone); returns s. */
struct sf_store *ckh__sf_store_ref(struct sf_store *s);
void ckh__sf_store_unref(struct sf_store *s);
/* The folder of s (NULL: none). */
const char *ckh__sf_store_dir(const struct sf_store *s);
/* Space of the real filesystem holding s: 0 or -errno. */
int ckh__sf_store_space(const struct sf_store *s, uint64_t *total, uint64_t *avail);
/* A buffer in memory with len bytes (copied from data unless NULL),
 * refs 1; NULL when out of memory. */
struct sf_buf *ckh__sf_buf_new(struct ckh_simfs *d, const void *data, uint64_t len);
void ckh__sf_buf_ref(struct sf_buf *b);
void ckh__sf_buf_unref(struct ckh_simfs *d, struct sf_buf *b);
/* Keeps len literal bytes for d (in its store, else in memory), written
 * to file key (the inode) at off: *out names them (a buffer and the
 * offset of the first byte in it) and holds one reference for the caller. 0, CKH_ENOMEM or -errno of the store (B5,
 * message in d->errmsg). */
int ckh__sf_buf_put(struct ckh_simfs *d, const void *data, uint64_t len, const void *key,
                    uint64_t off, struct sf_src *out);
/* Copies n bytes of b from offset at into out: 0 or -errno. */
int ckh__sf_buf_read(const struct sf_buf *b, uint64_t at, void *out, uint64_t n);

#endif
