#!/usr/bin/env bash
# Runs CMD with /dev/fuse hidden, to see what the FUSE tests do on a machine
# without FUSE: CMD runs in a private mount namespace (unshare; root only)
# whose /dev is a fresh tmpfs holding only the real null, zero, full,
# random, urandom and tty nodes, pts/, shm/ and the fd links. Nothing
# outside CMD sees a change.
#   tests/support/without_fuse.sh scripts/ctest.sh build -R fuse
# (docs/CI.md, "Skipped tests").
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: without_fuse.sh CMD [ARGS...]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "without_fuse.sh: needs root (a mount namespace)" >&2; exit 2; }
exec unshare --mount --propagation private bash -c '
  set -e
  old=$(mktemp -d /tmp/ckh-olddev.XXXXXX)
  mount --rbind /dev "$old"
  mount -t tmpfs -o size=1m,mode=755 ckh-nofuse /dev
  for n in null zero full random urandom tty; do
    [ -e "$old/$n" ] || continue
    touch "/dev/$n" && mount --bind "$old/$n" "/dev/$n"
  done
  for d in pts shm; do
    [ -d "$old/$d" ] || continue
    mkdir "/dev/$d" && mount --rbind "$old/$d" "/dev/$d"
  done
  ln -s /proc/self/fd /dev/fd
  ln -s /proc/self/fd/0 /dev/stdin
  ln -s /proc/self/fd/1 /dev/stdout
  ln -s /proc/self/fd/2 /dev/stderr
  umount -l "$old" && rmdir "$old"
  exec "$@"' without_fuse "$@"
