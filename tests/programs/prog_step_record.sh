#!/bin/sh
# prog_step_record.sh: a step loop whose state is a number, saved after each
# step (written to a temporary name, then `mv` over `latest`) and only then
# recorded (a step record with the state's digest and the loss, which may
# be NaN), as many training loops do: a kill between the `mv` and the record
# leaves a checkpoint of a step nobody recorded.
#   prog_step_record.sh STEPS [--skip-on-resume] [--nan-from STEP]
# --skip-on-resume plants a bug: a restart resumes one step past the
# checkpoint it loaded. --nan-from STEP records a NaN loss from STEP on (a
# diverged run, a legitimate record).
set -eu
steps=$1
shift
skip=0 nan_from=0
while [ $# -gt 0 ]; do
    case $1 in
    --skip-on-resume) skip=1 ;;
    --nan-from) nan_from=$2; shift ;;
    *) echo "prog_step_record: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
d=$CKH_CKPT_DIR
start=0 state=1
if [ -f "$d/latest" ]; then
    read -r start state <"$d/latest"
    [ "$skip" = 1 ] && start=$((start + 1))
    printf '{"kind":"resume","step":%d}\n' "$start" >>"$CKH_RESULT"
fi
s=$((start + 1))
while [ "$s" -le "$steps" ]; do
    state=$(((state * 3 + s) % 1000003))
    echo "$s $state" >"$d/latest.tmp"
    mv "$d/latest.tmp" "$d/latest"
    loss=$(awk "BEGIN { printf \"%.6f\", 1.0 / $s }")
    [ "$nan_from" -gt 0 ] && [ "$s" -ge "$nan_from" ] && loss='"NaN"'
    printf '{"kind":"step","step":%d,"digests":{"state":"%016x"},"values":{"loss":%s}}\n' "$s" "$state" "$loss" \
        >>"$CKH_RESULT"
    s=$((s + 1))
done
printf '{"kind":"final","steps":%d,"digest":"%016x"}\n' "$steps" "$state" >>"$CKH_RESULT"
