/* ckh's own folders, found from where the running executable lies.
 *
 * One rule for the build tree and for an installed ckh (docs/CLI.md,
 * "Files"), so a relocated install (dpkg -x into a scratch folder,
 * `cmake --install --prefix P`) finds its files as /usr/bin/ckh does:
 *   - an executable in the build folder it was built in (build/ckh, a test
 *     binary beside it) uses the build tree: BUILD/plugins, and the
 *     source tree's README.md and docs/;
 *   - any other is taken as installed in PREFIX/BINDIR (bin/ under
 *     GNUInstallDirs): PREFIX/lib/<multiarch triplet>/ckh/plugins and
 *     PREFIX/share/doc/ckh, each reached from the executable's folder by
 *     the relative path cmake/install.cmake computed at configure time.
 */
#ifndef CKH_EXEC_HOME_H
#define CKH_EXEC_HOME_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the running executable lies in the build folder ckh was built
 * in (false when /proc/self/exe cannot be read). */
bool ckh_home_in_build_tree(void);

/* ckh's plugin folder, the last place a bare plugin name is looked up
 * (exec/workloads.h), into buf. false when the executable's path cannot be
 * read or does not fit in n bytes; the folder need not exist. */
bool ckh_home_plugins_dir(char *buf, size_t n);

/* Where ckh's documentation is: the folder holding README.md, NEWS.md and
 * docs/ (the pages), laid out as in the source tree: the source tree itself
 * for a build-tree executable, PREFIX/share/doc/ckh for an installed one
 * (with examples/ and scenarios/examples/ beside). false as
 * ckh_home_plugins_dir. */
bool ckh_home_docs_dir(char *buf, size_t n);

/* The plugin and doc folders of an installed ckh, relative to its install
 * prefix ("lib/x86_64-linux-gnu/ckh/plugins", "share/doc/ckh"), as the man
 * page names them. Static storage. */
const char *ckh_home_plugins_rel(void);
const char *ckh_home_docs_rel(void);

#endif
