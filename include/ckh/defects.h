/* Defect switches: named deviations from the reference behaviour.
 *
 * Each switch reproduces a mistake real checkpointing code ships. A
 * scenario turns switches on to reproduce a reported bug and to show that
 * ckh's oracles catch it; the reference code asks ckh_defect_on() at the
 * one place where the deviation happens. Adding a switch is one line in
 * CKH_DEFECT_MAP plus the check at that place.
 *
 * The switches (component: what changes):
 *  - no-fsync (atomic): saves skip every fsync of files and directories, so
 *    a machine crash can lose or tear a checkpoint the job believed durable.
 *  - overwrite-in-place (atomic): files are written directly at their final
 *    path (truncate, write), so a kill mid-save leaves a torn file.
 *  - pointer-before-data (atomic_dir): the latest pointer is moved to the
 *    new folder when it is prepared, before its files are written.
 *  - retention-deletes-live (atomic_dir): retention runs before the new
 *    pointer is durable and counts the folder in flight, so with keep_last 1
 *    it deletes the folder `latest` still names.
 *  - fixed-temp-name (atomic): the temporary file is always `<path>.temp`,
 *    so two writers of one path (or a stale temporary) collide.
 *  - sampler-progress-not-saved (sampler): the saved sampler state carries
 *    progress 0, so a resumed epoch replays its first samples.
 *  - rng-not-saved (ddp): per-rank RNG streams are neither saved nor
 *    restored; a resumed run reseeds them.
 *  - scheduler-rebuilt-after-optimizer (ddp): after loading the optimizer
 *    the LR scheduler is rebuilt from scratch instead of loaded, so the
 *    learning rate restarts its warm-up.
 *  - no-device-map (ddp): checkpoints are loaded without a device mapping,
 *    so every rank's tensors land on the device they were saved from (GPU 0).
 *  - resume-epoch-from-start (ddp): a resumed run restarts the interrupted
 *    epoch from its first sample instead of from the saved progress.
 *  - module-prefix-saved (ddp): the model is saved from the wrapped module,
 *    with every key prefixed "module.", and loaded strictly.
 *  - reshard-ignored (sampler): a sampler state saved under another world
 *    size is loaded as if saved under the current one: each new rank keeps
 *    the saved per-rank progress in an epoch rebuilt for the new world, so
 *    the rest of the interrupted epoch is lost in part or read twice.
 */
#ifndef CKH_DEFECTS_H
#define CKH_DEFECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(ENUM, "name", "component", "one-line description") */
#define CKH_DEFECT_MAP(X)                                                                       \
    X(NO_FSYNC, "no-fsync", "atomic", "saves skip every fsync of files and directories")        \
    X(OVERWRITE_IN_PLACE, "overwrite-in-place", "atomic",                                       \
      "files are truncated and rewritten at their final path")                                  \
    X(POINTER_BEFORE_DATA, "pointer-before-data", "atomic_dir",                                 \
      "the latest pointer moves to a folder before its data is written")                        \
    X(RETENTION_DELETES_LIVE, "retention-deletes-live", "atomic_dir",                           \
      "retention deletes old folders (the live one included) before the new pointer")           \
    X(FIXED_TEMP_NAME, "fixed-temp-name", "atomic", "the temporary file is always <path>.temp") \
    X(SAMPLER_PROGRESS_NOT_SAVED, "sampler-progress-not-saved", "sampler",                      \
      "the saved sampler state carries progress 0")                                             \
    X(RNG_NOT_SAVED, "rng-not-saved", "ddp", "per-rank RNG streams are not saved or restored")  \
    X(SCHEDULER_REBUILT_AFTER_OPTIMIZER, "scheduler-rebuilt-after-optimizer", "ddp",            \
      "the LR scheduler is rebuilt after loading the optimizer, restarting warm-up")            \
    X(NO_DEVICE_MAP, "no-device-map", "ddp",                                                    \
      "checkpoints load onto the saved device (GPU 0) instead of the local rank's")             \
    X(RESUME_EPOCH_FROM_START, "resume-epoch-from-start", "ddp",                                \
      "a resumed run restarts the interrupted epoch from its first sample")                     \
    X(MODULE_PREFIX_SAVED, "module-prefix-saved", "ddp",                                        \
      "model keys are saved with the \"module.\" prefix of the wrapped model")                  \
    X(RESHARD_IGNORED, "reshard-ignored", "sampler",                                            \
      "a sampler state of another world size is loaded without resharding the epoch")

enum ckh_defect {
#define CKH__DEFECT_ENUM(e, name, comp, desc) CKH_DEFECT_##e,
    CKH_DEFECT_MAP(CKH__DEFECT_ENUM)
#undef CKH__DEFECT_ENUM
        CKH_DEFECT__COUNT
};

/* A set of switched-on defects; the zero value is the reference behaviour. */
struct ckh_defect_set {
    uint64_t bits; /* bit d set: defect d is on */
};

/* True when d is on in s (a NULL set has none on). Cheap: one test. */
static inline bool ckh_defect_on(const struct ckh_defect_set *s, enum ckh_defect d)
{
    return s && (unsigned)d < 64u && ((s->bits >> (unsigned)d) & 1u);
}

/* Switches d on in s; CKH_EINVAL for a NULL set or an unknown defect. */
int ckh_defect_enable(struct ckh_defect_set *s, enum ckh_defect d);

/* Static strings for a defect ("no-fsync", "atomic", description); NULL
 * for an unknown value. Valid for the whole program. */
const char *ckh_defect_name(enum ckh_defect d);
const char *ckh_defect_component(enum ckh_defect d);
const char *ckh_defect_desc(enum ckh_defect d);

/* Looks a defect up by name: its value, or CKH_ENOTFOUND. */
int ckh_defect_from_name(const char *name);

/* Switches on every defect of a comma-separated list ("no-fsync,rng-not-saved";
 * "" or NULL: none). On an unknown name returns CKH_ENOTFOUND, writes a
 * message naming it into msg (may be NULL) and leaves s unchanged. */
int ckh_defect_parse(struct ckh_defect_set *s, const char *list, char *msg, size_t msglen);

#endif
