/* ckh's own folders (exec/home.h). The build defines, on ckh_harness
 * (cmake/install.cmake):
 *   CKH_HOME_BUILD_DIR       the build folder (CMAKE_BINARY_DIR)
 *   CKH_HOME_SOURCE_DIR      the source tree (README.md, docs/)
 *   CKH_HOME_BIN_TO_PLUGINS  the plugin folder relative to the installed
 *                            executable's folder ("../lib/<triplet>/ckh/plugins")
 *   CKH_HOME_BIN_TO_DOCS     the doc folder likewise ("../share/doc/ckh")
 * A build without them (another build system) treats every executable as
 * installed in PREFIX/bin with GNUInstallDirs' defaults. */
#include "exec/home.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CKH_HOME_BIN_TO_PLUGINS
#define CKH_HOME_BIN_TO_PLUGINS "../lib/ckh/plugins"
#endif
#ifndef CKH_HOME_BIN_TO_DOCS
#define CKH_HOME_BIN_TO_DOCS "../share/doc/ckh"
#endif

/* The running executable's folder, symbolic links resolved. */
static bool exe_dir(char *buf, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return false;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    int w = snprintf(buf, n, "%s", slash == exe ? "/" : exe);
    return w > 0 && (size_t)w < n;
}

bool ckh_home_in_build_tree(void)
{
#ifdef CKH_HOME_BUILD_DIR
    char dir[PATH_MAX], build[PATH_MAX];
    return exe_dir(dir, sizeof dir) && realpath(CKH_HOME_BUILD_DIR, build) && strcmp(dir, build) == 0;
#else
    return false;
#endif
}

/* The executable's folder joined with rel, without "dir/../" steps when
 * the folder ends in them (a path a person reads). */
static bool below_exe(const char *rel, char *buf, size_t n)
{
    char dir[PATH_MAX];
    if (!exe_dir(dir, sizeof dir))
        return false;
    while (strncmp(rel, "../", 3) == 0) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
        rel += 3;
    }
    size_t dl = strlen(dir);
    int w = snprintf(buf, n, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", rel);
    return w > 0 && (size_t)w < n;
}

bool ckh_home_plugins_dir(char *buf, size_t n)
{
    if (ckh_home_in_build_tree())
        return below_exe("plugins", buf, n);
    return below_exe(CKH_HOME_BIN_TO_PLUGINS, buf, n);
}

bool ckh_home_docs_dir(char *buf, size_t n)
{
#ifdef CKH_HOME_SOURCE_DIR
    if (ckh_home_in_build_tree()) {
        int w = snprintf(buf, n, "%s", CKH_HOME_SOURCE_DIR);
        return w > 0 && (size_t)w < n;
    }
#endif
    return below_exe(CKH_HOME_BIN_TO_DOCS, buf, n);
}

/* rel without its leading "../" steps (the executable's folder is PREFIX/bin). */
static const char *from_prefix(const char *rel)
{
    while (strncmp(rel, "../", 3) == 0)
        rel += 3;
    return rel;
}

const char *ckh_home_plugins_rel(void)
{
    return from_prefix(CKH_HOME_BIN_TO_PLUGINS);
}

const char *ckh_home_docs_rel(void)
{
    return from_prefix(CKH_HOME_BIN_TO_DOCS);
}
