/* Loading checkpoint backends from shared libraries (harness/plugin.c).
 *
 * ckh_plugin_load dlopens a library, finds its entry point
 * (include/ckh/plugin.h) and checks the table it returns: ABI version in
 * [1, CKH_BACKEND_ABI_VERSION], a name, and the methods the harness needs
 * (open, close, save, load, list_epochs). The loaded table stays valid
 * until ckh_plugin_unload.
 */
#ifndef CKH_HARNESS_PLUGIN_H
#define CKH_HARNESS_PLUGIN_H

#include <stddef.h>

#include "ckh/backend.h"
#include "ckh/plugin.h"
#include "ckh/saver.h"
#include "ckh/workload.h"

struct ckh_plugin;

/* Loads the plugin at path. On success *out is owned by the caller (free
 * with ckh_plugin_unload). Errors (msg, may be NULL, says why):
 *   CKH_EINVAL     NULL path/out
 *   CKH_ENOTFOUND  the file does not exist
 *   CKH_EFOREIGN   not a loadable library, or no entry point
 *   CKH_EVERSION   the table's version is outside [1, CKH_BACKEND_ABI_VERSION]
 *   CKH_EUNSUPPORTED  a required method is NULL, or the name is missing
 *   CKH_ENOMEM */
int ckh_plugin_load(const char *path, struct ckh_plugin **out, char *msg, size_t msglen);
/* The backend table of a loaded plugin (valid until unload). */
const struct ckh_backend_ops *ckh_plugin_ops(const struct ckh_plugin *p);
/* The path it was loaded from (valid until unload). */
const char *ckh_plugin_path(const struct ckh_plugin *p);
/* dlcloses the library and frees p. NULL is a no-op. */
void ckh_plugin_unload(struct ckh_plugin *p);
/* Checks a backend table as ckh_plugin_load does (0 or a code, msg says
 * why); usable for tables linked in statically. */
int ckh_plugin_check_ops(const struct ckh_backend_ops *ops, char *msg, size_t msglen);

/* ---- every kind of plugin: backends, workloads, savers ---- */

enum ckh_plugin_kind {
    CKH_PLUGIN_BACKEND = 0, /* ckh_backend_plugin_v1 -> struct ckh_backend_ops */
    CKH_PLUGIN_WORKLOAD,    /* ckh_workload_plugin_v1 -> struct ckh_workload_ops */
    CKH_PLUGIN_SAVER,       /* ckh_saver_plugin_v1 -> struct ckh_saver_ops */
};

/* "backend", "workload", "saver". Static storage. */
const char *ckh_plugin_kind_name(enum ckh_plugin_kind kind);

/* Loads a plugin of `kind` from path and checks its table (ABI version,
 * name, required methods), with the errors of ckh_plugin_load; a message
 * names the path, the kind and what is wrong. The entry point runs in
 * this process: callers that must survive a plugin crashing or hanging
 * while it loads call ckh_plugin_probe first. */
int ckh_plugin_load_kind(const char *path, enum ckh_plugin_kind kind, struct ckh_plugin **out,
                         char *msg, size_t msglen);
/* The kind of a loaded plugin and its table (cast to the kind's ops). */
enum ckh_plugin_kind ckh_plugin_kind(const struct ckh_plugin *p);
const void *ckh_plugin_table(const struct ckh_plugin *p);
/* Checks a workload / saver table as the loader does (0 or a code, msg
 * says why). */
int ckh_plugin_check_workload(const struct ckh_workload_ops *ops, char *msg, size_t msglen);
int ckh_plugin_check_saver(const struct ckh_saver_ops *ops, char *msg, size_t msglen);
/* The plugin load limit when nothing sets another (CKH_PLUGIN_TIMEOUT). */
#define CKH_PLUGIN_PROBE_DEFAULT_MS 10000u
/* The most a describe callback may write (its text is cut there). */
#define CKH_PLUGIN_DESCRIBE_BYTES 2048

/* Loads path in a forked child, within timeout_ms (0: the default
 * limit): 0 when the child loaded and checked it; CKH_ECRASH (msg names
 * the path, the entry point and the signal) when the entry point or a
 * constructor crashed or exited, CKH_ETIMEOUT (msg names the limit in
 * ms) when it hung and was killed, else the loader's code and message.
 * Nothing of the plugin runs in this process; the child is reaped on
 * every path. */
int ckh_plugin_probe(const char *path, enum ckh_plugin_kind kind, unsigned timeout_ms, char *msg,
                     size_t msglen);
/* Runs in the probe's child with the loaded, checked table: writes what
 * the caller wants to know of it into out (NUL-terminated, at most
 * outlen bytes). It may read the table and call its pure methods. */
typedef void (*ckh_plugin_describe_fn)(enum ckh_plugin_kind kind, const void *table, char *out,
                                       size_t outlen);
/* ckh_plugin_probe, and on success the text describe wrote in the child
 * copied to out (caller's buffer; cut at outlen, and at
 * CKH_PLUGIN_DESCRIBE_BYTES). describe may be NULL (out gets ""). */
int ckh_plugin_probe_describe(const char *path, enum ckh_plugin_kind kind, unsigned timeout_ms,
                              ckh_plugin_describe_fn describe, char *out, size_t outlen, char *msg,
                              size_t msglen);
/* The plugin load limit in *out: CKH_PLUGIN_TIMEOUT (a duration, 1ms to
 * 1h) when set, else CKH_PLUGIN_PROBE_DEFAULT_MS. CKH_EINVAL with msg
 * for a value that is not such a duration. */
int ckh_plugin_timeout_ms(unsigned *out, char *msg, size_t msglen);

#endif
