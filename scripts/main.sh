#!/usr/bin/env bash
# ckh's main job: installs what is missing, builds, then runs the scenario
# library and writes its reports under reports/out/. Extra arguments go to
# `ckh run` (for example --seed 7 or --filter minidb).
set -euo pipefail
CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$CKH_ROOT/scripts/setup.sh"
if [ -x "$CKH_ROOT/build/ckh" ]; then
  mkdir -p "$CKH_ROOT/reports/out"
  exec "$CKH_ROOT/build/ckh" run "$CKH_ROOT/scenarios" \
    --junit "$CKH_ROOT/reports/out/junit.xml" --json "$CKH_ROOT/reports/out/results.json" \
    --html "$CKH_ROOT/reports/out/report.html" "$@"
fi
exec "$CKH_ROOT/build/ckh_demo" "$@"
