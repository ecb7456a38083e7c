#!/usr/bin/env bash
# ckh's main job: installs what is missing, builds, then runs the scenario
# library and writes its reports under reports/out/. Extra arguments go to
# `ckh run` (for example --seed 7 or --filter minidb).
set -euo pipefail
CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$CKH_ROOT/scripts/setup.sh"
if [ -x "$CKH_ROOT/build/ckh" ]; then
  mkdir -p "$CKH_ROOT/reports/out"
  # From the repository root, so reports name scenarios by their relative
  # path (JUnit classnames stay the same whatever the checkout's location).
  cd "$CKH_ROOT"
  exec "$CKH_ROOT/build/ckh" run scenarios \
    --junit "$CKH_ROOT/reports/out/junit.xml" --json "$CKH_ROOT/reports/out/results.json" \
    --html "$CKH_ROOT/reports/out/report.html" "$@"
fi
echo "main.sh: build/ckh was not built" >&2
exit 3
