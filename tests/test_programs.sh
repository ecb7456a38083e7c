#!/usr/bin/env bash
# The programs of tests/programs/ run standalone (outside ckh) as the
# scenarios of scenarios/programs/ expect them to:
#   - each writes its checkpoints to CKH_CKPT_DIR (./ckpt when unset) and
#     result records to CKH_RESULT (none when unset);
#   - a run stopped after a save and started again resumes from it and
#     ends with the same step records and final record as an uninterrupted
#     run (prog_saver, prog_save.sh, prog_torch_direct, prog_torch_atomic,
#     prog_ddp_gloo with 2 ranks over gloo);
#   - a torn newest checkpoint stops prog_torch_direct, prog_saver and
#     prog_save.sh with exit status 1 and a message naming the file;
#   - prog_saver makes the same system calls on every run (strace, when
#     installed) and its --verify tells a whole checkpoint from a torn one;
#   - prog_hang is still running after a while, with its child, and both
#     go when its process group is killed.
#   - with CKH (and FUSE), each scenario of scenarios/programs/ that expects
#     a failure fails with its verdict once its expect section is removed.
# Usage: tests/test_programs.sh PART PYTHON PROG_SAVER SOURCE_DIR [CKH]
# PART is one of (each a CTest entry of its own, CMakeLists.txt):
#   plain     prog_saver, prog_save.sh, prog_step_folder.sh, prog_hang
#                                                       (test `programs`)
#   torch     prog_torch_direct, prog_torch_atomic, prog_ddp_gloo
#                                                       (`programs_torch`)
#   verdicts  the library's expected failures under CKH (`programs_verdicts`)
#   all       the three.
# A part that cannot run here exits 77 (CTest's skip) saying why: torch
# without torch in PYTHON (the project's setup installs python3-torch),
# verdicts without CKH, FUSE or torch (tests/support/skip.sh).
set -uo pipefail
# grep -q stops reading at its first match: with pipefail, a long output
# piped into it fails the pipeline when the writer then dies of SIGPIPE.
# grep_q reads every line and prints nothing.
grep_q() { grep "$@" >/dev/null; }
usage="usage: test_programs.sh plain|torch|verdicts|all PYTHON PROG_SAVER SOURCE_DIR [CKH]"
part=${1:?$usage}
py=${2:?$usage}
saver=${3:?$usage}
src=${4:?$usage}
ckh=${5:-}
case "$part" in plain|torch|verdicts|all) ;; *) echo "$usage" >&2; exit 2 ;; esac
ckh_test_name=test_programs
. "$src/tests/support/skip.sh"
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
# What a part needs, checked before any work: a part that cannot run is skipped.
if [ "$part" = torch ] && ckh_torch_missing "$py"; then
    ckh_skip "the torch programs: $torch_why"
fi
if [ "$part" = verdicts ]; then
    [ -n "$ckh" ] || ckh_skip "the library's expected failures: no ckh given"
    ckh_fuse_missing && ckh_skip "the library's expected failures: $fuse_why"
    ckh_torch_missing "$py" && ckh_skip "the library's expected failures: $torch_why"
fi
saver=$(realpath "$saver")
src=$(realpath "$src")
[ -n "$ckh" ] && ckh=$(realpath "$ckh")
progs=$src/tests/programs
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-programs.XXXXXX")
hang_pid=
cleanup() {
    [ -n "$hang_pid" ] && kill -KILL -- "-$hang_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
export PYTHONDONTWRITEBYTECODE=1
unset CKH_RESULT CKH_CKPT_DIR RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT

failures=0
fail() { echo "test_programs: FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "test_programs: ok: $*"; }

# same_history A B: the records of result file A, read the way ckh reads
# them (a resume record supersedes the later steps of earlier runs), equal
# those of B: every step record and the last final record.
same_history() {
    "$py" - "$1" "$2" "$src/tools" <<'EOF'
import sys
sys.path.insert(0, sys.argv[3])
import ckh_result as ckh
def history(path):
    steps, final = {}, None
    for r in ckh.read(path):
        if r["kind"] == "resume":
            steps = {s: v for s, v in steps.items() if s <= r["step"]}
        elif r["kind"] == "step":
            steps[r["step"]] = r
        elif r["kind"] == "final":
            final = r
    return steps, final
a, b = history(sys.argv[1]), history(sys.argv[2])
if a != b:
    sys.exit("%s and %s differ:\n%r\n%r" % (sys.argv[1], sys.argv[2], a, b))
if not a[0] or a[1] is None:
    sys.exit("%s: no step or no final record" % sys.argv[1])
EOF
}

# expect_torn NAME STDERR_FILE STATUS FILE: exit 1 and the file named.
expect_torn() {
    if [ "$3" -eq 1 ] && grep -q "$4" "$2"; then
        ok "$1 refuses the torn $4: $(head -n1 "$2")"
    else
        fail "$1 on a torn $4: exit $3, stderr: $(cat "$2")"
    fi
}

if want plain; then
# ---- prog_saver (C) ----
d=$work/saver && mkdir -p "$d" && cd "$d" || exit 1
"$saver" --files 3 >/dev/null || fail "prog_saver (no CKH_RESULT) exited $?"
[ -f ckpt/latest ] && [ "$(ls | tr '\n' ' ')" = "ckpt " ] || fail "prog_saver outside ckh: want only ckpt/, got $(ls)"
"$saver" --verify ckpt >/dev/null || fail "prog_saver --verify of a whole checkpoint"
rm -rf ckpt
CKH_CKPT_DIR=$d/a CKH_RESULT=$d/a.jsonl "$saver" --files 2 >/dev/null &&
    CKH_CKPT_DIR=$d/a CKH_RESULT=$d/a.jsonl "$saver" --files 5 >/dev/null &&
    CKH_CKPT_DIR=$d/b CKH_RESULT=$d/b.jsonl "$saver" --files 5 >/dev/null ||
    fail "prog_saver runs"
grep -q '"kind":"resume","step":2' a.jsonl || fail "prog_saver: no resume record after step 2"
same_history a.jsonl b.jsonl && ok "prog_saver: resumed run = uninterrupted run" || fail "prog_saver histories"
head -c 1000 b/step_5.bin >b/step_5.cut && mv b/step_5.cut b/step_5.bin
"$saver" --verify b >/dev/null 2>&1 && fail "prog_saver --verify passed a torn step_5.bin"
CKH_CKPT_DIR=$d/b "$saver" --files 6 >/dev/null 2>err
expect_torn prog_saver err $? step_5.bin
if command -v strace >/dev/null; then
    for i in 1 2; do
        # LeakSanitizer cannot run under ptrace (it reports a fatal error,
        # with the pid, to stderr): off for a sanitizer build's saver.
        rm -rf "c$i" && CKH_CKPT_DIR=c ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -qq -o "trace$i" -e trace=%file,%desc "$saver" --files 3 >/dev/null
        mv c "c$i"
        # A coverage build's saver writes its counters (*.gcda) at exit,
        # creating them on the first run and merging into them on the
        # next: those calls are the instrumentation's, not the saver's,
        # so the trace ends where the first .gcda file is opened.
        sed -E '/\.gcda"/,$d; s/^[0-9]+ +//; s/= [0-9]+$//' "trace$i" | grep -E 'ckpt|c/|write\(|fsync|rename' >"ops$i"
    done
    if cmp -s ops1 ops2 && [ "$(wc -l <ops1)" -gt 20 ]; then
        ok "prog_saver: the same $(wc -l <ops1) operations on two runs"
    else
        fail "prog_saver: operations differ between runs: $(diff ops1 ops2 | head -5)"
    fi
else
    fail "strace is not installed (scripts/test.sh installs it): prog_saver's operation sequence not compared"
fi

# ---- prog_save.sh (shell) ----
d=$work/shell && mkdir -p "$d" && cd "$d" || exit 1
sh "$progs/prog_save.sh" 2 >/dev/null || fail "prog_save.sh (no CKH_RESULT) exited $?"
[ "$(cat ckpt/latest)" = step_2.ckpt ] && [ "$(ls)" = ckpt ] || fail "prog_save.sh outside ckh: $(ls)"
rm -rf ckpt
CKH_CKPT_DIR=$d/a CKH_RESULT=$d/a.jsonl sh "$progs/prog_save.sh" 2 >/dev/null &&
    CKH_CKPT_DIR=$d/a CKH_RESULT=$d/a.jsonl sh "$progs/prog_save.sh" 4 >/dev/null &&
    CKH_CKPT_DIR=$d/b CKH_RESULT=$d/b.jsonl sh "$progs/prog_save.sh" 4 >/dev/null || fail "prog_save.sh runs"
same_history a.jsonl b.jsonl && ok "prog_save.sh: resumed run = uninterrupted run" || fail "prog_save.sh histories"
head -c 100 b/step_4.ckpt >b/cut && mv b/cut b/step_4.ckpt
CKH_CKPT_DIR=$d/b sh "$progs/prog_save.sh" 5 >/dev/null 2>err
expect_torn prog_save.sh err $? step_4.ckpt

# ---- prog_step_folder.sh (shell, two ranks) ----
# Rank 0 then rank 1: the folder is there, both shards land. Rank 1 alone:
# without --wait it finds no folder (the bug's failure); with --wait it
# waits for rank 0, started late.
d=$work/step_folder && mkdir -p "$d/ckpt" && cd "$d" || exit 1
if RANK=0 sh "$progs/prog_step_folder.sh" && RANK=1 sh "$progs/prog_step_folder.sh" &&
    [ "$(cat ckpt/step_1/shard_0 ckpt/step_1/shard_1)" = "shard of rank 0
shard of rank 1" ]; then
    ok "prog_step_folder.sh: both shards in step_1"
else
    fail "prog_step_folder.sh: rank 0 then rank 1"
fi
rm -rf ckpt/step_1
if RANK=1 sh "$progs/prog_step_folder.sh" 2>err; then
    fail "prog_step_folder.sh: rank 1 without the folder exited 0"
else
    grep -q "step_1/shard_1" err && ok "prog_step_folder.sh: rank 1 without the folder fails" ||
        fail "prog_step_folder.sh: rank 1's message: $(cat err)"
fi
RANK=1 sh "$progs/prog_step_folder.sh" --wait &
waiter=$!
sleep 3 # rank 0 comes late (whatever the load: rank 1 waits up to 60 s)
RANK=0 sh "$progs/prog_step_folder.sh"
wait "$waiter" && [ -f ckpt/step_1/shard_1 ] && ok "prog_step_folder.sh --wait: rank 1 waited for the folder" ||
    fail "prog_step_folder.sh --wait"

# ---- prog_hang ----
d=$work/hang && mkdir -p "$d" && cd "$d" || exit 1
setsid "$py" "$progs/prog_hang.py" >out 2>&1 &
hang_pid=$!
# live (not zombie) processes of the group
alive() { ps -o stat= -g "$1" 2>/dev/null | grep -vc '^Z'; }
# Waits for the line it prints once its child is forked (or for its end):
# no fixed time, however slowly a loaded machine starts Python.
while ! grep -q waiting out 2>/dev/null && kill -0 "$hang_pid" 2>/dev/null; do sleep 0.1; done
n=$(alive "$hang_pid")
if kill -0 "$hang_pid" 2>/dev/null && [ "$n" -eq 2 ]; then
    kill -KILL -- "-$hang_pid"
    wait "$hang_pid" 2>/dev/null
    # the child, reparented, goes when the kernel delivers the kill: until
    # then (CTest's timeout bounds a child that never goes)
    while [ "$(alive "$hang_pid")" -ne 0 ]; do sleep 0.1; done
    ok "prog_hang: still running with its child; both reaped"
else
    fail "prog_hang: want it running with 1 child, got $n processes: $(cat out)"
fi
hang_pid=
fi # plain

# ---- the torch programs ----
if want torch && ckh_torch_missing "$py"; then
    fail "the torch programs: $torch_why" # part all: the project's setup installs it
elif want torch; then
    for p in direct atomic; do
        d=$work/torch_$p && mkdir -p "$d" && cd "$d" || exit 1
        prog=$progs/prog_torch_$p.py
        "$py" "$prog" --steps 2 --save-every 1 >/dev/null || fail "prog_torch_$p (no CKH_RESULT) exited $?"
        [ "$(ls)" = ckpt ] || fail "prog_torch_$p outside ckh: $(ls)"
        CKH_CKPT_DIR=$d/a CKH_RESULT=$d/a.jsonl "$py" "$prog" --steps 6 >/dev/null &&
            CKH_CKPT_DIR=$d/a CKH_RESULT=$d/a.jsonl "$py" "$prog" >/dev/null &&
            CKH_CKPT_DIR=$d/b CKH_RESULT=$d/b.jsonl "$py" "$prog" >/dev/null || fail "prog_torch_$p runs"
        grep -q '"kind":"resume","step":4' a.jsonl || fail "prog_torch_$p: no resume record at step 4"
        same_history a.jsonl b.jsonl && ok "prog_torch_$p: resumed run = uninterrupted run, bit for bit" ||
            fail "prog_torch_$p histories"
        "$py" "$prog" --verify b >/dev/null || fail "prog_torch_$p --verify of a whole checkpoint"
        # a torn newest file (what a kill in the middle of torch.save leaves)
        head -c 20000 b/step_12.pt >b/cut && mv b/cut b/step_12.pt
        "$py" "$prog" --verify b >/dev/null 2>&1 && fail "prog_torch_$p --verify passed a torn step_12.pt"
        CKH_CKPT_DIR=$d/b "$py" "$prog" --steps 16 >/dev/null 2>err
        expect_torn "prog_torch_$p" err $? step_12.pt
        [ "$p" = atomic ] && { [ "$(cat a/latest)" = step_12.pt ] || fail "prog_torch_atomic: latest holds $(cat a/latest)"; }
    done
    d=$work/ddp && mkdir -p "$d" && cd "$d" || exit 1
    port=$((20000 + $$ % 20000))
    ddp() { # ddp RESULT_PREFIX CKPT ARGS...: both ranks, exit 0 only if both do
        local pre=$1 ck=$2
        shift 2
        port=$((port + 1))
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=1 CKH_CKPT_DIR=$ck \
            CKH_RESULT=$pre.1.jsonl "$py" "$progs/prog_ddp_gloo.py" "$@" >/dev/null &
        local p1=$!
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=0 CKH_CKPT_DIR=$ck \
            CKH_RESULT=$pre.0.jsonl "$py" "$progs/prog_ddp_gloo.py" "$@" >/dev/null
        local s0=$?
        wait "$p1"
        local s1=$?
        [ $s0 -eq 0 ] && [ $s1 -eq 0 ]
    }
    ddp a a --steps 6 && ddp a a && ddp b b || fail "prog_ddp_gloo runs"
    for r in 0 1; do
        grep -q '"kind":"resume","step":4' "a.$r.jsonl" || fail "prog_ddp_gloo rank $r: no resume record"
        same_history "a.$r.jsonl" "b.$r.jsonl" && ok "prog_ddp_gloo rank $r: resumed = uninterrupted, bit for bit" ||
            fail "prog_ddp_gloo rank $r histories"
    done
    [ "$(ls a)" = "$(printf 'latest\nstep_12.pt\nstep_8.pt')" ] || fail "prog_ddp_gloo: checkpoints $(ls a | tr '\n' ' ')"
fi

# ---- the verdicts of the library's expected failures (needs CKH and FUSE) ----
# Each scenario of scenarios/programs/ that expects a failure, run without
# its expect section, must fail with this verdict (an extended regex after
# the scenario's name): the expectation is not vacuous.
declare -A verdict=(
    [torch-bug-optimizer-not-restored]='resume-equivalence: step 5: weights, optim of rank_0 diverged first'
    [torch-direct-kill-mid-write]='outcome: run [0-9]+: rank_0 exited with status [0-9]+; its last output: .+; expected outcome pass: did not hold; the job ended job-fails'
    [c-saver-unsafe-kill-mid-write]='outcome: run 2: rank_0 exited with status 1; its last output: prog_saver: cannot resume: .+; expected outcome pass: did not hold; the job ended job-fails'
    [hang]='hang: run 1 hung \(time limit reached\)'
    [shell-step-folder-race]='outcome: run 1: rank_1 exited with status [0-9]+; its last output: .+step_1/shard_1: .+; expected outcome pass: did not hold; the job ended job-fails'
    [torch-direct-explore]='explore: [0-9]+ of [0-9]+ crash states fail verify; the smallest, state [0-9]+: power loss after'
    [shell-multi-no-commit]='explore: [0-9]+ of [0-9]+ crash states fail verify; the smallest, state [0-9]+: power loss of every node .+published before every shard was durable'
    [shell-multi-stale-marker]='explore: [0-9]+ of [0-9]+ crash states fail verify; the smallest, state [0-9]+: .+\(stale marker\)'
    [shell-multi-dcp-swap]='explore: [0-9]+ of [0-9]+ crash states fail verify; the smallest, state [0-9]+: .+\(metadata swap\)'
    [shell-multi-rank0-mkdir]='explore: the fault-free run of the job fails: rank_1 exited with status [0-9]+; its last output: .+Directory nonexistent'
    [shell-multi-step-folder-race]='explore: 1 of 1 orders of the nodes. operations fail; the first, order 1: rank_1.s [a-z]+ /step_1[^ ]* before rank_0.s mkdir /step_1 .+Directory nonexistent'
    [s3-boto3-naive-kill-between-shards]='resume-equivalence: step 4: x, x0 of rank_0 diverged first'
    [s3-retention-before-commit]='retention: run 1, step 6: DeleteObject #15 of rank_0 removed train/ckpt/step_000003/shard_0 of the newest complete checkpoint'
    [s3-list-stale-manifest]='resume-equivalence: step 7: x of rank_0 diverged first'
    [s3-torch-naive-kill-between-shards]='resume-equivalence: step 4: weights, optim, loss of rank_0 diverged first \(rng equal\)'
    [s3-torch-naive-slowdown-shard]='resume-equivalence: step 7: weights, optim of rank_0 diverged first \(rng, loss equal\)'
    [s3-torch-multi-naive-kill-rank1]='resume-equivalence: step 7: weights of rank_0, optim of rank_0, weights of rank_1, optim of rank_1, rng of rank_1, loss of rank_1 diverged first'
    [s3-multipart-naive-kill-before-complete]='resume-equivalence: step 7: table of rank_0 diverged first \(weights, optim, rng, loss equal\)'
    [s3-explore-naive]='explore: [0-9]+ of [0-9]+ crash states fail restart; the smallest, state [0-9]+: after request [0-9]+ of [0-9]+ \(rank_0 PutObject train/ckpt/shard_[0-9]\); .+: resume-equivalence: step 4: x, x0 of rank_0 diverged first'
)
# The libcurl saver's, where it was built (libcurl found at configure time).
if [ -n "$ckh" ] && [ -x "$(dirname "$ckh")/programs/prog_s3_curl" ]; then
    verdict[s3-curl-c-naive-kill-between-shards]='resume-equivalence: step 4: x, x0 of rank_0 diverged first'
    verdict[s3-curl-c-naive-slowdown-shard]='resume-equivalence: step 7: x of rank_0 diverged first \(x0 equal\)'
    verdict[s3-explore-curl-c-naive]='explore: [0-9]+ of [0-9]+ crash states fail restart; the smallest, state [0-9]+: after request [0-9]+ of [0-9]+ \(rank_0 PutObject bkt/ckpt/shard_[0-9]\); .+: resume-equivalence: step 4: x, x0 of rank_0 diverged first'
fi
if ! want verdicts; then
    :
elif [ -z "$ckh" ] || ckh_fuse_missing || ckh_torch_missing "$py"; then
    fail "the library's expected failures: ${ckh:-no ckh given}: ${fuse_why:-} ${torch_why:-}" # part all
else
    d=$work/verdicts && mkdir -p "$d" || exit 1
    for name in "${!verdict[@]}"; do
        f=$src/scenarios/programs/$name.yaml
        [ -f "$f" ] || { fail "$f is missing"; continue; }
        # the same scenario without `expect:` (or explore's `expect: fail` and
        # `symptom:`), its
        # relative paths made absolute; a job's time limit (60 s for a torch
        # job, which a loaded machine may need) made 600 s: none of these
        # verdicts is about time, but for hang's, whose program never ends
        # (any limit gives it).
        scale=()
        [ "$name" = hang ] || scale=(-e 's/^  timeout: [0-9]*s$/  timeout: 600s/')
        sed -e '/^expect:/,$d' -e '/^  expect: fail$/d' -e '/^  symptom: /d' -e "s#\.\./\.\./#$src/#g" "${scale[@]}" "$f" >"$d/$name.yaml"
    done
    # One ckh run over them, two at a time: a verdict line each.
    out=$(cd "$d" && "$ckh" run . --jobs 2 2>&1)
    status=$?
    [ $status -eq 1 ] || fail "ckh run on the expected failures without their expect sections: exit $status, want 1"
    # A correct Adam job: its checkpoint files hold other bytes after the
    # resume (torch.save pickles the reloaded optimizer state differently),
    # so a byte comparison of them (compare.content) fails where the
    # library's default, files by name, passes (the library runs that).
    sed -e "s#\.\./\.\./#$src/#g" -e 's/^  timeout: [0-9]*s$/  timeout: 600s/' \
        "$src/scenarios/programs/torch-adam-kill-after-save.yaml" >"$d/adam-bytes.yaml"
    printf 'compare:\n  content: ["*.pt"]\n' >>"$d/adam-bytes.yaml"
    adam=$(cd "$d" && "$ckh" run adam-bytes.yaml 2>&1)
    if printf '%s\n' "$adam" | grep_q -E '^FAIL  adam-bytes: reference: final value file:step_[0-9]+\.pt of rank_0 differs'; then
        ok "Adam job with compare.content: $(printf '%s\n' "$adam" | head -1)"
    else
        fail "Adam job with compare.content: want a reference failure on a .pt file, got: $adam"
    fi
    for name in "${!verdict[@]}"; do
        line=$(printf '%s\n' "$out" | grep -m1 -E "^(PASS|FAIL|ERROR)  $name[: ]")
        if printf '%s\n' "$line" | grep_q -E "^FAIL  $name: ${verdict[$name]}"; then
            ok "$name without its expect section: $line"
        else
            fail "$name without its expect section: want FAIL  $name: ${verdict[$name]}, got: ${line:-no line}; ckh said: $out"
        fi
    done
fi

if [ "$failures" -ne 0 ]; then
    echo "test_programs: $failures failure(s)" >&2
    exit 1
fi
echo "test_programs: all passed"
