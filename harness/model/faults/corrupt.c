/* corrupt: damage a file at rest (bit-flip, truncate, zero-range, delete,
 * older-version). Applied before its run without an op trigger, at the op
 * with one.
 *
 * Offsets: a bit-flip offset must leave room for its bit index
 * (offset * 8 + bit fits in 64 bits) and a zero-range must end within 64
 * bits; both are refused at parse time otherwise. An offset past the end
 * of the file at apply time is an error naming the fault's line. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

#define BIT_FLIP_OFFSET_MAX ((UINT64_MAX - 7) / 8) /* offset * 8 + bit stays in 64 bits */

static const char *const keys[] = {"mode", "path", "offset", "length", "bit", "back"};

/* Which of offset/length/bit/back each mode takes. */
static bool mode_takes(enum ckh_scn_corrupt_mode mode, const char *key)
{
    static const char *const takes[][2] = {
        [CKH_SCN_CORRUPT_BIT_FLIP] = {"offset", "bit"},
        [CKH_SCN_CORRUPT_TRUNCATE] = {"offset", NULL},
        [CKH_SCN_CORRUPT_ZERO_RANGE] = {"offset", "length"},
        [CKH_SCN_CORRUPT_DELETE] = {NULL, NULL},
        [CKH_SCN_CORRUPT_OLDER_VERSION] = {"back", NULL},
    };
    for (int i = 0; i < 2; i++)
        if (takes[mode][i] && strcmp(takes[mode][i], key) == 0)
            return true;
    return false;
}

/* offset, length, bit and back, each checked against the mode. */
static int parse_numbers(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_action *a)
{
    static const char *const opt[] = {"offset", "length", "bit", "back"};
    yaml_node_t *v;
    int64_t i;
    int rc;
    for (size_t k = 0; k < CKH__NKEYS(opt); k++)
        if ((v = ckh__scn_get(p, n, opt[k])) && !mode_takes(a->u.corrupt.mode, opt[k]))
            return ckh__scn_fail(p, v, CKH_EINVAL, "'%s' does not apply to 'mode: %s'", opt[k],
                                 ckh_scn_corrupt_modes.names[a->u.corrupt.mode]);
    if (!(v = ckh__scn_get(p, n, "path")))
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: corrupt' needs 'path' (the file to corrupt)");
    if ((rc = ckh__scn_get_sim_path(p, v, "path", &a->u.corrupt.path)))
        return rc;
    yaml_node_t *off = ckh__scn_get(p, n, "offset");
    if (off && (rc = ckh__scn_get_u64(p, off, "offset", 0, &a->u.corrupt.offset)))
        return rc;
    if ((v = ckh__scn_get(p, n, "length")) && (rc = ckh__scn_get_u64(p, v, "length", 1, &a->u.corrupt.length)))
        return rc;
    if ((v = ckh__scn_get(p, n, "bit"))) {
        if ((rc = ckh__scn_get_int(p, v, "bit", 0, 7, &i)))
            return rc;
        a->u.corrupt.bit = (uint32_t)i;
    }
    if ((v = ckh__scn_get(p, n, "back"))) {
        if ((rc = ckh__scn_get_int(p, v, "back", 1, 1000000, &i)))
            return rc;
        a->u.corrupt.back = (uint32_t)i;
    }
    if (a->u.corrupt.mode == CKH_SCN_CORRUPT_BIT_FLIP && a->u.corrupt.offset > BIT_FLIP_OFFSET_MAX)
        return ckh__scn_fail(p, off, CKH_EINVAL, "'offset' of a bit-flip must be at most %" PRIu64
                             " (its bit index must fit in 64 bits), got %" PRIu64,
                             (uint64_t)BIT_FLIP_OFFSET_MAX, a->u.corrupt.offset);
    if (a->u.corrupt.mode == CKH_SCN_CORRUPT_ZERO_RANGE &&
        a->u.corrupt.length > UINT64_MAX - a->u.corrupt.offset)
        return ckh__scn_fail(p, off ? off : n, CKH_EINVAL,
                             "'offset' + 'length' of a zero-range must fit in 64 bits");
    return 0;
}

static int corrupt_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    struct ckh_scn_action *a = &f->act;
    yaml_node_t *v = ckh__scn_get(p, n, "mode");
    int e = 0, rc;
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: corrupt' needs 'mode' (one of bit-flip, "
                                               "truncate, zero-range, delete, older-version)");
    if ((rc = ckh__scn_get_enum(p, v, "mode", ckh_scn_corrupt_modes.names, ckh_scn_corrupt_modes.n, &e)))
        return rc;
    a->u.corrupt.mode = (enum ckh_scn_corrupt_mode)e;
    a->u.corrupt.length = 1;
    a->u.corrupt.back = 1;
    return parse_numbers(p, n, a);
}

static int corrupt_write(FILE *out, const struct ckh_scn_action *a)
{
    const char *mode = ckh_scn_enum_name(&ckh_scn_corrupt_modes, (int)a->u.corrupt.mode);
    if (!mode || !a->u.corrupt.path)
        return CKH_EINVAL;
    fprintf(out, "    mode: %s\n", mode);
    ckh_fault_write_str(out, "path", a->u.corrupt.path);
    switch (a->u.corrupt.mode) {
    case CKH_SCN_CORRUPT_BIT_FLIP:
        fprintf(out, "    offset: %" PRIu64 "\n    bit: %u\n", a->u.corrupt.offset, a->u.corrupt.bit);
        break;
    case CKH_SCN_CORRUPT_TRUNCATE:
        fprintf(out, "    offset: %" PRIu64 "\n", a->u.corrupt.offset);
        break;
    case CKH_SCN_CORRUPT_ZERO_RANGE:
        fprintf(out, "    offset: %" PRIu64 "\n    length: %" PRIu64 "\n", a->u.corrupt.offset,
                a->u.corrupt.length);
        break;
    case CKH_SCN_CORRUPT_OLDER_VERSION:
        fprintf(out, "    back: %u\n", a->u.corrupt.back);
        break;
    default:
        break;
    }
    return 0;
}

/* The file "<stem>.<N-back>" for dpath "<stem>.<N>"; false when dpath has
 * no such number. */
static bool older_path(const char *dpath, uint32_t back, char *out, size_t n)
{
    const char *dot = strrchr(dpath, '.');
    char *end = NULL;
    long num = dot ? strtol(dot + 1, &end, 10) : -1;
    if (!dot || !end || *end || num - (long)back < 0)
        return false;
    snprintf(out, n, "%.*s.%ld", (int)(dot - dpath), dpath, num - (long)back);
    return true;
}

/* Replaces dpath's content with older's. */
static int copy_back(struct ckh_simfs *d, const char *older, const char *dpath)
{
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_stat st;
    int rc = ckh_fs_stat(fs, older, &st);
    if (rc != 0)
        return rc;
    void *buf = malloc(st.size_bytes ? st.size_bytes : 1);
    struct ckh_file *in = NULL, *out = NULL;
    if (!buf)
        return CKH_ENOMEM;
    if ((rc = ckh_fs_open(fs, older, CKH_O_RDONLY, &in)) == 0 &&
        (rc = ckh_file_pread_all(in, buf, st.size_bytes, 0)) == 0 &&
        (rc = ckh_fs_open(fs, dpath, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &out)) == 0)
        rc = ckh_file_write_all(out, buf, st.size_bytes);
    if (in)
        ckh_file_close(in);
    if (out)
        ckh_file_close(out);
    free(buf);
    ckh_simfs_sync_all(d);
    return rc;
}

static int corrupt_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    const struct ckh_scn_fault *f = arg;
    uint64_t off = f->act.u.corrupt.offset;
    int rc = 0;
    switch (f->act.u.corrupt.mode) {
    case CKH_SCN_CORRUPT_BIT_FLIP:
        if (off > BIT_FLIP_OFFSET_MAX)
            return ckh_fault_errf(env, f, CKH_EINVAL, "corrupt bit-flip: offset %" PRIu64 " is past the end of %s",
                                  off, dpath);
        rc = ckh_simfs_flip_bit(d, dpath, off * 8 + f->act.u.corrupt.bit);
        if (rc == CKH_EINVAL)
            return ckh_fault_errf(env, f, rc, "corrupt bit-flip: offset %" PRIu64 " is past the end of %s",
                                  off, dpath);
        break;
    case CKH_SCN_CORRUPT_TRUNCATE:
        rc = ckh_simfs_truncate_at_rest(d, dpath, off);
        break;
    case CKH_SCN_CORRUPT_ZERO_RANGE:
        rc = ckh_simfs_zero_range(d, dpath, off, f->act.u.corrupt.length);
        break;
    case CKH_SCN_CORRUPT_DELETE:
        rc = ckh_fs_unlink(ckh_simfs_fs(d), dpath);
        ckh_simfs_sync_all(d);
        break;
    case CKH_SCN_CORRUPT_OLDER_VERSION: {
        char older[CKH_PATH_MAX];
        if (!older_path(dpath, f->act.u.corrupt.back, older, sizeof older))
            return ckh_fault_errf(env, f, CKH_EINVAL,
                                  "older-version needs a path ending in .<N> with N >= back");
        rc = copy_back(d, older, dpath);
        break;
    }
    }
    if (rc == -ENOENT || rc == CKH_ENOTFOUND)
        return 0; /* nothing there: the fault finds nothing to damage (not fired) */
    if (rc)
        return ckh_fault_errf(env, f, rc, "corrupting %s: %s", dpath, ckh_strerror(rc));
    ckh_fault_hit(env);
    return 0;
}

static int corrupt_apply(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node)
{
    return ckh_fault_for_each_disk(env, node, f->act.u.corrupt.path, corrupt_fn, f);
}

static void corrupt_generate(struct ckh_fault_gen *g)
{
    static const char *const modes[] = {"bit-flip", "truncate", "zero-range", "delete"};
    const char *mode = modes[ckh_fault_gen_pick(g, 0, 3)];
    char path[128];
    if (g->ddp)
        snprintf(path, sizeof path, "/ckpt/latest");
    else
        snprintf(path, sizeof path, "/ckpt/trainer_%d.%d", (int)ckh_fault_gen_pick(g, 0, (uint64_t)g->nodes - 1),
                 (int)ckh_fault_gen_pick(g, 0, (uint64_t)g->epochs));
    ckh_fault_gen_printf(g, "  - do: corrupt\n    mode: %s\n    path: %s\n", mode, path);
    if (strcmp(mode, "bit-flip") == 0)
        ckh_fault_gen_printf(g, "    offset: %d\n    bit: %d\n", (int)ckh_fault_gen_pick(g, 0, 200),
                             (int)ckh_fault_gen_pick(g, 0, 7));
    else if (strcmp(mode, "truncate") == 0)
        ckh_fault_gen_printf(g, "    offset: %d\n", (int)ckh_fault_gen_pick(g, 0, 200));
    else if (strcmp(mode, "zero-range") == 0)
        ckh_fault_gen_printf(g, "    offset: %d\n    length: %d\n", (int)ckh_fault_gen_pick(g, 0, 200),
                             (int)ckh_fault_gen_pick(g, 1, 64));
    if (ckh_fault_gen_chance(g, 0.5))
        ckh_fault_gen_trigger(g, ckh_fault_gen_write_op(g), g->run, false);
    else
        ckh_fault_gen_printf(g, "    on: {run: %u}\n", g->run < 2 ? 2 : g->run);
}

const struct ckh_fault_ops ckh__fault_corrupt = {
    .name = "corrupt",
    .kind = CKH_SCN_ACT_CORRUPT,
    .needs = CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "damage a file at rest: bit-flip, truncate, zero-range, delete, older-version",
    .keys_doc = "`mode:` (required), `path:` (required), and per mode: `bit-flip`: `offset`, `bit` "
                "0..7; `truncate`: `offset` (new length); `zero-range`: `offset`, `length` "
                "(default 1); `delete`; `older-version`: `back` (saves back, default 1)",
    .meaning = "damage a file at rest",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .touches_data = true,
    .parse = corrupt_parse,
    .write = corrupt_write,
    .apply = corrupt_apply,
    .generate = corrupt_generate,
};
