#!/usr/bin/python3
"""prog_ddp_gloo: the PyTorch job of prog_torch_job.py as a DistributedDataParallel
job over gloo on CPU: one process per rank, started with torchrun's
environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; ckh sets them for
`job.command` with `nodes: 2`). Each rank trains on its share of every
global batch; rank 0 saves atomically (temporary file, fsync, rename,
fsync of the folder, then `latest`) and every rank waits at a barrier;
on start every rank loads the checkpoint `latest` names with
map_location="cpu". Step records carry the digests of the weights and the
optimizer, so a resumed run is compared with the uninterrupted one bit for
bit. The checkpoint folder must be shared by the ranks (`disk: shared`).

Usage: prog_ddp_gloo.py [--steps N] [--save-every K] [--hidden H] [--seed S]
Environment: as above, plus CKH_CKPT_DIR (default ./ckpt) and CKH_RESULT.
With WORLD_SIZE unset it runs as one process.
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from prog_torch_job import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("prog_ddp_gloo", "atomic", sys.argv[1:]))
