/* Crash states of a job's object store (search/explore_store.c): `ckh
 * explore` of a command job with job.object_store treats every request a
 * node sends to the S3 endpoint as an operation with crash points
 * (docs/OBJECT_STORE.md, "Exploring the requests"). Private to
 * harness/search/.
 *
 * The job runs once without faults; before each request that follows a
 * write (and before the first request, and at the end of the run) the
 * store is copied (a cut: ckh_objstore_clone, the bodies shared). Cut K
 * holds the first K requests, each durable once answered (S3's
 * semantics); the request in flight at the cut is not applied there and
 * applied at the next cut, so both of its outcomes are states; a
 * multipart upload cut between its parts stays open and incomplete. A
 * write applied but not yet answered at the cut (another node's) is kept
 * in one state, undone in another, each alone undone in the others
 * (ckh_objstore_crash's choices). States are numbered K = 1, 2, ... in
 * generation order and deduplicated by the store's content digest
 * (ckh_objstore_content_digest).
 *
 * Files: a job whose programs also write files on ckhfs is explored over
 * its requests only; every state's files are the ones the recorded run
 * left at its end (the report says so). Files and requests cut together
 * are not explored.
 *
 * Checks, options, report: as ckh_explore_program's (the worker pool of
 * search/explore_workers.h; verify against the state's store, or the job
 * restarted on it and judged by the oracles); --keep DIR writes the
 * state's objects as files DIR/BUCKET/KEY.
 */
#ifndef CKH_SEARCH_EXPLORE_STORE_H
#define CKH_SEARCH_EXPLORE_STORE_H

#include <stddef.h>

#include "search/explore_program.h"

/* ckh_explore_program for a job with job.object_store (same contract; sc
 * already passed ckh_explore_program's checks; check and start
 * resolved). CKH_EINVAL also for --order and crashes none, which are of
 * several nodes' operations on a shared disk. */
int ckh__xstore_explore(const struct ckh_scenario *sc, const struct ckh_xprog_options *o,
                        enum ckh_xprog_check check, enum ckh_xprog_start start,
                        struct ckh_xprog_result *out, char *err, size_t errlen);

#endif
