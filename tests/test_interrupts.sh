#!/usr/bin/env bash
# Interrupts leave nothing (docs/CLI.md, "Signals"): ckh gets SIGINT or
# SIGTERM at a random point of each mode, and afterwards
#   - it exited with 128 + N (130, 143) and said so;
#   - no process of the run is left: none carries the run's marker in its
#     environment (CKH_INTR_MARK, inherited by every process ckh starts:
#     workers, programs, mpirun, ranks) nor is in the run's session (ckh
#     runs as a session leader, setsid);
#   - no ckhfs mount is left under the test's folder (/proc/self/mountinfo);
#   - the TMPDIR the test gives ckh is empty (no run folder, no cache);
#   - `ckh run` wrote the reports it was asked for (a random subset of
#     --json, --junit, --html) and no other: every scenario listed, the
#     finished ones with their verdict (as many as it printed), the others
#     not run, the signal named (JSON "interrupted": true, JUnit skipped,
#     the HTML banner).
#
# Parts (a CTest entry each, skipped with 77 where what they need is
# missing):
#   sim      ckh run of simulated scenarios (--jobs 2)
#   cmd      ckh run of command jobs over ckhfs (a C saver, and a program
#            that never ends): FUSE
#   real     ckh run --platform real under MPI (4 ranks, and a machine
#            crash over ckhfs): mpirun and FUSE
#   explore  ckh explore of a program, --jobs 2: FUSE
#   fuzz     ckh fuzz --jobs 2
#
# The random points are event-based (k results printed, a mount or an
# mpirun present, the explorer's checks started) plus a random delay; the
# seed is printed, and CKH_INTR_SEED=S replays the same choices. Nothing
# is timed: conditions are waited for with generous deadlines, and each
# run holds a scenario far longer than the wait, so that the signal lands
# while ckh runs. Should ckh end on its own before the signal (its summary
# printed, a normal exit status), the trial is repeated; three times in a
# row is a failure (the signal was not acted on).
#
# Usage: tests/test_interrupts.sh PART CKH SOURCE_DIR PROG_SAVER PYTHON
set -uo pipefail
part=${1:?usage: test_interrupts.sh PART CKH SOURCE_DIR PROG_SAVER PYTHON}
ckh=$(realpath "${2:?ckh}")
src=$(realpath "${3:?source dir}")
CKH_PROG_SAVER=$(realpath "${4:?prog_saver}") || exit 2
export CKH_PROG_SAVER
py=${5:?python}
ckh_test_name=test_interrupts_$part
. "$src/tests/support/skip.sh"
command -v setsid >/dev/null || ckh_skip "setsid (util-linux) is not installed"
"$py" -c 'import json, xml.etree.ElementTree' 2>/dev/null || ckh_skip "$py cannot read the reports (python3)"
case $part in
cmd | explore) ckh_fuse_missing && ckh_skip "$fuse_why" ;;
real)
    ckh_fuse_missing && ckh_skip "$fuse_why"
    command -v mpirun >/dev/null || ckh_skip "no mpirun on PATH (the real platform runs its ranks under MPI)"
    ls "$(dirname "$ckh")"/ckh-rank-* >/dev/null 2>&1 || ckh_skip "ckh was built without an MPI (no ckh-rank-*)"
    ;;
sim | fuzz) ;;
*) echo "test_interrupts.sh: unknown part '$part'" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-intr.XXXXXX") || exit 1
cleanup() {
    # Whatever a failed trial left: the test's own mounts and processes only.
    grep -F " $work/" /proc/self/mountinfo 2>/dev/null | awk '{print $5}' |
        while read -r m; do fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
tmp=$work/tmp # the TMPDIR ckh gets: empty after every trial
mkdir -p "$tmp" || exit 1
cd "$work" || exit 1

seed=${CKH_INTR_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "seed $seed (CKH_INTR_SEED=$seed replays these choices)"
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
rnd() { echo $(( $1 + RANDOM % ($2 - $1 + 1) )); } # LO HI

# ---- what a run may leave ----

# Live processes of the trial, one line each (pid, session, state,
# command): those carrying the mark in their environment or in the session.
leftovers() { # MARK SESSION
    local marked
    marked=$(grep -lzx "CKH_INTR_MARK=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')
    ps -eo pid=,sid=,stat=,args= |
        awk -v sid="$2" -v marked=" $marked " '$3 !~ /^Z/ && ($2 == sid || index(marked, " " $1 " ")) {print}' |
        cut -c1-200
}

mounts_left() { grep -F " $work/" /proc/self/mountinfo | awk '{print $5}'; }

# Waits until "$@" holds (true), the process $pid ended (false), or the
# deadline (false).
pid=
wait_for() {
    local until=$((SECONDS + 300))
    while [ $SECONDS -lt $until ]; do
        "$@" && return 0
        alive || return 1
        sleep 0.05
    done
    return 1
}
alive() {
    local s
    s=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    s=${s##*) }
    [ "${s%% *}" != Z ]
}
results_printed() { grep -cE '^(PASS|FAIL|ERROR) ' "$work/out" 2>/dev/null || true; }
have_results() { [ "$(results_printed)" -ge "$1" ]; }
have_mount() { [ -n "$(mounts_left)" ]; }
have_mpirun() { leftovers "$mark" "$pid" | grep -qE 'mpirun|mpiexec'; }
checks_started() { compgen -G "$tmp/ckh-*/w[0-9]*" >/dev/null; }

# ---- one trial ----

# trial NAME SIG COMPLETE-PATTERN CONDITION... -- CKH-ARGS...: runs ckh
# with CKH-ARGS, waits for CONDITION, sleeps a random while, sends SIG,
# then checks what is left. Returns 2 when ckh ended on its own first
# (its output matches COMPLETE-PATTERN and its status is not the
# signal's): the caller repeats the trial.
trial() {
    local name=$1 sig=$2 done_re=$3
    shift 3
    local cond=()
    while [ "$1" != -- ]; do cond+=("$1"); shift; done
    shift
    local delay_ms
    delay_ms=$(rnd 0 "${max_delay_ms:-300}")
    mark=intr-$seed-$RANDOM-$name
    rm -rf "${tmp:?}"/* "$work/out" "$work/err"
    CKH_INTR_MARK=$mark TMPDIR=$tmp setsid "$ckh" "$@" >"$work/out" 2>"$work/err" &
    pid=$!
    local what="$name: SIG$sig after [${cond[*]}] + ${delay_ms} ms"
    if [ ${#cond[@]} -gt 0 ]; then wait_for "${cond[@]}"; fi
    sleep "$(printf '0.%03d' "$delay_ms")"
    local sent=0
    alive && kill -s "$sig" "$pid" 2>/dev/null && sent=1
    # It stops at once, whatever runs: a program that never ends included.
    # The deadline only bounds the wait on a loaded machine.
    local until=$((SECONDS + 120))
    while alive && [ $SECONDS -lt $until ]; do sleep 0.1; done
    if alive; then
        fail "$name: SIG$sig: ckh did not stop within 120 s: $(leftovers "$mark" "$pid" | head -5)"
        kill -KILL -- -"$pid" 2>/dev/null
    fi
    wait "$pid"
    local st=$? want=$((128 + $(kill -l "$sig")))
    if [ $st -ne $want ] && grep -qE "$done_re" "$work/out" "$work/err"; then
        echo "note: $what: ckh ended on its own first (status $st); again"
        return 2
    fi
    local bad=0
    if [ $sent -ne 1 ] || [ $st -ne $want ]; then
        fail "$what: exit status $st, expected $want (signal sent: $sent); stderr: $(tail -3 "$work/err")"
        bad=1
    elif ! grep -q "interrupted by signal $((want - 128))" "$work/err" "$work/out"; then
        fail "$what: no 'interrupted by signal' message: $(tail -3 "$work/err")"
        bad=1
    fi
    local procs
    procs=$(leftovers "$mark" "$pid")
    [ -z "$procs" ] || { fail "$what: processes left: $procs"; bad=1; }
    local m
    m=$(mounts_left)
    [ -z "$m" ] || { fail "$what: mounts left: $m"; bad=1; }
    local f
    f=$(ls -A "$tmp")
    [ -z "$f" ] || { fail "$what: left in TMPDIR: $f"; bad=1; }
    if [ -n "${reports:-}" ] && ! check_reports "$what" "$((want - 128))"; then
        bad=1
    fi
    [ $bad -ne 0 ] || ok "$what: exit $st, nothing left${reports:+, reports ($reports) of $(results_printed) finished scenarios}"
    return 0
}

# The reports asked for ($reports: json junit html) against what ckh
# printed; scenarios: $nscn.
check_reports() { # WHAT SIGNAL
    local r
    for r in json junit html; do
        case " $reports " in
        *" $r "*) [ -s "$work/r.$r" ] || { fail "$1: no $r report"; return 1; } ;;
        *) [ ! -e "$work/r.$r" ] || { fail "$1: a $r report nobody asked for"; return 1; } ;;
        esac
    done
    local msg
    msg=$("$py" - "$work" "$2" "$nscn" "$(results_printed)" "$reports" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
work, sig, nscn, printed, asked = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split()
def check(ok, what):
    if not ok:
        print(what)
        sys.exit(1)
# A signal while the files were being parsed leaves no list: 0 scenarios.
if "json" in asked:
    d = json.load(open(work + "/r.json"))
    check(d["interrupted"] is True and d["signal"] == sig, "json: interrupted/signal: %r %r" % (d["interrupted"], d["signal"]))
    sc = d["scenarios"]
    check(len(sc) in (0, nscn), "json: %d scenarios, expected %d" % (len(sc), nscn))
    fin = [s for s in sc if s["status"] == "finished"]
    check(all(s["verdict"] in ("pass", "fail", "error") for s in fin), "json: a finished scenario without a verdict")
    check(all(s["verdict"] == "not-run" and s["status"] in ("interrupted", "not-started") and "interrupted by signal %d" % sig in s["message"]
              for s in sc if s["status"] != "finished"), "json: a scenario not run is not marked so")
    check(len(fin) == printed, "json: %d finished, %d printed" % (len(fin), printed))
    sm = d["summary"]
    check(sm["total"] == len(sc) and sm["not_run"] == len(sc) - len(fin) and
          sm["passed"] + sm["failed"] + sm["errors"] == len(fin), "json: summary %r" % sm)
if "junit" in asked:
    root = ET.parse(work + "/r.junit").getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    skipped = [c for c in cases if c.find("skipped") is not None]
    check(len(cases) in (0, nscn), "junit: %d testcases" % len(cases))
    check(int(suite.get("skipped")) == len(skipped) and int(suite.get("tests")) == len(cases), "junit: counts")
    check(len(cases) - len(skipped) == printed, "junit: %d finished, %d printed" % (len(cases) - len(skipped), printed))
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    check(props.get("interrupted", "").startswith("signal %d " % sig), "junit: interrupted property %r" % props)
if "html" in asked:
    h = open(work + "/r.html").read()
    check('<div id="interrupted">interrupted by signal %d ' % sig in h, "html: no banner")
    n = h.count('<section class="scenario"')
    check(n in (0, nscn), "html: %d scenarios" % n)
    check(n - h.count('data-verdict="not-run"') == printed, "html: finished count")
EOF
) || { fail "$1: reports: $msg"; return 1; }
    return 0
}

# Runs trial until it is not repeated (3 tries at most).
trial_until() {
    local i rc
    for i in 1 2 3; do
        trial "$@"
        rc=$?
        [ $rc -eq 2 ] || return 0
    done
    fail "$1: ckh ended on its own three times before SIG$2 (the signal does not stop it?)"
}

# ckh run with a random subset of the reports.
run_trial() { # NAME SIG CONDITION... -- CKH-RUN-ARGS...
    local name=$1 sig=$2
    shift 2
    reports=
    local args=() r
    for r in json junit html; do
        if [ $((RANDOM % 2)) -eq 0 ]; then
            reports="$reports $r"
            args+=("--$r" "$work/r.$r")
        fi
    done
    reports=${reports# }
    rm -f "$work"/r.json "$work"/r.junit "$work"/r.html
    local cond=()
    while [ "$1" != -- ]; do cond+=("$1"); shift; done
    shift
    trial_until "$name" "$sig" '^[0-9]+ scenarios?: ' "${cond[@]}" -- run "$@" "${args[@]}"
    reports=
}

# A random condition for a run: k results printed (k in 0..max).
results_cond() { echo "have_results $(rnd 0 "$1")"; }

signals=(INT TERM)

case $part in
sim)
    # Six scenarios of ~0.1-0.5 s and one far longer (2000 epochs), last.
    mkdir -p scn
    for i in 1 2 3 4 5 6; do
        cat >"scn/s$i.yaml" <<EOF
job:
  workload: ddp-train
  nodes: 4
  epochs: 200
  checkpoint_every: {steps: 4}
faults:
  - on: {node: rank_1, op: allreduce, epoch: 1, nth: $i}
    do: kill
EOF
    done
    sed 's/epochs: 200/epochs: 2000/' scn/s1.yaml >scn/zz-long.yaml
    nscn=7
    for sig in "${signals[@]}" "${signals[@]}"; do
        # shellcheck disable=SC2046
        run_trial sim "$sig" $(results_cond 4) -- scn --jobs 2
    done
    ;;
cmd)
    # Three C savers killed mid-write (restart, verify) and a program that
    # never ends (in flight whenever the signal comes).
    mkdir -p scn
    for i in 1 2 3; do
        cat >"scn/c$i.yaml" <<EOF
job:
  command: [/bin/sh, $src/tests/programs/prog_saver_run.sh, --files, "4"]
  timeout: 300s
faults:
  - on: {node: rank_0, op: write, nth: $((8 + i))}
    do: kill
    when: mid-write
verify: [/bin/sh, $src/tests/programs/prog_saver_run.sh, --verify]
restart:
  max_restarts: 1
EOF
    done
    cat >scn/zz-forever.yaml <<'EOF'
description: a program that writes into its checkpoint folder and never ends
job:
  command: [/bin/sh, -c, 'while :; do echo x >"$CKH_CKPT_DIR/beat"; sleep 0.2; done']
  timeout: 300s
restart:
  max_restarts: 0
EOF
    nscn=4
    for sig in "${signals[@]}" "${signals[@]}"; do
        if [ $((RANDOM % 2)) -eq 0 ]; then
            # shellcheck disable=SC2046
            run_trial cmd "$sig" $(results_cond 3) -- scn --jobs 2
        else
            run_trial cmd "$sig" have_mount -- scn --jobs 2
        fi
    done
    ;;
real)
    # Four ranks under mpirun (a rank killed, the group restarted) and a
    # machine crash over ckhfs; a long run of the first kind last.
    mkdir -p scn
    cp "$src/scenarios/real/ddp-kill-rank1-mid-epoch.yaml" scn/a-ddp.yaml
    cp "$src/scenarios/real/seed-crash-before-rename.yaml" scn/b-crash.yaml
    sed 's/epochs: 3$/epochs: 400/' scn/a-ddp.yaml >scn/zz-long.yaml
    nscn=3
    max_delay_ms=800
    # Each MPI this build and machine have (ckh-rank-X beside ckh, its
    # launcher on PATH), one picked at random per trial.
    mpis=()
    for m in openmpi mpich; do
        [ -x "$(dirname "$ckh")/ckh-rank-$m" ] || continue
        case $m in
        openmpi) command -v mpirun.openmpi >/dev/null && mpis+=(openmpi) ;;
        mpich) { command -v mpirun.mpich || command -v mpiexec.hydra; } >/dev/null && mpis+=(mpich) ;;
        esac
    done
    [ ${#mpis[@]} -gt 0 ] || ckh_skip "no MPI launcher for the rank programs ckh was built with"
    for sig in "${signals[@]}"; do
        export CKH_MPI=${mpis[$((RANDOM % ${#mpis[@]}))]}
        if [ $((RANDOM % 2)) -eq 0 ]; then
            # shellcheck disable=SC2046
            run_trial "real-$CKH_MPI" "$sig" $(results_cond 2) -- scn --platform real
        else
            run_trial "real-$CKH_MPI" "$sig" have_mpirun -- scn --platform real
        fi
    done
    ;;
explore)
    # The C saver's crash states, checked by restarting the job, two at a
    # time: the signal comes while the run is recorded, or while checks run.
    cat >safe.yaml <<EOF
job:
  command: [/bin/sh, $src/tests/programs/prog_saver_run.sh, --files, "6"]
  timeout: 300s
verify: [/bin/sh, $src/tests/programs/prog_saver_run.sh, --verify]
EOF
    # A verify that never ends: every check is in flight until job.timeout
    # (300 s), so ckh must stop the checks, not wait for them.
    sed 's|^verify: .*|verify: [/bin/sh, -c, "exec sleep 1000"]|' safe.yaml >stuck.yaml
    reports=
    for sig in "${signals[@]}" "${signals[@]}"; do
        case $((RANDOM % 3)) in
        0) cond=() ;;
        1) cond=(have_mount) ;;
        *) cond=(checks_started) ;;
        esac
        trial_until explore "$sig" '^(PASS|FAIL):' "${cond[@]}" -- explore safe.yaml --check restart --jobs 2
    done
    for sig in "${signals[@]}"; do
        trial_until explore-stuck "$sig" '^(PASS|FAIL):' checks_started -- explore stuck.yaml --check verify --jobs 2
    done
    ;;
fuzz)
    reports=
    for sig in "${signals[@]}"; do
        max_delay_ms=999
        trial_until fuzz "$sig" '^(seeds|[0-9]+ seeds)' -- fuzz --seeds 100000000 --jobs 2 --out "$work/fz"
        [ ! -e "$work/fz" ] || [ -z "$(ls -A "$work/fz")" ] || ok "fuzz: failures written to $work/fz"
    done
    ;;
esac

if [ $failures -ne 0 ]; then
    echo "test_interrupts $part: $failures failure(s) (seed $seed)"
    exit 1
fi
echo "test_interrupts $part: all passed (seed $seed)"
