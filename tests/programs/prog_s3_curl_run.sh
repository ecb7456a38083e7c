#!/bin/sh
# prog_s3_curl_run.sh: runs the built prog_s3_curl (tests/programs/
# prog_s3_curl.c, the libcurl saver) with these arguments, for scenarios,
# whose programs are files of the source tree. It looks for the binary in
# $CKH_PROG_S3_CURL, then in programs/ beside the ckh that started it (the
# build ckh runs from), then in build/programs/ of this source tree. Not
# built (no libcurl where ckh was configured): exit 77, naming the package.
here=$(dirname "$0")
ckh_dir=$(dirname "$(readlink "/proc/$PPID/exe" 2>/dev/null || echo /nonexistent/ckh)")
for exe in "${CKH_PROG_S3_CURL:-}" "$ckh_dir/programs/prog_s3_curl" "$here/../../build/programs/prog_s3_curl"; do
    if [ -n "$exe" ] && [ -x "$exe" ]; then
        exec "$exe" "$@"
    fi
done
echo "prog_s3_curl_run.sh: prog_s3_curl is not built (looked in \$CKH_PROG_S3_CURL, $ckh_dir/programs/ and" \
    "$here/../../build/programs/): install Debian's libcurl4-openssl-dev, configure again and build it:" \
    "cmake --build build --target prog_s3_curl" >&2
exit 77
