#!/usr/bin/env bash
# CTest explore_store: `ckh explore` over a job's object-store requests
# (harness/search/explore_store.c, docs/OBJECT_STORE.md "Exploring the
# requests"): the boto3 saver that overwrites its shards in place is found
# by explore alone, the saver with a manifest and a commit passes, --state K
# alone gives the same symptom, --keep writes the state's objects as files,
# the same states and findings twice (one worker and two), a multipart
# upload cut between its parts is left incomplete, the verify check reads
# the state's store, the libcurl pair passes under ckh run (where built),
# and bad input is refused with exit 2 naming what.
#   test_explore_store.sh CKH SOURCE_DIR
# Skipped (77) without boto3, or in a ckh built without the endpoint.
set -u
ckh=$1 src=$2
. "$src/tests/support/skip.sh"
ckh_test_name=explore_store
/usr/bin/python3 -c 'import boto3' 2>/dev/null || ckh_skip "boto3 cannot be imported (Debian's python3-boto3)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'job:\n  command: [/bin/true]\n  object_store: {buckets: [abc]}\n' >"$tmp/probe.yaml"
"$ckh" run "$tmp/probe.yaml" 2>&1 | grep -q "built without it" && ckh_skip "this ckh was built without the S3 endpoint"
fails=0
fail() { echo "$ckh_test_name: FAIL: $*"; fails=$((fails + 1)); }
naive=$src/scenarios/programs/s3-explore-naive.yaml
commit=$src/scenarios/programs/s3-explore-commit.yaml

# The states and findings of a report, without its timings.
stable() { sed -E -e 's/ in [0-9.]+ s( \([0-9.]+ states\/s\))?$//' -e '/^start: /d'; }

# 1. A found bug: explore alone, no fault in the scenario.
out=$("$ckh" explore "$naive" --jobs 2 2>&1)
st=$?
[ $st = 1 ] || fail "naive saver: exit $st, want 1: $out"
echo "$out" | grep -q '^store: [0-9]* requests to the object store cut at [0-9]* points$' ||
    fail "naive saver: no store line: $out"
first=$(echo "$out" | grep -m1 -E '^  state [0-9]+: ')
k=$(echo "$first" | sed -E 's/^  state ([0-9]+): .*/\1/')
symptom=$(echo "$out" | grep -A1 -m1 -E '^  state [0-9]+: ' | tail -1 | sed 's/^ *//')
case "$first" in
*"PutObject train/ckpt/shard_"*"not applied"*) ;;
*) fail "naive saver: the smallest failing state is not a cut between shards: $first" ;;
esac
case "$symptom" in
resume-equivalence:*) ;;
*) fail "naive saver: symptom is not resume-equivalence: $symptom" ;;
esac

# 2. The same states and findings again, with one worker (determinism).
out1=$("$ckh" explore "$naive" --jobs 1 2>&1)
[ "$(echo "$out" | stable)" = "$(echo "$out1" | stable)" ] ||
    fail "two explorations differ: $(diff <(echo "$out" | stable) <(echo "$out1" | stable))"

# 2b. --max-states bounds the states generated, and says where it stopped.
out=$("$ckh" explore "$naive" --max-states 3 2>&1)
echo "$out" | grep -q '^explore .*: 11 operations recorded, 11 crash points, 3 states (3 distinct), 3 checked by restart' ||
    fail "--max-states 3: $out"
echo "$out" | grep -q '^bounded: max_states 3 reached (the cuts after request 3 were not explored)$' ||
    fail "--max-states 3: no bound line: $out"

# 3. --state K alone: the same symptom.
one=$("$ckh" explore "$naive" --state "$k" 2>&1)
st=$?
[ $st = 1 ] || fail "--state $k: exit $st, want 1: $one"
echo "$one" | grep -qF "$symptom" || fail "--state $k: not the symptom '$symptom': $one"
echo "$one" | grep -q "^state $k: after request" || fail "--state $k: the state is not described: $one"

# 4. --keep DIR: the state's objects as files; `latest` still names step 3
#    while some shard already holds the second save.
"$ckh" explore "$naive" --state "$k" --keep "$tmp/kept" >"$tmp/keep.out" 2>&1
[ -f "$tmp/kept/train/ckpt/latest" ] || fail "--keep: no train/ckpt/latest: $(cat "$tmp/keep.out"; find "$tmp/kept")"
[ "$(cat "$tmp/kept/train/ckpt/latest" 2>/dev/null)" = 3 ] ||
    fail "--keep: latest is '$(cat "$tmp/kept/train/ckpt/latest" 2>/dev/null)', want 3"
n=$(ls "$tmp/kept/train/ckpt" 2>/dev/null | grep -c '^shard_')
[ "$n" = 4 ] || fail "--keep: $n shards, want 4"
grep -q "state $k's files are in $tmp/kept" "$tmp/keep.out" || fail "--keep: not said: $(cat "$tmp/keep.out")"
# ... never into a folder that holds something
out=$("$ckh" explore "$naive" --state "$k" --keep "$tmp/kept" 2>&1)
st=$?
[ $st = 2 ] || fail "--keep into a full folder: exit $st, want 2"
echo "$out" | grep -q "the folder is not empty" || fail "--keep into a full folder: $out"
[ -f "$tmp/kept/train/ckpt/latest" ] || fail "--keep into a full folder touched it"

# 5. The saver with a manifest and a commit passes every state; ckh run
#    gives both scenarios PASS (the naive one through explore.expect: fail).
out=$("$ckh" explore "$commit" --jobs 2 2>&1)
st=$?
[ $st = 0 ] || fail "commit saver: exit $st, want 0: $out"
echo "$out" | grep -q '^PASS: every crash state checked passes$' || fail "commit saver: $out"
out=$("$ckh" run "$naive" "$commit" 2>&1)
st=$?
[ $st = 0 ] || fail "ckh run: exit $st: $out"
[ "$(echo "$out" | grep -c '^PASS ')" = 2 ] || fail "ckh run: not two PASS: $out"

# 6. A multipart upload cut between its parts stays open and incomplete,
#    and the commit saver resumes from it.
sed -e 's/--steps, "6"\]/--steps, "3", --big-mib, "6"]/' -e 's|\.\./\.\./tests/|'"$src"'/tests/|' \
    "$commit" >"$tmp/mpu.yaml"
out=$("$ckh" explore "$tmp/mpu.yaml" --state 3 2>&1)
st=$?
[ $st = 0 ] || fail "multipart: exit $st: $out"
echo "$out" | grep -q '^state 3: after request 3 .*UploadPart train/ckpt/step_000003/big); request 4 .*UploadPart.*1 multipart upload left incomplete$' ||
    fail "multipart: state 3 is not a cut between parts: $out"

# 7. The verify check runs against the state's store: a verify that needs
#    ckpt/latest fails at every cut before the first commit, and only there.
if command -v curl >/dev/null; then
    sed -e 's|\.\./\.\./tests/|'"$src"'/tests/|' -e 's/  check: restart/  check: verify/' "$commit" >"$tmp/vf.yaml"
    cat >>"$tmp/vf.yaml" <<'YAML'
verify: [/bin/sh, -c, 'curl -sf "$AWS_ENDPOINT_URL/$CKH_S3_BUCKET/ckpt/latest" || { echo "no ckpt/latest"; exit 1; }']
YAML
    out=$("$ckh" explore "$tmp/vf.yaml" --jobs 2 2>&1)
    st=$?
    [ $st = 1 ] || fail "verify: exit $st, want 1: $out"
    firstput=$(echo "$out" | grep -m1 -oE 'checked by verify')
    [ "$firstput" = "checked by verify" ] || fail "verify: not checked by verify: $out"
    echo "$out" | grep -q '^  state 1: before the first request (rank_0 GetObject train/ckpt/latest, not applied)$' ||
        fail "verify: state 1 does not fail: $out"
    echo "$out" | grep -q 'exited with status 1: no ckpt/latest$' || fail "verify: not its symptom: $out"
    # every failing state is a cut before `latest` was first written, and one cut after it passes
    n=$(echo "$out" | sed -nE 's/^FAIL: ([0-9]+) crash states failed.*/\1/p')
    k=$(echo "$out" | sed -nE 's/^explore .*: [0-9]+ operations recorded, [0-9]+ crash points, [0-9]+ states \(([0-9]+) distinct\).*/\1/p')
    [ -n "$n" ] && [ -n "$k" ] && [ "$n" -lt "$k" ] || fail "verify: $n of $k states fail, want some but not all: $out"
    one=$("$ckh" explore "$tmp/vf.yaml" --state "$n" 2>&1)
    echo "$one" | grep -q "^state $n: .*request $((n + 1)) (rank_0 PutObject train/ckpt/latest) not applied" ||
        fail "verify: the last failing state is not the cut before the first commit: $one"
fi

# 8. The libcurl saver's pair, where it was built: ckh run gives both PASS.
if [ -x "$(dirname "$ckh")/programs/prog_s3_curl" ]; then
    out=$("$ckh" run "$src/scenarios/programs/s3-explore-curl-c-naive.yaml" \
          "$src/scenarios/programs/s3-explore-curl-c-commit.yaml" 2>&1)
    st=$?
    [ $st = 0 ] && [ "$(echo "$out" | grep -c '^PASS ')" = 2 ] || fail "the libcurl pair: exit $st: $out"
fi

# 9. A job with files and a store: its requests are explored, the files
#    kept as the recorded run left them, and the report says so.
if command -v curl >/dev/null; then
    cat >"$tmp/files.yaml" <<YAML
job:
  command: [/bin/sh, -c, 'echo x > "\$CKH_CKPT_DIR/f" && exec /bin/sh $src/tests/programs/prog_s3_curl.sh 3']
  timeout: 30s
  object_store: {buckets: [bkt]}
restart:
  max_restarts: 1
YAML
    out=$("$ckh" explore "$tmp/files.yaml" 2>&1)
    st=$?
    [ $st = 0 ] || fail "files and a store: exit $st: $out"
    echo "$out" | grep -q '^store: 7 requests to the object store cut at 7 points; the files are as the recorded run left them at its end in every state$' ||
        fail "files and a store: no store line saying so: $out"
fi

# 10. --keep of keys a file name cannot hold as they are: "." and '%' escaped.
if command -v curl >/dev/null; then
    cat >"$tmp/odd.yaml" <<YAML
job:
  command: [/bin/sh, -c, 'curl -sf --path-as-is -X PUT --data-binary a "\$AWS_ENDPOINT_URL/bkt/odd/./x" >/dev/null && curl -sf -X PUT --data-binary b "\$AWS_ENDPOINT_URL/bkt/odd/%2541" >/dev/null && exec /bin/sh $src/tests/programs/prog_s3_curl.sh 1']
  timeout: 30s
  object_store: {buckets: [bkt]}
restart:
  max_restarts: 1
YAML
    "$ckh" explore "$tmp/odd.yaml" --state 5 --keep "$tmp/odd" >"$tmp/odd.out" 2>&1 || fail "odd keys: $(cat "$tmp/odd.out")"
    [ "$(cat "$tmp/odd/bkt/odd/%2E/x" 2>/dev/null)" = a ] && [ "$(cat "$tmp/odd/bkt/odd/%2541" 2>/dev/null)" = b ] ||
        fail "odd keys: $(cd "$tmp/odd" 2>/dev/null && find . -type f)"
fi

# 11. Bad input: exit 2, naming what.
expect_bad() { # WHAT PATTERN ARGS...
    local what=$1 pat=$2
    shift 2
    out=$("$ckh" explore "$@" 2>&1)
    st=$?
    [ $st = 2 ] || fail "$what: exit $st, want 2: $out"
    echo "$out" | grep -q -- "$pat" || fail "$what: no '$pat' in: $out"
}
expect_bad "a state past the last" "this run has [0-9]* crash states" "$naive" --state 9999
expect_bad "--order" "--order 1: this job's states are cuts of its object store's requests" "$naive" --order 1
expect_bad "--keep without --state" "--keep needs --state K" "$naive" --keep "$tmp/k2"
printf 'job:\n  command: [/usr/bin/python3, %s/tests/programs/prog_py_saver.py]\n  object_store: {buckets: [abc]}\n' \
    "$src" >"$tmp/none.yaml"
expect_bad "a job that sends no request" "sent no request to job.object_store's endpoint" "$tmp/none.yaml"
cp "$naive" "$tmp/faulted.yaml"
sed -i 's|\.\./\.\./tests/|'"$src"'/tests/|' "$tmp/faulted.yaml"
printf 'faults:\n  - on: {node: rank_0, op: s3_put, nth: 2}\n    do: kill\n' >>"$tmp/faulted.yaml"
expect_bad "a scenario with faults" "faulted.yaml:[0-9]*:[0-9]*: 'explore' makes its own crashes" "$tmp/faulted.yaml"

[ $fails = 0 ] || exit 1
echo "$ckh_test_name: ok"
