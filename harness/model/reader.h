/* The scenario reader: what every section parser (harness/model/ files)
 * and every fault descriptor's parser (harness/model/faults/ files) uses to read
 * the YAML tree into the model. Private to harness/ (ckh__ names).
 *
 * Conventions: each getter checks the node's type and range, stores the
 * value and returns 0, or reports at the node (file, line, column, a
 * message naming the dotted key `what`) and returns CKH_EINVAL. Strings
 * are copied into the scenario's arena (ckh__scn_strdup).
 */
#ifndef CKH_SCENARIO_READER_H
#define CKH_SCENARIO_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "model/names.h"
#include "model/scenario.h"

#define CKH__NKEYS(a) (sizeof(a) / sizeof((a)[0]))

/* One parse in progress. */
struct ckh__scn_reader {
    yaml_document_t doc;                /* the loaded document */
    const char *file;                   /* name used in messages */
    struct ckh_scenario *s;             /* the scenario being built */
    const struct ckh_scn_options *opts; /* accepted names (NULL: any) */
    struct ckh_scn_error *err;          /* where to report (never NULL) */
    const char *text;                   /* the raw text (for hints on YAML errors) */
    size_t len;                         /* its length */
};

/* ---- arena (reader.c): blocks freed by ckh_scenario_free ---- */

/* n zeroed bytes owned by s; NULL when out of memory. */
void *ckh__scn_alloc(struct ckh_scenario *s, size_t n);
char *ckh__scn_strndup(struct ckh_scenario *s, const char *p, size_t n);
char *ckh__scn_strdup(struct ckh_scenario *s, const char *p);

/* ---- errors (reader.c) ---- */

/* Reports at node n (NULL: no position) through ckh_verrf; returns code. */
int ckh__scn_fail(struct ckh__scn_reader *p, const yaml_node_t *n, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "; did you mean 'x'?" or "; expected one of: a, b" into buf (values.c). */
void ckh__scn_hint(char *buf, size_t size, const char *word, const char *const *names, size_t n);

/* ---- scalars (values.c: text only, no YAML) ---- */

bool ckh__scn_parse_u64(const char *t, uint64_t *out);  /* decimal or 0x hex */
bool ckh__scn_parse_i64(const char *t, int64_t *out);   /* optional '-' */
bool ckh__scn_parse_double(const char *t, double *out); /* decimal numbers only */
bool ckh__scn_parse_bool(const char *t, bool *out);     /* true/false/yes/no/on/off */

/* ---- nodes (reader.c) ---- */

bool ckh__scn_is_scalar(const yaml_node_t *n);
bool ckh__scn_is_plain(const yaml_node_t *n);
bool ckh__scn_is_null(const yaml_node_t *n);
const char *ckh__scn_text(const yaml_node_t *n);
/* "a mapping", "a list", "nothing", or NULL for a scalar worth quoting. */
const char *ckh__scn_shown(const yaml_node_t *n);

#define CKH__GOT_FMT "%s%s%s"
#define CKH__GOT_ARGS(n)                                                                  \
    ckh__scn_shown(n) ? "" : "'", ckh__scn_shown(n) ? ckh__scn_shown(n) : ckh__scn_text(n), \
        ckh__scn_shown(n) ? "" : "'"

/* The node with document id `id`. */
yaml_node_t *ckh__scn_node(struct ckh__scn_reader *p, int id);

/* Checks that n is a mapping whose keys are distinct scalars from keys[]
 * (keys NULL: any key). `what` names the mapping in messages. `advice`
 * may give a better message for a key that is not in keys[]. Runs in
 * O(k log k) for k keys: duplicates are found by sorting. */
int ckh__scn_check_map(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                       const char *const *keys, size_t nkeys,
                       const char *(*advice)(const char *key, void *ctx), void *ctx);

/* The first position i whose text repeats an earlier position's (NULL
 * texts skipped), with that earlier position in *first; n when the texts
 * are distinct, SIZE_MAX when out of memory (alloc: for scratch space).
 * Sorting (text, position) keeps it O(n log n). */
size_t ckh__scn_first_repeat(struct ckh_alloc *alloc, const char *const *v, size_t n, size_t *first);

/* The value of key in mapping n, or NULL. */
yaml_node_t *ckh__scn_get(struct ckh__scn_reader *p, const yaml_node_t *n, const char *key);

/* ---- typed getters (reader.c) ---- */

int ckh__scn_get_str(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                     const char **out);
int ckh__scn_get_int(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, int64_t lo,
                     int64_t hi, int64_t *out);
int ckh__scn_get_u64(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, uint64_t lo,
                     uint64_t *out);
int ckh__scn_get_bool(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, bool *out);
int ckh__scn_get_size(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                      uint64_t *out);
int ckh__scn_get_duration(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                          uint64_t *out);
/* One of names[0..nnames-1]; *out is its index. */
int ckh__scn_get_enum(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                      const char *const *names, size_t nnames, int *out);
/* A name from the caller's list (any non-empty string if the list is empty). */
int ckh__scn_get_name(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                      const struct ckh_scn_names *names, const char **out);
/* An absolute simulated path without "..". */
int ckh__scn_get_sim_path(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                          const char **out);
/* A relative host path without "..". */
int ckh__scn_get_rel_path(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                          const char **out);
/* A list of distinct names; a single scalar is a one-element list. */
int ckh__scn_get_name_list(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                           const struct ckh_scn_names *names, const char ***out, size_t *nout);
/* A free-form map of scalars with inferred types. */
int ckh__scn_get_kv_map(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                        struct ckh_scn_kv **out, size_t *nout);

/* An argv list (job.command, verify): a non-empty list of scalars kept as
 * written, NULL-terminated, with its position (job.c). */
int ckh__scn_get_argv(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                      struct ckh_scn_command *c);

/* ---- sections (one file each) ---- */

int ckh__scn_parse_job(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job);
int ckh__scn_parse_faults(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scenario *s);
int ckh__scn_parse_restart(struct ckh__scn_reader *p, const yaml_node_t *n,
                           struct ckh_scn_restart *r);
int ckh__scn_parse_expect(struct ckh__scn_reader *p, const yaml_node_t *n,
                          struct ckh_scn_expect *x);
int ckh__scn_parse_compare(struct ckh__scn_reader *p, const yaml_node_t *n,
                           struct ckh_scn_compare *c);

#endif
