/* The verb list: the one place a verb of the `ckh` command is registered.
 *
 * X(ident, name, aliases, synopsis, summary): ident names the handler
 * `verb_<ident>` of cli.c (argv[0] is the verb as typed); name is the verb;
 * aliases are other spellings, space-separated ("" for none); synopsis
 * and summary make its line in `ckh --help` (a "\n" in summary continues
 * it on the next line, under the first). The one table of cli.c both
 * dispatches and prints the help from this list, so the two cannot drift;
 * the order is the help's. The manual page ckh(1) is written from the same
 * list (`ckh --help-man`, cli_man.c).
 */
#ifndef CKH_CLI_VERBS_H
#define CKH_CLI_VERBS_H

#define CKH_VERB_LIST(X)                                                                           \
    X(run, "run", "", "run PATH...", "run scenario files or folders (ckh run --help)")             \
    X(list, "list", "", "list [CATEGORY]", "workloads, backends, savers, faults, defects, oracles, scenarios") \
    X(replay, "replay", "", "replay FILE --seed N", "print the trace of one scenario's faulted job") \
    X(validate_backend, "validate-backend", "", "validate-backend LIB",                           \
      "put a backend plugin through the fault catalogue and\nevery crash state of its save protocol") \
    X(explore, "explore", "", "explore FILE", "check every crash state of a real program's run")  \
    X(fuzz, "fuzz", "", "fuzz", "random fault schedules over many seeds, failures shrunk")        \
    X(shrink, "shrink", "", "shrink FILE", "minimize a failing scenario to its essential faults") \
    X(help, "help", "-h --help --help-man", "help [COMMAND]", "this help, or a command's")         \
    X(version, "version", "--version", "version", "ckh's version (also --version)")

#endif
