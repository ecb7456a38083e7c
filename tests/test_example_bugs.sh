#!/usr/bin/env bash
# Each planted bug of the example loop (examples/workload_example/, one
# library per bug, libckh_example_bug_<name>.so) is caught by ckh's
# oracles, and the one-line verdict names what the bug breaks. For every
# scenarios/examples/bug-*.yaml:
#   1. `ckh run FILE` passes: the oracles its expect.detect names caught it;
#   2. the same job and faults without the expect section fail, and the
#      FAIL line names the quantity that diverged first ("rng", "sampler",
#      ...) or, for a protocol bug, what the oracle found;
#   3. the same job and faults with the correct loop (libckh_example_loop.so)
#      pass: the faults alone are not what fails.
# Usage: tests/test_example_bugs.sh CKH SOURCE_DIR   (registered in
# cmake/examples.cmake; the plugins are found in the plugins/ folder next
# to CKH). Exit status 0 only if every check holds.
set -uo pipefail
ckh=${1:?usage: test_example_bugs.sh CKH SOURCE_DIR}
src=${2:?usage: test_example_bugs.sh CKH SOURCE_DIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-example-bugs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# What each verdict must say after the scenario's name (an extended regex
# anchored at the start): the oracle, then, for the state bugs, the step
# and the quantity that diverged first (resume-equivalence lists the
# quantities that differ in the order the loop records them: its inputs,
# sampler, rng and sched, before optim and weights).
declare -A want=(
  [bug-rng-not-restored]='resume-equivalence: step 5: rng[, ]'
  [bug-sampler-position-not-saved]='resume-equivalence: step 5: sampler[, ]'
  [bug-lr-before-step]='resume-equivalence: step 5: (sched|lr)[, ]'
  [bug-momentum-not-saved]='resume-equivalence: step 9: optim[, ]'
  [bug-latest-before-commit]='committed: .*/latest names step_8, which has no commit marker'
  [bug-async-commit-before-write]='committed: .*/latest names step_8, committed, but [^ ]*/rank_0.bin'
)

failures=0
fail() { echo "test_example_bugs: FAIL: $*" >&2; failures=$((failures + 1)); }

shopt -s nullglob
files=("$src"/scenarios/examples/bug-*.yaml)
[ ${#files[@]} -eq ${#want[@]} ] ||
  fail "${#files[@]} bug scenarios in scenarios/examples, ${#want[@]} expected verdicts"

for f in "${files[@]}"; do
  name=$(basename "$f" .yaml)
  re=${want[$name]:-}
  if [ -z "$re" ]; then
    fail "$name: no expected verdict in this test"
    continue
  fi
  # 1. detected
  out=$("$ckh" run "$f" 2>&1)
  [ $? -eq 0 ] || fail "$name: the bug went undetected:"$'\n'"$out"
  # 2. the verdict names the cause
  sed '/^expect:/,$d' "$f" >"$work/$name.yaml"
  out=$("$ckh" run "$work/$name.yaml" 2>&1)
  rc=$?
  line=$(printf '%s\n' "$out" | grep -m1 "^FAIL  $name: ")
  if [ $rc -ne 1 ] || [ -z "$line" ]; then
    fail "$name: without expect it should fail (exit 1), got exit $rc:"$'\n'"$out"
  elif ! printf '%s\n' "${line#"FAIL  $name: "}" | grep -Eq "^($re)"; then
    fail "$name: the verdict does not start with '$re': $line"
  else
    echo "test_example_bugs: $line"
  fi
  # 3. the correct loop passes the same scenario
  sed -e '/^expect:/,$d' -e 's/libckh_example_bug_[a-z]*\.so/libckh_example_loop.so/' "$f" \
    >"$work/correct-$name.yaml"
  out=$("$ckh" run "$work/correct-$name.yaml" 2>&1)
  [ $? -eq 0 ] || fail "$name: the correct loop fails the same scenario:"$'\n'"$out"
done

if [ $failures -ne 0 ]; then
  echo "test_example_bugs: $failures check(s) failed" >&2
  exit 1
fi
echo "test_example_bugs: ${#files[@]} planted bugs caught, each verdict names its cause"
