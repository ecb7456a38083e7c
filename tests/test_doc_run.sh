#!/usr/bin/env bash
# CTest docs_runner: tests/doc_run.py itself, on the pages of
# tests/data/docs/: a page that runs as shown passes (state carried between
# blocks, exit=N, masked "N ms", "..." wildcards, a skip with its reason);
# drifted output and a wrong exit status fail (1) naming the block; an
# unmarked sh block and a "$ command" in a plain block break the
# conventions (2).
#   test_doc_run.sh PYTHON SOURCE_DIR
set -u
py=$1 src=$2
ckh_test_name=docs_runner
. "$src/tests/support/skip.sh"
[ -x "$py" ] || ckh_skip "$py is missing"
data=$src/tests/data/docs
fails=0
check() { # PAGE STATUS TEXT [ROUTE]
    out=$(CKH_SRC=$src CKH_BUILD=/nonexistent "$py" "$src/tests/doc_run.py" ${4:+--route "$4"} "$data/$1" 2>&1)
    st=$?
    if [ "$st" -ne "$2" ] || ! grep -qF -- "$3" <<<"$out"; then
        echo "FAIL: $1: status $st (want $2), output lacks '$3':"
        echo "$out"
        fails=$((fails + 1))
    else
        echo "ok: $1: status $st, '$3'"
    fi
}
check good.md 0 "2 blocks ran as shown, 1 not runnable"
check good.md 0 "not run: needs a cluster"
check drift.md 1 "output differs from the block at line 9"
check status.md 1 "exit status 1, the page says 0"
check unmarked.md 2 "unmarked.md:3: a \`\`\`sh block without"
check dollar.md 2 "a block shows a '\$ command' line"
# One set-up block per route; the blocks after them run on both routes, and
# the installed route sees no CKH_SRC or CKH_BUILD.
check routes.md 0 "2 blocks ran as shown"
check routes.md 0 "not run: the installed route's set-up"
check routes.md 0 "not run: the build route's set-up" installed
check routes.md 0 "2 blocks ran as shown" installed
check routes.md 2 "usage: doc_run.py [--route build|installed] PAGE.md" nowhere
[ "$fails" -eq 0 ]
