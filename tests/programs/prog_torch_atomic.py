#!/usr/bin/python3
"""prog_torch_atomic: the PyTorch job of prog_torch_job.py saving atomically:
each checkpoint goes to a temporary file in the same folder, is flushed and
fsynced, renamed over its final name, and the folder is fsynced; then
`latest` names it, written the same way. It resumes from the file `latest`
names, so every crash state leaves a checkpoint it can load.

Usage: prog_torch_atomic.py [--steps N] [--save-every K] [--hidden H] [--seed S]
Environment: CKH_CKPT_DIR (default ./ckpt), CKH_RESULT (result records).
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from prog_torch_job import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("prog_torch_atomic", "atomic", sys.argv[1:]))
