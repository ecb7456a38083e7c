/* x86_64 (System V) context switch for sim/coro.c.
 *
 * void ckh__coro_swap(void **save_sp, void *load_sp)
 *   Pushes the callee-saved registers (rbp rbx r12-r15) and the SSE/x87
 *   control words on the current stack, stores rsp in *save_sp, loads
 *   load_sp and pops the same frame from there, then returns into the
 *   resumed context.
 *
 * void ckh__coro_boot(void)
 *   First return address of a fresh stack: calls fn(arg) with fn in r12
 *   and arg in r13 (placed there by ckh__coro_create). fn never returns.
 */
#if defined(__x86_64__)
    .text
    .globl ckh__coro_swap
    .hidden ckh__coro_swap
    .type ckh__coro_swap, @function
    .p2align 4
ckh__coro_swap:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size ckh__coro_swap, .-ckh__coro_swap

    .globl ckh__coro_boot
    .hidden ckh__coro_boot
    .type ckh__coro_boot, @function
    .p2align 4
ckh__coro_boot:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    movq %r13, %rdi
    callq *%r12
    ud2
    .cfi_endproc
    .size ckh__coro_boot, .-ckh__coro_boot
#endif
    .section .note.GNU-stack,"",@progbits
