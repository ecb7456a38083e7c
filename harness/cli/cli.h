/* The `ckh` command line (harness/cli/); harness/cli/main.c only calls it. */
#ifndef CKH_CLI_H
#define CKH_CLI_H

#include <stdio.h>

/* Exit statuses of the ckh command. */
enum {
    CKH_EXIT_OK = 0,        /* every scenario passed */
    CKH_EXIT_FAILED = 1,    /* an oracle failed: the code under test misbehaved */
    CKH_EXIT_BAD_INPUT = 2, /* malformed scenario, unknown option, missing file */
    CKH_EXIT_INTERNAL = 3,  /* ckh itself failed, or a worker crashed or hung */
    CKH_EXIT_SIGNAL = 128,  /* + N: interrupted by signal N (run, fuzz) */
};

/* Runs the ckh command with argv (argv[0] is the program name); returns
 * the exit status. Writes to stdout/stderr; may fork workers. */
int ckh_cli_main(int argc, char **argv);

/* `ckh --help-man` (harness/cli/cli_man.c): the manual page ckh(1), in
 * roff, to f; argv0 is the ckh command (each verb's usage is its own
 * --help, run in a child). Returns an exit status. */
int ckh__cli_man(FILE *f, const char *argv0);

/* `ckh run` (harness/cli/cli_run.c): argv[0] is the verb; argv0 is the
 * ckh command as replay lines name it. */
int ckh__cli_run(int argc, char **argv, const char *argv0);

/* `ckh explore` (harness/cli/cli_explore.c): argv[0] is the verb. */
int ckh__cli_explore(int argc, char **argv, const char *argv0);

/* `ckh validate-backend` (harness/cli/cli_validate.c): argv[0] is the verb. */
int ckh_validate_main(int argc, char **argv);

/* `ckh shrink` (harness/cli/cli_shrink.c): argv[0] is the verb. */
int ckh_shrink_main(int argc, char **argv);

/* `ckh fuzz` (harness/cli/cli_fuzz.c): argv[0] is the verb; exit status as
 * the fuzz usage says. */
int ckh_fuzz_main(int argc, char **argv);

#endif
