/* Test support: skipped cases (skip.h). */
#include "support/skip.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SKIPS_ENV "CKH_TEST_SKIPS"

void ckh__test_skip(const char *fn, int i, const char *fmt, ...)
{
    char name[256], why[1024], line[1400];
    size_t n = strlen(fn);
    if (n > 3 && strcmp(fn + n - 3, "_fn") == 0) /* START_TEST's function: NAME_fn */
        n -= 3;
    if (i != 0)
        snprintf(name, sizeof name, "%.*s[%d]", (int)n, fn, i);
    else
        snprintf(name, sizeof name, "%.*s", (int)n, fn);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    for (char *p = why; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    fprintf(stderr, "%s: SKIPPED %s: %s\n", program_invocation_short_name, name, why);
    const char *path = getenv(SKIPS_ENV);
    if (!path || !path[0])
        return;
    int len = snprintf(line, sizeof line, "%s\t%s\n", name, why);
    if (len < 0 || (size_t)len >= sizeof line)
        len = (int)sizeof line - 1, line[len - 1] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    /* One write of a short line to an O_APPEND file: whole, whoever else appends. */
    if (fd < 0 || write(fd, line, (size_t)len) != len)
        fprintf(stderr, "%s: cannot record the skip in %s: %s\n", program_invocation_short_name, path,
                strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* The distinct cases recorded in the file (one "name\twhy" line each; a case
 * recorded twice counts once), their lines printed to stderr. */
static int read_skips(const char *path, int ran)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char **seen = NULL;
    int n = 0;
    char line[1400];
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = '\0';
        int dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = strcmp(seen[k], line) == 0;
        if (dup)
            continue;
        char **grown = realloc(seen, (size_t)(n + 1) * sizeof *seen);
        if (!grown)
            break;
        seen = grown;
        if (!(seen[n] = strdup(line)))
            break;
        n++;
        if (n == 1)
            fprintf(stderr, "%s: skipped cases (of %d that ran):\n", program_invocation_short_name, ran);
        char *why = tab + 1;
        why[strcspn(why, "\n")] = '\0';
        fprintf(stderr, "  SKIPPED %s: %s\n", line, why);
    }
    fclose(f);
    for (int k = 0; k < n; k++)
        free(seen[k]);
    free(seen);
    return n;
}

int ckh_test_run(Suite *s)
{
    char path[] = "/tmp/ckh-test-skips-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("ckh_test_run: a file for the skipped cases");
        return 1;
    }
    close(fd);
    setenv(SKIPS_ENV, path, 1);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int ran = srunner_ntests_run(sr);
    srunner_free(sr);
    int skipped = read_skips(path, ran);
    unlink(path);
    unsetenv(SKIPS_ENV);
    if (failed != 0)
        return 1;
    if (skipped > 0 && skipped >= ran) {
        fprintf(stderr, "%s: every case that ran (%d) was skipped: exit %d, CTest's skip\n",
                program_invocation_short_name, ran, CKH_TEST_SKIPPED);
        return CKH_TEST_SKIPPED;
    }
    if (skipped > 0)
        fprintf(stderr, "%s: %d of %d cases skipped, the others passed\n", program_invocation_short_name,
                skipped, ran);
    return 0;
}
