#!/usr/bin/env bash
# ckh on many machines, tested on one (docs/MULTIHOST.md): `ckh run` and
# `ckh fuzz` started by mpirun of Open MPI and of MPICH with 2 and 3 ranks,
# and by simulated srun, Slurm array and --rank/--world ranks, give what a
# single process gives:
#   - run: the same exit status, the same stdout and the same JUnit, JSON
#     and HTML reports (wall times set to 0), on a folder with passing,
#     failing and malformed scenarios; --shard I/N composes with the ranks;
#     the merge folder is gone afterwards;
#   - fuzz: the same failure list, shrink lines, coverage and counts, and
#     the same shrunk files, byte for byte;
#   - a rank that never starts: rank 0 names it and exits 3 within
#     --merge-timeout;
#   - a contradictory environment, two ranks claiming one rank, another
#     run's partials in the merge folder, no merge folder at all: exit 2
#     with a message, and the other run's files untouched.
# Usage: tests/test_dist.sh CKH SOURCE_DIR (registered in CMakeLists.txt).
# Both launchers are required (scripts/setup.sh installs openmpi-bin and
# mpich); a missing one fails the test, naming it.
set -uo pipefail
ckh=$(realpath "${1:?usage: test_dist.sh CKH SOURCE_DIR}")
src=$(realpath "${2:?usage: test_dist.sh CKH SOURCE_DIR}")
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
# Open MPI refuses root (CI runs as root) and more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# None of the launchers' variables of an outer job may leak in.
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID \
      SLURM_STEP_NUM_TASKS SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT

failures=0
fail() { echo "test_dist: FAIL: $*" >&2; failures=$((failures + 1)); }
ckh_test_name=test_dist
. "$src/tests/support/skip.sh"
for l in mpirun.openmpi mpirun.mpich; do
  command -v "$l" >/dev/null || ckh_skip "$l is not installed (scripts/setup.sh installs openmpi-bin and mpich)"
done
launch() { # LAUNCHER NP CMD...: runs CMD under that mpirun
  local l=$1 np=$2; shift 2
  if [ "$l" = openmpi ]; then mpirun.openmpi --oversubscribe -np "$np" "$@"
  else mpirun.mpich -np "$np" "$@"; fi
}
# Wall times are the only fields allowed to differ.
norm() { sed -E 's/"wall_ms": [0-9]+/"wall_ms": 0/g; s/time="[0-9.]+"/time="0"/g;
                 s/, [0-9]+ ms\)/, 0 ms)/; s/· [0-9]+ ms</· 0 ms</; s/[0-9]+ ms wall/0 ms wall/' "$1"; }
same() { # WHAT A B
  diff <(norm "$2") <(norm "$3") >"$work/diff" || { fail "$1: $2 and $3 differ:"; head -20 "$work/diff" >&2; }
}

# A fast, simulated folder: minidb and defects (pass), one failing, one malformed.
mkdir scn
cp "$src"/scenarios/minidb/*.yaml "$src"/scenarios/defects/*.yaml scn/
grep -v -e '^expect:' -e '^  detect:' "$src/scenarios/defects/rng-not-saved.yaml" > scn/zz-fails.yaml
cp "$src/tests/data/scenarios/bad/malformed.yaml" scn/
reports() { echo --junit "$1/junit.xml" --json "$1/results.json" --html "$1/report.html"; }

mkdir one
"$ckh" run scn $(reports one) >one/out 2>one/err; want=$?
[ "$want" = 2 ] || fail "the single-process run exits $want, expected 2 (a malformed file)"
grep -q '^FAIL  zz-fails: resume-equivalence' one/out || fail "zz-fails did not fail"

check_run() { # DIR STATUS WHAT
  [ "$2" = "$want" ] || fail "$3: exit status $2, the single-process run's is $want"
  for f in out junit.xml results.json report.html; do same "$3" "one/$f" "$1/$f"; done
  [ ! -e "$1/.ckh-merge" ] || fail "$3: the merge folder $1/.ckh-merge is left behind"
}

for l in openmpi mpich; do
  for np in 2 3; do
    d=run-$l-$np; mkdir "$d"
    launch $l $np "$ckh" run scn $(reports "$d") >"$d/out" 2>"$d/err"
    check_run "$d" $? "ckh run under mpirun ($l) -np $np"
    n=$(grep -c "ckh run: rank [1-9] of $np (" "$d/err")
    [ "$n" = $((np - 1)) ] || fail "$l -np $np: $n one-line summaries from the ranks above 0, expected $((np - 1))"
  done
done

# srun and a job array, simulated by their variables; explicit ranks.
d=run-srun; mkdir "$d"
SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=2 SLURM_JOB_ID=5 SLURM_STEP_ID=0 "$ckh" run scn $(reports "$d") >/dev/null 2>"$d/err1" & p1=$!
SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=2 SLURM_JOB_ID=5 SLURM_STEP_ID=0 "$ckh" run scn $(reports "$d") >"$d/out" 2>"$d/err"; st=$?
wait $p1; st1=$?
check_run "$d" $st "srun (simulated)"
[ "$st1" = 2 ] || fail "srun: rank 1 exits $st1, expected its own status 2 (its share holds the malformed file)"
d=run-array; mkdir "$d"
for id in 3 5; do
  SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=3 \
    SLURM_ARRAY_JOB_ID=77 "$ckh" run scn --distributed slurm-array $(reports "$d") >/dev/null 2>&1 &
done
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=3 \
  SLURM_ARRAY_JOB_ID=77 "$ckh" run scn --distributed slurm-array $(reports "$d") >"$d/out" 2>"$d/err"
check_run "$d" $? "Slurm array (simulated)"
wait
d=run-explicit; mkdir "$d"
"$ckh" run scn --rank 1 --world 2 --run-id t1 $(reports "$d") >/dev/null 2>&1 &
"$ckh" run scn --rank 0 --world 2 --run-id t1 $(reports "$d") >"$d/out" 2>"$d/err"
check_run "$d" $? "--rank/--world"
wait

# --shard I/N on ranks equals that shard on one process.
mkdir shard-one shard-mpi
"$ckh" run scn --shard 2/3 $(reports shard-one) >shard-one/out 2>&1; want_shard=$?
launch openmpi 2 "$ckh" run scn --shard 2/3 $(reports shard-mpi) >shard-mpi/out 2>/dev/null
[ $? = "$want_shard" ] || fail "--shard 2/3 under mpirun: another exit status"
for f in out junit.xml results.json report.html; do same "--shard 2/3 under mpirun" "shard-one/$f" "shard-mpi/$f"; done

# fuzz: a fixed seed range with failures, shrunk.
fuzz=(fuzz --seeds 120 --defect rng-not-saved --shrink-max 3)
fnorm() { sed -E 's/ in [0-9.]+s:/ in Xs:/; s/\(shard ([0-9]+\/[0-9]+), [^,]*,/(shard \1,/; s/fz-[a-z0-9-]+/fz/g' "$1"; }
"$ckh" "${fuzz[@]}" --out fz-one >fz-one.out 2>&1; fwant=$?
[ "$fwant" = 1 ] || fail "the single-process fuzz campaign exits $fwant, expected 1"
[ "$(ls fz-one | wc -l)" = 3 ] || fail "the single-process campaign shrank $(ls fz-one | wc -l) files, expected 3"
for l in openmpi mpich; do
  for np in 2 3; do
    launch $l $np "$ckh" "${fuzz[@]}" --out fz-$l-$np >fz-$l-$np.out 2>fz-$l-$np.err; st=$?
    [ "$st" = "$fwant" ] || fail "fuzz under $l -np $np: exit status $st, expected $fwant"
    diff <(fnorm fz-one.out) <(fnorm fz-$l-$np.out) >"$work/diff" || { fail "fuzz under $l -np $np: output differs"; head -20 "$work/diff" >&2; }
    diff -r fz-one fz-$l-$np >/dev/null || fail "fuzz under $l -np $np: the shrunk files differ"
    grep -q "(shard 1/1, $np ranks of 1 job each" fz-$l-$np.out || fail "fuzz under $l -np $np: the summary does not say $np ranks"
  done
done

# A rank that never starts: named, exit 3, within the time limit.
for l in openmpi mpich; do
  mkdir lost-$l
  launch $l 3 sh -c 'r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}; [ "$r" = 2 ] && exit 0
                     exec "$0" run "$1"/scenarios/minidb --json "$2"/r.json --merge-timeout 2s' \
    "$ckh" "$src" "lost-$l" >lost-$l/out 2>lost-$l/err; st=$?
  [ "$st" = 3 ] || fail "a missing rank under $l: exit status $st, expected 3"
  grep -q "rank 0 of 3 waited 2s for the other ranks' results in lost-$l/.ckh-merge .*rank 2 never joined" lost-$l/err ||
    { fail "a missing rank under $l: no message naming rank 2"; cat lost-$l/err >&2; }
  [ ! -e lost-$l/r.json ] || fail "a missing rank under $l: a report was written"
done

# Bad environments and folders: exit 2, with a message.
expect2() { # WHAT PATTERN CMD...
  local what=$1 pat=$2; shift 2
  "$@" >bad.out 2>&1; local st=$?
  [ "$st" = 2 ] || fail "$what: exit status $st, expected 2"
  grep -q -- "$pat" bad.out || { fail "$what: no message '$pat'"; cat bad.out >&2; }
}
mkdir bad
expect2 "disagreeing launchers" "the environment is contradictory: Open MPI" \
  env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 PMI_RANK=1 PMI_SIZE=2 "$ckh" run scn --json bad/r.json
expect2 "a rank without its size" "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not" \
  env OMPI_COMM_WORLD_RANK=1 "$ckh" fuzz --seeds 4
expect2 "no merge folder" "give --merge-dir DIR" \
  env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 "$ckh" run scn
launch openmpi 2 "$ckh" run scn --rank 0 --world 2 --json bad/r.json >bad.out 2>&1
grep -q "contradictory: --rank 0 --world 2, but Open MPI" bad.out || fail "mpirun with --rank: not refused"
mkdir -p other/.ckh-merge
echo other-run >other/.ckh-merge/run-id
echo keep >other/.ckh-merge/part.1
expect2 "another run's partials" "holds the partial results of another run (run id 'other-run'" \
  env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 "$ckh" run scn --merge-dir other
[ "$(cat other/.ckh-merge/part.1)" = keep ] && [ "$(ls -A other/.ckh-merge | wc -l)" = 2 ] ||
  fail "another run's merge folder was changed"

[ "$failures" = 0 ] && echo "test_dist: all checks passed"
exit $((failures > 0))
