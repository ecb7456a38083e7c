#!/usr/bin/env bash
# The fixed checkpoint path of command jobs (harness/exec/command_ns.c;
# docs/SCENARIOS.md, "Command jobs"): each node's processes run in a mount
# namespace of their own where their checkpoint disk is at
# job.checkpoint_mount (default /ckh/ckpt).
#   - the library's absolute-symlink saver
#     (scenarios/programs/shell-absolute-latest-link.yaml, the program
#     tests/programs/prog_abs_link.sh) passes a kill-and-resume run with
#     verify reading through the link and the link and its manifest
#     compared byte for byte, and a fault-free run; CKH_CKPT_DIR is
#     /ckh/ckpt; ckh says nothing about namespaces;
#   - without a namespace (CKH_NO_NAMESPACE=1) ckh says so in one line, the
#     same scenario fails on the manifest's bytes (the failure the fixed
#     path removes), and the link alone still passes, compared relative
#     to the disk;
#   - two nodes with node-local disks each see their own disk at the
#     same path; on a shared disk they see each other's files;
#   - job.checkpoint_mount names another path (created, left empty), the
#     disk's root is there when checkpoint_dir lies below it; a bad path
#     is refused naming its line (exit 2), and so is the key on a
#     simulated job;
#   - ckh explore, warm and cold starts, gives the program the same path;
#   - the user-namespace route (CKH_USER_NAMESPACE=1, the one ckh without
#     CAP_SYS_ADMIN takes) passes the library scenario, the program in a
#     user namespace of its own; as root without it, in ckh's.
# Where this machine gives no namespace at all (no CAP_SYS_ADMIN, no user
# namespaces) only the fallback and the bad input are checked.
# Usage: tests/test_command_ns.sh CKH SOURCE_DIR
set -uo pipefail
ckh=$(realpath "${1:?usage: test_command_ns.sh CKH SOURCE_DIR}")
src=$(realpath "${2:?usage: test_command_ns.sh CKH SOURCE_DIR}")
ckh_test_name=test_command_ns
. "$src/tests/support/skip.sh"
ckh_fuse_missing && ckh_skip "$fuse_why"
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-ns.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR" "$work/scn" || exit 1
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
prog=$src/tests/programs/prog_abs_link.sh
lib=$src/scenarios/programs/shell-absolute-latest-link.yaml
line="ckh: no private mount namespace for command jobs"
cd "$work/scn" || exit 1

# run NAME FILE [VAR=VALUE...]: ckh run FILE; its exit status in $st, what
# it printed in NAME.out
run() {
    local name=$1 file=$2
    shift 2
    env "$@" "$ckh" run "$file" >"$name.out" 2>&1
    st=$?
}

# Namespaces here? (root, or user namespaces): ckh decides and says.
run probe "$lib"
if grep -qF "$line" probe.out; then
    ns=false
    echo "no mount namespace here: $(grep -F "$line" probe.out)"
else
    ns=true
fi

cat >fault-free.yaml <<EOF
description: fault-free, the program checks CKH_CKPT_DIR
job:
  command: [/bin/sh, $prog, "4", --expect-dir, /ckh/ckpt]
  timeout: 30s
verify: [/bin/sh, $prog, --verify]
compare:
  content: [latest, manifest]
expect:
  outcome: pass
EOF
if $ns; then
    # ---- the library scenario: kill-and-resume, verify, content compared ----
    [ $st -eq 0 ] && grep -q '^PASS  shell-absolute-latest-link' probe.out &&
        ok "absolute latest link, killed after a save: passes with verify and the manifest compared" ||
        fail "absolute latest link (exit $st): $(cat probe.out)"
    # ---- the same job without faults, and killed, with the path checked ----
    run ff fault-free.yaml
    [ $st -eq 0 ] && ! grep -qF "$line" ff.out && ok "fault-free: CKH_CKPT_DIR is /ckh/ckpt, passes" ||
        fail "fault-free (exit $st): $(cat ff.out)"
    sed -e 's|"4", --expect-dir|"5", --expect-dir|' \
        -e 's|^verify:|faults:\n  - on: {node: rank_0, op: rename, path: /latest.tmp, nth: 2}\n    do: kill\n    when: after\nrestart: {max_restarts: 1}\nverify:|' \
        fault-free.yaml >kill.yaml
    run kill kill.yaml
    [ $st -eq 0 ] && grep -q '(2 runs' kill.out && ok "kill and resume through the link: passes in 2 runs" ||
        fail "kill and resume (exit $st): $(cat kill.out)"
fi

# ---- the fallback: said once, the manifest differs, the link alone passes ----
run fb "$lib" CKH_NO_NAMESPACE=1
n=$(grep -cF "$line (CKH_NO_NAMESPACE is set)" fb.out)
[ "$n" -eq 1 ] && ok "the fallback is said once: $(grep -F "$line" fb.out)" ||
    fail "the fallback line appears $n times: $(cat fb.out)"
[ $st -eq 1 ] && grep -qF 'file:manifest of rank_0 differs' fb.out &&
    ok "without the fixed path the manifest's bytes differ (what the namespace fixes)" ||
    fail "the library scenario without a namespace (exit $st): $(cat fb.out)"
sed -e '/^verify:/d' -e '/^compare:/,/^  content:/d' -e "s|\.\./\.\./tests/programs/prog_abs_link.sh|$prog|" \
    "$lib" >link-only.yaml
run fbl link-only.yaml CKH_NO_NAMESPACE=1
[ $st -eq 0 ] && grep -qF "$line" fbl.out && grep -q '(2 runs' fbl.out &&
    ok "without the fixed path the absolute link alone passes a kill and resume, compared relative to the disk" ||
    fail "link only, no namespace (exit $st): $(cat fbl.out)"
# Said once per `ckh run`, not once per scenario or worker.
cp "$lib" second.yaml
sed -i "s|\.\./\.\./tests/programs/prog_abs_link.sh|$prog|g" second.yaml
CKH_NO_NAMESPACE=1 "$ckh" run -j 2 link-only.yaml second.yaml >two.out 2>&1
n=$(grep -cF "$line" two.out)
[ "$n" -eq 1 ] && ok "two scenarios on two workers: the fallback is said once" ||
    fail "two scenarios on two workers: the fallback line appears $n times: $(cat two.out)"

if $ns; then
    # ---- node-local disks: each node sees its own at the same path ----
    cat >local.yaml <<EOF
description: two nodes, each its own disk at /ckh/ckpt
job:
  command: [/bin/sh, $prog, "3", --expect-dir, /ckh/ckpt, --own-disk]
  nodes: 2
  timeout: 30s
  disks:
    - {name: local, mount: /, shared: false}
compare:
  content: [latest, manifest]
expect:
  outcome: pass
EOF
    run local local.yaml
    [ $st -eq 0 ] && ok "node-local disks: each node sees its own disk at /ckh/ckpt" ||
        fail "node-local disks (exit $st): $(cat local.out)"
    # The check can fail: on one shared disk rank_1 sees rank_0's claim.
    sed -e 's/shared: false/shared: true/' -e '/^expect:/,$d' \
        -e "s|^  command: \(.*\)\]\$|  command:\n    rank_1: \1, --wait-for, rank_0]\n    default: \1]|" local.yaml >shared.yaml
    run shared shared.yaml
    grep -qF 'not its own disk' shared.out && ok "a shared disk: a node sees the other's claim" ||
        fail "shared disk (exit $st): $(cat shared.out)"

    # ---- job.checkpoint_mount ----
    sed -e "s|--expect-dir, /ckh/ckpt|--expect-dir, $work/fixed/ckpt|" \
        -e "s|^  timeout: 30s|  timeout: 30s\n  checkpoint_mount: $work/fixed/ckpt|" fault-free.yaml >custom.yaml
    run custom custom.yaml
    [ $st -eq 0 ] && [ -d "$work/fixed/ckpt" ] && [ -z "$(ls -A "$work/fixed/ckpt")" ] &&
        ok "checkpoint_mount $work/fixed/ckpt: created, seen by the program, empty afterwards" ||
        fail "checkpoint_mount (exit $st): $(cat custom.out); $(ls -A "$work/fixed/ckpt" 2>&1)"
    # A disk mounted at /data with checkpoint_dir /data/ckpt: the disk's
    # root is at checkpoint_mount, CKH_CKPT_DIR below it.
    cat >subdir.yaml <<EOF
job:
  command: [/bin/sh, $prog, "3", --expect-dir, /ckh/ckpt/ckpt]
  timeout: 30s
  checkpoint_dir: /data/ckpt
  disks:
    - {name: data, mount: /data}
compare:
  content: [latest, manifest]
EOF
    run subdir subdir.yaml
    [ $st -eq 0 ] && ok "checkpoint_dir /data/ckpt on a disk at /data: CKH_CKPT_DIR is /ckh/ckpt/ckpt" ||
        fail "checkpoint_dir below the disk's root (exit $st): $(cat subdir.out)"
fi

# ---- the user-namespace route (ckh without CAP_SYS_ADMIN takes it) ----
if $ns; then
    # whoami.sh: exit 5 unless the program's user namespace is ckh's
    # ($OUTER) or not, as $WANT says; 6 unless CKH_CKPT_DIR is /ckh/ckpt.
    cat >whoami.sh <<'SH'
u=$(readlink /proc/self/ns/user)
if { [ "$u" = "$OUTER" ] && [ "$WANT" = other ]; } || { [ "$u" != "$OUTER" ] && [ "$WANT" = same ]; }; then
    echo "user namespace $u, ckh's $OUTER, wanted $WANT" >&2
    exit 5
fi
[ "$CKH_CKPT_DIR" = /ckh/ckpt ] && [ -d "$CKH_CKPT_DIR" ] || exit 6
printf '{"kind":"final","steps":0}\n' >>"$CKH_RESULT"
SH
    cat >userns.yaml <<EOF
job:
  command: [/bin/sh, whoami.sh]
  env: {OUTER: "$(readlink /proc/self/ns/user)", WANT: other}
  timeout: 30s
EOF
    sed 's/WANT: other/WANT: same/' userns.yaml >mountns.yaml
    if [ "$(id -u)" -eq 0 ]; then
        run mountns mountns.yaml
        [ $st -eq 0 ] && ok "as root, a mount namespace in ckh's own user namespace" ||
            fail "mount namespace as root (exit $st): $(cat mountns.out)"
    fi
    run userns userns.yaml CKH_USER_NAMESPACE=1
    if grep -qF "$line" userns.out; then
        ok "no user namespaces here (that route is not checked): $(grep -F "$line" userns.out)"
    else
        [ $st -eq 0 ] && ok "CKH_USER_NAMESPACE=1: the program runs in a user namespace of its own, at /ckh/ckpt" ||
            fail "user namespace (exit $st): $(cat userns.out)"
        run userns-lib "$lib" CKH_USER_NAMESPACE=1
        [ $st -eq 0 ] && ok "CKH_USER_NAMESPACE=1: the absolute-link saver passes its kill and resume" ||
            fail "the library scenario in a user namespace (exit $st): $(cat userns-lib.out)"
    fi
fi

# ---- bad input: named with its line and column, exit 2 ----
for bad in / ckh/ckpt /ckh/../etc /ckh/ckpt/ /ckh//ckpt /ckh/./ckpt; do
    printf 'job:\n  command: [/bin/true]\n  checkpoint_mount: "%s"\n' "$bad" >bad.yaml
    run bad bad.yaml
    [ $st -eq 2 ] && grep -qF "bad.yaml:3:21: 'job.checkpoint_mount' expects an absolute folder path" bad.out &&
        ok "checkpoint_mount '$bad' is refused: $(grep -m1 checkpoint_mount bad.out)" ||
        fail "checkpoint_mount '$bad' (exit $st): $(cat bad.out)"
done
printf 'job:\n  workload: ddp-train\n  checkpoint_mount: /ckh/ckpt\n' >sim.yaml
run sim sim.yaml
[ $st -eq 2 ] && grep -qF "'job.checkpoint_mount' applies to command jobs only" sim.out &&
    ok "checkpoint_mount on a simulated job is refused" ||
    fail "checkpoint_mount on a simulated job (exit $st): $(cat sim.out)"

# ---- ckh explore: warm and cold starts see the same path ----
py=/usr/bin/python3
if $ns && [ -x "$py" ]; then
    cat >prog.py <<'PY'
import os, sys
d = os.environ["CKH_CKPT_DIR"]
if d != "/ckh/ckpt" or not os.path.ismount(d):
    print("CKH_CKPT_DIR is %s (a mount point: %s)" % (d, os.path.ismount(d)))
    sys.exit(3)
if sys.argv[1:] == ["--verify"]:
    ok = not os.path.lexists(d + "/latest") or os.path.exists(d + "/latest/state")
    print("latest leads to a whole step" if ok else "latest leads nowhere")
    sys.exit(0 if ok else 1)
def sync(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
os.makedirs(d + "/step_1", exist_ok=True)
with open(d + "/step_1/state", "w") as f:
    f.write("1\n")
    f.flush()
    os.fsync(f.fileno())
sync(d + "/step_1")
sync(d)
if os.path.lexists(d + "/latest.tmp"):
    os.unlink(d + "/latest.tmp")
os.symlink(d + "/step_1", d + "/latest.tmp")
os.rename(d + "/latest.tmp", d + "/latest")
sync(d)
with open(os.environ["CKH_RESULT"], "a") as r:
    r.write('{"kind":"step","step":1,"digests":{"s":"%016x"}}\n{"kind":"final","steps":1,"digest":"%016x"}\n' % (1, 1))
PY
    cat >explore.yaml <<EOF
job:
  command: [$py, prog.py]
  timeout: 60s
verify: [$py, prog.py, --verify]
EOF
    for start in cold warm; do
        "$ckh" explore explore.yaml --start $start >explore.$start.out 2>&1
        st=$?
        [ $st -eq 0 ] && grep -q '^PASS' explore.$start.out && grep -q "^start: $start" explore.$start.out &&
            ok "explore, $start starts: the program sees its disk at /ckh/ckpt ($(grep '^start' explore.$start.out))" ||
            fail "explore --start $start (exit $st): $(cat explore.$start.out)"
    done
    # The launcher's started process makes a user namespace too (ckh_warm.py).
    CKH_USER_NAMESPACE=1 "$ckh" explore explore.yaml --start warm >explore.user.out 2>&1
    st=$?
    if grep -qF "$line" explore.user.out; then
        ok "explore in a user namespace: none here ($(grep -F "$line" explore.user.out))"
    else
        [ $st -eq 0 ] && grep -q '^PASS' explore.user.out && grep -q '^start: warm' explore.user.out &&
            ok "explore, warm starts in user namespaces: the program sees its disk at /ckh/ckpt" ||
            fail "explore --start warm, CKH_USER_NAMESPACE=1 (exit $st): $(cat explore.user.out)"
    fi
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "all passed"
