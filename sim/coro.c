/* Coroutines for simulated nodes: stacks and the switch (see sim/coro.h).
 *
 * Stack layout: [guard page, PROT_NONE][usable stack ... top]. The usable
 * part is registered with valgrind (when its header is available) so that
 * switching stacks is not reported as a wild stack-pointer change, and
 * every switch is announced to AddressSanitizer (when built with it) so
 * that it tracks which stack is live.
 *
 * x86_64 uses ckh__coro_swap from coro_x86_64.S; other architectures use
 * swapcontext (slower, but correct).
 */
#include "coro.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CKH_CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKH_CORO_ASAN 1
#endif
#endif

#ifdef CKH_CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CKH_CORO_VALGRIND 1
#endif
#endif

#if defined(__x86_64__)
void ckh__coro_swap(void **save_sp, void *load_sp);
void ckh__coro_boot(void);
#endif

/* The context that performed the switch now completing (AddressSanitizer
 * bookkeeping only: it learns the host stack's bounds from it). */
static _Thread_local struct ckh__coro *coro_switching_from;

static size_t page_bytes(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void ckh__coro_init_host(struct ckh__coro *co)
{
    memset(co, 0, sizeof *co);
}

static void coro_finish_switch(struct ckh__coro *co)
{
#ifdef CKH_CORO_ASAN
    const void *from_bottom = NULL;
    size_t from_size = 0;
    __sanitizer_finish_switch_fiber(co->fake_stack, &from_bottom, &from_size);
    struct ckh__coro *from = coro_switching_from;
    if (from != NULL && from->map == NULL && from->bottom == NULL) {
        from->bottom = from_bottom; /* the host stack, learned on first switch */
        from->size_bytes = from_size;
    }
#else
    (void)co;
#endif
}

/* First code run on a fresh stack. */
static void coro_trampoline(struct ckh__coro *co)
{
    coro_finish_switch(co);
    co->fn(co->arg);
    /* fn must switch away for good; reaching here is a bug. */
    __builtin_trap();
}

#if !defined(__x86_64__)
static void coro_trampoline_uc(unsigned hi, unsigned lo)
{
    uintptr_t p = ((uintptr_t)hi << 16 << 16) | (uintptr_t)lo;
    coro_trampoline((struct ckh__coro *)p);
}
#endif

int ckh__coro_create(struct ckh__coro *co, size_t stack_bytes, void (*fn)(void *arg), void *arg)
{
    size_t page = page_bytes();
    size_t usable = (stack_bytes + page - 1) / page * page;
    if (usable < 4 * page)
        usable = 4 * page;
    memset(co, 0, sizeof *co);
    void *map = mmap(NULL, usable + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return -errno;
    if (mprotect(map, page, PROT_NONE) != 0) {
        int err = -errno;
        munmap(map, usable + page);
        return err;
    }
    co->map = map;
    co->map_bytes = usable + page;
    co->bottom = (char *)map + page;
    co->size_bytes = usable;
    co->fn = fn;
    co->arg = arg;
#ifdef CKH_CORO_VALGRIND
    co->valgrind_id = VALGRIND_STACK_REGISTER((char *)co->bottom, (char *)co->bottom + usable);
#endif
#if defined(__x86_64__)
    uint64_t *top = (uint64_t *)((char *)co->bottom + usable);
    top[-1] = (uint64_t)(uintptr_t)ckh__coro_boot;  /* return address */
    top[-2] = 0;                                     /* rbp */
    top[-3] = 0;                                     /* rbx */
    top[-4] = (uint64_t)(uintptr_t)coro_trampoline;  /* r12: function */
    top[-5] = (uint64_t)(uintptr_t)co;               /* r13: argument */
    top[-6] = 0;                                     /* r14 */
    top[-7] = 0;                                     /* r15 */
    top[-8] = 0x1F80ull | (0x037Full << 32);         /* mxcsr, x87 control word */
    co->sp = &top[-8];
#else
    if (getcontext(&co->uc) != 0) {
        int err = -errno;
        ckh__coro_free(co);
        return err;
    }
    co->uc.uc_stack.ss_sp = (void *)co->bottom;
    co->uc.uc_stack.ss_size = usable;
    co->uc.uc_link = NULL;
    uintptr_t p = (uintptr_t)co;
    makecontext(&co->uc, (void (*)(void))coro_trampoline_uc, 2, (unsigned)(p >> 16 >> 16),
                (unsigned)(p & 0xffffffffu));
#endif
    return 0;
}

void ckh__coro_free(struct ckh__coro *co)
{
    if (co == NULL || co->map == NULL)
        return;
#ifdef CKH_CORO_VALGRIND
    VALGRIND_STACK_DEREGISTER(co->valgrind_id);
#endif
#ifdef CKH_CORO_ASAN
    /* Frames abandoned on this stack leave poisoned redzones behind. */
    ASAN_UNPOISON_MEMORY_REGION(co->bottom, co->size_bytes);
#endif
    munmap(co->map, co->map_bytes);
    co->map = NULL;
    co->bottom = NULL;
    co->size_bytes = 0;
}

void ckh__coro_switch(struct ckh__coro *from, struct ckh__coro *to, bool dying)
{
#ifdef CKH_CORO_ASAN
    __sanitizer_start_switch_fiber(dying ? NULL : &from->fake_stack, to->bottom, to->size_bytes);
#else
    (void)dying;
#endif
    coro_switching_from = from;
#if defined(__x86_64__)
    ckh__coro_swap(&from->sp, to->sp);
#else
    swapcontext(&from->uc, &to->uc);
#endif
    coro_finish_switch(from);
}
