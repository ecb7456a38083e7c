#!/bin/sh
# sparse_save.sh: a shell-script job whose checkpoint is a 1 TiB sparse
# file (tests/test_real_size.sh). Step 1 saves a small state file (synced);
# then the job makes $CKH_CKPT_DIR/big 2^40 bytes long with truncate and
# writes one byte at offset 2^40 with dd seek=, synced: a file of 2^40 + 1
# bytes whose data is one byte. A restarted job (the state file is there)
# writes $BYTE_ON_RESUME instead (default: the same byte, x).
#
# With STATFS_CAPACITY set it first checks what statfs says of the mount:
# the capacity (bytes) when it is a number, else the size of the real
# filesystem that holds $TMPDIR (the run folder's, where the disk keeps its
# bytes); exit 3 naming both figures when they differ, else end there.
set -eu
dir=$CKH_CKPT_DIR
record() { printf "$@" >>"$CKH_RESULT"; }

if [ -n "${STATFS_CAPACITY:-}" ]; then
    got=$(stat -f -c '%b %S' "$dir" | awk '{ printf "%.0f", $1 * $2 }')
    if [ "$STATFS_CAPACITY" = disk ]; then
        want=$(stat -f -c '%b %S' "$TMPDIR" | awk '{ printf "%.0f", int($1 * $2 / 4096) * 4096 }')
    else
        want=$STATFS_CAPACITY
    fi
    if [ "$got" != "$want" ]; then
        echo "statfs of the mount says $got bytes, expected $want" >&2
        exit 3
    fi
    record '{"kind":"step","step":1,"epoch":0}\n'
    record '{"kind":"final","epochs":1,"steps":1,"total":1}\n'
    exit 0
fi

byte=x
if [ -f "$dir/state" ]; then
    record '{"kind":"resume","step":1,"epoch":0}\n'
    byte=${BYTE_ON_RESUME:-x}
else
    record '{"kind":"step","step":1,"epoch":0}\n'
    echo 1 >"$dir/state"
    sync "$dir/state"
    sync "$dir"
    record '{"kind":"save","step":1,"epoch":0,"ok":true}\n'
fi
truncate -s 1T "$dir/big"
printf '%s' "$byte" | dd of="$dir/big" bs=1 seek=1099511627776 conv=notrunc status=none
sync "$dir/big"
sync "$dir"
record '{"kind":"step","step":2,"epoch":0}\n'
record '{"kind":"final","epochs":1,"steps":2,"total":2}\n'
