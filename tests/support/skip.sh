# Test support for the shell tests (sourced): skips that CTest shows.
#
#   ckh_skip WHY...     prints "NAME: SKIPPED: WHY" and exits 77, the
#                       SKIP_RETURN_CODE of every shell test in
#                       CMakeLists.txt: CTest lists the test as skipped.
#   ckh_fuse_missing    true (status 0) when FUSE cannot be used here, the
#                       reason in $fuse_why; decided as ckh_ckhfs_available
#                       (harness/real/ckhfs_mounts.c) decides: /dev/fuse is
#                       there and opens read-write, and fusermount3 is on
#                       PATH unless this is root.
#   ckh_torch_missing PY  true when PY cannot import torch, the reason in
#                       $torch_why.
# A test that skips part of its work and runs the rest does not exit 77:
# such parts are CTest entries of their own (test_programs.sh PART).

ckh_skip() {
    echo "${ckh_test_name:-$(basename "$0" .sh)}: SKIPPED: $*"
    exit 77
}

ckh_fuse_missing() {
    fuse_why=
    if [ ! -e /dev/fuse ]; then
        fuse_why="FUSE is not available: /dev/fuse is missing (modprobe fuse; in a container, --device /dev/fuse)"
    elif ! (exec 9<>/dev/fuse) 2>/dev/null; then
        fuse_why="FUSE is not available: cannot open /dev/fuse read-write (give this user access or run as root)"
    elif [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
        fuse_why="FUSE is not available: fusermount3 is not on PATH and this is not root (install fuse3)"
    fi
    [ -n "$fuse_why" ]
}

ckh_torch_missing() {
    torch_why=
    "$1" -c "import torch" 2>/dev/null || torch_why="$1 cannot import torch (install python3-torch)"
    [ -n "$torch_why" ]
}
