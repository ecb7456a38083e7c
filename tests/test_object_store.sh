#!/usr/bin/env bash
# CTest object_store: job.object_store end to end (docs/OBJECT_STORE.md):
# its bad input refused with file:line:column and exit 2, the environment
# every node gets, the library's three object-store scenarios with their
# verdicts, faults on s3_* requests, and the crash model of a write in
# flight (kept under one seed, undone under another, the same each time).
#   test_object_store.sh CKH SOURCE_DIR [torch]
# With `torch` (CTest object_store_torch) it checks instead what the
# verdicts of the PyTorch programs' scenarios (prog_torch_s3.py; the library
# runs them) cannot show: the restart aborts the multipart upload a kill
# left open, and a conditional commit retried after its connection dropped
# meets the job's own write (412) and is accepted.
# Skipped (77) without boto3 or curl (or torch, for `torch`), or in a ckh
# built without the endpoint.
set -u
ckh=$1 src=$2 part=${3:-plain}
. "$src/tests/support/skip.sh"
ckh_test_name=object_store
[ "$part" = torch ] && ckh_test_name=object_store_torch
command -v curl >/dev/null || ckh_skip "curl is not installed"
/usr/bin/python3 -c 'import boto3' 2>/dev/null || ckh_skip "boto3 cannot be imported (Debian's python3-boto3)"
if [ "$part" = torch ]; then
    ckh_torch_missing /usr/bin/python3 && ckh_skip "$torch_why"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'job:\n  command: [/bin/true]\n  object_store: {buckets: [abc]}\n' >"$tmp/probe.yaml"
"$ckh" run "$tmp/probe.yaml" 2>&1 | grep -q "built without it" && ckh_skip "this ckh was built without the S3 endpoint"
fails=0
fail() { echo "$ckh_test_name: FAIL: $*"; fails=$((fails + 1)); }

if [ "$part" = torch ]; then
    # The kill before the second part of step 6's upload leaves it open; the
    # restart aborts it (the upload it recorded in ckpt/uploads/), once,
    # before starting step 6's upload again.
    rp=$("$ckh" replay "$src/scenarios/programs/s3-multipart-commit-kill-mid-part.yaml" 2>&1)
    echo "$rp" | grep -q "FAULT s3_part:kill_before /train/ckpt/step_000006/big.pt" || fail "no FAULT on the part: $rp"
    ops=$(echo "$rp" | grep -oE '(Create|Abort|Complete)MultipartUpload train/ckpt/step_000006/big.pt' |
          sed 's/MultipartUpload.*//' | tr '\n' ' ')
    [ "$ops" = "Create Abort Create Complete " ] || fail "step 6's uploads: want Create Abort Create Complete, got $ops"
    echo "$rp" | grep -q "DeleteObject train/ckpt/uploads/step_000006 existed -> 200" ||
        fail "the record of the aborted upload was not deleted: $rp"
    # The commit of step 6 is applied, its connection drops, boto3 retries:
    # 412 (If-None-Match: *), the object read back, the job goes on.
    rp=$("$ckh" replay "$src/scenarios/programs/s3-torch-commit-reset-after.yaml" 2>&1)
    commits=$(echo "$rp" | grep -E 'PutObject train/ckpt/step_000006/COMMIT .*if-none-match' | sed 's/^s3 #[0-9]* //')
    want=$(printf '%s\n%s' "n=0 PutObject train/ckpt/step_000006/COMMIT bytes=176 if-none-match -> 200" \
           "n=0 PutObject train/ckpt/step_000006/COMMIT bytes=176 if-none-match -> 412 PreconditionFailed")
    [ "$commits" = "$want" ] || fail "step 6's commits: want $want, got $commits"
    echo "$rp" | grep -A1 'COMMIT bytes=176 if-none-match -> 412' | grep -q 'GetObject train/ckpt/step_000006/COMMIT' ||
        fail "the saver did not read its commit back after the 412: $rp"
    [ $fails = 0 ] || exit 1
    echo "$ckh_test_name: ok"
    exit 0
fi

# expect_error FILE_TEXT LINE:COL PATTERN: ckh run refuses it with exit 2
expect_error() {
    printf '%s' "$1" >"$tmp/bad.yaml"
    out=$("$ckh" run "$tmp/bad.yaml" 2>&1)
    rc=$?
    [ $rc = 2 ] || fail "exit $rc, not 2, for: $1"
    echo "$out" | grep -qF "$tmp/bad.yaml:$2: $3" || fail "no '$tmp/bad.yaml:$2: $3' in: $out"
}
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    buckets: [ok-bucket, Bad_Name]\n' \
    4:26 "'job.object_store.buckets' expects S3 bucket names"
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    buckets: [ok-bucket, 10.0.0.1]\n' \
    4:26 "'job.object_store.buckets' expects S3 bucket names (3 to 63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit, no '..', '.-' or '-.', not an IPv4 address), got '10.0.0.1'"
expect_error $'job:\n  workload: seed-pipeline\n  object_store:\n    buckets: [abc]\n' \
    4:5 "'job.object_store' applies to command jobs"
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    consistency: strong\n' \
    4:5 "'job.object_store' needs 'buckets'"
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    buckets: [abc]\n    consistency: weak\n' \
    5:18 "'job.object_store.consistency'"
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    buckets: [abc]\n    regions: 2\n' \
    5:5 "unknown key 'regions' in 'job.object_store'"
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    buckets: [abc, abc]\n' \
    4:20 "'job.object_store.buckets' lists 'abc' twice"

# The environment: the store's AWS_* variables, none of ckh's own.
cat >"$tmp/env.yaml" <<YAML
description: every node sees the store's variables and only those
job:
  command: [/bin/sh, -c, 'test "\$AWS_ENDPOINT_URL" = "\$AWS_ENDPOINT_URL_S3" && test "\$AWS_ACCESS_KEY_ID" = ckhtestkey && test "\$AWS_DEFAULT_REGION" = us-east-1 && test -z "\${AWS_PROFILE:-}" && test "\$CKH_S3_BUCKET" = first && curl -sf "\$AWS_ENDPOINT_URL/second" >/dev/null && S3_PREFIX=\$CKH_NODE exec /bin/sh $src/tests/programs/prog_s3_curl.sh 3']
  nodes: 2
  timeout: 60s
  object_store:
    buckets: [first, second]
YAML
out=$(AWS_PROFILE=mine "$ckh" run "$tmp/env.yaml" 2>&1) || fail "the environment check failed: $out"

# The library's scenarios and their verdicts.
out=$("$ckh" run "$src/scenarios/programs/s3-boto3-naive-kill-between-shards.yaml" \
      "$src/scenarios/programs/s3-boto3-commit-kill-between-shards.yaml" \
      "$src/scenarios/programs/s3-boto3-multipart-kill-mid-upload.yaml" \
      "$src/scenarios/programs/s3-curl-kill-after-commit.yaml" 2>&1) || fail "the scenarios: $out"
echo "$out" | grep -q "4 scenarios: 4 passed" || fail "not 4 passed: $out"
echo "$out" | grep -q "naive-kill-between-shards .*detected as expected by resume-equivalence" ||
    fail "the naive saver was not caught: $out"

# The fault fired on the request it names, and the killed request never
# reached the store.
rp=$("$ckh" replay "$src/scenarios/programs/s3-boto3-naive-kill-between-shards.yaml" 2>&1)
echo "$rp" | grep -q "FAULT s3_put:kill_before /train/ckpt/shard_1" || fail "no FAULT line: $rp"
[ "$(echo "$rp" | grep -c 'PutObject train/ckpt/shard_1 ')" = 3 ] || fail "shard_1 puts: $rp"

# errno faults on requests answer S3 errors: ENOSPC a 503 SlowDown, on
# the 2nd PUT of `latest` only, which the curl program reports and dies of.
cat >"$tmp/slowdown.yaml" <<YAML
description: a throttled commit
job:
  command: [/bin/sh, $src/tests/programs/prog_s3_curl.sh, "3"]
  timeout: 60s
  object_store:
    buckets: [bkt]
faults:
  - on: {op: s3_put, path: /bkt/ckpt/latest, nth: 2}
    do: errno
    errno: ENOSPC
YAML
out=$("$ckh" run "$tmp/slowdown.yaml" 2>&1) || fail "the throttled job did not resume: $out"
rp=$("$ckh" replay "$tmp/slowdown.yaml" 2>&1)
echo "$rp" | grep -q "FAULT s3_put:errno /bkt/ckpt/latest" || fail "no FAULT line for the errno: $rp"
echo "$rp" | grep -q "rank_0: exited with status 1; its last output: prog_s3_curl: PUT latest: HTTP 503" ||
    fail "the program did not see a 503 SlowDown: $rp"
# not applied: the restart resumes from step 1, the last commit that landed
echo "$rp" | grep -q "GetObject bkt/ckpt/step_1 " || fail "the throttled PUT was applied: $rp"

# A delay fault holds the request it names; nothing else changes.
cat >"$tmp/delay.yaml" <<YAML
description: a slow read of the commit
job:
  command: [/bin/sh, $src/tests/programs/prog_s3_curl.sh, "2"]
  timeout: 60s
  object_store:
    buckets: [bkt]
faults:
  - on: {op: s3_get, path: /bkt/ckpt/latest}
    do: delay
    duration: 200ms
YAML
out=$("$ckh" run "$tmp/delay.yaml" 2>&1) || fail "the delayed job: $out"
"$ckh" replay "$tmp/delay.yaml" 2>&1 | grep -q "FAULT s3_get:delay /bkt/ckpt/latest len=200" ||
    fail "no FAULT line for the delay"

# s3-reset: the connection of the first commit drops; boto3 retries it.
# After the store applied it (when: after) the commit lands twice, before
# it once; the job passes either way.
for when in before after; do
    cat >"$tmp/reset.yaml" <<YAML
description: a commit whose connection drops, $when the store applies it
job:
  command: [/usr/bin/python3, $src/tests/programs/prog_s3_saver.py]
  timeout: 60s
  object_store:
    buckets: [train]
faults:
  - on: {op: s3_put, path: /train/ckpt/latest}
    do: s3-reset
    when: $when
YAML
    out=$("$ckh" run "$tmp/reset.yaml" 2>&1) || fail "s3-reset $when: $out"
    rp=$("$ckh" replay "$tmp/reset.yaml" 2>&1)
    echo "$rp" | grep -q "FAULT s3_put:s3-reset /train/ckpt/latest" || fail "s3-reset $when: no FAULT line: $rp"
    want=3
    [ $when = after ] && want=4
    [ "$(echo "$rp" | grep -c 'PutObject train/ckpt/latest ')" = $want ] ||
        fail "s3-reset $when: want $want commits applied: $rp"
done
printf 'job:\n  command: [/bin/true]\n  object_store: {buckets: [abc]}\nfaults:\n  - on: {op: rename}\n    do: s3-reset\n' \
    >"$tmp/bad.yaml"
out=$("$ckh" run "$tmp/bad.yaml" 2>&1)
echo "$out" | grep -qF "bad.yaml:5:5: 'do: s3-reset' needs 'on.op' to be a request to the object store" ||
    fail "s3-reset on a rename was not refused: $out"

# At rest: s3-expire deletes the commit before the restart (a lifecycle
# rule), which then starts over; s3-corrupt flips a byte of the step the
# commit names, which the restart reads and dies of.
for act in expire corrupt; do
    cat >"$tmp/rest.yaml" <<YAML
description: an object changed at rest before the restart
job:
  command: [/bin/sh, $src/tests/programs/prog_s3_curl.sh, "4"]
  timeout: 60s
  object_store:
    buckets: [bkt]
faults:
  - on: {op: s3_put, path: /bkt/ckpt/step_3}
    do: kill
  - on: {run: 2}
    do: s3-$act
    path: $([ $act = expire ] && echo /bkt/ckpt/latest || echo /bkt/ckpt/step_2)
restart:
  max_restarts: 1
YAML
    out=$("$ckh" run "$tmp/rest.yaml" 2>&1)
    rc=$?
    rp=$("$ckh" replay "$tmp/rest.yaml" 2>&1)
    if [ $act = expire ]; then
        [ $rc = 0 ] || fail "s3-expire: the restart did not start over: $out"
        echo "$rp" | grep -q "^s3 #[0-9]* n=-1 Expire bkt/ckpt/latest -> 200" || fail "s3-expire: no Expire line: $rp"
        echo "$rp" | sed -n '/^# run 2/,$p' | grep -q "GetObject bkt/ckpt/latest -> 404 NoSuchKey" ||
            fail "s3-expire: the restart found a commit: $rp"
    else
        [ $rc = 1 ] || fail "s3-corrupt: want a failed verdict (exit 1), got $rc: $out"
        echo "$rp" | grep -q "^s3 #[0-9]* n=-1 Corrupt bkt/ckpt/step_2 off=0 -> 200" || fail "s3-corrupt: no Corrupt line: $rp"
    fi
done
printf 'job:\n  command: [/bin/true]\nfaults:\n  - do: s3-expire\n    path: nobucket\n' >"$tmp/bad.yaml"
out=$("$ckh" run "$tmp/bad.yaml" 2>&1)
echo "$out" | grep -qF "bad.yaml:5:11: 'path' of 'do: s3-expire' expects /BUCKET/KEY, got 'nobucket'" ||
    fail "a bad s3-expire path was not refused: $out"

# consistency: list-delay: a key just written is not listed yet, but reads.
cat >"$tmp/lag.yaml" <<YAML
description: listings lag behind writes
job:
  command: [/bin/sh, -c, 'u=\$AWS_ENDPOINT_URL/lag && curl -sf -X PUT --data-binary x \$u/new >/dev/null && curl -sf \$u/new | grep -qx x && curl -sf "\$u?list-type=2" | grep -q "<KeyCount>0</KeyCount>" && exec /bin/sh $src/tests/programs/prog_s3_curl.sh 2']
  timeout: 60s
  object_store:
    buckets: [lag]
    consistency: list-delay
    delay_ops: 1000
YAML
out=$("$ckh" run "$tmp/lag.yaml" 2>&1) || fail "list-delay: the new key was listed at once: $out"
sed -i 's/consistency: list-delay/consistency: strong/' "$tmp/lag.yaml"
out=$("$ckh" run "$tmp/lag.yaml" 2>&1) && fail "strong: the new key was not listed: $out"

# The upload a kill left between its parts stays open, never completed:
# step 6's first upload has one part and no Complete.
rp=$("$ckh" replay "$src/scenarios/programs/s3-boto3-multipart-kill-mid-upload.yaml" 2>&1)
echo "$rp" | grep -q "FAULT s3_part:kill_before /train/ckpt/step_000006/big" || fail "no FAULT on the part: $rp"
[ "$(echo "$rp" | grep -c 'CreateMultipartUpload train/ckpt/step_000006/big')" = 2 ] ||
    fail "step 6's upload was not started twice: $rp"
[ "$(echo "$rp" | grep -c 'CompleteMultipartUpload train/ckpt/step_000006/big')" = 1 ] ||
    fail "step 6's upload was completed other than once: $rp"

# The crash model: the in-flight commit kept under seed 1, undone under
# seed 2, and the same again on a second replay.
for seed in 1 2; do
    a=$("$ckh" replay "$src/scenarios/programs/s3-curl-kill-after-commit.yaml" --seed $seed | grep '^s3 ')
    b=$("$ckh" replay "$src/scenarios/programs/s3-curl-kill-after-commit.yaml" --seed $seed | grep '^s3 ')
    [ "$a" = "$b" ] || fail "seed $seed: the store's trace differs between two replays"
    want="undone=$((seed - 1))"
    echo "$a" | grep -q "Crash - in-flight=1 $want" || fail "seed $seed: no '$want' in: $a"
done
# Retention (harness/judge/retention_check.c): the saver deleting old step
# folders before its commit is caught deleting the newest complete
# checkpoint, named by its request, key and step; the one deleting them
# after its commit passes, having deleted some. job.object_store.commit is
# a key glob, refused with file:line:column when it is a path.
out=$("$ckh" run "$src/scenarios/programs/s3-retention-before-commit.yaml" \
      "$src/scenarios/programs/s3-retention-after-commit.yaml" --json "$tmp/retention.json" \
      --junit "$tmp/retention.xml" 2>&1) || fail "the retention scenarios: $out"
echo "$out" | sed 's/([0-9]* runs, [0-9]* ms)/(2 runs, N ms)/' |
    grep -qF "PASS  s3-retention-before-commit  (2 runs, N ms): detected as expected by retention: run 1, step 6: DeleteObject #15 of rank_0 removed train/ckpt/step_000003/shard_0 of the newest complete checkpoint: its commit object train/ckpt/step_000003/manifest (written by #8) and the 4 objects it names" ||
    fail "the early retention was not named: $out"
python3 - "$tmp/retention.json" <<'PY' || fail "retention in the JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
by = {s["name"]: {o["name"]: o for o in s["oracles"]} for s in d["scenarios"]}
bad, good = by["s3-retention-before-commit"]["retention"], by["s3-retention-after-commit"]["retention"]
assert bad["detail"].startswith("detected the planted defect: run 1, step 6: DeleteObject #15 "), bad
assert good["passed"] and good["detail"].startswith("the program's 10 deletes removed no object"), good
PY
grep -q "oracle retention: pass: detected the planted defect: run 1, step 6: DeleteObject #15" "$tmp/retention.xml" ||
    fail "retention in the JUnit report: $(cat "$tmp/retention.xml")"
"$ckh" list oracles | grep -q "^  retention  *the program's retention never deletes the newest complete checkpoint" ||
    fail "ckh list oracles has no retention"
expect_error $'job:\n  command: [/bin/true]\n  object_store:\n    buckets: [abc]\n    commit: /abc/ckpt/*\n' \
    5:13 "'job.object_store.commit' expects the key glob of a checkpoint's commit object"

# s3-stale-list: one listing of step 6's shards leaves out the last key
# written; the saver that builds its manifest from it resumes from part of
# its state (resume-equivalence), the saver that lists only for retention
# after its commit passes the same kind of fault.
out=$("$ckh" run "$src/scenarios/programs/s3-list-stale-manifest.yaml" \
      "$src/scenarios/programs/s3-list-stale-retention.yaml" 2>&1) || fail "the stale-list scenarios: $out"
echo "$out" | grep -q "s3-list-stale-manifest .*detected as expected by resume-equivalence: step 7: x of rank_0" ||
    fail "the manifest built from a stale listing was not caught: $out"
rp=$("$ckh" replay "$src/scenarios/programs/s3-list-stale-manifest.yaml" 2>&1)
echo "$rp" | grep -q "FAULT s3_list:s3-stale-list /train/ckpt/step_000006/shard_ len=1" || fail "no stale-list FAULT line: $rp"
echo "$rp" | grep -q "ListObjectsV2 train prefix=set keys=3 prefixes=0 omit-newer=1 -> 200" ||
    fail "the stale listing did not leave out one key: $rp"
[ "$(echo "$rp" | grep -c 'omit-newer=')" = 1 ] || fail "more than one stale listing: $rp"
printf 'job:\n  command: [/bin/true]\n  object_store: {buckets: [abc]}\nfaults:\n  - on: {op: s3_get}\n    do: s3-stale-list\n' \
    >"$tmp/bad.yaml"
out=$("$ckh" run "$tmp/bad.yaml" 2>&1)
echo "$out" | grep -qF "bad.yaml:5:5: 'do: s3-stale-list' needs 'on.op: s3_list'" ||
    fail "s3-stale-list on a GET was not refused: $out"
printf 'job:\n  command: [/bin/true]\n  object_store: {buckets: [abc]}\nfaults:\n  - on: {op: s3_list}\n    do: s3-stale-list\n    ops: 0\n' \
    >"$tmp/bad.yaml"
out=$("$ckh" run "$tmp/bad.yaml" 2>&1)
echo "$out" | grep -qF "bad.yaml:7:10: 'ops'" || fail "s3-stale-list with ops 0 was not refused: $out"

[ $fails = 0 ] || exit 1
echo "object_store: ok"
