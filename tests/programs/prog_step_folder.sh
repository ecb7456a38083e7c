#!/bin/sh
# prog_step_folder.sh [--wait]: a two-rank shell job that saves one
# checkpoint the way many training scripts do (the race of the nanochat and
# CPM reports): rank 0 prepares the step folder (it lists the checkpoint
# folder for old steps to prune, then makes step_1) and every rank writes
# its shard into it.
#
# Without --wait (the bug), rank 1 writes its shard after its own work (a
# 2 s compute), trusting rank 0 to have made the folder by then: when rank
# 0 is slow, rank 1's write finds no folder ("Directory nonexistent",
# ENOENT) and the job fails. With --wait (the fix), rank 1 waits until the
# folder exists (a barrier through the filesystem, up to 60 s) before it
# writes.
#
# Records (docs/SCENARIOS.md, "Result protocol"): a step record, a save
# record and a final record per rank.
# Environment: CKH_CKPT_DIR (default ./ckpt), RANK (default 0),
# CKH_RESULT (unset: no records).
set -eu
dir=${CKH_CKPT_DIR:-ckpt}
rank=${RANK:-0}
wait_for_folder=false
[ "${1:-}" = --wait ] && wait_for_folder=true

record() { # record FORMAT ARGS...: one result line, when under ckh
    if [ -n "${CKH_RESULT:-}" ]; then
        # shellcheck disable=SC2059
        printf "$@" >>"$CKH_RESULT"
    fi
}

record '{"kind":"step","step":1,"epoch":0}\n'
if [ "$rank" = 0 ]; then
    ls "$dir" >/dev/null # old steps to prune (none in this job)
    mkdir "$dir/step_1"
else
    sleep 2 # rank 1's own work before its save
    if $wait_for_folder; then
        n=0
        until [ -d "$dir/step_1" ]; do
            n=$((n + 1))
            if [ "$n" -gt 600 ]; then
                echo "prog_step_folder.sh: rank $rank: $dir/step_1 did not appear within 60 s" >&2
                exit 1
            fi
            sleep 0.1
        done
    fi
fi
printf 'shard of rank %s\n' "$rank" >"$dir/step_1/shard_$rank"
record '{"kind":"save","step":1,"epoch":0,"ok":true}\n'
record '{"kind":"final","epochs":1,"steps":1,"total":1,"values":{"rank":%d}}\n' "$rank"
