/* One scenario's result (struct ckh_report_result, reports/report.h) as
 * bytes: what a `ckh run` worker sends back over the pool's pipe, and what
 * a rank of a run on many machines puts in its partial (cli_dist.h).
 *
 * Layout (cli/wire.h strings, native integers): i32 verdict; the strings
 * name, file, failed_oracle, message, replay; u64 first_divergent_step,
 * seed, virtual_ns, wall_ms, runs, restarts, noracles; per oracle its
 * name, u8 passed and detail; u8 has_timeline and the timeline
 * (ckh_report_timeline_write).
 */
#ifndef CKH_CLI_RESULT_H
#define CKH_CLI_RESULT_H

#include <stdio.h>

#include "report.h"

/* Writes r to f. Returns 0 or -EIO. */
int ckh_cli_result_write(FILE *f, const struct ckh_report_result *r);

/* Reads one result from f into r (initialised by the caller; on failure
 * what was read stays in r, for ckh_report_result_clear). Returns 0,
 * CKH_ETRUNCATED, CKH_ECORRUPT or CKH_ENOMEM. */
int ckh_cli_result_read(FILE *f, struct ckh_report_result *r);

#endif
