/* ckh__worker_exit: see worker.h. */
#include "worker.h"

#include <stdio.h>
#include <unistd.h>

/* Present only when the program is built with --coverage. */
extern void __gcov_dump(void) __attribute__((weak));

_Noreturn void ckh__worker_exit(int status)
{
    fflush(NULL);
    if (__gcov_dump)
        __gcov_dump();
    _exit(status);
}
