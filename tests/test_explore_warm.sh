#!/usr/bin/env bash
# Warm starts of ckh explore (harness/exec/command_warm.c, tools/ckh_warm.py)
# and its check order (harness/search/explore_order.c), in two parts:
#   python  a small Python job (tests/programs/prog_py_saver.py, no torch):
#           - the same explore cold and warm, by verify and by restart
#             (two workers), gives the same failing states and symptoms,
#             and every start sees the same environment, folder, argv,
#             descriptors, signals and process group (the program's own
#             fingerprint of each start);
#           - the start line says how programs started; a program that
#             cannot start warm starts cold with the reason (not Python,
#             -m, an import that raises other than ImportError), and
#             --start warm refuses it (exit 2);
#           - with a time limit that allows almost no check, the failure
#             is still found (likely failures are checked first) and the
#             report stays smallest state first;
#           - nothing of the launchers is left running.
#   torch   the PyTorch job of scenarios/programs/ (torch-atomic-explore):
#           cold and warm give the same verdicts per state, by verify and
#           by restart (bounded); skipped (77) without torch.
# Usage: tests/test_explore_warm.sh python|torch CKH SOURCE_DIR
set -uo pipefail
# grep -q stops reading at its first match: with pipefail, a long output
# piped into it fails the pipeline when the writer then dies of SIGPIPE.
# grep_q reads every line and prints nothing.
grep_q() { grep "$@" >/dev/null; }
part=${1:?usage: test_explore_warm.sh python|torch CKH SOURCE_DIR}
ckh=$(realpath "${2:?usage: test_explore_warm.sh python|torch CKH SOURCE_DIR}")
src=$(realpath "${3:?usage: test_explore_warm.sh python|torch CKH SOURCE_DIR}")
ckh_test_name=test_explore_warm_$part
. "$src/tests/support/skip.sh"
ckh_fuse_missing && ckh_skip "$fuse_why"
py=/usr/bin/python3
[ -x "$py" ] || ckh_skip "$py is not installed"
if [ "$part" = torch ] && ckh_torch_missing "$py"; then
    ckh_skip "$torch_why"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-warm.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR" "$work/scn" "$work/fp" || exit 1
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
cd "$work/scn" || exit 1

# The verdicts of an explore's output: every line but the counts (which
# carry the time) and the start line.
verdicts() { grep -vE '^(explore |start: )' "$1"; }

same_cold_warm() { # NAME FILE ARGS...: the same verdicts cold and warm
    local name=$1 file=$2
    shift 2
    rm -f "$work/fp/fingerprints"
    "$ckh" explore "$file" --start cold "$@" >cold.out 2>&1
    local sc=$?
    [ -f "$work/fp/fingerprints" ] && sort -u "$work/fp/fingerprints" >cold.fp || : >cold.fp
    rm -f "$work/fp/fingerprints"
    "$ckh" explore "$file" --start warm "$@" >warm.out 2>&1
    local sw=$?
    [ -f "$work/fp/fingerprints" ] && sort -u "$work/fp/fingerprints" >warm.fp || : >warm.fp
    if [ $sc -eq $sw ] && [ $sc -le 1 ] && diff <(verdicts cold.out) <(verdicts warm.out) >/dev/null &&
        grep -q '^start: cold (--start cold)' cold.out && grep -qE '^start: warm \([0-9]+ program starts' warm.out; then
        ok "$name: cold and warm agree (exit $sc, $(grep -c '^  state ' warm.out) symptoms shown); $(grep '^start' warm.out)"
    else
        fail "$name: cold (exit $sc) and warm (exit $sw) differ: $(diff <(verdicts cold.out) <(verdicts warm.out) | head -20); cold: $(head -3 cold.out); warm: $(head -3 warm.out)"
    fi
}

if [ "$part" = python ]; then
    prog=$src/tests/programs/prog_py_saver.py
    cat >unsafe.yaml <<EOF
job:
  command: [$py, $prog, --unsafe]
  timeout: 300s
  env:
    FP_DIR: $work/fp
verify: [$py, $prog, --verify]
EOF
    sed 's/, --unsafe\]/]/' unsafe.yaml >safe.yaml

    # ---- cold and warm agree, by verify and by restart ----
    same_cold_warm "unsafe, verify" unsafe.yaml --check verify
    grep -q '^FAIL: ' warm.out && ok "the unsafe job fails some states" || fail "the unsafe job passed: $(cat warm.out)"
    same_cold_warm "unsafe, restart, 2 workers" unsafe.yaml --check restart --jobs 2
    if [ -s warm.fp ] && diff cold.fp warm.fp >/dev/null; then
        ok "every start sees the same: $(wc -l <warm.fp) distinct fingerprints, cold and warm alike"
    else
        fail "fingerprints differ between cold and warm starts: $(diff cold.fp warm.fp | head -c 3000)"
    fi
    same_cold_warm "safe, restart" safe.yaml --check restart
    grep -q '^PASS: ' warm.out && ok "the safe job passes" || fail "the safe job: $(cat warm.out)"

    # ---- how programs start, and the fallbacks ----
    out=$("$ckh" explore unsafe.yaml --max-states 10 2>&1)
    printf '%s\n' "$out" | grep_q -E '^start: warm \(' && ok "auto starts Python warm" ||
        fail "auto did not start warm: $out"
    run_sh=$src/tests/programs/prog_saver_run.sh
    cat >shell.yaml <<EOF
job:
  command: [/bin/sh, $run_sh, --files, "1"]
  timeout: 300s
verify: [/bin/sh, $run_sh, --verify]
EOF
    out=$("$ckh" explore shell.yaml 2>&1)
    printf '%s\n' "$out" | grep_q -F 'start: cold: /bin/sh is not a Python interpreter' &&
        ok "a shell program starts cold, saying why" || fail "shell program: $out"
    out=$("$ckh" explore shell.yaml --start warm 2>&1)
    st=$?
    [ $st -eq 2 ] && printf '%s\n' "$out" | grep_q -F -- '--start warm: /bin/sh is not a Python interpreter' &&
        ok "--start warm refuses it: $out" || fail "--start warm on a shell program: exit $st: $out"
    mkdir -p "$work/mods" "$work/modpath"
    cp "$prog" "$work/mods/prog_py_saver_mod.py"
    cat >module.yaml <<EOF
job:
  command: [$py, $prog, --unsafe]
  timeout: 300s
  env:
    PYTHONPATH: $work/mods
verify: [$py, -m, prog_py_saver_mod, --verify]
EOF
    out=$("$ckh" explore module.yaml --max-states 10 2>&1)
    printf '%s\n' "$out" | grep_q -F 'a module with -m' && ok "-m starts cold: $(printf '%s\n' "$out" | grep '^start')" ||
        fail "-m: $out"
    # An import that raises something else than ImportError (a module
    # outside the program's folder, imported at top level): no launcher.
    printf 'raise RuntimeError("boom at import")\n' >"$work/modpath/boom.py"
    sed -e "s#^_TOOLS = .*#_TOOLS = '$src/tools'#" \
        -e 's#^import sys$#import sys\ntry:\n    import boom\nexcept RuntimeError:\n    pass#' "$prog" >"$work/mods/prog_boom.py"
    cat >boom.yaml <<EOF
job:
  command: [$py, $work/mods/prog_boom.py, --unsafe]
  timeout: 300s
  env:
    PYTHONPATH: $work/modpath
verify: [$py, $work/mods/prog_boom.py, --verify]
EOF
    out=$("$ckh" explore boom.yaml --max-states 10 2>&1)
    printf '%s\n' "$out" | grep_q -F 'importing boom raised RuntimeError: boom at import' &&
        ok "a failing import starts cold: $(printf '%s\n' "$out" | grep '^start')" || fail "failing import: $out"

    # ---- likely failures first: a time limit that allows almost nothing ----
    out=$("$ckh" explore unsafe.yaml --time-limit 1 --jobs 1 2>&1)
    st=$?
    ks=$(printf '%s\n' "$out" | grep -E '^  state [0-9]+: ' | sed -E 's/^  state ([0-9]+): .*/\1/' | tr '\n' ' ')
    sorted=$(printf '%s\n' $ks | sort -n | tr '\n' ' ')
    # Bounded by the limit, or (a fast machine) every distinct state checked
    # within it: either way a failure is found and shown smallest first.
    if [ $st -eq 1 ] && printf '%s\n' "$out" |
        grep_q -E '^bounded: time limit 1 s reached|^explore .*\(([0-9]+) distinct\), \1 checked by' &&
        printf '%s\n' "$out" | grep_q '^FAIL: ' && [ "$ks" = "$sorted" ]; then
        ok "--time-limit 1 still finds a failure: $(printf '%s\n' "$out" | grep -E '^(bounded|explore) ' | tail -1)"
    else
        fail "--time-limit 1: exit $st: $out"
    fi

    # ---- nothing left behind ----
    sleep 0.2
    left=$(ps -eo pid,args | grep -F "$work/" | grep -v grep || true)
    [ -z "$left" ] && ok "no launcher or program is left running" || fail "left running: $left"
else
    scn=$src/scenarios/programs/torch-atomic-explore.yaml
    cp "$scn" torch.yaml
    sed -i "s#\.\./\.\./tests/programs#$src/tests/programs#g" torch.yaml
    same_cold_warm "torch job, verify" torch.yaml --check verify --jobs 2
    same_cold_warm "torch job, restart (30 states)" torch.yaml --check restart --jobs 2 --max-states 30
fi

if [ "$failures" -ne 0 ]; then
    echo "$ckh_test_name: $failures failure(s)" >&2
    exit 1
fi
echo "$ckh_test_name: all passed"
