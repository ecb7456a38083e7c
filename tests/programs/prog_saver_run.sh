#!/bin/sh
# prog_saver_run.sh: runs the built prog_saver (tests/programs/prog_saver.c)
# with these arguments, for scenarios, whose programs are files of the
# source tree. It looks for the binary in $CKH_PROG_SAVER, then in
# programs/ beside the ckh that started it (the build ckh runs from), then
# in build/programs/ of this source tree.
here=$(dirname "$0")
ckh_dir=$(dirname "$(readlink "/proc/$PPID/exe" 2>/dev/null || echo /nonexistent/ckh)")
for exe in "${CKH_PROG_SAVER:-}" "$ckh_dir/programs/prog_saver" "$here/../../build/programs/prog_saver"; do
    if [ -n "$exe" ] && [ -x "$exe" ]; then
        exec "$exe" "$@"
    fi
done
echo "prog_saver_run.sh: prog_saver is not built (looked in \$CKH_PROG_SAVER, $ckh_dir/programs/ and" \
    "$here/../../build/programs/); build it: cmake --build build --target prog_saver" >&2
exit 127
