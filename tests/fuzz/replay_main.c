/* Replay driver: runs a fuzz target's LLVMFuzzerTestOneInput over files
 * without libFuzzer, so any compiler can build it and CTest replays the
 * corpus (seeds and the regression inputs of fixed crashes) in every build,
 * sanitizers included.
 *
 *   fuzz_<target>_replay PATH...    a file, or a folder of files (sorted by name)
 *
 * Each input is read into a buffer of exactly its size, so a read past the
 * end is caught by AddressSanitizer and valgrind. Exit status: 0 when every
 * input ran (a failed invariant aborts), 2 when a path cannot be read.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Runs the file at path; 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    unsigned char *buf = NULL;
    int rc = -1;
    if (!f)
        goto out;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0)
        goto out_close;
    /* malloc(0) may return NULL: keep one byte, pass size 0. */
    buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        goto out_free;
    LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
    rc = 0;
out_free:
    free(buf);
out_close:
    fclose(f);
out:
    if (rc)
        fprintf(stderr, "replay: cannot read %s\n", path);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of folder dir in name order; *count += inputs run. */
static int replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL, path[4096];
    size_t n = 0, cap = 0;
    int rc = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **p = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *p);
            if (!p) {
                rc = -1;
                goto out;
            }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            goto out;
        }
        n++;
    }
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n && rc == 0; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = replay_file(path);
        *count += rc == 0;
    }
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int rc;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
            return 2;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = replay_dir(argv[i], &count);
        } else {
            rc = replay_file(argv[i]);
            count += rc == 0;
        }
        if (rc)
            return 2;
    }
    printf("replay: %zu inputs ran\n", count);
    return count ? 0 : 2;
}
