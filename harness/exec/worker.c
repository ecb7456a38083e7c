/* ckh__worker_exit: see worker.h. */
#include "exec/worker.h"

#include <stdio.h>
#include <unistd.h>

#ifdef CKH_COVERAGE_BUILD
/* libgcov's: writes the counters out (an exit handler would, _exit not). */
extern void __gcov_dump(void);
#endif

_Noreturn void ckh__worker_exit(int status)
{
    fflush(NULL);
    ckh__worker_dump_coverage();
    _exit(status);
}

void ckh__worker_dump_coverage(void)
{
#ifdef CKH_COVERAGE_BUILD
    __gcov_dump();
#endif
}
