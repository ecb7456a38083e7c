#!/bin/sh
# prog_abs_link.sh: a step loop that publishes each step the way
# cycling_utils' saver does: a folder step_N, then an ABSOLUTE symlink
# `latest -> $CKH_CKPT_DIR/step_N` (made under a temporary name and
# renamed over `latest`), and a file `manifest` that holds the link's
# target. A restart resumes through the link. Under ckh the programs see
# their checkpoint disk at one path in every run (job.checkpoint_mount,
# docs/SCENARIOS.md), so the link written by one run leads to the same
# folder in the next, in `verify`, and in the uninterrupted reference run.
#   prog_abs_link.sh STEPS [--expect-dir PATH] [--own-disk [--wait-for NODE]]
#   prog_abs_link.sh --verify
# --expect-dir PATH: exit 3 unless CKH_CKPT_DIR is PATH.
# --own-disk: the node claims the disk (a file owner.$CKH_NODE) and exits
# 4 when it sees another node's claim: with node-local disks every node
# must see its own disk at the same path. --wait-for NODE: first wait (up
# to 60 s) until NODE's claim is there (on a shared disk it comes).
# --verify: exit 0 when `latest` leads to a whole step (its state file),
# else 1 naming what is missing.
# Records (docs/SCENARIOS.md, "Result protocol"): resume, step, final.
set -eu
d=${CKH_CKPT_DIR:-ckpt}
if [ "${1:-}" = --verify ]; then
    if [ -L "$d/latest" ] && [ -f "$d/latest/state" ]; then
        echo "latest -> $(readlink "$d/latest"): step $(cut -d' ' -f1 "$d/latest/state")"
        exit 0
    fi
    echo "prog_abs_link: $d/latest does not lead to a whole step ($(readlink "$d/latest" 2>/dev/null || echo no link))"
    exit 1
fi
steps=$1
shift
expect= own=0 wait_for=
while [ $# -gt 0 ]; do
    case $1 in
    --expect-dir) expect=$2; shift ;;
    --own-disk) own=1 ;;
    --wait-for) wait_for=$2; shift ;;
    *) echo "prog_abs_link: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$expect" ] && [ "$d" != "$expect" ]; then
    echo "prog_abs_link: CKH_CKPT_DIR is $d, not $expect" >&2
    exit 3
fi
if [ "$own" = 1 ]; then
    : >"$d/owner.${CKH_NODE:-rank_0}"
    n=0
    while [ -n "$wait_for" ] && [ ! -e "$d/owner.$wait_for" ] && [ "$n" -lt 600 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    for f in "$d"/owner.*; do
        if [ "$f" != "$d/owner.${CKH_NODE:-rank_0}" ]; then
            echo "prog_abs_link: ${CKH_NODE:-rank_0} sees $f: not its own disk" >&2
            exit 4
        fi
    done
fi
record() { # record FORMAT ARGS...: one result line, when under ckh
    if [ -n "${CKH_RESULT:-}" ]; then
        # shellcheck disable=SC2059
        printf "$@" >>"$CKH_RESULT"
    fi
}
start=0 state=1
if [ -L "$d/latest" ]; then
    read -r start state <"$d/latest/state" # through the absolute link
    record '{"kind":"resume","step":%d}\n' "$start"
fi
s=$((start + 1))
while [ "$s" -le "$steps" ]; do
    state=$(((state * 3 + s) % 1000003))
    rm -rf "$d/step_$s"
    mkdir "$d/step_$s"
    echo "$s $state" >"$d/step_$s/state"
    ln -sfn "$d/step_$s" "$d/latest.tmp"
    mv -T "$d/latest.tmp" "$d/latest"
    readlink "$d/latest" >"$d/manifest.tmp"
    mv "$d/manifest.tmp" "$d/manifest"
    record '{"kind":"step","step":%d,"digests":{"state":"%016x"}}\n' "$s" "$state"
    s=$((s + 1))
done
record '{"kind":"final","steps":%d,"digest":"%016x"}\n' "$steps" "$state"
