#!/usr/bin/python3
"""prog_torch_s3: a small PyTorch job (CPU) that checkpoints its model,
optimizer and RNG state to an object store with boto3 (Debian's
python3-torch and python3-boto3), for the object-store scenarios
(scenarios/programs/s3-torch-*.yaml, s3-multipart-*.yaml;
docs/OBJECT_STORE.md).

The job: 64 samples of 16 features drawn from --seed, a model
Linear(16, 32) -> Tanh -> Linear(32, 1), SGD with momentum 0.9; each step
trains on 8 samples picked with torch.randint from the global generator
(so a resume that does not restore the RNG state diverges). Every
--save-every steps the state is saved as three objects, model.pt, optim.pt
and rng.pt (torch.save into a buffer, then PutObject). With --big-mib N the
job also holds a table of N MiB (float32, changed every step), saved as
big.pt through a multipart upload (CreateMultipartUpload, UploadPart of
5 MiB, CompleteMultipartUpload).

With WORLD_SIZE > 1 (ckh sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
for job.nodes > 1) each rank is a process over gloo: rank r trains on every
W-th sample of the step's 8, the gradients are averaged with all_reduce,
and each rank saves its own objects under rank_<r>/, the ranks in turn (a
barrier after each turn: the requests come in the same order in every run).

Two savers:

  --naive    the objects go to fixed keys (ckpt/model.pt, ...), overwritten
             by each save, then ckpt/latest names the step. Three flaws, each
             exposed by its own fault: a save cut short between two objects
             leaves `latest` naming the old step over objects of two steps;
             an upload that fails (a 503 SlowDown past boto3's retries) is
             logged and ignored, as by an uploader nobody waits for, and
             `latest` is written anyway; the multipart upload counts as saved
             once its parts are sent: `latest` is written before
             CompleteMultipartUpload, so a kill before the Complete leaves
             `latest` naming a step whose big.pt is the previous save's.
             With several ranks, rank 0 writes `latest` in its own turn,
             before the other ranks have saved.
             The restart loads what `latest` names without checking it.
  (default)  each save writes ckpt/step_<n>/model.pt, optim.pt, rng.pt (and
             big.pt, completed), then commits by writing
             ckpt/step_<n>/COMMIT last: the ETag of every object, written
             with `If-None-Match: *` (a step is committed once; a retry of a
             commit the store had applied meets its own write, answered 412,
             and is accepted when the object holds the same bytes). A failed
             request fails the save (a save record with ok false), nothing
             is committed, training goes on. Before the parts of big.pt it
             records the upload's id in ckpt/uploads/step_<n>; the restart
             aborts every upload so recorded and not completed. Retention,
             after the commit, keeps the newest two committed steps, deleting
             an older step's COMMIT before its objects. The restart lists
             ckpt/step_*/ and loads the newest step with a COMMIT whose
             objects all match its ETags. With several ranks, rank 0
             commits once every rank has saved and the ranks have
             exchanged their ETags (no commit when any rank failed).

--verify (the default saver's layout) checks the newest commit without
loading torch: every object it names is there with its ETag (exit 0, or 1
naming what is wrong): a scenario's `verify:`.

It reports through ckh_result.py: a step record per step (digests of the
weights, the optimizer state, the RNG state and the table), a save record
per save, a resume record and a final record.

The endpoint comes from AWS_ENDPOINT_URL and the bucket from CKH_S3_BUCKET
(ckh sets both for a job with job.object_store).

Usage: prog_torch_s3.py [--steps N] [--save-every K] [--naive] [--big-mib N] [--seed S] [--verify]
"""
import argparse
import io
import json
import os
import sys

sys.dont_write_bytecode = True
from saver_common import ckh, s3_client, s3_get  # noqa: E402

PROG = "prog_torch_s3"
PART = 5 << 20          # multipart part size (S3's least but for the last part)
SHARDS = ("model.pt", "optim.pt", "rng.pt")


def client_error():
    import botocore.exceptions
    return botocore.exceptions.ClientError


def error_code(e):
    return e.response.get("Error", {}).get("Code", "")


def add_commit_condition(s3):
    """Every PutObject of a key ending in /COMMIT carries If-None-Match: *
    (boto3 1.26 has no parameter for it: a header added before signing, on
    every attempt)."""
    def condition(request, **_):
        if request.url.split("?")[0].endswith("/COMMIT"):
            request.headers["If-None-Match"] = "*"
    s3.meta.events.register("before-sign.s3.PutObject", condition)


# ---- the job ----

class Job:
    def __init__(self, seed, big_mib):
        import torch
        self.torch = torch
        torch.set_num_threads(1)
        self.rank, self.world = ckh.rank(), ckh.world_size()
        self.sub = "" if self.world == 1 else "rank_%d/" % self.rank  # this rank's objects
        if self.world > 1:
            import datetime
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback only
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            self.dist = torch.distributed
            self.dist.init_process_group("gloo", init_method="env://", rank=self.rank, world_size=self.world,
                                         timeout=datetime.timedelta(seconds=60))
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed + 1)
        self.data = torch.randn(64, 16, generator=g)
        self.target = torch.randn(64, 1, generator=g)
        self.model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.table = torch.zeros(big_mib << 18) if big_mib else None  # float32: 4 bytes each
        self.loss = 0.0

    def train(self, step):
        torch = self.torch
        idx = torch.randint(0, 64, (8,))[self.rank::self.world]  # this rank's part of the batch
        self.opt.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(self.data[idx]), self.target[idx])
        loss.backward()
        if self.world > 1:  # the gradients averaged over the ranks, as DistributedDataParallel does
            for prm in self.model.parameters():
                self.dist.all_reduce(prm.grad)
                prm.grad /= self.world
        self.opt.step()
        self.loss = float(loss)
        if self.table is not None:
            self.table.mul_(0.5).add_(float(step))

    def digests(self):
        d = {"weights": ckh.digest(self.model.state_dict()), "optim": ckh.digest(self.opt.state_dict()),
             "rng": ckh.digest(self.torch.get_rng_state())}
        if self.table is not None:
            d["table"] = ckh.digest(self.table)
        return d

    def _bytes(self, obj):
        buf = io.BytesIO()
        self.torch.save(obj, buf)
        return buf.getvalue()

    def shards(self, step):
        """[(name, bytes)] of the three small objects."""
        return [("model.pt", self._bytes({"step": step, "model": self.model.state_dict()})),
                ("optim.pt", self._bytes({"step": step, "optim": self.opt.state_dict()})),
                ("rng.pt", self._bytes({"step": step, "rng": self.torch.get_rng_state()}))]

    def big(self, step):
        return None if self.table is None else self._bytes({"step": step, "table": self.table})

    def barrier(self):
        if self.world > 1:
            self.dist.barrier()

    def gather(self, obj):
        """[obj of rank 0, obj of rank 1, ...]"""
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        self.dist.all_gather_object(out, obj)
        return out

    def restore(self, objs):
        """Loads the objects' bytes {name: bytes}; returns the step they say."""
        load = lambda name: self.torch.load(io.BytesIO(objs[name]))  # noqa: E731
        m, o, r = load("model.pt"), load("optim.pt"), load("rng.pt")
        self.model.load_state_dict(m["model"])
        self.opt.load_state_dict(o["optim"])
        self.torch.set_rng_state(r["rng"])
        if self.table is not None:
            self.table.copy_(load("big.pt")["table"])
        return r["step"]


def multipart(s3, bucket, key, body, marker=None):
    """Uploads body as a multipart upload; returns (upload id, part list).
    With marker, the upload's id is first recorded in that object."""
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    if marker:
        s3.put_object(Bucket=bucket, Key=marker, Body=json.dumps({"key": key, "upload_id": up}).encode())
    parts = []
    for n, off in enumerate(range(0, len(body), PART), 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=body[off:off + PART])
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    return up, parts


def complete(s3, bucket, key, up, parts):
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                        MultipartUpload={"Parts": parts})["ETag"]


# ---- the naive saver ----

def save_naive(s3, bucket, job, step):
    """The ranks save in turn (a barrier after each turn, so that the
    requests come in the same order in every run); rank 0 writes `latest`
    in its own turn, before the other ranks' objects (a flaw with several
    ranks)."""
    for turn in range(job.world):
        if turn == job.rank:
            save_naive_rank(s3, bucket, job, step)
        job.barrier()


def save_naive_rank(s3, bucket, job, step):
    base = "ckpt/" + job.sub
    for name, body in job.shards(step):
        try:
            s3.put_object(Bucket=bucket, Key=base + name, Body=body)
        except client_error() as e:  # the flaw: logged, and the save goes on
            print("%s: warning: upload of %s%s failed: %s" % (PROG, base, name, e), file=sys.stderr)
    big = job.big(step)
    if big is None:
        if job.rank == 0:
            s3.put_object(Bucket=bucket, Key="ckpt/latest", Body=b"%d" % step)
        return
    up, parts = multipart(s3, bucket, base + "big.pt", big)
    if job.rank == 0:
        s3.put_object(Bucket=bucket, Key="ckpt/latest", Body=b"%d" % step)  # the flaw: before Complete
    complete(s3, bucket, base + "big.pt", up, parts)


def load_naive(s3, bucket, job):
    data, _ = s3_get(s3, bucket, "ckpt/latest")
    if data is None:
        return None
    objs = {}
    for name in SHARDS + (("big.pt",) if job.table is not None else ()):
        objs[name], _ = s3_get(s3, bucket, "ckpt/" + job.sub + name)
        if objs[name] is None:
            raise ValueError("ckpt/%s%s is missing" % (job.sub, name))
    job.restore(objs)
    return int(data)


# ---- the saver with a commit object ----

def folder_of(step):
    return "ckpt/step_%06d" % step


def list_keys(s3, bucket, prefix, delimiter=None):
    """(keys, common prefixes) under prefix, every page."""
    keys, prefixes = [], []
    kw = {"Bucket": bucket, "Prefix": prefix}
    if delimiter:
        kw["Delimiter"] = delimiter
    for page in s3.get_paginator("list_objects_v2").paginate(**kw):
        keys += [o["Key"] for o in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    return keys, prefixes


def put_commit(s3, bucket, key, body):
    """PutObject with If-None-Match: * (add_commit_condition); a 412 is
    accepted only when the object holds these very bytes: a retry of our
    own commit that the store had applied before the connection dropped."""
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    except client_error() as e:
        if error_code(e) != "PreconditionFailed":
            raise
        held, _ = s3_get(s3, bucket, key)
        if held != body:
            raise ValueError("%s exists with other contents: another job committed this step" % key) from e
        print("%s: %s was already there with our bytes (a retried commit)" % (PROG, key), file=sys.stderr)


def save_commit(s3, bucket, job, step):
    """Saves and commits step; returns None, or the error that failed the
    save. Every rank saves its objects (in turn, as save_naive), the ranks
    exchange their ETags or errors, and only when none failed does rank 0
    commit, then apply retention; a barrier ends the save."""
    mine = None
    for turn in range(job.world):
        if turn == job.rank:
            mine = save_rank_objects(s3, bucket, job, step)
        job.barrier()
    etags, errors = {}, []
    for r, (e, tags) in enumerate(job.gather(mine)):
        etags.update(tags)
        if e:
            errors.append(e if job.world == 1 else "rank %d: %s" % (r, e))
    err = None
    if errors:
        err = "; ".join(errors)
    elif job.rank == 0:
        try:
            put_commit(s3, bucket, folder_of(step) + "/COMMIT",
                       json.dumps({"step": step, "etags": etags}, sort_keys=True).encode())
            retention(s3, bucket, step)
        except (client_error(), ValueError) as e:
            err = "%s: %s" % (type(e).__name__, e)
    err = job.gather(err)[0] or err  # rank 0's verdict on the commit is every rank's
    job.barrier()
    return err


def save_rank_objects(s3, bucket, job, step):
    """(None, {name: ETag}) of this rank's objects of step, or (error, {})."""
    folder = folder_of(step) + "/" + job.sub
    marker = "ckpt/uploads/step_%06d%s" % (step, "" if job.world == 1 else "_" + job.sub.rstrip("/"))
    etags = {}
    up = None
    try:
        big = job.big(step)
        if big is not None:
            up, parts = multipart(s3, bucket, folder + "big.pt", big, marker=marker)
            etags[job.sub + "big.pt"] = complete(s3, bucket, folder + "big.pt", up, parts)
            up = None
            s3.delete_object(Bucket=bucket, Key=marker)
        for name, body in job.shards(step):
            etags[job.sub + name] = s3.put_object(Bucket=bucket, Key=folder + name, Body=body)["ETag"]
    except client_error() as e:
        if up is not None:  # an upload this save started: abort it now (the restart would otherwise)
            try:
                s3.abort_multipart_upload(Bucket=bucket, Key=folder + "big.pt", UploadId=up)
                s3.delete_object(Bucket=bucket, Key=marker)
            except client_error():
                pass
        return "%s: %s" % (type(e).__name__, e), {}
    return None, etags


def retention(s3, bucket, newest):
    """After the commit of step `newest`: keep the newest two committed
    steps; delete every other step folder older than `newest`, its COMMIT
    first, so that a folder half deleted is never taken for a checkpoint."""
    keys, _ = list_keys(s3, bucket, "ckpt/step_")
    folders = {}
    for k in keys:
        folders.setdefault(k.rsplit("/", 1)[0], []).append(k)
    committed = sorted(f for f, ks in folders.items() if f + "/COMMIT" in ks)
    keep = set(committed[-2:])
    for f in sorted(folders):
        if f in keep or f >= folder_of(newest):
            continue
        if f + "/COMMIT" in folders[f]:
            s3.delete_object(Bucket=bucket, Key=f + "/COMMIT")
        rest = [{"Key": k} for k in folders[f] if not k.endswith("/COMMIT")]
        if rest:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": rest, "Quiet": True})


def abort_leftovers(s3, bucket):
    """Aborts every upload a killed run recorded in ckpt/uploads/ and did
    not complete; returns how many it aborted."""
    keys, _ = list_keys(s3, bucket, "ckpt/uploads/")
    n = 0
    for k in keys:
        data, _ = s3_get(s3, bucket, k)
        if data is None:
            continue
        m = json.loads(data)
        try:
            s3.abort_multipart_upload(Bucket=bucket, Key=m["key"], UploadId=m["upload_id"])
            n += 1
            print("%s: aborted the upload of %s left by a killed run" % (PROG, m["key"]), file=sys.stderr)
        except client_error() as e:
            if error_code(e) != "NoSuchUpload":  # completed, or aborted already
                raise
        s3.delete_object(Bucket=bucket, Key=k)
    return n


def newest_commit(s3, bucket):
    """(folder, commit) of the newest committed step, or (None, None); a
    commit whose objects do not match raises."""
    _, prefixes = list_keys(s3, bucket, "ckpt/step_", "/")
    for folder in sorted((p.rstrip("/") for p in prefixes), reverse=True):
        data, _ = s3_get(s3, bucket, folder + "/COMMIT")
        if data is None:
            continue  # never committed: a save cut short
        return folder, json.loads(data)
    return None, None


def check_commit(s3, bucket, folder, commit, want_bytes, sub=""):
    """{name: bytes} of the commit's objects under sub (a rank's rank_<r>/,
    or every object), names without sub (empty bodies unless want_bytes);
    raises ValueError naming an object that does not match."""
    objs = {}
    for name, etag in sorted(commit["etags"].items()):
        if not name.startswith(sub):
            continue
        key = "%s/%s" % (folder, name)
        if want_bytes:
            body, got = s3_get(s3, bucket, key)
        else:
            try:
                got, body = s3.head_object(Bucket=bucket, Key=key)["ETag"], b""
            except client_error() as e:
                if error_code(e) not in ("404", "NoSuchKey"):
                    raise
                got = body = None
        if body is None:
            raise ValueError("%s is committed but missing" % key)
        if got != etag:
            raise ValueError("%s has ETag %s, its commit says %s" % (key, got, etag))
        objs[name[len(sub):]] = body
    return objs


def load_commit(s3, bucket, job):
    if job.rank == 0:
        abort_leftovers(s3, bucket)
    job.barrier()
    folder, commit = newest_commit(s3, bucket)
    if folder is None:
        return None
    step = job.restore(check_commit(s3, bucket, folder, commit, True, job.sub))
    if step != commit["step"]:
        raise ValueError("%s holds step %d, its commit says %d" % (folder, step, commit["step"]))
    return step


def verify(s3, bucket):
    folder, commit = newest_commit(s3, bucket)
    if folder is None:
        print("%s --verify: no commit" % PROG)
        return 0
    check_commit(s3, bucket, folder, commit, False)
    print("%s --verify: %s is whole" % (PROG, folder))
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--save-every", type=int, default=3)
    p.add_argument("--naive", action="store_true")
    p.add_argument("--big-mib", type=int, default=0)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--verify", action="store_true")
    a = p.parse_args(argv)
    bucket = os.environ["CKH_S3_BUCKET"]
    s3 = s3_client(attempts=2)
    try:
        if a.verify:
            return verify(s3, bucket)
    except (ValueError, KeyError, TypeError, client_error()) as e:
        print("%s --verify: %s: %s" % (PROG, type(e).__name__, e))
        return 1
    if not a.naive:
        add_commit_condition(s3)
    job = Job(a.seed, a.big_mib)
    try:
        start = (load_naive if a.naive else load_commit)(s3, bucket, job)
    except (ValueError, KeyError, TypeError, RuntimeError, client_error()) as e:
        print("%s: cannot resume: %s: %s" % (PROG, type(e).__name__, e), file=sys.stderr)
        return 1
    if start is None:
        start = 0
    else:
        ckh.resume(start)
    for step in range(start + 1, a.steps + 1):
        job.train(step)
        ckh.step(step, digests=job.digests(), values={"loss": job.loss})
        if step % a.save_every == 0:
            if a.naive:
                save_naive(s3, bucket, job, step)
                ckh.save(step, ok=True)
            else:
                err = save_commit(s3, bucket, job, step)
                ckh.save(step, ok=err is None, error=err)
                if err:
                    print("%s: the save of step %d failed, nothing committed: %s" % (PROG, step, err),
                          file=sys.stderr)
    ckh.final(steps=a.steps, total=a.steps, digest=ckh.digest(job.model.state_dict()), values={"loss": job.loss})
    if job.world > 1:
        job.dist.destroy_process_group()
    print("%s: steps %d..%d done" % (PROG, start + 1, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
