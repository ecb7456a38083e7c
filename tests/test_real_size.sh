#!/bin/bash
# Checkpoints of real size through ckhfs (sim/simfs_store.c, ckh_file_digest):
#   1. a 1 TiB sparse checkpoint file (truncate, then dd seek= at 2^40) of a
#      shell job killed and restarted gets its verdict at once: pass when
#      the restarted job writes the same byte, `reference` naming the file
#      when it writes another one; the run leaves nothing in TMPDIR;
#   2. statfs of the mount tells the truth: the real filesystem that holds
#      the disk's bytes, or the disk's capacity.
# Usage: test_real_size.sh CKH SOURCE_DIR
# The time limits are job.timeout (60 s, for a loaded machine): the work is
# one byte, so a verdict that read the hole would run past them.
set -u
ckh=$1
src=$2
. "$src/tests/support/skip.sh"
if ckh_fuse_missing; then
    ckh_skip "$fuse_why"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-test-real-size.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
export TMPDIR=$work/tmp
cd "$work" || exit 1
failed=0
fail() {
    echo "FAIL: $*"
    failed=1
}

kill_once="faults:
  - on: {node: rank_0, op: fsync, path: /state}
    do: kill
restart:
  max_restarts: 1"

scenario() { # scenario FILE ENV-YAML DISKS-YAML FAULTS-YAML
    cat >"$1" <<YAML
description: a 1 TiB sparse checkpoint file
job:
  command: [/bin/sh, $src/tests/programs/sparse_save.sh]
  timeout: 60s
  env: {$2}
$3
$4
expect:
  outcome: pass
compare:
  content: [big]
YAML
}

# 1. The verdicts.
scenario same.yaml "" "" "$kill_once"
out=$("$ckh" run same.yaml 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "the same byte after the restart: exit $rc, expected 0: $out"
scenario other.yaml "BYTE_ON_RESUME: y" "" "$kill_once"
out=$("$ckh" run other.yaml 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "another byte after the restart: exit $rc, expected 1: $out"
case $out in
*"reference: final value file:big of rank_0 differs"*) ;;
*) fail "another byte after the restart: the verdict does not name file:big: $out" ;;
esac
# Without compare.content the checkpoint files are compared as a set of
# names: the other byte is the program's business (its own digests judge
# its state), and the run passes.
sed '/^compare:/,$d' other.yaml >names.yaml
out=$("$ckh" run names.yaml 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "another byte, files compared by name: exit $rc, expected 0: $out"
left=$(ls -A "$TMPDIR")
[ -z "$left" ] || fail "left in TMPDIR: $left"

# 2. statfs.
scenario disk.yaml "STATFS_CAPACITY: disk" "" ""
out=$("$ckh" run disk.yaml 2>&1) || fail "statfs without a capacity: $out"
scenario cap.yaml "STATFS_CAPACITY: \"3145728\"" "  disks:
    - {name: shared, mount: /, capacity: 3MiB}" ""
out=$("$ckh" run cap.yaml 2>&1) || fail "statfs with a capacity: $out"
left=$(ls -A "$TMPDIR")
[ -z "$left" ] || fail "left in TMPDIR: $left"
[ $failed -eq 0 ] && echo "test_real_size: all passed"
exit $failed
