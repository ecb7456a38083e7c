/* The oracle list: the one place an oracle is registered.
 *
 * X(ident): ident names the descriptor `ckh__oracle_<ident>` that
 * harness/judge/<ident>_check.c defines (struct ckh_oracle_ops,
 * oracles/oracle.h). The order is the order they run in and `ckh list
 * oracles`'. resume-equivalence runs before reference, golden and values:
 * when a resumed run diverges, the first failing oracle (whose detail
 * heads the verdict line) names the step and quantity where it began, not
 * only the end state that differs. retention runs before outcome likewise:
 * when a program deletes the checkpoint it would resume from, the verdict
 * names the delete (request, key, step), not the failed restart it causes.
 */
#ifndef CKH_ORACLES_LIST_H
#define CKH_ORACLES_LIST_H

#define CKH_ORACLE_LIST(X)                                                     \
    X(faults_fired)                                                            \
    X(retention)                                                               \
    X(outcome)                                                                 \
    X(liveness)                                                                \
    X(hang)                                                                    \
    X(resume)                                                                  \
    X(reference)                                                               \
    X(golden)                                                                  \
    X(values)                                                                  \
    X(lost_work)                                                               \
    X(committed)                                                               \
    X(no_corrupt_load)                                                         \
    X(determinism)                                                             \
    X(reshard)                                                                 \
    X(saves)                                                                   \
    X(restarts)

#endif
