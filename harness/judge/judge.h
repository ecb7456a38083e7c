/* The judge: a scenario's verdict (the oracles of judge/NAME_check.c over
 * what the executors report, exec/exec.h), and ckh_harness_run, which
 * asks the scenario's executor for the runs and judges them.
 */
#ifndef CKH_JUDGE_H
#define CKH_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "exec/runner.h"
#include "report.h"

/* Runs sc and fills *out (initialised by the caller with
 * ckh_report_result_init): the executor ckh_exec_select picks runs the
 * reference and the faulted job, the oracles judge them. Returns 0 when a
 * verdict was reached (pass or fail, see out->verdict), or a negative
 * code for an internal or input error (out->verdict ERROR with a message
 * that names the scenario file, and the line and key where it can). */
int ckh_harness_run(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                    struct ckh_report_result *out);

/* verdict.c: the verdict of r into out (every oracle that applies).
 * Returns 0, or CKH_ENOMEM when a field of out could not be written (the
 * verdict is then not to be trusted). */
int ckh__run_judge(const struct ckh_scenario_run *r, struct ckh_report_result *out);
/* The golden file of sc (a regular file), into out; CKH_EINVAL with a
 * message in err when missing or not a file. */
int ckh__run_find_golden(const struct ckh_scenario *sc, const char *source_dir, char *out, size_t n,
                         char *err, size_t errlen);
/* A planted defect must be detected because of the defect: the control
 * run without the defect switches must not trip the detecting oracles. */
int ckh__run_control_check(const struct ckh_scenario *sc, uint64_t seed, const struct ckh_scenario_run *r,
                           struct ckh_report_result *out, char *err, size_t errlen);

/* verdict.c: the verdict of r into out with its run counts; a hang is
 * the cause of the job not completing, so its detail heads the verdict
 * when outcome or liveness failed because of it. Returns 0 or CKH_ENOMEM
 * as ckh__run_judge. */
int ckh__run_verdict(const struct ckh_scenario_run *r, struct ckh_report_result *out);

#endif
