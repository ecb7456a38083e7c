#!/bin/sh
# prog_save.sh: a shell-script job for ckh. Each of its STEPS steps (default
# 3) computes a state file (the numbers i..i+4999, one per line), then
# checkpoints it the careful way with the usual tools: cp to a temporary
# name in the checkpoint folder, sync of that file, mv over step_<i>.ckpt,
# sync of the folder, and `latest` written the same way (printf, sync, mv,
# sync). On start it resumes after the step `latest` names, checking that
# the file holds what that step computed (exit 1 naming the file if not).
#
# It reports through the result protocol with printf, one JSON line per
# record appended to $CKH_RESULT (docs/SCENARIOS.md, "Result protocol"):
# a resume record, a step record per step and a final record whose digest
# is the CRC (cksum) of the last state, as 16 hex digits.
#
# Usage: prog_save.sh [STEPS]
# Environment: CKH_CKPT_DIR (default ./ckpt), CKH_RESULT (unset: no records).
set -eu

steps=${1:-3}
dir=${CKH_CKPT_DIR:-ckpt}
mkdir -p "$dir"
work=$(mktemp -d "${TMPDIR:-/tmp}/prog_save.XXXXXX")
trap 'rm -rf "$work"' EXIT

record() { # record FORMAT ARGS...: one result line, when under ckh
    if [ -n "${CKH_RESULT:-}" ]; then
        # shellcheck disable=SC2059
        printf "$@" >>"$CKH_RESULT"
    fi
}

state() { # state I: the state after step I, on stdout
    seq "$1" $(($1 + 4999))
}

digest() { # digest FILE: its CRC as 16 hex digits
    printf '%016x' "$(cksum <"$1" | cut -d' ' -f1)"
}

start=0
if [ -f "$dir/latest" ]; then
    name=$(cat "$dir/latest")
    start=${name#step_}
    start=${start%.ckpt}
    case $start in
    '' | *[!0-9]*)
        echo "prog_save.sh: $dir/latest holds '$name', expected step_<n>.ckpt" >&2
        exit 1
        ;;
    esac
    state "$start" >"$work/expect"
    if ! cmp -s "$work/expect" "$dir/$name"; then
        echo "prog_save.sh: cannot resume: $dir/$name does not hold step $start's state (torn or missing)" >&2
        exit 1
    fi
    record '{"kind":"resume","step":%d,"epoch":0}\n' "$start"
fi

i=$((start + 1))
while [ "$i" -le "$steps" ]; do
    state "$i" >"$work/state"
    record '{"kind":"step","step":%d,"epoch":0,"digests":{"state":"%s"}}\n' "$i" "$(digest "$work/state")"
    cp "$work/state" "$dir/step_$i.ckpt.tmp"
    sync "$dir/step_$i.ckpt.tmp"
    mv "$dir/step_$i.ckpt.tmp" "$dir/step_$i.ckpt"
    sync "$dir"
    printf 'step_%d.ckpt\n' "$i" >"$dir/latest.tmp"
    sync "$dir/latest.tmp"
    mv "$dir/latest.tmp" "$dir/latest"
    sync "$dir"
    record '{"kind":"save","step":%d,"epoch":0,"ok":true}\n' "$i"
    i=$((i + 1))
done

state "$steps" >"$work/state"
record '{"kind":"final","epochs":0,"steps":%d,"total":%d,"digest":"%s","blobs":["latest"]}\n' \
    "$steps" "$steps" "$(digest "$work/state")"
echo "prog_save.sh: steps $((start + 1))..$steps saved in $dir"
