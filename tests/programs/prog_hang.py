#!/usr/bin/python3
"""prog_hang: a program that never exits, for the `hang` verdict. It reports
one step, starts a child that sleeps too (so the check that every process
of the job is reaped has a process tree to reap), writes a checkpoint and
then waits forever, like a rank stuck in a collective whose peer is gone.

Environment: CKH_CKPT_DIR (default ./ckpt), CKH_RESULT (result records).
"""
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
HERE = os.path.dirname(os.path.abspath(__file__))
_TOOLS = os.path.join(HERE, os.pardir, os.pardir, "tools")
if os.path.exists(os.path.join(_TOOLS, "ckh_result.py")):
    sys.path.insert(0, os.path.abspath(_TOOLS))
import ckh_result as ckh  # noqa: E402


def main():
    d = ckh.ckpt_dir("ckpt")
    ckh.step(1, digests={"weights": ckh.digest_bytes(b"prog_hang")})
    with open(os.path.join(d, "step_1.bin"), "wb") as f:
        f.write(b"prog_hang\n")
    if os.fork() == 0:  # the child sleeps in the same process group
        while True:
            time.sleep(3600)
    print("prog_hang: waiting forever (pid %d)" % os.getpid(), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
