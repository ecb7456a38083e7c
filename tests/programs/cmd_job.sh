#!/bin/sh
# cmd_job.sh STEPS: a shell-script job for tests/test_command.c. Each step
# is recorded (tests/../docs/SCENARIOS.md, "Result protocol"), and the step
# number is saved atomically to $CKH_CKPT_DIR/state.$RANK (a temporary
# file, sync, mv, sync); a restart resumes after the saved step.
set -e
steps=${1:-4}
state="$CKH_CKPT_DIR/state.$RANK"
step=0
if [ -f "$state" ]; then
    step=$(cat "$state")
    printf '{"kind":"resume","step":%d,"epoch":0}\n' "$step" >> "$CKH_RESULT"
fi
while [ "$step" -lt "$steps" ]; do
    step=$((step + 1))
    printf '{"kind":"step","step":%d,"epoch":0,"samples":[%d]}\n' "$step" "$step" >> "$CKH_RESULT"
    echo "$step" > "$state.tmp"
    sync "$state.tmp"
    mv "$state.tmp" "$state"
    sync "$CKH_CKPT_DIR"
    printf '{"kind":"save","step":%d,"epoch":0,"ok":true}\n' "$step" >> "$CKH_RESULT"
done
printf '{"kind":"final","epochs":1,"steps":%d,"total":%d,"values":{"rank":%d}}\n' \
    "$step" "$step" "$RANK" >> "$CKH_RESULT"
