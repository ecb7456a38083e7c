/* `ckh validate-backend LIB.so`: runs a checkpoint backend through the
 * fault catalogue and the crash explorer (harness/explore.h), each case in
 * a forked child with a time limit (harness/validate.c).
 */
#ifndef CKH_HARNESS_VALIDATE_H
#define CKH_HARNESS_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "ckh/backend.h"
#include "ckh/simfs.h"
#include "search/explore.h"
#include "report.h"

/* Exit codes of ckh_validate_main. */
enum {
    CKH_VALIDATE_OK = 0,       /* no vulnerability */
    CKH_VALIDATE_VULN = 1,     /* at least one vulnerability */
    CKH_VALIDATE_BADINPUT = 2, /* bad arguments, missing or non-plugin library */
    CKH_VALIDATE_INTERNAL = 3, /* ckh itself failed */
};

struct ckh_validate_options {
    enum ckh_crash_model model; /* crash model (default POSIX_WEAK) */
    uint32_t sector_bytes;      /* 512 or 4096 */
    unsigned timeout_s;         /* per case (0: 10 s) */
    uint64_t mem_bytes;         /* memory limit per case (0: none; the CLI's default 4 GiB) */
    const char *only;           /* run only cases whose name contains it (NULL: all) */
    const char *lib;            /* library path, for replay lines (may be NULL) */
    /* --- appended --- */
    const char *case_name;      /* run only the case of exactly this name (NULL: all) */
    uint64_t state;             /* K > 0: check only the case's K-th state (the replay of
                                   one finding; needs exactly one case selected) */
    uint32_t ranks;             /* crash:node-local ranks (0: 2, then 4) */
};

/* The outcome of one case. */
struct ckh_validate_case {
    char name[48];                   /* "crash:new-epoch", "fault:EIO", ... */
    int rc;                          /* 0, or the internal error of the case */
    struct ckh_explore_result res;   /* findings (owned) */
};

/* Runs every case against ops (each in a forked child). *cases is a
 * malloc'd array the caller frees with ckh_validate_free. Returns 0 or
 * CKH_EINVAL (also: a state asked for with other than one case selected)
 * / CKH_ENOMEM. */
int ckh_validate_backend(const struct ckh_backend_ops *ops, const struct ckh_validate_options *opt,
                         struct ckh_validate_case **cases, size_t *ncases);
void ckh_validate_free(struct ckh_validate_case *cases, size_t n);

/* Fills report results (one per case; caller clears each and frees the
 * array with free()). */
int ckh_validate_results(const struct ckh_validate_case *cases, size_t n,
                         const struct ckh_validate_options *opt,
                         struct ckh_report_result **out);

/* Writes a self-contained HTML summary. Returns 0 or -EIO. */
int ckh_validate_html(FILE *f, const char *lib, const struct ckh_validate_case *cases, size_t n);

/* The command that replays finding v of case c ("ckh validate-backend LIB
 * --case NAME --state K --model M --sector S"; without --state when the
 * finding needs no crash state) into buf. */
void ckh_validate_replay_cmd(const struct ckh_validate_options *opt, const char *case_name,
                             const struct ckh_vuln *v, char *buf, size_t n);


/* The name of crash model m as --model spells it. */
const char *ckh_validate_model_name(enum ckh_crash_model m);

/* The name of case i of the catalogue, in the order they run (V1), or
 * NULL past the last. */
const char *ckh_validate_case_name(size_t i);

#endif
