#!/usr/bin/python3
"""prog_py_saver: a small training job in plain Python (the standard library
only, no torch: it runs wherever python3 does), for the warm-start tests of
ckh explore (tests/test_explore_warm.sh).

The job: a state of 8 integers advanced by a fixed rule per step; every
--save-every steps the state is saved as step_<n>.json and `latest` names
it. --unsafe plants the classic bug: step_<n>.json and `latest` are written
in place (no temporary file, no fsync), so some crash states leave a torn
or empty `latest` or checkpoint. On start the newest checkpoint (the one
`latest` names) is loaded; one that cannot be is an error naming the file.
--verify only checks that (exit 0, or 1 naming the file): the scenario's
`verify:`.

--in-turn (a job of several nodes, each with its own disk): the ranks run
one after the other (rank R starts its steps once rank R-1 has completed, a
token per run in $TMPDIR), so the order of their operations, and with it
each crash state's number K, is the same in every run; after a rank that
failed, the next waits until ckh ends the run (as a rank blocked in a
collective would).

It reports through ckh_result.py (the result protocol). With FP_DIR set,
each start appends one line to FP_DIR/fingerprints: what the process sees
of how it was started (environment, folder, argv, descriptors, signals,
process group), with the run folder's path replaced, so that a cold and a
warm start of the same check write the same line.

Usage: prog_py_saver.py [--steps N] [--save-every K] [--unsafe] [--verify] [--in-turn]
"""
import argparse
import json
import os
import re
import signal
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
_TOOLS = os.path.join(HERE, os.pardir, os.pardir, "tools")
if os.path.exists(os.path.join(_TOOLS, "ckh_result.py")):
    sys.path.insert(0, os.path.abspath(_TOOLS))
import ckh_result as ckh  # noqa: E402

PROG = "prog_py_saver"


def fingerprint():
    """One line: how this process was started, run folder paths as RUN."""
    tmp = os.environ.get("TMPDIR", "")
    run = os.path.dirname(tmp) if tmp.endswith("/tmp") else tmp  # the execution's folder

    def norm(v):
        v = str(v)
        return v.replace(run, "RUN") if run else v
    env = {k: norm(v) for k, v in os.environ.items()
           if k.startswith("CKH_") or k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                            "MASTER_ADDR", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE",
                                            "TORCHELASTIC_RESTART_COUNT", "TMPDIR", "FP_DIR", "PATH",
                                            "WARM_TEST")}
    fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    handlers = {}
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1):
        h = signal.getsignal(s)
        handlers[s.name] = h if isinstance(h, int) else getattr(h, "__name__", "handler")
    with open("/proc/self/status") as f:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    fp = {
        "env": env, "env_keys": sorted(k for k in os.environ if not k.startswith("CKH_")),
        "cwd": os.getcwd(), "argv": sys.argv, "path0": sys.path[1 if sys.path[0] == os.path.abspath(_TOOLS)
                                                               else 0],
        "file": __file__, "name": __name__, "fds": fds,
        "stdin": os.readlink("/proc/self/fd/0"), "stdout": norm(os.readlink("/proc/self/fd/1")),
        "leader": os.getpgrp() == os.getpid(), "sid_same": os.getsid(0) == os.getsid(os.getppid()),
        "signals": handlers, "blocked": status.get("SigBlk"), "ignored": status.get("SigIgn"),
        "umask": os.umask(os.umask(0o22)), "main_mod": type(sys.modules["__main__"]).__name__,
    }
    line = json.dumps(fp, sort_keys=True)
    with open(os.path.join(os.environ["FP_DIR"], "fingerprints"), "a") as f:
        f.write(line + "\n")


def newest(dirpath):
    """The checkpoint `latest` names (None: no `latest`); a bad `latest` raises."""
    try:
        with open(os.path.join(dirpath, "latest")) as f:
            name = f.read().strip()
    except FileNotFoundError:
        return None
    if not re.fullmatch(r"step_\d+\.json", name):
        raise ValueError("%s holds %r, expected step_<n>.json" % (os.path.join(dirpath, "latest"), name))
    return os.path.join(dirpath, name)


def load(dirpath):
    path = newest(dirpath)
    if path is None:
        return None
    with open(path) as f:
        state = json.load(f)
    if state.get("check") != sum(state["x"]) % 1000003:
        raise ValueError("%s: check sum mismatch" % path)
    return state


def write(dirpath, name, data, unsafe):
    final = os.path.join(dirpath, name)
    if unsafe:
        with open(final, "w") as f:
            f.write(data)
        return
    tmp = os.path.join(dirpath, "." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)
    fd = os.open(dirpath, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def advance(x, step):
    return [(v * 31 + step * (i + 7)) % 1000003 for i, v in enumerate(x)]


def turn_token(rank):
    """The file rank's end leaves for the next rank (--in-turn)."""
    return os.path.join(os.environ.get("TMPDIR", "/tmp"),
                        "%s.%s.done.%d" % (PROG, os.environ.get("CKH_RUN", "1"), rank))


def wait_turn():
    """Rank R > 0 waits until rank R-1 has ended (--in-turn)."""
    import time
    rank = int(os.environ.get("RANK", "0"))
    while rank > 0 and not os.path.exists(turn_token(rank - 1)):
        time.sleep(0.005)


def pass_turn():
    rank = int(os.environ.get("RANK", "0"))
    with open(turn_token(rank), "w"):
        pass


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--save-every", type=int, default=3)
    p.add_argument("--unsafe", action="store_true")
    p.add_argument("--verify", action="store_true")
    p.add_argument("--in-turn", action="store_true")
    a = p.parse_args(argv)
    if a.in_turn and not a.verify:
        wait_turn()
        rc = run(a)
        if rc == 0:  # a rank that failed leaves the next one waiting: ckh ends it with the job
            pass_turn()
        return rc
    return run(a)


def run(a):
    if os.environ.get("FP_DIR"):
        fingerprint()
    dirpath = ckh.ckpt_dir("ckpt")
    try:
        state = load(dirpath)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("%s: cannot resume from %s: %s: %s" % (PROG, dirpath, type(e).__name__, e), file=sys.stderr)
        return 1
    if a.verify:
        print("%s --verify: %s" % (PROG, "step %d loads" % state["step"] if state else "no checkpoint"))
        return 0
    start, x = (state["step"], state["x"]) if state else (0, list(range(1, 9)))
    if state:
        ckh.resume(start)
    for step in range(start + 1, a.steps + 1):
        x = advance(x, step)
        ckh.step(step, digests={"x": ckh.digest(x)}, values={"x0": x[0]})
        if step % a.save_every == 0:
            name = "step_%d.json" % step
            write(dirpath, name, json.dumps({"step": step, "x": x, "check": sum(x) % 1000003}), a.unsafe)
            write(dirpath, "latest", name + "\n", a.unsafe)
            ckh.save(step, ok=True)
    ckh.final(steps=a.steps, total=a.steps, digest=ckh.digest(x), values={"x0": x[0]})
    print("%s: steps %d..%d done" % (PROG, start + 1, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
