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
             the step folders older than the newest two. The restart loads
             what `latest` names and checks every shard against the manifest.

--big-mib N adds to each committed save a large state of N MiB uploaded as
a multipart upload (boto3's upload_fileobj, 5 MiB parts), named in the
manifest with its ETag: a kill between its parts leaves an upload that was
never completed, which the restart must neither see nor need.

--verify only loads the newest checkpoint (exit 0, or 1 naming what is
wrong): a scenario's `verify:`. It reports through ckh_result.py.

The endpoint comes from AWS_ENDPOINT_URL and the bucket from CKH_S3_BUCKET
(ckh sets both for a job with job.object_store); boto3 of Debian 12 does not
read AWS_ENDPOINT_URL itself, so it is passed as endpoint_url.

Usage: prog_s3_saver.py [--steps N] [--save-every K] [--naive] [--big-mib N] [--verify]
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
    for i in range(SHARDS):
        key = "%s/shard_%d" % (folder, i)
        shard, etag = get(s3, bucket, key)
        if shard is None or etag != m["etags"][i]:
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


def save_committed(s3, bucket, step, x, big_mib=0):
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
    manifest["etags"] = etags
    s3.put_object(Bucket=bucket, Key=folder + "/manifest", Body=json.dumps(manifest).encode())
    s3.put_object(Bucket=bucket, Key="ckpt/latest", Body=folder.encode())  # the commit
    # retention, after the commit: every step folder older than the newest two
    folders = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="ckpt/step_", Delimiter="/"):
        folders += [p["Prefix"].rstrip("/") for p in page.get("CommonPrefixes", [])]
    for old in sorted(folders)[:-2]:
        if old == folder:
            continue
        keys = [{"Key": "%s/shard_%d" % (old, i)} for i in range(SHARDS)] + [{"Key": old + "/manifest"},
                                                                             {"Key": old + "/big"}]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=9)
    p.add_argument("--save-every", type=int, default=3)
    p.add_argument("--naive", action="store_true")
    p.add_argument("--big-mib", type=int, default=0)
    p.add_argument("--verify", action="store_true")
    a = p.parse_args(argv)
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
                save_committed(s3, bucket, step, x, a.big_mib)
            ckh.save(step, ok=True)
    ckh.final(steps=a.steps, total=a.steps, digest=ckh.digest(x), values={"x0": x[0]})
    print("%s: steps %d..%d done" % (PROG, start + 1, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
