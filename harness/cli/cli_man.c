/* `ckh --help-man`: the manual page ckh(1) in roff, written from the same
 * verb table (cli/verbs.h) and the same usage texts (each verb's --help)
 * as the command's own help, so the page cannot drift from the command.
 * The build writes it to BUILD/man/ckh.1 (CMakeLists.txt) and installs it
 * under share/man/man1.
 *
 * Each verb's usage is taken by running `ckh VERB --help` in a child
 * process (fork, stdout into a pipe): the verbs print their usage to
 * stdout from their own option parsers, and a child keeps their global
 * state (getopt's) out of this process. A verb whose --help does not
 * start with "usage: ckh VERB" (help, version) has no usage section.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/version.h"
#include "cli/cli.h"
#include "cli/verbs.h"
#include "exec/home.h"
#include "exec/worker.h"

/* The verbs, in the help's order. */
static const struct {
    const char *name, *synopsis, *summary;
} verbs[] = {
#define CKH__MAN_ROW(id, name, aliases, synopsis, summary) {name, synopsis, summary},
    CKH_VERB_LIST(CKH__MAN_ROW)
#undef CKH__MAN_ROW
};

/* The exit statuses (cli/cli.h). */
static const struct {
    int code;
    const char *meaning;
} exits[] = {
    {CKH_EXIT_OK, "every scenario passed"},
    {CKH_EXIT_FAILED, "an oracle failed: the code under test misbehaved"},
    {CKH_EXIT_BAD_INPUT, "bad input: a malformed scenario, an unknown option, a missing file"},
    {CKH_EXIT_INTERNAL, "ckh itself failed, or a worker crashed or hung"},
};

/* What `ckh ARGS...` prints on stdout, malloc'd into *out; 0 or -errno. */
static int capture(const char *argv0, const char *verb, const char *arg, char **out)
{
    int fds[2];
    *out = NULL;
    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (pid == 0) {
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0)
            _exit(127);
        close(fds[1]);
        char *argv[] = {(char *)argv0, (char *)verb, (char *)arg, NULL};
        int rc = ckh_cli_main(arg ? 3 : 2, argv);
        fflush(stdout);
        ckh__worker_dump_coverage();
        _exit(rc);
    }
    close(fds[1]);
    size_t len = 0, cap = 0;
    char *buf = NULL;
    int rc = 0;
    for (;;) {
        if (cap - len < 4096) {
            char *b = realloc(buf, cap = cap ? 2 * cap : 16384);
            if (!b) {
                rc = -ENOMEM;
                break;
            }
            buf = b;
        }
        ssize_t got = read(fds[0], buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = got < 0 ? -errno : 0;
            break;
        }
        len += (size_t)got;
    }
    close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    return 0;
}

/* Text for roff: backslashes and hyphens escaped, a line starting with
 * '.' or '\'' guarded. */
static void roff(FILE *f, const char *s, size_t n)
{
    bool bol = true;
    for (size_t i = 0; i < n && s[i]; i++) {
        char c = s[i];
        if (bol && (c == '.' || c == '\''))
            fputs("\\&", f);
        if (c == '\\')
            fputs("\\e", f);
        else if (c == '-')
            fputs("\\-", f);
        else
            fputc(c, f);
        bol = c == '\n';
    }
}

static void roff_line(FILE *f, const char *s)
{
    roff(f, s, strlen(s));
    fputc('\n', f);
}

/* The summary of a verb, its continuation lines joined by spaces. */
static void summary(FILE *f, const char *s)
{
    for (const char *nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1) {
        roff(f, s, (size_t)(nl - s));
        fputc(' ', f);
    }
    roff_line(f, s);
}

/* The paragraph of `ckh --help` between its usage line and "commands:". */
static void description(FILE *f, const char *help)
{
    const char *start = strstr(help, "\n\n"), *end = strstr(help, "\ncommands:");
    if (!start || !end || end <= start)
        return;
    start += 2;
    roff(f, start, (size_t)(end - start));
    fputc('\n', f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The documentation pages shipped (the .md files of the docs folder). */
static void see_also(FILE *f)
{
    char dir[PATH_MAX];
    fputs(".SH SEE ALSO\nThe documentation is installed in\n.IR PREFIX/", f);
    roff(f, ckh_home_docs_rel(), strlen(ckh_home_docs_rel()));
    fputs(" :\nREADME.md, NEWS.md and the pages of docs/", f);
    char pages[PATH_MAX + 8];
    DIR *d = ckh_home_docs_dir(dir, sizeof dir) && snprintf(pages, sizeof pages, "%s/docs", dir) > 0
                 ? opendir(pages)
                 : NULL;
    char *names[64];
    size_t n = 0;
    for (struct dirent *de; d && (de = readdir(d)) != NULL && n < 64;) {
        size_t l = strlen(de->d_name);
        if (l > 3 && strcmp(de->d_name + l - 3, ".md") == 0 && (names[n] = strdup(de->d_name)) != NULL)
            n++;
    }
    if (d)
        closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : " (", f);
        roff(f, names[i], strlen(names[i]));
        free(names[i]);
    }
    fputs(n ? "),\n" : ",\n", f);
    fputs("with the examples (examples/, scenarios/examples/) and the library of real programs "
          "(scenarios/programs/, tests/programs/) beside them. In a build tree, the "
          "same pages are the source tree's README.md and docs/.\n", f);
}

int ckh__cli_man(FILE *f, const char *argv0)
{
    char *help = NULL;
    int rc = capture(argv0, "--help", NULL, &help);
    if (rc != 0) {
        fprintf(stderr, "ckh --help-man: %s\n", strerror(-rc));
        return CKH_EXIT_INTERNAL;
    }
    fprintf(f, ".\\\" ckh(1), written by `ckh --help-man` from the command's own help.\n"
               ".TH CKH 1 \"\" \"ckh %s\" \"User Commands\"\n"
               ".SH NAME\nckh \\- deterministic fault\\-injection harness for checkpoint/resume logic\n"
               ".SH SYNOPSIS\n",
            CKH_VERSION_STRING);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        fputs(".B ckh\n", f);
        roff_line(f, verbs[i].synopsis);
        fputs(".br\n", f);
    }
    fputs(".SH DESCRIPTION\n", f);
    description(f, help);
    free(help);
    fputs(".SH COMMANDS\n", f);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        fputs(".TP\n.B ckh ", f);
        roff_line(f, verbs[i].synopsis);
        summary(f, verbs[i].summary);
    }
    fputs(".SH OPTIONS\nEach command's own usage (\\fBckh\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR):\n", f);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        char *usage = NULL, want[128];
        if ((rc = capture(argv0, verbs[i].name, "--help", &usage)) != 0) {
            fprintf(stderr, "ckh --help-man: ckh %s --help: %s\n", verbs[i].name, strerror(-rc));
            return CKH_EXIT_INTERNAL;
        }
        snprintf(want, sizeof want, "usage: ckh %s", verbs[i].name);
        if (strncmp(usage, want, strlen(want)) == 0) {
            fputs(".SS \"ckh ", f);
            roff(f, verbs[i].name, strlen(verbs[i].name));
            fputs("\"\n.nf\n", f);
            roff(f, usage, strlen(usage));
            fputs(".fi\n", f);
        }
        free(usage);
    }
    fputs(".SH EXIT STATUS\n", f);
    for (size_t i = 0; i < sizeof exits / sizeof exits[0]; i++) {
        fprintf(f, ".TP\n.B %d\n", exits[i].code);
        roff_line(f, exits[i].meaning);
    }
    fprintf(f, ".TP\n.B %d+N\ninterrupted by signal N\n", CKH_EXIT_SIGNAL);
    fputs(".SH ENVIRONMENT\n.TP\n.B CKH_PLUGIN_PATH\n"
          "Colon\\-separated folders where a plugin named by its file name alone "
          "(\\fBworkload: libloop.so\\fR) is looked up: after the scenario's own folder, "
          "before ckh's plugin folder.\n"
          ".SH FILES\n.TP\n.I PREFIX/",
          f);
    roff_line(f, ckh_home_plugins_rel());
    fputs("ckh's plugin folder, the last place a bare plugin name is looked up "
          "(the build tree's ckh uses build/plugins).\n.TP\n.I PREFIX/",
          f);
    roff_line(f, ckh_home_docs_rel());
    fputs("the documentation: README.md, NEWS.md, docs/, and the examples.\n", f);
    see_also(f);
    return ferror(f) ? CKH_EXIT_INTERNAL : CKH_EXIT_OK;
}
