/* The executors (exec/exec.h), one line each, in the order
 * ckh_exec_select asks them whether they run a scenario: the first that
 * says yes runs it, and the simulator says yes to every scenario. A new
 * executor is its files under exec/ and one line here. No include guard:
 * the includer defines CKH_EXECUTOR(name). */
CKH_EXECUTOR(command) /* job.command: real programs over ckhfs (exec/command.c) */
CKH_EXECUTOR(real)    /* platform: real, or --platform real: rank programs under mpirun (exec/mpi.c) */
CKH_EXECUTOR(sim)     /* the deterministic simulator (exec/runner.c) */
