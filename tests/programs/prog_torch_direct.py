#!/usr/bin/python3
"""prog_torch_direct: the PyTorch job of prog_torch_job.py saving the unsafe
way, torch.save(state, "step_<n>.pt") straight to the final path, and
resuming from the file with the highest step. Killed while it writes, it
leaves a torn newest file that the restarted job cannot load: it exits 1
naming that file (scenarios/programs/torch-direct-kill-mid-write.yaml).

Usage: prog_torch_direct.py [--steps N] [--save-every K] [--hidden H] [--seed S]
Environment: CKH_CKPT_DIR (default ./ckpt), CKH_RESULT (result records).
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from prog_torch_job import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("prog_torch_direct", "direct", sys.argv[1:]))
