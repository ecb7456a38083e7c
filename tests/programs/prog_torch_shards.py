#!/usr/bin/python3
"""prog_torch_shards: a PyTorch job over gloo on CPU whose ranks save
per-rank shards (torch.save), with one of two multi-node save bugs
(--case) or without it (--fixed), and its own verify (--verify, standard
library only: fast).

Each of STEPS steps, every rank saves its shard of step N (a dict with the
step, the rank and a tensor) into step_N; the ranks save in turn (a
dist.barrier after each rank's turn), so the order of their operations is
the same in every run.

Cases:
  rank0-mkdir  node-local disks (each rank its own $CKH_CKPT_DIR): only
               rank 0 makes step_N (pytorch#92553): the other ranks'
               torch.save finds no folder. Fixed: every rank makes it.
               Each rank publishes `latest` on its own disk.
  no-commit    a shared disk: rank 0 saves its shard straight to the final
               name and publishes `latest` at once; the other ranks save
               theirs later, never fsynced. Fixed: every shard to a
               temporary name, fsync, rename, folder fsync; a barrier;
               then rank 0 publishes `latest` the same way.
--verify checks the folder as node $CKH_NODE sees it: if `latest` names
step N, the shards of step N (this node's own on node-local disks, every
rank's of step_N/WORLD on a shared one) are whole torch.save archives
(zip files whose members all read back with the right CRC).

Usage: prog_torch_shards.py --case NAME [--fixed] [--steps N] [--verify]
Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun's, set
by ckh), CKH_CKPT_DIR (default ./ckpt), CKH_NODE, CKH_RESULT.
"""
import argparse
import os
import sys
import zipfile

sys.dont_write_bytecode = True


def record(line):
    path = os.environ.get("CKH_RESULT")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(path + ".tmp", path)
    fsync_path(os.path.dirname(path) or ".")


def whole(path):
    """path is a whole torch.save archive."""
    try:
        with zipfile.ZipFile(path) as z:
            return bool(z.namelist()) and z.testzip() is None
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return False


def verify(args, ckpt):
    me = int(os.environ.get("CKH_NODE", "rank_0").rpartition("_")[2] or 0)
    latest = os.path.join(ckpt, "latest")
    if not os.path.exists(latest):
        return 0
    with open(latest) as f:
        n = f.read().strip()
    step = os.path.join(ckpt, "step_" + n)
    try:
        with open(os.path.join(step, "WORLD")) as f:
            world = int(f.read().strip())
    except (OSError, ValueError):
        print(f"verify: latest names step {n} but step_{n}/WORLD is missing or not whole")
        return 1
    ranks = [me] if args.case == "rank0-mkdir" else range(world)
    for r in ranks:
        if not whole(os.path.join(step, f"shard_{r}.pt")):
            print(f"verify: latest names step {n} but step_{n}/shard_{r}.pt is missing or not a whole "
                  "torch.save archive (published before every shard was durable)")
            return 1
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, choices=["rank0-mkdir", "no-commit"])
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--verify", action="store_true")
    args = p.parse_args()
    ckpt = os.environ.get("CKH_CKPT_DIR", "ckpt")
    if args.verify:
        return verify(args, ckpt)

    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    local = args.case == "rank0-mkdir"  # node-local disks
    for n in range(1, args.steps + 1):
        record('{"kind":"step","step":%d,"epoch":0}' % n)
        step = os.path.join(ckpt, f"step_{n}")
        if rank == 0 or (local and args.fixed):
            os.makedirs(step, exist_ok=True)
            fsync_path(ckpt)
        dist.barrier()
        shard = {"step": n, "rank": rank, "w": torch.full((512,), float(n * 10 + rank))}
        for turn in range(world):
            if turn == rank:
                final = os.path.join(step, f"shard_{rank}.pt")
                if args.case == "no-commit" and not args.fixed:
                    torch.save(shard, final)  # straight to the final name, never fsynced
                    if rank == 0:
                        with open(os.path.join(step, "WORLD"), "w") as f:
                            f.write(f"{world}\n")
                        write_atomic(os.path.join(ckpt, "latest"), f"{n}\n")  # before the others' shards
                else:
                    with open(final + ".tmp", "wb") as f:
                        torch.save(shard, f)
                        f.flush()
                        os.fsync(f.fileno())
                    os.rename(final + ".tmp", final)
                    if rank == 0 or local:
                        write_atomic(os.path.join(step, "WORLD"), f"{world}\n")
                    fsync_path(step)
            dist.barrier()
        if args.fixed or local:
            for turn in range(world):
                if turn == rank and (rank == 0 or local):
                    write_atomic(os.path.join(ckpt, "latest"), f"{n}\n")
                dist.barrier()
        record('{"kind":"save","step":%d,"epoch":0,"ok":true}' % n)
    record('{"kind":"final","epochs":0,"steps":%d,"total":%d,"values":{"rank":%d}}' % (args.steps, args.steps, rank))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
