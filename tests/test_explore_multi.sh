#!/usr/bin/env bash
# `ckh explore` of multi-node jobs (harness/search/explore_multi.c), with
# the two-rank shell program tests/programs/prog_multi_save.sh (no torch:
# fast; its ranks save in turn, so every recording has the same order):
#   - (each buggy variant of the library failing with its symptom and each
#     fixed one passing: scenario_library and programs_verdicts) the
#     rank-0-only folder fails the fault-free run;
#   - the smallest failing state names each node's last operation and what
#     each disk held; `--state K` checks exactly that state alone, with the
#     same symptom; --keep writes one folder per disk;
#   - the same explore twice, and with --jobs 1 and 2, gives the same
#     states and verdicts, line for line;
#   - --crashes power-loss and crash split the states of all;
#     --others running explores other cuts than killed; a job with a
#     node-local disk and a shared one (three mounts) is explored;
#   - explore.symptom: a symptom that no state shows is a FAIL of ckh run;
#   - the PyTorch programs over gloo (prog_torch_shards.py; skipped without
#     torch): no commit protocol found, node-local folders fixed passes;
#     the stale marker, DCP's metadata swap (the removal kept, the rename
#     lost) and the step-folder race (its order) each fail with their own
#     verdict;
#   - bad input is exit 2 naming what: --crashes, --others, explore keys.
# Usage: tests/test_explore_multi.sh CKH SOURCE_DIR
set -uo pipefail
# grep -q stops reading at its first match: with pipefail, a long output
# piped into it fails the pipeline when the writer then dies of SIGPIPE.
# grep_q reads every line and prints nothing.
grep_q() { grep "$@" >/dev/null; }
ckh=$(realpath "${1:?usage: test_explore_multi.sh CKH SOURCE_DIR}")
src=$(realpath "${2:?usage: test_explore_multi.sh CKH SOURCE_DIR}")
ckh_test_name=test_explore_multi
. "$src/tests/support/skip.sh"
ckh_fuse_missing && ckh_skip "$fuse_why"
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-xmulti.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR" || exit 1
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
cd "$work" || exit 1
lib=$src/scenarios/programs
prog=$src/tests/programs/prog_multi_save.sh

# The library's scenarios with absolute paths.
for f in "$lib"/shell-multi-*.yaml; do
    sed -e "s#\.\./\.\./#$src/#g" "$f" >"$(basename "$f")"
done
# Without its timing: the summary line of an explore.
summary() { printf '%s\n' "$1" | head -1 | sed 's/ in [0-9.]* s.*//'; }

# ---- each buggy variant fails with its symptom; each fixed one passes ----
# The library's scenarios say so themselves (expect: fail with
# explore.symptom, or pass): scenario_library runs them all, and
# programs_verdicts checks the buggy ones' verdicts without their expect
# sections. Here, only what the library cannot say: rank 0's folder on
# node-local disks is a failure of the fault-free run.
out=$("$ckh" explore shell-multi-rank0-mkdir.yaml 2>&1)
st=$?
if [ $st -eq 1 ] && printf '%s\n' "$out" | grep_q 'FAIL: fails without faults: rank_1 exited' &&
    printf '%s\n' "$out" | grep_q 'Directory nonexistent'; then
    ok "rank0-mkdir: the fault-free run fails on rank 1's own disk"
else
    fail "rank0-mkdir: exit $st: $out"
fi
out=$("$ckh" explore shell-multi-rank0-mkdir-fixed.yaml --jobs 2 2>&1)
st=$?
again=$("$ckh" explore shell-multi-rank0-mkdir-fixed.yaml --jobs 2 2>&1)
if [ $st -eq 0 ] && printf '%s\n' "$out" | grep_q -E '^explore .*[0-9]+ crash points, [0-9]+ states \([0-9]+ distinct\)' &&
    [ "$(summary "$out")" = "$(summary "$again")" ]; then
    ok "rank0-mkdir fixed (node-local disks), the same twice: $(summary "$out")"
else
    fail "rank0-mkdir fixed: exit $st: $out // again: $(summary "$again")"
fi

# ---- the smallest failing state: each node's last op, each disk; --state K alone ----
out=$("$ckh" explore shell-multi-no-commit.yaml --jobs 2 2>&1)
first=$(printf '%s\n' "$out" | grep -m1 -E '^  state [0-9]+: ')
k=$(printf '%s\n' "$first" | sed -E 's/^  state ([0-9]+): .*/\1/')
sym=$(printf '%s\n' "$out" | grep -m1 -A1 -E '^  state [0-9]+: ' | tail -1)
if printf '%s\n' "$first" | grep_q -E 'last operations: rank_0: [a-z_]+ /[^;]*; rank_1: ' &&
    printf '%s\n' "$first" | grep_q -E 'disks: shared held: .*/latest \([0-9]+ B\)' &&
    printf '%s\n' "$sym" | grep_q "^    rank_[01]'s view: verify"; then
    ok "the smallest failing state, $k, names the nodes' last operations and the disk's files"
else
    fail "smallest failing state: '$first' / '$sym'"
fi
one=$("$ckh" explore shell-multi-no-commit.yaml --state "$k" 2>&1)
st=$?
if [ $st -eq 1 ] && printf '%s\n' "$one" | grep_q -F "  state $k: " &&
    [ "$(printf '%s\n' "$one" | grep -m1 -A1 -E '^  state [0-9]+: ' | tail -1)" = "$sym" ] &&
    printf '%s\n' "$one" | grep_q '1 distinct), 1 checked'; then
    ok "--state $k checks that state alone, same symptom"
else
    fail "--state $k: exit $st: $one (want the symptom '$sym')"
fi
"$ckh" explore shell-multi-rank0-mkdir-fixed.yaml --state 40 --keep keep >keep.out 2>&1
st=$?
if [ $st -eq 0 ] && [ -d keep/ckpt.rank_0 ] && [ -d keep/ckpt.rank_1 ] && [ "$(ls keep | wc -l)" -eq 2 ]; then
    ok "--keep writes one folder per disk: $(ls keep | tr '\n' ' ')"
else
    fail "--keep: exit $st: $(cat keep.out); $(ls -R keep 2>&1)"
fi
mkdir -p full && : >full/x
"$ckh" explore shell-multi-rank0-mkdir-fixed.yaml --state 40 --keep full >keep2.out 2>&1
st=$?
[ $st -eq 2 ] && grep -q 'not empty' keep2.out && [ -f full/x ] &&
    ok "--keep refuses a folder that holds something" || fail "--keep into a full folder: exit $st: $(cat keep2.out)"

# ---- determinism: twice, and --jobs 1 against --jobs 2 ----
fails() { printf '%s\n' "$1" | grep -E '^(  state [0-9]+: |    rank_|FAIL|PASS)'; }
a=$("$ckh" explore shell-multi-stale-marker.yaml --jobs 2 2>&1)
b=$("$ckh" explore shell-multi-stale-marker.yaml --jobs 1 2>&1)
c=$("$ckh" explore shell-multi-stale-marker.yaml --jobs 2 2>&1)
if [ "$(summary "$a")" = "$(summary "$b")" ] && [ "$(summary "$a")" = "$(summary "$c")" ] &&
    [ "$(fails "$a")" = "$(fails "$b")" ] && [ "$(fails "$a")" = "$(fails "$c")" ] && [ -n "$(fails "$a")" ]; then
    ok "the same states and verdicts three times (--jobs 2, 1, 2): $(summary "$a")"
else
    fail "determinism: '$(summary "$a")' '$(summary "$b")' '$(summary "$c")'; $(fails "$a") // $(fails "$b")"
fi

# ---- which crashes; the others killed or running ----
count() { printf '%s\n' "$1" | head -1 | sed -E 's/.* crash points, ([0-9]+) states \(([0-9]+) distinct\).*/\1 \2/'; }
all=$(count "$("$ckh" explore shell-multi-no-commit-fixed.yaml --jobs 2 2>&1)")
pw=$(count "$("$ckh" explore shell-multi-no-commit-fixed.yaml --jobs 2 --crashes power-loss 2>&1)")
cr=$(count "$("$ckh" explore shell-multi-no-commit-fixed.yaml --jobs 2 --crashes crash 2>&1)")
run=$("$ckh" explore shell-multi-no-commit-fixed.yaml --jobs 2 --crashes crash --others running 2>&1)
st=$?
if [ "${all%% *}" -eq $((${pw%% *} + ${cr%% *})) ] && [ "${pw%% *}" -gt 0 ] && [ "${cr%% *}" -gt 0 ] &&
    [ "${all##* }" -le $((${pw##* } + ${cr##* })) ] && [ $st -eq 0 ] &&
    printf '%s\n' "$run" | grep_q '^PASS'; then
    ok "states (distinct): all $all = power-loss $pw + crash $cr; crash with the others running: $(count "$run")"
else
    fail "crashes: all '$all' power-loss '$pw' crash '$cr' running '$(count "$run")' (exit $st)"
fi
out=$("$ckh" explore shell-multi-no-commit.yaml --jobs 2 --crashes crash 2>&1)
printf '%s\n' "$out" | grep_q -E '^  state [0-9]+: rank_[01] crashes before operation [0-9]+ of [0-9]+ \(the others killed\)' &&
    printf '%s\n' "$out" | grep_q 'reproduce: .* --crashes crash --state' &&
    ok "one node's crash alone finds no-commit: $(summary "$out")" || fail "--crashes crash: $out"

out=$("$ckh" explore shell-multi-no-commit.yaml --jobs 2 --crashes crash --others running 2>&1)
printf '%s\n' "$out" | grep_q -E '^  state [0-9]+: rank_[01] crashes (before|after) .* \(the others ran on to it' &&
    printf '%s\n' "$out" | grep_q 'reproduce: .* --crashes crash --others running --state' &&
    ok "one node's crash, the others running on, finds no-commit: $(summary "$out")" ||
    fail "--others running: $out"

# ---- a node-local disk and a shared one (three mounts) ----
cat >mixed.yaml <<EOF
job:
  command: [/bin/sh, $prog, --case, no-commit]
  nodes: 2
  timeout: 60s
  disks:
    - {name: shared, mount: /}
    - {name: scratch, mount: /scratch, shared: false}
verify: [/bin/sh, $prog, --case, no-commit, --verify]
EOF
out=$("$ckh" explore mixed.yaml --jobs 2 2>&1)
st=$?
if [ $st -eq 1 ] && printf '%s\n' "$out" | grep_q 'disks: shared held: .*; scratch.rank_0 held: nothing; scratch.rank_1 held: nothing'; then
    ok "a shared disk and node-local ones: $(summary "$out")"
else
    fail "mixed disks: exit $st: $out"
fi

# ---- explore.symptom: a symptom no state shows fails ckh run ----
sed 's/symptom: .*/symptom: "no state says this"/' shell-multi-no-commit.yaml >wrong-symptom.yaml
out=$("$ckh" run wrong-symptom.yaml 2>&1)
st=$?
[ $st -eq 1 ] && printf '%s\n' "$out" | grep_q "expected a crash state whose check says 'no state says this'" &&
    ok "a symptom no state shows: FAIL" || fail "wrong symptom: exit $st: $out"
out=$("$ckh" run shell-multi-no-commit.yaml shell-multi-rank0-mkdir.yaml shell-multi-dcp-swap-fixed.yaml 2>&1)
st=$?
[ $st -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^PASS ')" -eq 3 ] &&
    ok "ckh run: the expected failures (one without faults) and a fixed variant pass" ||
    fail "ckh run of the library's multi-node scenarios: exit $st: $out"

# ---- the PyTorch programs over gloo (skipped without torch) ----
if ckh_torch_missing /usr/bin/python3; then
    echo "skip: the PyTorch programs: $torch_why"
else
    sed -e "s#\.\./\.\./#$src/#g" "$lib/torch-multi-no-commit.yaml" >torch-bug.yaml
    sed -e "s#\.\./\.\./#$src/#g" "$lib/torch-multi-rank0-mkdir-fixed.yaml" >torch-fixed.yaml
    out=$("$ckh" explore torch-bug.yaml --jobs 2 2>&1)
    st=$?
    [ $st -eq 1 ] && printf '%s\n' "$out" | grep_q 'shard_1.pt is missing or not a whole torch.save archive' &&
        ok "PyTorch shards without a commit protocol: $(summary "$out")" || fail "torch no-commit: exit $st: $out"
    out=$("$ckh" explore torch-fixed.yaml --jobs 2 2>&1)
    st=$?
    [ $st -eq 0 ] && printf '%s\n' "$out" | grep_q '^PASS' &&
        ok "PyTorch, every rank makes its folder on its own disk: $(summary "$out")" ||
        fail "torch rank0-mkdir fixed: exit $st: $out"
fi

# ---- the PyTorch programs' other bugs (skipped without torch) ----
# The stale completion marker, DCP's metadata swap and the step-folder race
# (prog_torch_shards.py), no fault written by hand, each with its own
# verdict: the marker naming a shard rewritten under it; rank 1's
# torch.save before rank 0's mkdir, found by its order (these two in one
# ckh run, their expect sections removed); for the swap, every failing
# state of one explore, running beside that ckh run: the old .metadata's
# removal kept and the new one's rename lost while step 2 is saved. (Each
# expected failure with its symptom, and each -fixed variant passing:
# scenario_library.)
if ckh_torch_missing /usr/bin/python3; then
    echo "skip: the PyTorch programs' stale marker, metadata swap and race: $torch_why"
else
    mkdir -p torch3 || exit 1
    declare -A tverdict=(
        [stale-marker]='explore: [0-9]+ of [0-9]+ crash states fail verify; the smallest, state [0-9]+: power loss of every node .+ftruncate /current/shard_[01]\.pt kept.+current/COMPLETE names step 1 but current/shard_[01]\.pt does not hold step 1.s shard \(stale marker\)'
        [step-folder-race]="explore: 1 of 1 orders of the nodes. operations fail; the first, order 1: rank_1.s stat /step_1/shard_1\\.pt before rank_0.s mkdir /step_1 \\(rank_0 held at its stat /\\).+rank_1 exited with status [0-9]+; its last output: RuntimeError: Parent directory /.+/step_1 does not exist"
    )
    for c in stale-marker dcp-swap step-folder-race; do
        grep -q '^faults:' "$lib/torch-multi-$c.yaml" && fail "torch-multi-$c names a fault"
    done
    for c in "${!tverdict[@]}"; do
        sed -e '/^  expect: fail$/d' -e '/^  symptom: /d' -e "s#\.\./\.\./#$src/#g" "$lib/torch-multi-$c.yaml" \
            >"torch3/torch-multi-$c.yaml"
    done
    sed -e "s#\.\./\.\./#$src/#g" "$lib/torch-multi-dcp-swap.yaml" >torch-dcp.yaml
    "$ckh" explore torch-dcp.yaml --jobs 1 >torch-dcp.out 2>&1 &
    dcp=$!
    out=$(cd torch3 && "$ckh" run . --jobs 2 2>&1)
    st=$?
    wait $dcp
    dst=$?
    [ $st -eq 1 ] || fail "ckh run of the PyTorch stale marker and race without their expect sections: exit $st, want 1"
    for c in "${!tverdict[@]}"; do
        line=$(printf '%s\n' "$out" | grep -m1 -E "^(PASS|FAIL|ERROR)  torch-multi-${c}[: ]")
        if printf '%s\n' "$line" | grep_q -E "^FAIL  torch-multi-$c: ${tverdict[$c]}"; then
            ok "PyTorch $c without its expect section: $(printf '%s\n' "$line" | cut -c1-150)..."
        else
            fail "PyTorch $c without its expect section: want FAIL  torch-multi-$c: ${tverdict[$c]}, got: ${line:-no line}; ckh said: $out"
        fi
    done
    # the swap itself: the removal kept, the rename not, step 2 saved
    swap=$(grep -A1 -E '^  state [0-9]+: power loss .*unlink /dcp/\.metadata kept, rename /dcp/\.metadata\.tmp ' torch-dcp.out |
        grep -c "verify: step 2 was saved but dcp/.metadata is missing: the checkpoint is lost (metadata swap)")
    if [ $dst -eq 1 ] && [ "$swap" -ge 1 ] && grep -q '^FAIL: [0-9]* crash states failed' torch-dcp.out; then
        ok "PyTorch DCP finish(): the old .metadata removed, the new one not renamed: $(summary "$(cat torch-dcp.out)")"
    else
        fail "PyTorch dcp-swap: exit $dst, want 1 and a state with unlink /dcp/.metadata kept and step 2 lost: $(cat torch-dcp.out)"
    fi
fi

# ---- orders of the nodes' operations on a shared disk (explore_races.c) ----
# The step-folder race (prog_step_folder.sh): no fault in the scenario, and
# the recorded run passes (rank 1's 2 s of work hide the race); the order
# ckh reads from the recording (rank 1 first on step_1, rank 0's mkdir
# after) is forced and the job fails. The fixed program passes it.
race=shell-multi-step-folder-race
grep -q '^faults:' "$race.yaml" && fail "$race names a fault"
out=$("$ckh" explore "$race.yaml" 2>&1)
st=$?
out_race=$out
want="order 1: rank_1's [a-z]+ /step_1[^ ]* before rank_0's mkdir /step_1 \\(rank_0 held at its stat /\\)"
if [ $st -eq 1 ] && printf '%s\n' "$out" | grep_q -E "$want" &&
    printf '%s\n' "$out" | grep_q 'Directory nonexistent' &&
    printf '%s\n' "$out" | grep_q -F -- "explore $race.yaml --order 1"; then
    ok "step-folder race found by its order: $(printf '%s\n' "$out" | grep -m1 '^  order')"
else
    fail "$race: exit $st, want 1, '$want' and ENOENT: $out"
fi
out=$("$ckh" explore "$race-fixed.yaml" 2>&1)
st=$?
[ $st -eq 0 ] && printf '%s\n' "$out" | grep_q "^orders: 1 of the nodes' operations on a shared disk, 1 run" &&
    printf '%s\n' "$out" | grep_q '^PASS: every order run passes' &&
    ok "step-folder fixed: every order passes" || fail "$race-fixed: exit $st: $out"
# --order 1 forces the same order again: the same verdict and symptom, twice
# (the folder of each run is neutral in the text, so the lines are equal).
sym() { printf '%s\n' "$1" | grep -A1 '^  order 1:'; }
first=$("$ckh" explore "$race.yaml" --order 1 2>&1)
s1=$?
second=$("$ckh" explore "$race.yaml" --order 1 2>&1)
s2=$?
if [ $s1 -eq 1 ] && [ $s2 -eq 1 ] && printf '%s\n' "$first" | grep_q 'order 1 of 1 run alone' &&
    [ -n "$(sym "$first")" ] && [ "$(sym "$first")" = "$(sym "$second")" ] && [ "$(sym "$first")" = "$(sym "$out_race")" ]; then
    ok "--order 1 replays the failing order twice with the same verdict"
else
    fail "--order 1: exits $s1 $s2: $first /// $second"
fi
# ckh run judges the library scenario: the buggy one expected to fail, the
# fixed one to pass (the library stays green with real verdicts).
out=$("$ckh" run "$race.yaml" "$race-fixed.yaml" 2>&1)
st=$?
[ $st -eq 0 ] && printf '%s\n' "$out" | grep_q '2 scenarios: 2 passed' && ok "ckh run: race expected to fail, fixed passes" ||
    fail "ckh run of the race pair: exit $st: $out"

# ---- bad input ----
bad() { # WHAT EXPECTED-TEXT ARGS...
    local what=$1 want=$2
    shift 2
    local o
    o=$("$ckh" "$@" 2>&1)
    local s=$?
    [ $s -eq 2 ] && printf '%s\n' "$o" | grep_q -F -- "$want" && ok "bad input: $what" ||
        fail "bad input $what: exit $s: $o"
}
bad "--crashes" "--crashes expects all, crash, power-loss or none, got 'some'" explore mixed.yaml --crashes some
bad "--order past the last" "--order 5: this run has 1 order of its nodes' operations" explore "$race.yaml" --order 5
bad "--order with --state" "--order N and --state K cannot be given together" explore "$race.yaml" --order 1 --state 1
sed -e 's/^  nodes: 2$/  nodes: 1/' "$race-fixed.yaml" >one-node.yaml
bad "--order on one node" "--order 1: this job has one node and one disk" explore one-node.yaml --order 1
bad "crashes none on one node" "crashes none: this job has one node and one disk" explore one-node.yaml
bad "--others" "--others expects killed or running, got 'asleep'" explore mixed.yaml --others asleep
printf 'explore:\n  check: verify\n  symptom: "x"\n' >>mixed.yaml
bad "explore.symptom without expect: fail" "needs 'explore.expect: fail'" explore mixed.yaml
sed -i 's/  symptom: "x"/  crashes: sometimes/' mixed.yaml
bad "explore.crashes" "explore.crashes" explore mixed.yaml

grep -q ckhfs /proc/mounts && grep ckhfs /proc/mounts | grep_q "$work" && fail "mounts left: $(grep "$work" /proc/mounts)"
[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "all explore-multi checks passed"
