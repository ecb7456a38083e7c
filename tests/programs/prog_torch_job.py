"""prog_torch_job: the small PyTorch training job that prog_torch_direct.py,
prog_torch_atomic.py and prog_ddp_gloo.py run under ckh; they differ only in
how a checkpoint is saved and found again (save_direct / save_atomic below)
and in the world size.

The job (CPU, deterministic: the same arguments give the same bits):
  - data: 64 samples of 32 features and a target, generated from --seed;
  - model: Linear(32, H) -> Tanh -> Linear(H, 1), SGD with momentum 0.9
    (or Adam, --optim adam), StepLR halving the learning rate after each
    epoch;
  - order: epoch e visits the samples in torch.randperm(64) drawn from a
    generator seeded with (seed, e); a step takes the next 8 (a global
    batch); with WORLD_SIZE = W > 1 each rank takes every W-th of them and
    DistributedDataParallel (gloo) averages the gradients;
  - every --save-every steps the state (model, optimizer, scheduler, step,
    epoch) is saved; on start the newest checkpoint is loaded, and a
    checkpoint that cannot be loaded is an error naming the file (exit 1);
  - --forget-optimizer plants a common bug: the resume restores the model
    and the scheduler but not the optimizer (its momentum restarts at 0).

It reports through ckh_result.py (the result protocol): a resume record
after loading, one step record per step (digests of the weights, optimizer
and scheduler state; the lr and loss; the sample ids this rank used), a
save record per save attempt and a final record. Outside ckh (CKH_RESULT
unset) it writes no records and keeps its checkpoints in ./ckpt.
"""

import argparse
import datetime
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_TOOLS = os.path.join(HERE, os.pardir, os.pardir, "tools")
if os.path.exists(os.path.join(_TOOLS, "ckh_result.py")):
    sys.path.insert(0, os.path.abspath(_TOOLS))  # the source tree's copy first
import ckh_result as ckh  # noqa: E402
from verify_ckpt import newest  # noqa: E402  (how each protocol finds its newest checkpoint)

import torch  # noqa: E402

SAMPLES = 64        # dataset size
FEATURES = 32       # inputs per sample
GLOBAL_BATCH = 8    # samples per step, over all ranks


def parse_args(prog, argv):
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12, help="steps to train (default 12)")
    p.add_argument("--save-every", type=int, default=4, help="steps between saves (default 4)")
    p.add_argument("--hidden", type=int, default=128, help="hidden units (checkpoint size)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the data, model and order")
    p.add_argument("--optim", choices=("sgd", "adam"), default="sgd",
                   help="the optimizer: SGD with momentum (default) or Adam, whose reloaded state "
                        "torch.save pickles into other bytes than the uninterrupted run's")
    p.add_argument("--forget-optimizer", action="store_true",
                   help="a planted bug: resume without restoring the optimizer's state")
    p.add_argument("--verify", nargs="?", const="", metavar="DIR",
                   help="only check that the newest checkpoint in DIR (default: the checkpoint "
                        "folder) loads: exit 0, or 1 naming the file (a scenario's `verify:`)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.save_every < 1 or a.hidden < 1:
        p.error("--steps, --save-every and --hidden must be at least 1")
    return a


# ---- saving and finding checkpoints ----

def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(dirpath, name, write):
    """write(f) into a temporary file beside the final one, fsync it,
    rename it over the final name, fsync the folder."""
    tmp = os.path.join(dirpath, "." + name + ".tmp")
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(dirpath, name))
    _fsync_dir(dirpath)


def save_direct(state, dirpath, step):
    """The unsafe way: torch.save straight to the final path. A kill while
    it writes leaves a torn step_<n>.pt, the newest file on the restart."""
    torch.save(state, os.path.join(dirpath, "step_%d.pt" % step))


def save_atomic(state, dirpath, step):
    """The safe way: the checkpoint through a temporary file, fsync, rename
    and an fsync of the folder, then `latest` naming it the same way; the
    checkpoint before the previous one is removed once `latest` is durable."""
    name = "step_%d.pt" % step
    _write_atomic(dirpath, name, lambda f: torch.save(state, f))
    _write_atomic(dirpath, "latest", lambda f: f.write((name + "\n").encode()))
    for old in os.listdir(dirpath):
        m = re.fullmatch(r"step_(\d+)\.pt", old)
        if m and int(m.group(1)) < step - state["save_every"]:
            os.unlink(os.path.join(dirpath, old))


def newest_direct(dirpath):
    """The checkpoint with the highest step number, or None."""
    return newest("direct", dirpath)


def newest_atomic(dirpath):
    """The checkpoint `latest` names, or None when there is no `latest`."""
    return newest("atomic", dirpath)


PROTOCOLS = {"direct": (save_direct, newest_direct), "atomic": (save_atomic, newest_atomic)}


# ---- the job ----

def make_data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    y = torch.tanh(x @ w) + 0.1 * torch.randn(SAMPLES, 1, generator=g)
    return x, y


def batch_ids(seed, step, rank, world):
    """Sample ids of (1-based) step for rank: epoch order, then its share."""
    per_epoch = SAMPLES // GLOBAL_BATCH
    epoch, i = divmod(step - 1, per_epoch)
    order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(seed * 1000 + epoch))
    return order[i * GLOBAL_BATCH:(i + 1) * GLOBAL_BATCH][rank::world]


def fail(prog, text):
    print("%s: %s" % (prog, text), file=sys.stderr, flush=True)
    sys.exit(1)


def load_newest(prog, newest, dirpath):
    """The newest checkpoint's state and path ((None, None): none yet);
    one that cannot be loaded stops the program naming the file."""
    path = None
    try:
        path = newest(dirpath)
        if path is None:
            return None, None
        state = torch.load(path, map_location="cpu")
        for key in ("model", "optim", "sched", "step", "epoch"):
            if key not in state:
                raise KeyError("no %r in the checkpoint" % key)
        return state, path
    except Exception as e:  # a torn or foreign file: name it and stop
        fail(prog, "cannot load the newest checkpoint %s: %s: %s"
             % (path or dirpath, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))


def verify(prog, newest, dirpath):
    """--verify: 0 when the newest checkpoint loads (or there is none)."""
    state, path = load_newest(prog, newest, dirpath)
    print("%s --verify: %s" % (prog, "%s loads (step %d)" % (path, state["step"]) if path
                               else "no checkpoint in %s" % dirpath))
    return 0


def run(prog, protocol, argv=None):
    """Trains, saving with protocol ("direct" or "atomic"); rank 0 saves."""
    args = parse_args(prog, argv)
    save, newest = PROTOCOLS[protocol]
    if args.verify is not None:
        return verify(prog, newest, args.verify or ckh.ckpt_dir("ckpt", create=False))
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    rank, world = ckh.rank(), ckh.world_size()
    if world > 1:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback only
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        torch.distributed.init_process_group("gloo", init_method="env://", rank=rank,
                                             world_size=world,
                                             timeout=datetime.timedelta(seconds=60))
    dirpath = ckh.ckpt_dir("ckpt")
    per_epoch = SAMPLES // GLOBAL_BATCH

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, args.hidden), torch.nn.Tanh(),
                                torch.nn.Linear(args.hidden, 1))
    if args.optim == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.002)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x, y = make_data(args.seed)

    start = 0
    state, path = load_newest(prog, newest, dirpath)
    if state is not None:
        model.load_state_dict(state["model"])
        if not args.forget_optimizer:  # the planted bug skips this: momentum restarts at 0
            opt.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        start = int(state["step"])
        ckh.resume(start, epoch=start // per_epoch)
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model

    loss_v = 0.0
    for step in range(start + 1, args.steps + 1):
        epoch = (step - 1) // per_epoch
        ids = batch_ids(args.seed, step, rank, world)
        lr = opt.param_groups[0]["lr"]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x[ids]), y[ids])
        loss.backward()
        opt.step()
        if step % per_epoch == 0:
            sched.step()
        loss_v = loss.item()
        ckh.step(step, epoch=epoch,
                 digests={"weights": ckh.digest(model.state_dict()),
                          "optim": ckh.digest(opt.state_dict()),
                          "sched": ckh.digest(sched.state_dict())},
                 values={"lr": lr, "loss": loss_v}, samples=ids)
        if step % args.save_every == 0:
            if rank == 0:
                state = {"model": model.state_dict(), "optim": opt.state_dict(),
                         "sched": sched.state_dict(), "step": step, "epoch": epoch,
                         "save_every": args.save_every}
                try:
                    save(state, dirpath, step)
                except (OSError, RuntimeError) as e:
                    # torch's own errors (RuntimeError) hide the errno: name the file
                    target = os.path.join(dirpath, "step_%d.pt" % step)
                    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    ckh.save(step, epoch=epoch, ok=False,
                             rc=-e.errno if isinstance(e, OSError) and e.errno else None,
                             error="%s: %s" % (target, text))
                    fail(prog, "save of step %d to %s failed: %s" % (step, target, text))
                ckh.save(step, epoch=epoch, ok=True)
            if world > 1:
                torch.distributed.barrier()

    steps = args.steps
    ckh.final(epochs=steps // per_epoch, steps=steps, total=steps,
              digest=ckh.digest(model.state_dict()), values={"loss": loss_v})
    if world > 1:
        torch.distributed.destroy_process_group()
    print("%s: rank %d trained steps %d..%d (loss %.6f), checkpoints in %s"
          % (prog, rank, start + 1, steps, loss_v, dirpath))
    return 0
