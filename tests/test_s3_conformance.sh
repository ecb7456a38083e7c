#!/usr/bin/env bash
# CTest s3_conformance: the pinned part of Ceph's s3-tests (the public S3
# conformance suite, an unmodified copy under tests/third_party/s3-tests,
# README there) against the S3 endpoint served by build/programs/s3_serve.
# Runs exactly the test ids of tests/third_party/s3-tests/PINNED with
# Debian's pytest and boto3; docs/OBJECT_STORE.md ("Conformance") lists what
# passes of the whole suite, what fails and why.
#   test_s3_conformance.sh S3_SERVE SOURCE_DIR
# Skipped (77) when a Debian package the suite imports is missing, or in a
# build without the endpoint.
set -u
serve=$1 src=$2
. "$src/tests/support/skip.sh"
ckh_test_name=s3_conformance
py=${CKH_PYTHON:-/usr/bin/python3}
suite=$src/tests/third_party/s3-tests
pinned=$suite/PINNED

# module:Debian package, for each import of the suite's pinned files
missing=
for mp in pytest:python3-pytest boto3:python3-boto3 munch:python3-munch isodate:python3-isodate \
          pytz:python3-tz dateutil:python3-dateutil requests:python3-requests urllib3:python3-urllib3; do
    "$py" -c "import ${mp%%:*}" 2>/dev/null || missing="$missing ${mp#*:}"
done
[ -z "$missing" ] || ckh_skip "Debian packages missing:$missing (scripts/setup.sh installs them)"

tmp=$(mktemp -d)
srv_pid=
cleanup() {
    exec 8>&- 2>/dev/null
    [ -n "$srv_pid" ] && wait "$srv_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkfifo "$tmp/in"
"$serve" --nodes 1 <"$tmp/in" >"$tmp/ports" 2>"$tmp/serve.err" &
srv_pid=$!
exec 8>"$tmp/in" # the server's standard input; closing it stops the server
port=
for _ in $(seq 600); do # the first line, "0 PORT", or the server's end
    read -r _ port <"$tmp/ports" 2>/dev/null && [ -n "$port" ] && break
    kill -0 "$srv_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    wait "$srv_pid"
    rc=$?
    srv_pid=
    [ $rc = 77 ] && ckh_skip "ckh was built without the S3 endpoint"
    echo "s3_conformance: FAIL: s3_serve did not start (exit $rc): $(cat "$tmp/serve.err")"
    exit 1
fi

# Every user of the suite is the one fixed key pair (signatures are never
# checked); the suite makes its buckets under the prefix and removes them.
{
    printf '[DEFAULT]\nhost = 127.0.0.1\nport = %s\nis_secure = False\nssl_verify = False\n\n' "$port"
    printf '[fixtures]\nbucket prefix = ckh-{random}-\n\n'
    for sec in "s3 main" "s3 alt" "s3 tenant" "iam" "iam root" "iam alt root"; do
        id=${sec// /-}
        printf '[%s]\naccess_key = ckhtestkey\nsecret_key = ckhtestsecret\n' "$sec"
        printf 'display_name = %s\nuser_id = %s\nemail = %s@example.com\n' "$id" "$id" "$id"
        [ "$sec" = "s3 main" ] && printf 'api_name = default\n'
        [ "$sec" = "s3 tenant" ] && printf 'tenant = ckhtenant\n'
        printf '\n'
    done
} >"$tmp/s3tests.conf"

mapfile -t ids < <(grep -v '^[[:space:]]*\(#\|$\)' "$pinned")
[ ${#ids[@]} -gt 0 ] || { echo "s3_conformance: FAIL: no test ids in $pinned"; exit 1; }
# Run from the suite's folder (its pytest.ini names the markers); nothing is
# written there: no cache, no byte code.
out=$(cd "$suite" && S3TEST_CONF="$tmp/s3tests.conf" PYTHONDONTWRITEBYTECODE=1 \
      "$py" -m pytest -p no:cacheprovider -q -rfEs "${ids[@]}" 2>&1)
rc=$?
echo "$out" | tail -n 40
# Each pinned id must have run and passed: pytest's summary counts them.
want="${#ids[@]} passed"
if [ $rc -ne 0 ] || ! echo "$out" | tail -n 1 | grep -Eq "^=* *$want(, [0-9]+ warnings?)? in "; then
    echo "s3_conformance: FAIL: pytest exit $rc; expected '$want' and nothing else"
    exit 1
fi
kill -0 "$srv_pid" 2>/dev/null || { echo "s3_conformance: FAIL: s3_serve is gone"; exit 1; }
echo "s3_conformance: ${#ids[@]} pinned tests of Ceph's s3-tests pass"
