#!/bin/sh
# prog_s3_curl.sh: a step loop whose state is a number, checkpointed to an
# object store with curl alone (docs/OBJECT_STORE.md): each step's state is
# written as the object ckpt/step_<n>, then ckpt/latest names the step (the
# commit, written last). A restart reads `latest`, then the step it names.
#   prog_s3_curl.sh STEPS
# The store is $AWS_ENDPOINT_URL, the bucket $CKH_S3_BUCKET (ckh sets both
# for a job with job.object_store), the keys under $S3_PREFIX/ (default
# ckpt; nodes sharing a bucket each give their own); signatures are not
# checked, so curl sends none. Reports through the result protocol
# ($CKH_RESULT).
set -eu
steps=$1
url=$AWS_ENDPOINT_URL/$CKH_S3_BUCKET/${S3_PREFIX:-ckpt}
start=0 state=1
# GET: the body on stdout, status 0; a 404 is status 1; anything else fails.
get() {
    code=$(curl -s -o "$TMPDIR/body" -w '%{http_code}' "$url/$1")
    case $code in
    200) cat "$TMPDIR/body" ;;
    404) return 1 ;;
    *) echo "prog_s3_curl: GET $1: HTTP $code" >&2; exit 1 ;;
    esac
}
put() {
    code=$(printf '%s' "$2" | curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @- "$url/$1")
    [ "$code" = 200 ] || { echo "prog_s3_curl: PUT $1: HTTP $code" >&2; exit 1; }
}
if latest=$(get latest); then
    start=$latest
    state=$(get "step_$start") || { echo "prog_s3_curl: latest names step $start, which is missing" >&2; exit 1; }
    printf '{"kind":"resume","step":%d}\n' "$start" >>"$CKH_RESULT"
fi
s=$((start + 1))
while [ "$s" -le "$steps" ]; do
    state=$(((state * 3 + s) % 1000003))
    put "step_$s" "$state"
    put latest "$s"
    printf '{"kind":"save","step":%d,"ok":true}\n' "$s" >>"$CKH_RESULT"
    printf '{"kind":"step","step":%d,"digests":{"state":"%016x"}}\n' "$s" "$state" >>"$CKH_RESULT"
    s=$((s + 1))
done
printf '{"kind":"final","steps":%d,"digest":"%016x"}\n' "$steps" "$state" >>"$CKH_RESULT"
