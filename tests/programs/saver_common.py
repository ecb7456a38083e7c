"""saver_common: what the library's object-store savers share
(prog_s3_saver.py, prog_torch_s3.py). prog_py_saver.py keeps its own
copies: tests/test_explore_warm.sh runs copies of it from other folders.

  ckh         the result protocol (tools/ckh_result.py): this source tree's
              copy first, else an installed one
  TOOLS       that tools/ folder
  advance     the integer savers' step rule
  s3_client   a boto3 S3 client for AWS_ENDPOINT_URL (boto3 of Debian 12
              does not read that variable itself), retrying a request at
              most `attempts` times in all
  s3_get      an object's bytes and ETag, (None, None) when there is none

boto3 is imported only by s3_client and s3_get, so a saver that uses
neither runs where boto3 is missing. A program sets
sys.dont_write_bytecode before importing this module, so that no
__pycache__ is left beside the sources.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir, "tools"))
if os.path.exists(os.path.join(TOOLS, "ckh_result.py")):
    sys.path.insert(0, TOOLS)
import ckh_result as ckh  # noqa: E402

__all__ = ["TOOLS", "advance", "ckh", "s3_client", "s3_get"]


def advance(x, step):
    """The next state of the integer savers: 8 integers, one fixed rule."""
    return [(v * 31 + step * (i + 7)) % 1000003 for i, v in enumerate(x)]


def s3_client(attempts=3):
    """A boto3 client for the store ckh serves (AWS_ENDPOINT_URL)."""
    import boto3
    import botocore.config
    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                        config=botocore.config.Config(retries={"max_attempts": attempts, "mode": "standard"}))


def s3_get(s3, bucket, key):
    """The object's bytes and ETag, or (None, None) when there is none."""
    import botocore.exceptions
    try:
        r = s3.get_object(Bucket=bucket, Key=key)
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] == "NoSuchKey":
            return None, None
        raise
    return r["Body"].read(), r["ETag"]
