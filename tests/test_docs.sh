#!/usr/bin/env bash
# CTest docs_<PAGE>: the command blocks of one page of README.md and docs/
# run as written (tests/doc_run.py: the markers, the session, what is
# compared; docs/CONTRIBUTING.md, "Docs that run").
#   test_docs.sh PYTHON PAGE.md SOURCE_DIR BUILD_DIR
# Skipped (77) without PYTHON, or when a block of the page needs FUSE or
# torch that this machine lacks.
set -u
py=$1 page=$2
ckh_test_name="docs $(basename "$page")"
. "$(dirname "$0")/support/skip.sh"
[ -x "$py" ] || ckh_skip "$py is missing (the runner is standard-library Python 3)"
CKH_SRC=$3 CKH_BUILD=$4 exec "$py" "$(dirname "$0")/doc_run.py" "$page"
