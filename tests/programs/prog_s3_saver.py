#!/usr/bin/python3
"""prog_s3_saver: a small training job that checkpoints to an object store
with boto3 (Debian's python3-boto3), for the object-store scenarios
(scenarios/programs/s3-*.yaml, docs/OBJECT_STORE.md).

The job: a state of 8 integers advanced by a fixed rule per step, saved
every --save-every steps as 4 shards of 2 integers each. Two savers:

  --naive    the shards go to fixed keys (ckpt/shard_<i>, overwritten by each
             save), then ckpt/latest names the step. A save cut short between
             shards leaves `latest` naming the old step over shards of two
             different steps, and the restart loads them without noticing.
  (default)  each save writes ckpt/step_<n>/shard_<i>, then the manifest
             ckpt/step_<n>/manifest (every shard's ETag), then commits by
             writing ckpt/latest; only after the commit does retention delete
             the step folders older than the newest --keep (default 2),
             never the one just committed. The restart loads what `latest`
             names and checks every shard against the manifest.

Variants of the default saver, each a bug that a fault or an oracle finds
(docs/OBJECT_STORE.md):

  --retention before-commit   retention runs after the shards and before
             the manifest: the step folders it lists include the one being
             written, so it keeps that one among the newest --keep and, with
             --keep 1, deletes the newest complete checkpoint before the new
             one is committed (the retention oracle names the delete; a kill
             before the commit leaves nothing to resume from).
  --manifest-from-list   the manifest names the shards a listing of the
             step folder shows right after writing them, and the restart
             loads the shards the manifest names: a listing that leaves out
             recent keys (s3-stale-list) makes a manifest without the last
             shard, and the restart resumes from part of the state.

--big-mib N adds to each committed save a large state of N MiB uploaded as
a multipart upload (boto3's upload_fileobj, 5 MiB parts), named in the
manifest with its ETag: a kill between its parts leaves an upload that was
never completed, which the restart must neither see nor need.

--verify only loads the newest checkpoint (exit 0, or 1 naming what is
wrong): a scenario's `verify:`. It reports through ckh_result.py.

The endpoint comes from AWS_ENDPOINT_URL and the bucket from CKH_S3_BUCKET
(ckh sets both for a job with job.object_store); boto3 of Debian 12 does not
read AWS_ENDPOINT_URL itself, so it is passed as endpoint_url.

Usage: prog_s3_saver.py [--steps N] [--save-every K] [--naive] [--big-mib N] [--keep N]
                        [--retention after-commit|before-commit] [--manifest-from-list] [--verify]
"""
import argparse
import io
import json
import os
import sys

sys.dont_write_bytecode = True
from saver_common import advance, ckh, s3_client as client, s3_get as get  # noqa: E402,F401
import boto3  # noqa: E402
import boto3.s3.transfer  # noqa: E402
import botocore  # noqa: E402

PROG = "prog_s3_saver"
SHARDS = 4


def load_naive(s3, bucket):
    data, _ = get(s3, bucket, "ckpt/latest")
    if data is None:
        return None
    step = int(data)
    x = []
    for i in range(SHARDS):
        shard, _ = get(s3, bucket, "ckpt/shard_%d" % i)
        if shard is None:
            raise ValueError("ckpt/shard_%d is missing" % i)
        x += json.loads(shard)["x"]
    return {"step": step, "x": x}


def load_committed(s3, bucket):
    data, _ = get(s3, bucket, "ckpt/latest")
    if data is None:
        return None
    folder = data.decode().strip()
    manifest, _ = get(s3, bucket, folder + "/manifest")
    if manifest is None:
        raise ValueError("%s/manifest is missing: `latest` names an uncommitted checkpoint" % folder)
    m = json.loads(manifest)
    x = []
    if "shards" in m:  # --manifest-from-list: the shards a listing showed
        named = [(k, e) for k, e in m["shards"]]
    else:
        named = [("%s/shard_%d" % (folder, i), m["etags"][i]) for i in range(SHARDS)]
    for key, want in named:
        shard, etag = get(s3, bucket, key)
        if shard is None or etag != want:
            raise ValueError("%s does not match the manifest" % key)
        part = json.loads(shard)
        if part["step"] != m["step"]:
            raise ValueError("%s holds step %d, the manifest step %d" % (key, part["step"], m["step"]))
        x += part["x"]
    if "big_etag" in m:
        big, etag = get(s3, bucket, folder + "/big")
        if big is None or etag != m["big_etag"] or big != big_state(m["step"], len(big) >> 20):
            raise ValueError("%s/big does not match the manifest" % folder)
    return {"step": m["step"], "x": x}


def big_state(step, mib):
    """The large state of a step: mib MiB that depend on the step."""
    return (b"%08d" % step) * (mib << 17)


def save_naive(s3, bucket, step, x):
    for i in range(SHARDS):
        s3.put_object(Bucket=bucket, Key="ckpt/shard_%d" % i,
                      Body=json.dumps({"step": step, "x": x[2 * i:2 * i + 2]}).encode())
    s3.put_object(Bucket=bucket, Key="ckpt/latest", Body=b"%d" % step)


def retain(s3, bucket, keep, committed=None):
    """Deletes every step folder but the newest `keep` a listing shows, and
    never `committed` (the folder just committed)."""
    folders = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="ckpt/step_", Delimiter="/"):
        folders += [p["Prefix"].rstrip("/") for p in page.get("CommonPrefixes", [])]
    for old in sorted(folders)[:-keep]:
        if old == committed:
            continue
        keys = [{"Key": "%s/shard_%d" % (old, i)} for i in range(SHARDS)] + [{"Key": old + "/manifest"},
                                                                             {"Key": old + "/big"}]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


def save_committed(s3, bucket, step, x, big_mib=0, keep=2, retention="after-commit", manifest_from_list=False):
    folder = "ckpt/step_%06d" % step
    etags = []
    manifest = {"step": step}
    if big_mib:
        cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20,
                                               use_threads=False)
        s3.upload_fileobj(io.BytesIO(big_state(step, big_mib)), bucket, folder + "/big", Config=cfg)
        manifest["big_etag"] = s3.head_object(Bucket=bucket, Key=folder + "/big")["ETag"]
    for i in range(SHARDS):
        r = s3.put_object(Bucket=bucket, Key="%s/shard_%d" % (folder, i),
                          Body=json.dumps({"step": step, "x": x[2 * i:2 * i + 2]}).encode())
        etags.append(r["ETag"])
    if retention == "before-commit":  # the bug: the folder being written counts among the newest
        retain(s3, bucket, keep)
    if manifest_from_list:  # the bug: trusts a listing made right after writing
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=folder + "/shard_").get("Contents", [])
        manifest["shards"] = [[o["Key"], o["ETag"]] for o in listed]
    else:
        manifest["etags"] = etags
    s3.put_object(Bucket=bucket, Key=folder + "/manifest", Body=json.dumps(manifest).encode())
    s3.put_object(Bucket=bucket, Key="ckpt/latest", Body=folder.encode())  # the commit
    if retention == "after-commit":  # after the commit, never the folder just committed
        retain(s3, bucket, keep, committed=folder)


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=9)
    p.add_argument("--save-every", type=int, default=3)
    p.add_argument("--naive", action="store_true")
    p.add_argument("--big-mib", type=int, default=0)
    p.add_argument("--keep", type=int, default=2)
    p.add_argument("--retention", choices=["after-commit", "before-commit"], default="after-commit")
    p.add_argument("--manifest-from-list", action="store_true")
    p.add_argument("--verify", action="store_true")
    a = p.parse_args(argv)
    if a.keep < 1:
        p.error("--keep must be at least 1")
    bucket = os.environ["CKH_S3_BUCKET"]
    s3 = client()
    load = load_naive if a.naive else load_committed
    try:
        state = load(s3, bucket)
    except (ValueError, KeyError, TypeError, botocore.exceptions.ClientError) as e:
        print("%s: cannot resume: %s: %s" % (PROG, type(e).__name__, e), file=sys.stderr)
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
            if a.naive:
                save_naive(s3, bucket, step, x)
            else:
                save_committed(s3, bucket, step, x, a.big_mib, a.keep, a.retention, a.manifest_from_list)
            ckh.save(step, ok=True)
    ckh.final(steps=a.steps, total=a.steps, digest=ckh.digest(x), values={"x0": x[0]})
    print("%s: steps %d..%d done" % (PROG, start + 1, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
