/* Coroutines for simulated nodes (sim/coro.c, sim/coro_x86_64.S).
 *
 * A coroutine is a C function running on its own mmap'd stack (with a
 * PROT_NONE guard page below it). Control moves only by an explicit
 * ckh__coro_switch(from, to): there are no threads and no preemption, so
 * the simulator decides every interleaving. On x86_64 the switch is a few
 * instructions of assembly saving the callee-saved registers and the stack
 * pointer; elsewhere ucontext is used.
 *
 * The context that calls ckh_sim_run (the "host" context) is represented
 * by a struct ckh__coro set up with ckh__coro_init_host(); it owns no stack.
 *
 * Sanitizers: under AddressSanitizer every switch is announced with the
 * fiber annotations; under valgrind each stack is registered.
 */
#ifndef CKH_SIM_CORO_H
#define CKH_SIM_CORO_H

#include <stdbool.h>
#include <stddef.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

struct ckh__coro {
    void *sp;               /* saved stack pointer while suspended (x86_64) */
#if !defined(__x86_64__)
    ucontext_t uc;          /* saved context (portable fallback) */
#endif
    void *map;              /* mmap'd region (guard page + stack); NULL for host */
    size_t map_bytes;       /* size of map */
    const void *bottom;     /* lowest usable stack address (host: learned) */
    size_t size_bytes;      /* usable stack size (host: learned) */
    void *fake_stack;       /* AddressSanitizer fake-stack handle */
    unsigned valgrind_id;   /* valgrind stack registration id */
    void (*fn)(void *arg);  /* entry function */
    void *arg;              /* its argument */
};

/* Prepares the host context (the caller's own stack). Never fails. */
void ckh__coro_init_host(struct ckh__coro *co);

/* Creates a coroutine that will run fn(arg) on a fresh stack of
 * stack_bytes (rounded up to pages) when first switched to. fn must never
 * return: it ends by switching away with dying = true. Returns 0 or
 * -errno (mmap failure). On failure nothing is left to free. */
int ckh__coro_create(struct ckh__coro *co, size_t stack_bytes, void (*fn)(void *arg), void *arg);

/* Frees the stack of a coroutine that is not running (suspended, never
 * started or already switched away from for good). Idempotent. */
void ckh__coro_free(struct ckh__coro *co);

/* Suspends `from` (the running context) and resumes `to`. Returns when
 * something switches back to `from`. dying = true says `from` will never
 * be resumed (its stack is freed by whoever runs next); then the call does
 * not return. */
void ckh__coro_switch(struct ckh__coro *from, struct ckh__coro *to, bool dying);

#endif
