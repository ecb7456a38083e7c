/* Checkpoint backends: the ops table through which the checkpoint runtime
 * stores a node's blobs for an epoch.
 *
 * This is the plugin interface for third-party backends (later loaded with
 * dlopen): a backend provides one static const struct ckh_backend_ops and
 * an instance type whose first member is struct ckh_backend. Methods are
 * only ever appended; each group says from which version it exists; a NULL
 * method means "not supported" (the wrapper returns CKH_EUNSUPPORTED).
 * A backend does ALL its I/O through the struct ckh_fs in its config and
 * all its allocation through the config's allocator; it never touches the
 * real clock, the process id or rand().
 *
 * Names: a node name becomes part of a file name, so it must be 1..255
 * bytes, must not contain '/' or NUL and must not be "." or ".."
 * (CKH_EESCAPE for '/', "." and "..", CKH_EINVAL when empty or too long).
 * Epochs are >= 0.
 */
#ifndef CKH_BACKEND_H
#define CKH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/env.h"
#include "ckh/fs.h"
#include "ckh/workspace.h"

#define CKH_BACKEND_ABI_VERSION 1
#define CKH_NODE_NAME_MAX 255

/* Flags of struct ckh_backend_config. */
enum {
    /* Write described blobs' bytes into the file (with pwrite_gen) instead
     * of recording only the generator triple. */
    CKH_BACKEND_MATERIALIZE_DESCRIBED = 0x1,
};

/* Flags of load. */
enum {
    /* Named blobs absent from the checkpoint are skipped, not an error. */
    CKH_LOAD_ALLOW_MISSING = 0x1,
};

struct ckh_backend_config {
    struct ckh_fs *fs;       /* all file I/O goes through it (borrowed) */
    struct ckh_alloc *alloc; /* all memory comes from it (NULL: system) */
    struct ckh_rand *rand;   /* seeds unique temporary names (NULL: fixed stream) */
    const char *prefix;      /* checkpoint directory, absolute in fs (copied) */
    uint32_t flags;          /* CKH_BACKEND_* */
};

struct ckh_backend;

struct ckh_backend_ops {
    int version;      /* 1 */
    const char *name; /* registry name ("minidb") */
    /* --- version 1 --- */
    /* Creates an instance; *out is freed with close. */
    int (*open)(const struct ckh_backend_config *cfg, struct ckh_backend **out);
    void (*close)(struct ckh_backend *b);
    /* Writes blobs `names` (NULL: every blob of ws) of ws as node's
     * checkpoint for epoch, atomically: afterwards the old or the new
     * checkpoint is visible, never a mix. Replaces an existing one. */
    int (*save)(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                const char *const *names, size_t count);
    /* Loads blobs `names` (NULL: all) of node's checkpoint for epoch into
     * ws. All or nothing: on any error ws is unchanged. With
     * CKH_LOAD_ALLOW_MISSING absent names are skipped; else CKH_ENOTFOUND.
     * *loaded (may be NULL) receives the number of blobs loaded. */
    int (*load)(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                const char *const *names, size_t count, unsigned flags, size_t *loaded);
    /* *out = whether a committed checkpoint exists (not whether it is valid). */
    int (*exists)(struct ckh_backend *b, const char *node, int64_t epoch, bool *out);
    /* Committed epochs of node, ascending; *epochs allocated with the
     * config's allocator (caller frees with ckh_free), NULL when *count 0. */
    int (*list_epochs)(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count);
    /* Removes node's checkpoint for epoch; CKH_ENOTFOUND if absent. */
    int (*remove)(struct ckh_backend *b, const char *node, int64_t epoch);
    /* Writes the location of node's checkpoint for epoch into buf. */
    int (*db_name)(struct ckh_backend *b, const char *node, int64_t epoch, char *buf, size_t n);
};

/* Base of every backend instance (first member of the implementation). */
struct ckh_backend {
    const struct ckh_backend_ops *ops; /* methods */
    char errmsg[512];                  /* last error, naming the file */
};

/* ---- registry ---- */

/* Finds a backend by name: 0 and *out, or CKH_ENOTFOUND with a message in
 * msg (may be NULL) listing the known names. The returned table is static. */
int ckh_backend_find(const char *name, const struct ckh_backend_ops **out, char *msg, size_t msglen);
/* The i-th registered backend (NULL past the end), for listings. */
const struct ckh_backend_ops *ckh_backend_at(size_t i);
/* Adds a backend (static table, borrowed for the program's life).
 * CKH_EEXISTS for a taken name, CKH_EVERSION for version < 1 or above
 * CKH_BACKEND_ABI_VERSION, CKH_ELIMIT past 16 backends. */
int ckh_backend_register(const struct ckh_backend_ops *ops);
/* Finds name and opens an instance; on CKH_ENOTFOUND msg says why. */
int ckh_backend_open(const char *name, const struct ckh_backend_config *cfg,
                     struct ckh_backend **out, char *msg, size_t msglen);

/* The reference backend: one file <prefix>/<node>.<epoch> per node and
 * epoch; format specified at the top of reference/minidb.c. */
extern const struct ckh_backend_ops ckh_minidb_ops;

/* ---- wrappers: argument checks (node names, epochs), then the method ---- */
void ckh_backend_close(struct ckh_backend *b);
int ckh_backend_save(struct ckh_backend *b, const char *node, int64_t epoch,
                     const struct ckh_ws *ws, const char *const *names, size_t count);
int ckh_backend_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                     const char *const *names, size_t count, unsigned flags, size_t *loaded);
int ckh_backend_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out);
int ckh_backend_list_epochs(struct ckh_backend *b, const char *node, int64_t **epochs,
                            size_t *count);
int ckh_backend_remove(struct ckh_backend *b, const char *node, int64_t epoch);
int ckh_backend_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf,
                        size_t n);
/* The last error message of b ("" if none). */
const char *ckh_backend_errmsg(const struct ckh_backend *b);

/* Checks a node name (see above): 0, CKH_EINVAL or CKH_EESCAPE. */
int ckh_node_name_check(const char *node);
/* "<prefix>/<node>.<epoch>" with one '/' whatever prefix's trailing
 * slashes; the caller's buffer. CKH_EINVAL if it does not fit. */
int ckh_db_name(const char *prefix, const char *node, int64_t epoch, char *buf, size_t n);

#endif
