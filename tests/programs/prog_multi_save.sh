#!/bin/sh
# prog_multi_save.sh: a multi-rank shell job that saves STEPS checkpoints
# the way distributed training scripts do, with one of four multi-node
# bugs (--case NAME) or without it (--fixed), and its own verify (--verify).
#
# Each rank writes its shard of step N (the line "step N rank R", 200
# times: a few sectors, so a crash can tear it); rank 0 publishes. The
# ranks save in turn (a token ring through $TMPDIR), so the order of their
# operations is the same in every run and a crash state's number K names
# the same state every time; a barrier (also through $TMPDIR, as a
# dist.barrier) is where the fixed variants wait for every rank.
#
# Cases (--case NAME; --fixed: the variant without the bug):
#   rank0-mkdir   node-local disks: only rank 0 makes step_N (the other
#                 ranks' disks have no such folder: their write fails);
#                 fixed: every rank makes it on its own disk.
#   no-commit     a shared disk: rank 0 publishes `latest` right after its
#                 own shard, the other ranks write theirs later and never
#                 fsync; fixed: every shard written to a temporary name,
#                 fsynced, renamed, the folder fsynced, a barrier, then
#                 rank 0 publishes `latest` (temporary name, fsync, rename,
#                 folder fsync).
#   stale-marker  a shared disk, one folder `current` overwritten by each
#                 save, its COMPLETE marker (the step it holds) left in
#                 place while the shards are rewritten; fixed: rank 0
#                 removes the marker durably before any shard is
#                 rewritten, and writes it again once every shard is durable.
#   dcp-swap      a shared disk, the finish() of PyTorch DCP's
#                 FileSystemWriter written out: rank 0 writes .metadata.tmp
#                 and fsyncs it, removes the old .metadata, renames the new
#                 one into place and never fsyncs the folder; after each
#                 save it records the step in `saved` (durably). Fixed: the
#                 rename replaces .metadata in one step, then the folder is
#                 fsynced.
# --verify checks the checkpoint folder as node $CKH_NODE sees it and
# exits 1 naming what is wrong: a published step whose shards are missing
# or not whole, a marker naming shards of another step, a saved step with
# no metadata.
#
# Usage: prog_multi_save.sh --case NAME [--fixed] [--steps N] [--verify]
# Environment: CKH_CKPT_DIR (default ./ckpt), RANK, WORLD_SIZE, CKH_RUN,
# CKH_NODE, TMPDIR, CKH_RESULT (unset: no records).
set -eu
dir=${CKH_CKPT_DIR:-ckpt}
rank=${RANK:-0}
world=${WORLD_SIZE:-1}
bug=
fixed=false
steps=2
verify=false
while [ $# -gt 0 ]; do
    case $1 in
    --case) bug=$2; shift 2 ;;
    --fixed) fixed=true; shift ;;
    --steps) steps=$2; shift 2 ;;
    --verify) verify=true; shift ;;
    *) echo "prog_multi_save.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
case $bug in
rank0-mkdir | no-commit | stale-marker | dcp-swap) ;;
*) echo "prog_multi_save.sh: --case expects rank0-mkdir, no-commit, stale-marker or dcp-swap, got '$bug'" >&2; exit 2 ;;
esac
sync_dir=${TMPDIR:-/tmp}/prog_multi_save.${CKH_RUN:-1}

record() { # record FORMAT ARGS...: one result line, when under ckh
    if [ -n "${CKH_RESULT:-}" ]; then
        # shellcheck disable=SC2059
        printf "$@" >>"$CKH_RESULT"
    fi
}

shard() { # shard N R: the content of rank R's shard of step N
    yes "step $1 rank $2" | head -n 200
}

whole() { # whole FILE N R: FILE holds rank R's shard of step N exactly
    [ -f "$1" ] && [ "$(shard "$2" "$3" | cksum)" = "$(cksum <"$1")" ]
}

wait_for() { # wait_for FILE: until it exists (another rank made it)
    n=0
    until [ -e "$1" ]; do
        n=$((n + 1))
        if [ $n -gt 12000 ]; then
            echo "prog_multi_save.sh: rank $rank: $1 did not appear within 10 min" >&2
            exit 1
        fi
        sleep 0.05
    done
}

barrier() { # barrier NAME: every rank got here
    : >"$sync_dir/b.$1.$rank"
    r=0
    while [ $r -lt "$world" ]; do
        wait_for "$sync_dir/b.$1.$r"
        r=$((r + 1))
    done
}

my_turn() { # my_turn NAME: the rank before this one passed NAME on
    [ "$rank" -eq 0 ] || wait_for "$sync_dir/t.$1.$((rank - 1))"
}

pass_turn() { : >"$sync_dir/t.$1.$rank"; }

# ---- verify: the folder as this node sees it ----
if $verify; then
    me=${CKH_NODE:-rank_0}
    me=${me#rank_}
    fail() { echo "verify: $*"; exit 1; }
    case $bug in
    stale-marker)
        [ -f "$dir/current/COMPLETE" ] || exit 0
        n=$(cat "$dir/current/COMPLETE")
        w=$(cat "$dir/current/WORLD" 2>/dev/null) || fail "current/COMPLETE names step $n but current/WORLD is missing"
        r=0
        while [ $r -lt "$w" ]; do
            whole "$dir/current/shard_$r" "$n" "$r" ||
                fail "current/COMPLETE names step $n but current/shard_$r does not hold step $n's shard (stale marker)"
            r=$((r + 1))
        done
        exit 0
        ;;
    dcp-swap)
        [ -f "$dir/saved" ] || exit 0
        saved=$(cat "$dir/saved")
        [ -f "$dir/dcp/.metadata" ] ||
            fail "step $saved was saved but dcp/.metadata is missing: the checkpoint is lost (metadata swap)"
        set -- $(cat "$dir/dcp/.metadata")
        [ "$1" = step ] && [ "$3" = world ] || fail "dcp/.metadata is not whole: '$*'"
        r=0
        while [ $r -lt "$4" ]; do
            whole "$dir/dcp/__${r}_$2.distcp" "$2" "$r" || fail "dcp/.metadata names step $2 but __${r}_$2.distcp is not whole"
            r=$((r + 1))
        done
        exit 0
        ;;
    esac
    [ -f "$dir/latest" ] || exit 0
    n=$(cat "$dir/latest")
    [ -f "$dir/step_$n/WORLD" ] || fail "latest names step $n but step_$n/WORLD is missing"
    w=$(cat "$dir/step_$n/WORLD")
    if [ "$bug" = rank0-mkdir ]; then
        set -- "$me" # node-local disks: this node's own shard
    else
        set -- $(seq 0 $((w - 1)))
    fi
    for r in "$@"; do
        whole "$dir/step_$n/shard_$r" "$n" "$r" ||
            fail "latest names step $n but step_$n/shard_$r is missing or not whole (published before every shard was durable)"
    done
    exit 0
fi

mkdir -p "$sync_dir"
step=1
while [ "$step" -le "$steps" ]; do
    record '{"kind":"step","step":%d,"epoch":0}\n' "$step"
    s=step_$step
    case $bug in
    rank0-mkdir | no-commit)
        my_turn "$s.mkdir"
        if [ "$rank" -eq 0 ] || { [ "$bug" = rank0-mkdir ] && $fixed; }; then
            mkdir -p "$dir/$s"
            sync "$dir"
        fi
        pass_turn "$s.mkdir"
        barrier "$s.mkdir"
        my_turn "$s.shard"
        if [ "$bug" = no-commit ] && ! $fixed; then
            shard "$step" "$rank" >"$dir/$s/shard_$rank"
            if [ "$rank" -eq 0 ]; then
                echo "$world" >"$dir/$s/WORLD"
                echo "$step" >"$dir/latest.tmp"
                sync "$dir/latest.tmp"
                mv "$dir/latest.tmp" "$dir/latest"
                sync "$dir"
            fi
            pass_turn "$s.shard"
        else
            shard "$step" "$rank" >"$dir/$s/shard_$rank.tmp"
            sync "$dir/$s/shard_$rank.tmp"
            mv "$dir/$s/shard_$rank.tmp" "$dir/$s/shard_$rank"
            if [ "$rank" -eq 0 ] || [ "$bug" = rank0-mkdir ]; then
                echo "$world" >"$dir/$s/WORLD"
                sync "$dir/$s/WORLD"
            fi
            sync "$dir/$s"
            pass_turn "$s.shard"
            barrier "$s.shard"
            # node-local disks: each rank publishes on its own (in turn); a shared one: rank 0
            my_turn "$s.latest"
            if [ "$rank" -eq 0 ] || [ "$bug" = rank0-mkdir ]; then
                echo "$step" >"$dir/latest.tmp"
                sync "$dir/latest.tmp"
                mv "$dir/latest.tmp" "$dir/latest"
                sync "$dir"
            fi
            pass_turn "$s.latest"
        fi
        ;;
    stale-marker)
        if [ "$rank" -eq 0 ]; then
            mkdir -p "$dir/current"
            sync "$dir"
            if $fixed && [ -e "$dir/current/COMPLETE" ]; then
                rm "$dir/current/COMPLETE"
                sync "$dir/current"
            fi
        fi
        barrier "$s.clear"
        my_turn "$s.shard"
        shard "$step" "$rank" >"$dir/current/shard_$rank"
        sync "$dir/current/shard_$rank" "$dir/current"
        pass_turn "$s.shard"
        barrier "$s.shard"
        if [ "$rank" -eq 0 ]; then
            echo "$world" >"$dir/current/WORLD"
            echo "$step" >"$dir/current/COMPLETE.tmp"
            sync "$dir/current/COMPLETE.tmp" "$dir/current/WORLD" "$dir/current"
            mv "$dir/current/COMPLETE.tmp" "$dir/current/COMPLETE"
            sync "$dir/current"
        fi
        ;;
    dcp-swap)
        if [ "$rank" -eq 0 ]; then
            mkdir -p "$dir/dcp"
            sync "$dir"
        fi
        barrier "$s.mkdir"
        my_turn "$s.shard"
        shard "$step" "$rank" >"$dir/dcp/__${rank}_$step.distcp"
        sync "$dir/dcp/__${rank}_$step.distcp" "$dir/dcp"
        pass_turn "$s.shard"
        barrier "$s.shard"
        if [ "$rank" -eq 0 ]; then
            # FileSystemWriter.finish(): the new metadata to a temporary name, fsynced
            echo "step $step world $world" >"$dir/dcp/.metadata.tmp"
            sync "$dir/dcp/.metadata.tmp"
            if $fixed; then
                mv "$dir/dcp/.metadata.tmp" "$dir/dcp/.metadata" # one rename replaces the old
                sync "$dir/dcp"
            else
                [ ! -e "$dir/dcp/.metadata" ] || rm "$dir/dcp/.metadata" # the old one goes first
                mv "$dir/dcp/.metadata.tmp" "$dir/dcp/.metadata"     # and the folder is never fsynced
            fi
            echo "$step" >"$dir/saved.tmp"
            sync "$dir/saved.tmp"
            mv "$dir/saved.tmp" "$dir/saved"
            sync "$dir"
        fi
        ;;
    esac
    barrier "$s.end"
    record '{"kind":"save","step":%d,"epoch":0,"ok":true}\n' "$step"
    step=$((step + 1))
done
record '{"kind":"final","epochs":0,"steps":%d,"total":%d,"values":{"rank":%d}}\n' "$steps" "$steps" "$rank"
