/* Edge cases of two small parts of harness/exec/ that every command relies
 * on: ckh's temporary folders (exec/tmpdir.h: names, markers, removal
 * without following links, the stale-folder sweep and what it must never
 * touch, mkdir -p) and where ckh finds its own files (exec/home.h: buffers
 * too small are refused, never cut), and the words for what a file a
 * program wrote is (exec/prog_file.h).
 *
 * Every case works in a private base folder given as TMPDIR; nothing here
 * is about time. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/home.h"
#include "exec/prog_file.h"
#include "exec/tmpdir.h"
#include "support/skip.h"

static char base[128];

static void setup(void)
{
    snprintf(base, sizeof base, "/tmp/ckh-test-exec-edges-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
    ck_assert_int_eq(setenv("TMPDIR", base, 1), 0);
}

static void teardown(void)
{
    unsetenv("TMPDIR");
    ck_assert_int_eq(ckh_tmp_remove(base), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A folder named like a run folder of pid, holding marker (NULL: none). */
static void fake_run_folder(const char *name, const char *marker)
{
    char path[512], m[600];
    snprintf(path, sizeof path, "%s/%s", base, name);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(m, sizeof m, "%s/.ckh-owner", path);
    if (marker)
        write_text(m, marker);
}

/* pid's start time in clock ticks since boot (field 22 of its stat). */
static unsigned long long start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    ck_assert_ptr_nonnull(p);
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    ck_assert_ptr_nonnull(p);
    return strtoull(p + 1, NULL, 10);
}

/* The pid of a process that has ended (reaped): no one has it now,
 * barring reuse within this test. */
static pid_t dead_pid(void)
{
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(p, NULL, 0), p);
    return p;
}

/* ckh_tmp_make: named after this process, marked; a buffer too small for
 * the name is ENAMETOOLONG (nothing made); a base that is not there is
 * the errno of mkdtemp. */
START_TEST(test_make_refusals)
{
    char dir[256], small[16];
    ck_assert_int_eq(ckh_tmp_make(dir, sizeof dir), 0);
    char want[64];
    snprintf(want, sizeof want, "/ckh-%ld-", (long)getpid());
    ck_assert_ptr_nonnull(strstr(dir, want));
    char marker[300];
    snprintf(marker, sizeof marker, "%s/.ckh-owner", dir);
    ck_assert(exists(marker));
    ck_assert_int_eq(ckh_tmp_make(small, sizeof small), -ENAMETOOLONG);
    ck_assert_int_eq(ckh_tmp_remove(dir), 0);
    ck_assert(!exists(dir));

    char gone[200];
    snprintf(gone, sizeof gone, "%s/not-there", base);
    ck_assert_int_eq(setenv("TMPDIR", gone, 1), 0);
    ck_assert_int_eq(ckh_tmp_make(dir, sizeof dir), -ENOENT);
    ck_assert_int_eq(setenv("TMPDIR", "", 1), 0);
    ck_assert_str_eq(ckh_tmp_base(), "/tmp");
}
END_TEST

/* ckh_tmp_remove: a name whose unlink fails with neither EISDIR nor EPERM
 * is that errno at once and nothing is touched: a path through a regular
 * file is ENOTDIR (the file stays), a component longer than NAME_MAX is
 * ENAMETOOLONG. */
START_TEST(test_remove_unlink_errors)
{
    char file[4096], path[4096 + 400];
    snprintf(file, sizeof file, "%s/plain", base);
    write_text(file, "x");
    snprintf(path, sizeof path, "%s/below", file);
    ck_assert_int_eq(ckh_tmp_remove(path), -ENOTDIR);
    ck_assert(exists(file));

    char longname[NAME_MAX + 8];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    snprintf(path, sizeof path, "%s/%s", base, longname);
    ck_assert_int_eq(ckh_tmp_remove(path), -ENAMETOOLONG);
    ck_assert_int_eq(ckh_tmp_remove(file), 0);
    ck_assert(!exists(file));
}
END_TEST

/* ckh_tmp_remove: an empty or NULL name is EINVAL; a name that is not
 * there is fine; a link is removed, never followed; folders nested past
 * the depth limit are ELOOP and the rest stays; a folder that cannot be
 * opened (a file where a folder is expected is not such a case) is its
 * errno. */
START_TEST(test_remove_edges)
{
    ck_assert_int_eq(ckh_tmp_remove(NULL), -EINVAL);
    ck_assert_int_eq(ckh_tmp_remove(""), -EINVAL);
    char path[4096], target[300], keep[300];
    snprintf(path, sizeof path, "%s/nothing", base);
    ck_assert_int_eq(ckh_tmp_remove(path), 0);

    /* a link to a folder outside: the link goes, the folder's file stays */
    snprintf(target, sizeof target, "%s/outside", base);
    ck_assert_int_eq(mkdir(target, 0700), 0);
    snprintf(keep, sizeof keep, "%s/outside/keep", base);
    write_text(keep, "x");
    snprintf(path, sizeof path, "%s/tree", base);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    char link[400];
    snprintf(link, sizeof link, "%s/tree/link", base);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(ckh_tmp_remove(path), 0);
    ck_assert(!exists(path));
    ck_assert(exists(keep));

    /* 20 nested folders: past the limit of 16, ELOOP, the deep part stays */
    snprintf(path, sizeof path, "%s/deep", base);
    ck_assert_int_eq(ckh_tmp_mkdirs(path), 0);
    char nested[4096];
    snprintf(nested, sizeof nested, "%s", path);
    for (int i = 0; i < 20; i++)
        strncat(nested, "/d", sizeof nested - strlen(nested) - 1);
    ck_assert_int_eq(ckh_tmp_mkdirs(nested), 0);
    ck_assert_int_eq(ckh_tmp_remove(path), -ELOOP);
    ck_assert(exists(nested));
    ck_assert(exists(path));
    /* from a folder inside, the rest goes */
    char half[4200];
    ck_assert_int_lt(snprintf(half, sizeof half, "%.4000s/d/d/d/d/d/d/d/d/d/d", path), (int)sizeof half);
    ck_assert_int_eq(ckh_tmp_remove(half), 0);
    ck_assert_int_eq(ckh_tmp_remove(path), 0);
    ck_assert(!exists(path));
}
END_TEST

/* ckh_tmp_mkdirs: parents made, a folder already there is fine, a path
 * through a file is ENOTDIR (at the parent or at the last step), a path
 * longer than PATH_MAX is ENAMETOOLONG. */
START_TEST(test_mkdirs_edges)
{
    char path[300], file[300];
    snprintf(path, sizeof path, "%s/a/b/c", base);
    ck_assert_int_eq(ckh_tmp_mkdirs(path), 0);
    ck_assert_int_eq(ckh_tmp_mkdirs(path), 0);
    snprintf(file, sizeof file, "%s/a/f", base);
    write_text(file, "x");
    snprintf(path, sizeof path, "%s/a/f/g", base);
    ck_assert_int_eq(ckh_tmp_mkdirs(path), -ENOTDIR);
    snprintf(path, sizeof path, "%s/a/f/g/h", base);
    ck_assert_int_eq(ckh_tmp_mkdirs(path), -ENOTDIR);
    char *huge = malloc(PATH_MAX + 16);
    ck_assert_ptr_nonnull(huge);
    memset(huge, 'x', PATH_MAX + 8);
    huge[0] = '/';
    huge[PATH_MAX + 8] = '\0';
    ck_assert_int_eq(ckh_tmp_mkdirs(huge), -ENAMETOOLONG);
    free(huge);
}
END_TEST

/* ckh_tmp_sweep removes only what is stale: a run folder whose marker
 * names a process that has ended. It keeps folders with names that only
 * look alike, without a marker, with a marker that is not a regular file,
 * an empty or malformed marker, a marker naming another pid than the
 * folder's name, a live process's folder, this process's own folder; a
 * marker naming a live pid with another start time than the process's
 * (the pid was reused) is stale. A base that is not there sweeps nothing. */
START_TEST(test_sweep_only_stale)
{
    pid_t dead = dead_pid();
    char name[128], marker[128];
    snprintf(name, sizeof name, "ckh-%ld-aaaaaa", (long)dead);
    snprintf(marker, sizeof marker, "ckh %ld 12345\n", (long)dead);
    fake_run_folder(name, marker); /* stale */

    const char *keep[] = {"ckh-x-aaaaaa", "ckh-0-aaaaaa", "ckh-12-short", "ckh-12_aaaaaa", "other"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        fake_run_folder(keep[i], marker);
    char nomark[64], empty[64], bad[64], otherpid[64], fifo[64], live[64], reused[64], mine[64];
    snprintf(nomark, sizeof nomark, "ckh-%ld-bbbbbb", (long)dead);
    fake_run_folder(nomark, NULL);
    snprintf(empty, sizeof empty, "ckh-%ld-cccccc", (long)dead);
    fake_run_folder(empty, "");
    snprintf(bad, sizeof bad, "ckh-%ld-dddddd", (long)dead);
    fake_run_folder(bad, "not a marker\n");
    snprintf(otherpid, sizeof otherpid, "ckh-%ld-eeeeee", (long)dead);
    char m2[64];
    snprintf(m2, sizeof m2, "ckh %ld 1\n", (long)dead + 1);
    fake_run_folder(otherpid, m2);
    snprintf(fifo, sizeof fifo, "ckh-%ld-ffffff", (long)dead);
    fake_run_folder(fifo, NULL);
    char fifo_path[300];
    snprintf(fifo_path, sizeof fifo_path, "%s/%s/.ckh-owner", base, fifo);
    ck_assert_int_eq(mkfifo(fifo_path, 0600), 0);
    /* A live process (a child of this test): with its own start time it
     * is kept; with another start time, its pid was reused: stale. */
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    unsigned long long start = start_time(child);
    ck_assert_msg(start > 0, "no start time for %ld", (long)child);
    char lm[96];
    snprintf(live, sizeof live, "ckh-%ld-gggggg", (long)child);
    snprintf(lm, sizeof lm, "ckh %ld %llu\n", (long)child, start);
    fake_run_folder(live, lm);
    snprintf(reused, sizeof reused, "ckh-%ld-hhhhhh", (long)child);
    snprintf(lm, sizeof lm, "ckh %ld %llu\n", (long)child, start + 1);
    fake_run_folder(reused, lm);
    snprintf(mine, sizeof mine, "ckh-%ld-iiiiii", (long)getpid());
    snprintf(m2, sizeof m2, "ckh %ld 1\n", (long)getpid());
    fake_run_folder(mine, m2);

    int removed = ckh_tmp_sweep(base);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_int_eq(removed, 2);
    char path[300];
    snprintf(path, sizeof path, "%s/%s", base, name);
    ck_assert(!exists(path));
    snprintf(path, sizeof path, "%s/%s", base, reused);
    ck_assert(!exists(path));
    const char *kept[] = {keep[0], keep[1], keep[2], keep[3], keep[4], nomark, empty, bad, otherpid, fifo, live, mine};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", base, kept[i]);
        ck_assert_msg(exists(path), "the sweep removed %s", kept[i]);
    }
    /* the child has ended since: its folder is stale now */
    ck_assert_int_eq(ckh_tmp_sweep(base), 1);
    snprintf(path, sizeof path, "%s/%s", base, live);
    ck_assert(!exists(path));
    ck_assert_int_eq(ckh_tmp_sweep(base), 0);
    snprintf(path, sizeof path, "%s/not-there", base);
    ck_assert_int_eq(ckh_tmp_sweep(path), 0);
    /* NULL: the base of TMPDIR */
    ck_assert_int_eq(ckh_tmp_sweep(NULL), 0);
}
END_TEST

/* ckh's own folders: a buffer too small for the path is refused (false),
 * never filled with a cut path; with room, an absolute path. */
/* The home folders of a ckh that lies outside its build folder, as an
 * installed one does: a copy of this test under PREFIX/bin prints them
 * (see main), and they are PREFIX joined with the install-relative paths,
 * the "../" steps folded away. */
START_TEST(test_home_outside_build_tree)
{
    char exe[PATH_MAX], bin[512], copy[600], cmd[2 * PATH_MAX], pfx[PATH_MAX], raw[512];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(len, 0);
    exe[len] = '\0';
    snprintf(raw, sizeof raw, "%s/pfx", base);
    snprintf(bin, sizeof bin, "%s/pfx/bin", base);
    ck_assert_int_eq(ckh_tmp_mkdirs(bin), 0);
    ck_assert_ptr_nonnull(realpath(raw, pfx));
    snprintf(copy, sizeof copy, "%s/test_exec_edges", bin);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 755 '%s'", exe, copy, copy);
    ck_assert_int_eq(system(cmd), 0);

    snprintf(cmd, sizeof cmd, "'%s' --print-home", copy);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char out[3 * PATH_MAX] = "";
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    ck_assert_int_eq(pclose(p), 0);

    char want[3 * PATH_MAX];
    snprintf(want, sizeof want, "build-tree 0\nplugins %s/%s\ndocs %s/%s\n", pfx,
             ckh_home_plugins_rel(), pfx, ckh_home_docs_rel());
    ck_assert_str_eq(out, want);
}
END_TEST

/* ckh__prog_file_read: a file over max_bytes is CKH_ELIMIT before any
 * read, the message giving the size in bytes, with a binary unit when it
 * is 1 KiB or more, and the limit's name; *buf stays NULL. */
START_TEST(test_prog_file_read_limit)
{
    char path[512], msg[512], *buf = (char *)1;
    size_t len = 7;
    snprintf(path, sizeof path, "%s/small", base);
    write_text(path, "0123456789");
    ck_assert_int_eq(ckh__prog_file_read(path, "the log", 4, "the test limit", true, &buf, &len, msg, sizeof msg),
                     CKH_ELIMIT);
    ck_assert_ptr_null(buf);
    ck_assert_uint_eq(len, 0);
    ck_assert_ptr_nonnull(strstr(msg, "holds 10 bytes, over the test limit"));
    ck_assert_ptr_nonnull(strstr(msg, path));

    char big[3073];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    write_text(path, big);
    ck_assert_int_eq(ckh__prog_file_read(path, "the log", 1024, "1 KiB", false, &buf, &len, msg, sizeof msg),
                     CKH_ELIMIT);
    ck_assert_ptr_null(buf);
    ck_assert_ptr_nonnull(strstr(msg, "holds 3072 bytes (3.0 KiB), over 1 KiB"));
}
END_TEST

/* ckh__prog_file_last_line: n == 0 writes nothing; a missing file and a
 * file of blanks only give ""; of a file past 4 KiB only the tail is read
 * and its last line comes back. */
START_TEST(test_prog_file_last_line_edges)
{
    char path[512], out[64] = "untouched";
    snprintf(path, sizeof path, "%s/log", base);
    ckh__prog_file_last_line(path, out, 0);
    ck_assert_str_eq(out, "untouched");
    ckh__prog_file_last_line(path, out, sizeof out);
    ck_assert_str_eq(out, "");

    write_text(path, "  \n\t\n \n");
    snprintf(out, sizeof out, "untouched");
    ckh__prog_file_last_line(path, out, sizeof out);
    ck_assert_str_eq(out, "");

    static char big[9000];
    memset(big, 'a', sizeof big);
    big[100] = '\n';
    snprintf(big + 8900, sizeof big - 8900, "\nthe last line\n\n");
    write_text(path, big);
    ckh__prog_file_last_line(path, out, sizeof out);
    ck_assert_str_eq(out, "the last line");
}
END_TEST

/* ckh__prog_file_create: a path whose folder is missing is -ENOENT, a
 * folder in the way is -EISDIR and stays. */
START_TEST(test_prog_file_create_refusals)
{
    char path[512];
    snprintf(path, sizeof path, "%s/nodir/out", base);
    ck_assert_int_eq(ckh__prog_file_create(path), -ENOENT);
    ck_assert(!exists(path));
    snprintf(path, sizeof path, "%s/adir", base);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(ckh__prog_file_create(path), -EISDIR);
    ck_assert(exists(path));
}
END_TEST

START_TEST(test_home_buffers)
{
    char buf[PATH_MAX], tiny[2];
    ck_assert(ckh_home_plugins_dir(buf, sizeof buf));
    ck_assert_int_eq(buf[0], '/');
    ck_assert(!ckh_home_plugins_dir(tiny, sizeof tiny));
    ck_assert(ckh_home_docs_dir(buf, sizeof buf));
    ck_assert_int_eq(buf[0], '/');
    ck_assert(!ckh_home_docs_dir(tiny, sizeof tiny));
    ck_assert_ptr_nonnull(ckh_home_plugins_rel());
    ck_assert_ptr_nonnull(ckh_home_docs_rel());
}
END_TEST

/* What a program-written file is, in the words of ckh's refusals ("is a
 * FIFO, not a regular file"): every kind of inode. */
START_TEST(test_prog_file_kinds)
{
    ck_assert_str_eq(ckh__prog_file_kind(S_IFREG | 0644), "a regular file");
    ck_assert_str_eq(ckh__prog_file_kind(S_IFDIR | 0755), "a folder");
    ck_assert_str_eq(ckh__prog_file_kind(S_IFIFO | 0600), "a FIFO");
    ck_assert_str_eq(ckh__prog_file_kind(S_IFLNK | 0777), "a symbolic link");
    ck_assert_str_eq(ckh__prog_file_kind(S_IFCHR | 0600), "a character device");
    ck_assert_str_eq(ckh__prog_file_kind(S_IFBLK | 0600), "a block device");
    ck_assert_str_eq(ckh__prog_file_kind(S_IFSOCK | 0600), "a socket");
    ck_assert_str_eq(ckh__prog_file_kind(0), "not a file ckh knows");
}
END_TEST

static Suite *exec_edges_suite(void)
{
    Suite *s = suite_create("exec_edges");
    TCase *tc = tcase_create("tmpdir");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_make_refusals);
    tcase_add_test(tc, test_remove_edges);
    tcase_add_test(tc, test_remove_unlink_errors);
    tcase_add_test(tc, test_mkdirs_edges);
    tcase_add_test(tc, test_sweep_only_stale);
    tcase_add_test(tc, test_home_buffers);
    tcase_add_test(tc, test_prog_file_create_refusals);
    tcase_add_test(tc, test_prog_file_last_line_edges);
    tcase_add_test(tc, test_prog_file_read_limit);
    tcase_add_test(tc, test_home_outside_build_tree);
    tcase_add_test(tc, test_prog_file_kinds);
    suite_add_tcase(s, tc);
    return s;
}

/* With --print-home: this executable's home folders, one per line (the
 * test above runs a copy of it lying outside the build folder). */
static int print_home(void)
{
    char plugins[PATH_MAX], docs[PATH_MAX];
    if (!ckh_home_plugins_dir(plugins, sizeof plugins) || !ckh_home_docs_dir(docs, sizeof docs))
        return 1;
    printf("build-tree %d\nplugins %s\ndocs %s\n", ckh_home_in_build_tree() ? 1 : 0, plugins, docs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print-home") == 0)
        return print_home();
    return ckh_test_run(exec_edges_suite());
}
