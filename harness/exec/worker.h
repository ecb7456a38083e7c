/* Ending a forked worker process of the harness: every job of the worker
 * pool (harness/exec/pool.c: ckh run, list, fuzz, validate-backend) ends
 * here. */
#ifndef CKH_WORKER_H
#define CKH_WORKER_H

/* Ends a worker with status: flushes stdio and, in a coverage build
 * (CKH_COVERAGE_BUILD), the gcov counters (which _exit would lose), then
 * _exit without running the parent's atexit handlers. Does not return. */
_Noreturn void ckh__worker_exit(int status);

#endif
