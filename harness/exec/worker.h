/* Ending a forked worker process of the harness: every job of the worker
 * pool (harness/exec/pool.c: ckh run, list, fuzz, validate-backend) ends
 * here. */
#ifndef CKH_WORKER_H
#define CKH_WORKER_H

/* Ends a worker with status: flushes stdio and, in a coverage build
 * (CKH_COVERAGE_BUILD), the gcov counters (which _exit would lose), then
 * _exit without running the parent's atexit handlers. Does not return. */
_Noreturn void ckh__worker_exit(int status);

/* In a coverage build, writes the gcov counters out (a forked child that
 * ends with _exit and must not flush the stdio buffers it inherited: a
 * plugin probe, the man page's help child); nothing otherwise. */
void ckh__worker_dump_coverage(void);

#endif
