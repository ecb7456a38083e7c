/* The scenario grammar's name tables, shared by the parser
 * (harness/model/ files, harness/model/faults/ files) and the writer
 * (harness/model/writer.c): a name either side knows, both know.
 *
 * Each table maps an enum's values 0..n-1 to the names scenarios write;
 * ckh_scn_enum_name() returns NULL for a value outside the table, so a
 * writer can refuse what it cannot write instead of guessing.
 */
#ifndef CKH_SCENARIO_NAMES_H
#define CKH_SCENARIO_NAMES_H

#include <stddef.h>

/* A closed set of names, indexed by an enum's value. */
struct ckh_scn_enum {
    const char *const *names; /* names[v] for value v (static storage) */
    size_t n;                 /* number of values */
};

extern const struct ckh_scn_enum ckh_scn_crash_models;  /* enum ckh_crash_model */
extern const struct ckh_scn_enum ckh_scn_sharings;      /* enum ckh_simfs_sharing */
extern const struct ckh_scn_enum ckh_scn_strategies;    /* enum ckh_scn_strategy */
extern const struct ckh_scn_enum ckh_scn_phases;        /* on.phase values */
extern const struct ckh_scn_enum ckh_scn_outcomes;      /* enum ckh_scn_outcome */
extern const struct ckh_scn_enum ckh_scn_kill_whens;    /* enum ckh_scn_kill_when */
extern const struct ckh_scn_enum ckh_scn_corrupt_modes; /* enum ckh_scn_corrupt_mode */
extern const struct ckh_scn_enum ckh_scn_keeps;         /* enum ckh_scn_keep */
extern const struct ckh_scn_enum ckh_scn_errnos;        /* index into the injectable errnos */
extern const struct ckh_scn_enum ckh_scn_platforms;     /* enum ckh_scn_platform */

/* names[v], or NULL when v is outside the table. */
const char *ckh_scn_enum_name(const struct ckh_scn_enum *e, int v);

/* The errno value of ckh_scn_errnos' entry i (0 when out of range). */
int ckh_scn_errno_value(int i);

/* The name of an injectable errno ("EIO", ...), or NULL when a fault
 * cannot inject err. */
const char *ckh_scn_errno_name(int err);

#endif
