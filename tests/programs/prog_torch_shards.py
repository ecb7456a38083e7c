#!/usr/bin/python3
"""prog_torch_shards: a PyTorch job over gloo on CPU whose ranks save
per-rank shards (torch.save), with one of five multi-node save bugs
(--case) or without it (--fixed), and its own verify (--verify, standard
library only: fast).

Each of STEPS steps, every rank saves its shard of step N (a dict with the
step, the rank and a tensor of 512 floats, all N*10+rank); the ranks save
in turn (a dist.barrier after each rank's turn), so the order of their
operations is the same in every run (but in step-folder-race, whose bug
is that the ranks do not wait for each other).

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
  stale-marker a shared disk, one folder `current` overwritten by each
               save (ezpz#196, speculators#739, VeOmni#1176): rank 0's
               COMPLETE marker (the step the folder holds) stays in place
               while the ranks rewrite their shards (each fsynced), and
               rank 0 writes it again once every rank is done. Fixed:
               rank 0 removes the marker and fsyncs the folder before a
               barrier, and only then do the ranks rewrite their shards.
  dcp-swap     a shared disk, PyTorch DCP's FileSystemWriter: every rank
               saves __R_N.distcp into `dcp` (fsynced), then rank 0 runs
               finish() step for step as recent torch does it (Debian's
               torch 1.13 cannot import torch.distributed.checkpoint
               under Python 3.11): pickle the metadata to .metadata.tmp, flush,
               fsync; if .metadata exists, remove it; rename .metadata.tmp
               to .metadata; no folder fsync. Then rank 0 records the step
               in `saved` (temporary name, fsync, rename, fsync of the
               checkpoint folder, not of `dcp`). Fixed: one os.replace puts
               the new .metadata over the old, then `dcp` is fsynced.
               (Some releases, 2.5 among them, also fsync before they
               flush, so their .metadata.tmp is not durable either; this
               program flushes, as the newest do, to keep to the swap.)
  step-folder-race  a shared disk, one step (nanochat#315): rank 0 lists
               the checkpoint folder (old steps to prune) and makes
               step_1; rank 1 does its own work (2 s) and torch.saves its
               shard into step_1 with no barrier, trusting rank 0 to have
               made it by then. When rank 0 is slower, rank 1's save finds
               no folder (torch 1.13: "RuntimeError: Parent directory
               .../step_1 does not exist"). Fixed: every rank makes the
               folder itself (os.makedirs(exist_ok=True)) before it saves.
               (A dist.barrier after rank 0's mkdir fixes it as well, but
               ckhfs cannot see a gloo barrier, so an explore would hold
               rank 0 for the order up to its time limit.) No --verify:
               the bug is a failed save.
--verify checks the folder as node $CKH_NODE sees it and exits 1 naming
what is wrong: if `latest` names step N, the shards of step N (this
node's own on node-local disks, every rank's of step_N/WORLD on a shared
one) are whole torch.save archives (zip files whose members all read
back with the right CRC); if COMPLETE names step N, every shard in
`current` is rank R's shard of step N (its step, rank and tensor, read
without torch); if `saved` names step N, dcp/.metadata exists, is whole,
names step N or later, and every shard it names is that rank's shard of
that step.

Usage: prog_torch_shards.py --case NAME [--fixed] [--steps N] [--verify]
Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun's, set
by ckh), CKH_CKPT_DIR (default ./ckpt), CKH_NODE, CKH_RESULT.
"""
import argparse
import io
import os
import pickle
import struct
import sys
import time
import zipfile

sys.dont_write_bytecode = True

SHARD_LEN = 512  # floats in a shard's tensor


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


def save_synced(shard, path):
    """torch.save to path (in place), the file fsynced."""
    import torch

    with open(path, "wb") as f:
        torch.save(shard, f)
        f.flush()
        os.fsync(f.fileno())


class _Shallow(pickle.Unpickler):
    """Reads a torch.save pickle without torch: tensors read as None."""

    def find_class(self, module, name):
        if module.split(".")[0] == "torch":
            return lambda *args, **kwargs: None
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return None


def whole(path):
    """path is a whole torch.save archive."""
    try:
        with zipfile.ZipFile(path) as z:
            return bool(z.namelist()) and z.testzip() is None
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return False


def holds(path, n, r):
    """path is a whole torch.save archive of rank r's shard of step n."""
    if not whole(path):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            pkl = [m for m in names if m.endswith("/data.pkl")]
            data = [m for m in names if m.endswith("/data/0")]
            if len(pkl) != 1 or len(data) != 1:
                return False
            shard = _Shallow(io.BytesIO(z.read(pkl[0]))).load()
            floats = z.read(data[0])
    except (OSError, zipfile.BadZipFile, EOFError, ValueError, pickle.UnpicklingError, AttributeError,
            ImportError, IndexError, KeyError, TypeError):
        return False
    want = struct.pack("<%df" % SHARD_LEN, *([float(n * 10 + r)] * SHARD_LEN))
    return isinstance(shard, dict) and shard.get("step") == n and shard.get("rank") == r and floats == want


def verify_marker(ckpt):
    cur = os.path.join(ckpt, "current")
    try:
        with open(os.path.join(cur, "COMPLETE")) as f:
            n = int(f.read().strip())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        print("verify: current/COMPLETE is not whole")
        return 1
    try:
        with open(os.path.join(cur, "WORLD")) as f:
            world = int(f.read().strip())
    except (OSError, ValueError):
        print(f"verify: current/COMPLETE names step {n} but current/WORLD is missing or not whole")
        return 1
    for r in range(world):
        if not holds(os.path.join(cur, f"shard_{r}.pt"), n, r):
            print(f"verify: current/COMPLETE names step {n} but current/shard_{r}.pt does not hold step {n}'s "
                  "shard (stale marker)")
            return 1
    return 0


def verify_dcp(ckpt):
    try:
        with open(os.path.join(ckpt, "saved")) as f:
            saved = int(f.read().strip())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        print("verify: saved is not whole")
        return 1
    dcp = os.path.join(ckpt, "dcp")
    try:
        with open(os.path.join(dcp, ".metadata"), "rb") as f:
            md = f.read()
    except FileNotFoundError:
        print(f"verify: step {saved} was saved but dcp/.metadata is missing: the checkpoint is lost (metadata swap)")
        return 1
    try:
        md = pickle.loads(md)
        n, files = md["step"], md["files"]
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, IndexError):
        print("verify: dcp/.metadata is not whole")
        return 1
    if n < saved:
        print(f"verify: step {saved} was saved but dcp/.metadata names step {n} (metadata swap)")
        return 1
    for r, name in enumerate(files):
        if not holds(os.path.join(dcp, name), n, r):
            print(f"verify: dcp/.metadata names step {n} but dcp/{name} is not whole")
            return 1
    return 0


def verify(args, ckpt):
    if args.case == "stale-marker":
        return verify_marker(ckpt)
    if args.case == "dcp-swap":
        return verify_dcp(ckpt)
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


def in_turn(dist, rank, world, work):
    """work() on each rank in turn, rank 0 first; a barrier after each."""
    for turn in range(world):
        if turn == rank:
            work()
        dist.barrier()


def save_shards(args, dist, rank, world, ckpt, local, n, shard):
    """rank0-mkdir and no-commit: step_N, its shards, WORLD and `latest`."""
    step = os.path.join(ckpt, f"step_{n}")
    if rank == 0 or (local and args.fixed):
        os.makedirs(step, exist_ok=True)
        fsync_path(ckpt)
    dist.barrier()

    def mine():
        final = os.path.join(step, f"shard_{rank}.pt")
        if args.case == "no-commit" and not args.fixed:
            import torch

            torch.save(shard, final)  # straight to the final name, never fsynced
            if rank == 0:
                with open(os.path.join(step, "WORLD"), "w") as f:
                    f.write(f"{world}\n")
                write_atomic(os.path.join(ckpt, "latest"), f"{n}\n")  # before the others' shards
            return
        save_synced(shard, final + ".tmp")
        os.rename(final + ".tmp", final)
        if rank == 0 or local:
            write_atomic(os.path.join(step, "WORLD"), f"{world}\n")
        fsync_path(step)

    in_turn(dist, rank, world, mine)
    if args.fixed or local:
        in_turn(dist, rank, world,
                lambda: (rank == 0 or local) and write_atomic(os.path.join(ckpt, "latest"), f"{n}\n"))


def save_marker(args, dist, rank, world, ckpt, n, shard):
    """stale-marker: the shards of `current` rewritten, then COMPLETE."""
    cur = os.path.join(ckpt, "current")
    marker = os.path.join(cur, "COMPLETE")
    if rank == 0:
        os.makedirs(cur, exist_ok=True)
        fsync_path(ckpt)
        if args.fixed and os.path.exists(marker):
            os.remove(marker)  # no marker while the shards are rewritten
            fsync_path(cur)
    dist.barrier()

    def mine():
        save_synced(shard, os.path.join(cur, f"shard_{rank}.pt"))  # over the last step's
        fsync_path(cur)

    in_turn(dist, rank, world, mine)
    if rank == 0:
        with open(os.path.join(cur, "WORLD"), "w") as f:
            f.write(f"{world}\n")
            f.flush()
            os.fsync(f.fileno())
        fsync_path(cur)  # WORLD's name durable before the marker's
        write_atomic(marker, f"{n}\n")


def save_dcp(args, dist, rank, world, ckpt, n, shard):
    """dcp-swap: every rank's __R_N.distcp, then rank 0's finish()."""
    dcp = os.path.join(ckpt, "dcp")
    if rank == 0:
        os.makedirs(dcp, exist_ok=True)
        fsync_path(ckpt)
    dist.barrier()

    def mine():
        save_synced(shard, os.path.join(dcp, f"__{rank}_{n}.distcp"))
        fsync_path(dcp)

    in_turn(dist, rank, world, mine)
    if rank != 0:
        return
    # FileSystemWriter.finish(metadata, results)
    metadata = {"step": n, "world": world, "files": [f"__{r}_{n}.distcp" for r in range(world)]}
    tmp_path = os.path.join(dcp, ".metadata.tmp")
    metadata_path = os.path.join(dcp, ".metadata")
    with open(tmp_path, "wb") as metadata_file:  # fs.create_stream(tmp_path, "wb")
        pickle.dump(metadata, metadata_file)
        metadata_file.flush()
        os.fsync(metadata_file.fileno())
    if args.fixed:
        os.replace(tmp_path, metadata_path)  # the new one over the old in one step
        fsync_path(dcp)
    else:
        # delete in-case other checkpoints were present.
        if os.path.exists(metadata_path):  # fs.exists
            os.remove(metadata_path)  # fs.rm_file
        os.rename(tmp_path, metadata_path)  # fs.rename; the folder is never fsynced
    write_atomic(os.path.join(ckpt, "saved"), f"{n}\n")


def save_race(args, rank, ckpt, shard):
    """step-folder-race: rank 0 makes step_1, every rank saves into it."""
    import torch

    step = os.path.join(ckpt, "step_1")
    if rank == 0:
        os.listdir(ckpt)  # old steps to prune (none in this job)
        os.makedirs(step, exist_ok=True)
    else:
        time.sleep(2)  # rank 1's own work before its save
        if args.fixed:
            os.makedirs(step, exist_ok=True)
    torch.save(shard, os.path.join(step, f"shard_{rank}.pt"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True,
                   choices=["rank0-mkdir", "no-commit", "stale-marker", "dcp-swap", "step-folder-race"])
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--verify", action="store_true")
    args = p.parse_args()
    ckpt = os.environ.get("CKH_CKPT_DIR", "ckpt")
    if args.verify:
        if args.case == "step-folder-race":
            p.error("--case step-folder-race has no --verify (its bug is a failed save)")
        return verify(args, ckpt)

    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    steps = 1 if args.case == "step-folder-race" else args.steps
    for n in range(1, steps + 1):
        record('{"kind":"step","step":%d,"epoch":0}' % n)
        shard = {"step": n, "rank": rank, "w": torch.full((SHARD_LEN,), float(n * 10 + rank))}
        if args.case == "stale-marker":
            save_marker(args, dist, rank, world, ckpt, n, shard)
        elif args.case == "dcp-swap":
            save_dcp(args, dist, rank, world, ckpt, n, shard)
        elif args.case == "step-folder-race":
            save_race(args, rank, ckpt, shard)
        else:
            save_shards(args, dist, rank, world, ckpt, args.case == "rank0-mkdir", n, shard)
        record('{"kind":"save","step":%d,"epoch":0,"ok":true}' % n)
    record('{"kind":"final","epochs":0,"steps":%d,"total":%d,"values":{"rank":%d}}' % (steps, steps, rank))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
