#!/usr/bin/env bash
# `ckh explore` on real programs (harness/search/explore_program.c), with
# the single-threaded C saver of tests/programs/ (no torch: fast):
#   - the atomic saver passes every crash state, checked by its verify and
#     by restarting the job; --jobs 2 checks the same states as --jobs 1;
#   - the unsafe saver (`latest` rewritten in place) fails: the smallest
#     failing state comes first, `--state K` reproduces exactly that state
#     and symptom alone, and --keep writes its files (never into a folder
#     that holds something);
#   - max-states bounds the run and says so; the explore: block of a
#     scenario gives ckh run its verdict;
#   - bad input is exit 2 with a message naming what: not a command job,
#     faults in the scenario, a state past the last, --keep without --state,
#     a verify check without verify; nothing is left mounted.
# Usage: tests/test_explore_program.sh CKH SOURCE_DIR
set -uo pipefail
# grep -q stops reading at its first match: with pipefail, a long output
# piped into it fails the pipeline when the writer then dies of SIGPIPE.
# grep_q reads every line and prints nothing.
grep_q() { grep "$@" >/dev/null; }
ckh=$(realpath "${1:?usage: test_explore_program.sh CKH SOURCE_DIR}")
src=$(realpath "${2:?usage: test_explore_program.sh CKH SOURCE_DIR}")
ckh_test_name=test_explore_program
. "$src/tests/support/skip.sh"
ckh_fuse_missing && ckh_skip "$fuse_why"
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-explore.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work/tmp # ckh's run folders (and mounts) go here, apart from other tests'
mkdir -p "$TMPDIR" || exit 1
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
cd "$work" || exit 1

run_sh=$src/tests/programs/prog_saver_run.sh
# A C saver scenario with verify: two checkpoints (the second rewrites
# `latest`, where the unsafe saver breaks), about 100 distinct crash states
# for the atomic saver and 300 for the unsafe one. The saver's run takes
# well under a second; its time limit is generous so that a loaded machine
# never turns a slow run into a hang (nothing here is about time).
scenario() { # NAME EXTRA-ARGS...
    local name=$1
    shift
    cat >"$name.yaml" <<EOF
job:
  command: [/bin/sh, $run_sh, --files, "2"$(for a in "$@"; do printf ', %s' "$a"; done)]
  timeout: 300s
verify: [/bin/sh, $run_sh, --verify]
EOF
}
scenario safe
scenario unsafe --unsafe

# ---- the atomic saver passes every state, both checks ----
out=$("$ckh" explore safe.yaml 2>&1)
st=$?
summary=$(printf '%s\n' "$out" | head -1)
if [ $st -eq 0 ] && printf '%s\n' "$out" | grep_q '^PASS: every crash state checked passes' &&
    printf '%s\n' "$summary" | grep_q -E 'crash points, [0-9]+ states \([0-9]+ distinct\), [0-9]+ checked by verify'; then
    ok "safe saver, verify: $summary"
else
    fail "safe saver, verify: exit $st: $out"
fi
out2=$("$ckh" explore safe.yaml --jobs 2 2>&1)
s1=$(printf '%s\n' "$out" | head -1 | sed 's/ in [0-9.]* s.*//')
s2=$(printf '%s\n' "$out2" | head -1 | sed 's/ in [0-9.]* s.*//')
[ "$s1" = "$s2" ] && ok "--jobs 2 checks the same states: $s2" || fail "--jobs 2: '$s2' vs --jobs 1: '$s1'"
out=$("$ckh" explore safe.yaml --check restart --jobs 2 2>&1)
st=$?
if [ $st -eq 0 ] && printf '%s\n' "$out" | grep_q 'checked by restart'; then
    ok "safe saver, restart: $(printf '%s\n' "$out" | head -1)"
else
    fail "safe saver, restart: exit $st: $out"
fi

# ---- the unsafe saver fails; the smallest state first; --state K alone ----
out=$("$ckh" explore unsafe.yaml --jobs 2 2>&1)
st=$?
first=$(printf '%s\n' "$out" | grep -m1 -E '^  state [0-9]+: ')
k=$(printf '%s\n' "$first" | sed -E 's/^  state ([0-9]+): .*/\1/')
sym=$(printf '%s\n' "$out" | grep -m1 -A1 -E '^  state [0-9]+: ' | tail -1)
if [ $st -eq 1 ] && [ -n "$k" ] && printf '%s\n' "$out" | grep_q -E '^FAIL: [0-9]+ crash states? failed' &&
    printf '%s\n' "$sym" | grep_q 'latest' &&
    printf '%s\n' "$out" | grep_q "reproduce: .* explore unsafe.yaml --state $k"; then
    ok "unsafe saver fails; smallest state $k: $sym"
else
    fail "unsafe saver: exit $st: $out"
fi
ks=$(printf '%s\n' "$out" | grep -E '^  state [0-9]+: ' | sed -E 's/^  state ([0-9]+): .*/\1/' | tr '\n' ' ')
sorted=$(printf '%s\n' $ks | sort -n | tr '\n' ' ')
[ "$ks" = "$sorted" ] && ok "findings in ascending state order" || fail "findings out of order: $ks"
one=$("$ckh" explore unsafe.yaml --state "$k" --keep kept 2>&1)
st=$?
if [ $st -eq 1 ] && printf '%s\n' "$one" | grep_q -F "$first" && printf '%s\n' "$one" | grep_q -F "$sym" &&
    [ -f kept/latest ]; then
    ok "--state $k reproduces the state and its symptom alone; --keep wrote $(ls kept | tr '\n' ' ')"
else
    fail "--state $k: exit $st: $one"
fi
before=$(ls -la kept | md5sum)
out=$("$ckh" explore unsafe.yaml --state "$k" --keep kept 2>&1)
st=$?
if [ $st -eq 2 ] && printf '%s\n' "$out" | grep_q 'not empty' && [ "$(ls -la kept | md5sum)" = "$before" ]; then
    ok "--keep into a folder with files: refused, nothing touched"
else
    fail "--keep into a non-empty folder: exit $st: $out"
fi

# ---- bounds and the explore: block ----
out=$("$ckh" explore safe.yaml --max-states 5 2>&1)
if printf '%s\n' "$out" | grep_q '^bounded: max_states 5 reached' && printf '%s\n' "$out" | grep_q ' 5 states '; then
    ok "--max-states 5: $(printf '%s\n' "$out" | sed -n 2p)"
else
    fail "--max-states 5: $out"
fi
cp unsafe.yaml block.yaml && printf 'explore:\n  check: verify\n  max_states: 120\n' >>block.yaml
out=$("$ckh" run block.yaml 2>&1)
st=$?
if [ $st -eq 1 ] && printf '%s\n' "$out" | grep_q -E '^FAIL  block: explore: [0-9]+ of [0-9]+ crash states fail verify'; then
    ok "ckh run on an explore: scenario: $(printf '%s\n' "$out" | grep -m1 '^FAIL')"
else
    fail "ckh run on an explore: scenario: exit $st: $out"
fi
printf '  expect: fail\n' >>block.yaml
"$ckh" run block.yaml >/dev/null 2>&1 && ok "explore.expect: fail passes on the unsafe saver" ||
    fail "explore.expect: fail on the unsafe saver did not pass"

# ---- bad input: exit 2, a message naming what ----
bad() { # NAME WANT-STATUS WANT-TEXT ARGS...
    local name=$1 want=$2 text=$3
    shift 3
    local o
    o=$("$ckh" explore "$@" 2>&1)
    local s=$?
    if [ $s -eq "$want" ] && printf '%s\n' "$o" | grep_q -F -- "$text"; then
        ok "$name: exit $s: $(printf '%s\n' "$o" | head -1)"
    else
        fail "$name: exit $s (want $want, '$text'): $o"
    fi
}
cat >sim.yaml <<'EOF'
job: {workload: seed-pipeline}
EOF
bad "a simulated job" 2 "takes a command job" sim.yaml
cp safe.yaml faulted.yaml && printf 'faults:\n  - on: {node: rank_0, op: write, nth: 3}\n    do: kill\n' >>faulted.yaml
bad "faults in the scenario" 2 "makes its own crashes" faulted.yaml
bad "a state past the last" 2 "crash states" safe.yaml --state 999999
bad "--keep without --state" 2 "--keep needs --state" safe.yaml --keep k2
grep -v '^verify' safe.yaml >noverify.yaml
bad "--check verify without verify" 2 "needs a 'verify:' command" noverify.yaml --check verify
bad "a folder" 2 "is a folder" .
bad "an unknown check" 2 "--check expects verify or restart" safe.yaml --check maybe
# A job whose fault-free run fails is a found bug (exit 1), not bad input.
cat >fails.yaml <<'EOF'
job:
  command: [/bin/sh, -c, "echo 'FileNotFoundError: no latest' >&2; exit 3"]
EOF
bad "a job that fails without faults" 1 "FAIL: fails without faults: rank_0 exited with status 3; its last output: FileNotFoundError: no latest" fails.yaml
if grep -qF "$work" /proc/mounts; then
    fail "a ckhfs mount was left behind: $(grep -F "$work" /proc/mounts)"
else
    ok "nothing left mounted"
fi

if [ "$failures" -ne 0 ]; then
    echo "test_explore_program: $failures failure(s)" >&2
    exit 1
fi
echo "test_explore_program: all passed"
