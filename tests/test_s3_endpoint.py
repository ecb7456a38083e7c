"""Conformance test of the S3 endpoint (harness/ckhfs/s3_endpoint.c, rules
E1-E8, over the store of sim/objstore.c, rules O1-O12): Debian's boto3
calls and curl's raw requests against the answers the model gives, and
malformed requests answered with S3's XML errors, the server alive after
each of them.

    test_s3_endpoint.py PATH/TO/s3_serve

The server is build/programs/s3_serve (tests/programs/s3_serve.c). Exit 77
(CTest's skip) when boto3 or curl is missing, or when ckh was built without
the endpoint.
"""

import io
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import unittest

try:
    import boto3
    import botocore
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
except ImportError:  # said below, exit 77
    boto3 = None

SERVE = None
MiB = 1024 * 1024


class Server:
    """One s3_serve process: its ports and its command channel."""

    def __init__(self, *args):
        self.p = subprocess.Popen([SERVE, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        if not line:
            rc = self.p.wait()
            if rc == 77:
                print("test_s3_endpoint: SKIPPED: ckh was built without the S3 endpoint")
                sys.exit(77)
            raise RuntimeError("s3_serve did not start (exit %d)" % rc)
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def cmd(self, text):
        """Sends one command; returns its answer lines (without the '.')."""
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if line in (".\n", ""):
                return out
            out.append(line.rstrip("\n"))

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        self.p.stdout.close()
        return rc


def client(url, **cfg):
    return boto3.client("s3", endpoint_url=url, aws_access_key_id="ckhtestkey",
                        aws_secret_access_key="ckhtestsecret", region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}, **cfg))


def curl(url, *args, data=None):
    """curl's answer: (status, headers text, body bytes)."""
    cmd = ["curl", "-s", "-S", "-i", "--max-time", "60", *args, url]
    if data is not None:
        cmd[1:1] = ["--data-binary", "@-"]
    r = subprocess.run(cmd, input=data, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("curl failed: %s" % r.stderr.decode())
    raw = r.stdout
    head, _, body = raw.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 100"):
        head, _, body = body.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, head.decode("latin-1"), body


def error_code(body):
    m = re.search(rb"<Error><Code>([^<]*)</Code>", body)
    return m.group(1).decode() if m else None


def raw_request(port, data):
    """Sends bytes on a fresh connection; returns the first answer that comes
    back (b"" when the server closes or waits for more: no answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(data)
        out = b""
        try:
            while b"\r\n\r\n" not in out:
                chunk = s.recv(65536)
                if not chunk:
                    return out
                out += chunk
            head, _, body = out.partition(b"\r\n\r\n")
            m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
            want = int(m.group(1)) if m else 0
            while len(body) < want:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
            return head + b"\r\n\r\n" + body
        except (ConnectionResetError, socket.timeout):
            return out


class Boto3Calls(unittest.TestCase):
    """boto3's calls against the model's answers (E1-E3, O2-O11)."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--bucket", "ckpt", "--min-part", "5")
        cls.s3 = client(cls.srv.url)

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def err(self, fn, **kw):
        with self.assertRaises(botocore.exceptions.ClientError) as cm:
            fn(**kw)
        return cm.exception.response["Error"]["Code"]

    def test_buckets(self):  # O2
        s3 = self.s3
        s3.create_bucket(Bucket="made-here")
        self.assertEqual(self.err(s3.create_bucket, Bucket="made-here"), "BucketAlreadyOwnedByYou")
        for bad in ["x", "foo..bar", "foo.-bar", "foo-.bar", "192.168.5.123"]:  # S3's naming rules
            self.assertEqual(self.err(s3.create_bucket, Bucket=bad), "InvalidBucketName", bad)
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        self.assertIn("made-here", names)
        s3.head_bucket(Bucket="made-here")
        s3.put_object(Bucket="made-here", Key="k", Body=b"v")
        self.assertEqual(self.err(s3.delete_bucket, Bucket="made-here"), "BucketNotEmpty")
        s3.delete_object(Bucket="made-here", Key="k")
        s3.delete_bucket(Bucket="made-here")
        self.assertEqual(self.err(s3.list_objects_v2, Bucket="made-here"), "NoSuchBucket")
        self.assertEqual(self.err(s3.put_object, Bucket="made-here", Key="k", Body=b""), "NoSuchBucket")

    def test_objects_and_odd_keys(self):  # O3, E1
        s3 = self.s3
        for key in ["plain", "a b/c+d%e", "sp ace/ü/日本", "q?mark#hash&amp=1", "trailing/", "x//y"]:
            body = key.encode() * 3
            r = s3.put_object(Bucket="ckpt", Key=key, Body=body, ContentType="text/x-ckh")
            g = s3.get_object(Bucket="ckpt", Key=key)
            self.assertEqual(g["Body"].read(), body, key)
            self.assertEqual(g["ETag"], r["ETag"])
            self.assertEqual(g["ContentType"], "text/x-ckh")
            h = s3.head_object(Bucket="ckpt", Key=key)
            self.assertEqual(h["ContentLength"], len(body))
            listed = s3.list_objects_v2(Bucket="ckpt", Prefix=key)["Contents"]
            self.assertEqual(listed[0]["Key"], key)
            self.assertEqual(listed[0]["Size"], len(body))
        self.assertEqual(self.err(s3.get_object, Bucket="ckpt", Key="never"), "NoSuchKey")
        with self.assertRaises(botocore.exceptions.ClientError) as cm:
            s3.head_object(Bucket="ckpt", Key="never")
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 404)
        s3.delete_object(Bucket="ckpt", Key="never")  # absent: still a success
        s3.put_object(Bucket="ckpt", Key="empty", Body=b"")
        self.assertEqual(s3.get_object(Bucket="ckpt", Key="empty")["Body"].read(), b"")

    def test_ranges(self):  # O4
        s3 = self.s3
        s3.put_object(Bucket="ckpt", Key="r", Body=b"0123456789")
        def rng(spec):
            g = s3.get_object(Bucket="ckpt", Key="r", Range=spec)
            return g["Body"].read(), g.get("ContentRange")
        self.assertEqual(rng("bytes=2-4"), (b"234", "bytes 2-4/10"))
        self.assertEqual(rng("bytes=7-"), (b"789", "bytes 7-9/10"))
        self.assertEqual(rng("bytes=-2"), (b"89", "bytes 8-9/10"))
        self.assertEqual(rng("bytes=5-400"), (b"56789", "bytes 5-9/10"))
        self.assertEqual(s3.get_object(Bucket="ckpt", Key="r", Range="bytes=9-2")["Body"].read(),
                         b"0123456789")  # not a range: the whole object
        self.assertEqual(self.err(s3.get_object, Bucket="ckpt", Key="r", Range="bytes=10-"), "InvalidRange")

    def test_listing_pages(self):  # O9
        s3 = self.s3
        keys = ["pg/%03d" % i for i in range(25)] + ["pg/sub/%d" % i for i in range(3)]
        for k in keys:
            s3.put_object(Bucket="ckpt", Key=k, Body=b"x")
        seen = []
        pages = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="ckpt", Prefix="pg/",
                                                                PaginationConfig={"PageSize": 4}):
            pages += 1
            seen += [o["Key"] for o in page.get("Contents", [])]
        self.assertEqual(seen, sorted(keys))
        self.assertEqual(pages, 7)
        r = s3.list_objects_v2(Bucket="ckpt", Prefix="pg/", Delimiter="/", MaxKeys=1000)
        self.assertEqual([p["Prefix"] for p in r["CommonPrefixes"]], ["pg/sub/"])
        self.assertEqual(len(r["Contents"]), 25)
        self.assertEqual(r["KeyCount"], 26)
        r = s3.list_objects_v2(Bucket="ckpt", Prefix="pg/", StartAfter="pg/022")
        self.assertEqual([o["Key"] for o in r["Contents"]], ["pg/023", "pg/024", "pg/sub/0", "pg/sub/1", "pg/sub/2"])
        v1 = []
        for page in s3.get_paginator("list_objects").paginate(Bucket="ckpt", Prefix="pg/",
                                                             PaginationConfig={"PageSize": 10}):
            v1 += [o["Key"] for o in page.get("Contents", [])]
        self.assertEqual(v1, sorted(keys))
        self.assertEqual(self.err(s3.list_objects_v2, Bucket="ckpt", ContinuationToken="not-a-token"),
                         "InvalidArgument")
        # v1's NextMarker naming a common prefix resumes past every key under it (O9)
        r = s3.list_objects(Bucket="ckpt", Prefix="pg/", Delimiter="/", Marker="pg/024", MaxKeys=1)
        self.assertEqual(([p["Prefix"] for p in r["CommonPrefixes"]], r["IsTruncated"]), (["pg/sub/"], False))
        r = s3.list_objects(Bucket="ckpt", Prefix="pg/", Delimiter="/", Marker="pg/sub/")
        self.assertEqual((r.get("Contents"), r.get("CommonPrefixes"), r["IsTruncated"]), (None, None, False))
        # an empty delimiter is none (not echoed); an empty token is the first page (echoed)
        r = s3.list_objects_v2(Bucket="ckpt", Prefix="pg/sub/", Delimiter="")
        self.assertNotIn("Delimiter", r)
        self.assertEqual(r["KeyCount"], 3)
        r = s3.list_objects_v2(Bucket="ckpt", Prefix="pg/sub/", ContinuationToken="")
        self.assertEqual((r["ContinuationToken"], r["KeyCount"]), ("", 3))

    def test_list_object_versions(self):  # E3: a bucket that never had versioning
        s3 = self.s3
        s3.create_bucket(Bucket="vers")
        keys = ["v/%02d" % i for i in range(7)] + ["v/sub/a", "w"]
        for k in keys:
            s3.put_object(Bucket="vers", Key=k, Body=k.encode())
        seen, pages = [], 0
        kw = {"Bucket": "vers", "MaxKeys": 3}
        while True:
            r = s3.list_object_versions(**kw)
            pages += 1
            for v in r.get("Versions", []):
                self.assertEqual((v["VersionId"], v["IsLatest"], v["Size"]), ("null", True, len(v["Key"])))
                seen.append(v["Key"])
            self.assertNotIn("DeleteMarkers", r)
            if not r["IsTruncated"]:
                break
            self.assertEqual(r["NextVersionIdMarker"], "null")
            kw.update(KeyMarker=r["NextKeyMarker"], VersionIdMarker=r["NextVersionIdMarker"])
        self.assertEqual((seen, pages), (sorted(keys), 3))
        r = s3.list_object_versions(Bucket="vers", Prefix="v/", Delimiter="/")
        self.assertEqual([p["Prefix"] for p in r["CommonPrefixes"]], ["v/sub/"])
        self.assertEqual(len(r["Versions"]), 7)
        # what a cleanup does with the listing: delete each "null" version
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in s3.list_object_versions(Bucket="vers")["Versions"]]
        s3.delete_objects(Bucket="vers", Delete={"Objects": objs, "Quiet": True})
        self.assertNotIn("Versions", s3.list_object_versions(Bucket="vers"))
        s3.delete_bucket(Bucket="vers")
        self.assertEqual(self.err(s3.list_object_versions, Bucket="vers"), "NoSuchBucket")

    def test_versions_of_unversioned_buckets(self):  # E3: ListObjectVersions, versionId=null
        s3 = self.s3
        keys = ["ver/%02d" % i for i in range(7)] + ["ver/sub/a"]
        for k in keys:
            s3.put_object(Bucket="ckpt", Key=k, Body=b"v")
        seen, pages = [], 0
        for page in s3.get_paginator("list_object_versions").paginate(Bucket="ckpt", Prefix="ver/",
                                                                     PaginationConfig={"PageSize": 3}):
            pages += 1
            for v in page.get("Versions", []):
                self.assertEqual((v["VersionId"], v["IsLatest"], v["Size"]), ("null", True, 1))
                seen.append(v["Key"])
            self.assertEqual(page.get("DeleteMarkers", []), [])
        self.assertEqual((seen, pages), (sorted(keys), 3))
        r = s3.list_object_versions(Bucket="ckpt", Prefix="ver/", Delimiter="/")
        self.assertEqual([p["Prefix"] for p in r["CommonPrefixes"]], ["ver/sub/"])
        self.assertEqual(len(r["Versions"]), 7)
        # versionId=null names the one version; any other is InvalidArgument
        self.assertEqual(s3.get_object(Bucket="ckpt", Key="ver/00", VersionId="null")["Body"].read(), b"v")
        self.assertEqual(self.err(s3.get_object, Bucket="ckpt", Key="ver/00", VersionId="3HL4kqtJlcpXroDTDmJ"),
                         "InvalidArgument")
        self.assertEqual(self.err(s3.put_object_tagging, Bucket="ckpt", Key="ver/00", VersionId="x",
                                  Tagging={"TagSet": []}), "NotImplemented")
        s3.delete_object(Bucket="ckpt", Key="ver/00", VersionId="null")
        self.assertEqual(self.err(s3.head_object, Bucket="ckpt", Key="ver/00"), "404")
        s3.delete_objects(Bucket="ckpt", Delete={"Objects": [{"Key": k, "VersionId": "null"} for k in keys[1:]]})
        self.assertNotIn("Versions", s3.list_object_versions(Bucket="ckpt", Prefix="ver/"))

    def test_multipart(self):  # O10, O11
        s3 = self.s3
        data = bytes(random.Random(5).getrandbits(8) for _ in range(64 * 1024)) * 320  # 20 MiB
        s3.upload_fileobj(io.BytesIO(data), "ckpt", "big.bin",
                          Config=TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB))
        h = s3.head_object(Bucket="ckpt", Key="big.bin")
        self.assertEqual(h["ContentLength"], len(data))
        self.assertTrue(h["ETag"].endswith('-3"'))
        out = io.BytesIO()
        s3.download_fileobj("ckpt", "big.bin", out)
        self.assertEqual(out.getvalue(), data)
        # by hand: parts, list, a wrong tag, the right ones, abort
        up = s3.create_multipart_upload(Bucket="ckpt", Key="hand")["UploadId"]
        e1 = s3.upload_part(Bucket="ckpt", Key="hand", UploadId=up, PartNumber=1, Body=b"aaaaa")["ETag"]
        e2 = s3.upload_part(Bucket="ckpt", Key="hand", UploadId=up, PartNumber=2, Body=b"bb")["ETag"]
        parts = s3.list_parts(Bucket="ckpt", Key="hand", UploadId=up)["Parts"]
        self.assertEqual([(p["PartNumber"], p["Size"], p["ETag"]) for p in parts], [(1, 5, e1), (2, 2, e2)])
        self.assertEqual(self.err(s3.get_object, Bucket="ckpt", Key="hand"), "NoSuchKey")
        bad = {"Parts": [{"PartNumber": 1, "ETag": e2}, {"PartNumber": 2, "ETag": e2}]}
        self.assertEqual(self.err(s3.complete_multipart_upload, Bucket="ckpt", Key="hand", UploadId=up,
                                  MultipartUpload=bad), "InvalidPart")
        order = {"Parts": [{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]}
        self.assertEqual(self.err(s3.complete_multipart_upload, Bucket="ckpt", Key="hand", UploadId=up,
                                  MultipartUpload=order), "InvalidPartOrder")
        good = {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}
        s3.complete_multipart_upload(Bucket="ckpt", Key="hand", UploadId=up, MultipartUpload=good)
        self.assertEqual(s3.get_object(Bucket="ckpt", Key="hand")["Body"].read(), b"aaaaabb")
        self.assertEqual(self.err(s3.upload_part, Bucket="ckpt", Key="hand", UploadId=up, PartNumber=3,
                                  Body=b"c"), "NoSuchUpload")
        up2 = s3.create_multipart_upload(Bucket="ckpt", Key="gone")["UploadId"]
        s3.abort_multipart_upload(Bucket="ckpt", Key="gone", UploadId=up2)
        self.assertEqual(self.err(s3.list_parts, Bucket="ckpt", Key="gone", UploadId=up2), "NoSuchUpload")

    def test_copy_delete_objects_bytes_once(self):  # O11, E3
        s3 = self.s3
        s3.put_object(Bucket="ckpt", Key="cp/src", Body=b"s" * 100000)
        before = int(self.srv.cmd("bytes")[0])
        r = s3.copy_object(Bucket="ckpt", Key="cp/dst", CopySource={"Bucket": "ckpt", "Key": "cp/src"})
        self.assertEqual(int(self.srv.cmd("bytes")[0]), before)  # shared, not copied
        self.assertEqual(r["CopyObjectResult"]["ETag"], s3.head_object(Bucket="ckpt", Key="cp/src")["ETag"])
        self.assertEqual(s3.get_object(Bucket="ckpt", Key="cp/dst")["Body"].read(), b"s" * 100000)
        d = s3.delete_objects(Bucket="ckpt", Delete={"Objects": [{"Key": "cp/src"}, {"Key": "cp/none"}]})
        self.assertEqual(sorted(x["Key"] for x in d["Deleted"]), ["cp/none", "cp/src"])
        q = s3.delete_objects(Bucket="ckpt", Delete={"Objects": [{"Key": "cp/dst"}], "Quiet": True})
        self.assertNotIn("Deleted", q)
        self.assertEqual(self.err(s3.get_object, Bucket="ckpt", Key="cp/dst"), "NoSuchKey")
        self.assertEqual(self.err(s3.copy_object, Bucket="ckpt", Key="x",
                                  CopySource={"Bucket": "ckpt", "Key": "cp/src"}), "NoSuchKey")

    def test_checksum_trailer(self):  # E4: what boto3 sends with a checksum
        s3 = self.s3
        body = b"checksummed" * 1000
        s3.put_object(Bucket="ckpt", Key="crc", Body=body, ChecksumAlgorithm="CRC32")
        self.assertEqual(s3.get_object(Bucket="ckpt", Key="crc")["Body"].read(), body)

    def test_trace_and_acknowledgement(self):  # O1, E6, E7
        s3 = self.s3
        r = s3.put_object(Bucket="ckpt", Key="traced/k", Body=b"abc")
        seq = int(r["ResponseMetadata"]["HTTPHeaders"]["x-amz-request-id"], 16)
        lines = self.srv.cmd("trace")
        self.assertIn("s3 #%d n=0 PutObject ckpt/traced/k bytes=3 -> 200" % seq, lines)
        self.assertEqual(self.srv.cmd("inflight"), ["0"])  # every answered write acknowledged


class RawRequests(unittest.TestCase):
    """curl's and a socket's requests, malformed ones included (E1-E5)."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--bucket", "raw", "--min-part", "5", "--max-body", "100000")
        cls.url = cls.srv.url

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def tearDown(self):
        self.assertTrue(self.srv.alive())

    def test_virtual_host_style(self):  # E1
        st, _, _ = curl(self.url + "/vh/key", "-X", "PUT", "-H", "Host: raw.localhost:%d" % self.srv.port,
                        data=b"virtual")
        self.assertEqual(st, 200)
        st, _, body = curl(self.url + "/raw/vh/key")
        self.assertEqual((st, body), (200, b"virtual"))

    def test_signatures_not_checked(self):  # E2
        st, _, _ = curl(self.url + "/raw/signed", "-X", "PUT", "-H",
                        "Authorization: AWS4-HMAC-SHA256 Credential=WRONG/20260101/us-east-1/s3/aws4_request, "
                        "SignedHeaders=host, Signature=00", data=b"ok")
        self.assertEqual(st, 200)

    def test_conditional_writes(self):  # O5
        st, _, _ = curl(self.url + "/raw/commit", "-X", "PUT", "-H", "If-None-Match: *", data=b"1")
        self.assertEqual(st, 200)
        st, _, body = curl(self.url + "/raw/commit", "-X", "PUT", "-H", "If-None-Match: *", data=b"2")
        self.assertEqual((st, error_code(body)), (412, "PreconditionFailed"))
        st, head, _ = curl(self.url + "/raw/commit", "-I")
        etag = re.search(r"ETag: (\S+)", head, re.I).group(1)
        st, _, body = curl(self.url + "/raw/commit", "-X", "PUT", "-H", 'If-Match: "0"', data=b"3")
        self.assertEqual((st, error_code(body)), (412, "PreconditionFailed"))
        st, _, _ = curl(self.url + "/raw/commit", "-X", "PUT", "-H", "If-Match: " + etag, data=b"4")
        self.assertEqual(st, 200)
        st, _, body = curl(self.url + "/raw/commit")
        self.assertEqual(body, b"4")
        st, _, body = curl(self.url + "/raw/never", "-X", "PUT", "-H", "If-Match: " + etag, data=b"5")
        self.assertEqual((st, error_code(body)), (404, "NoSuchKey"))

    def test_aws_chunked(self):  # E4
        body = b"5;chunk-signature=ab\r\nhello\r\n6;chunk-signature=cd\r\n world\r\n0;chunk-signature=ef\r\n" \
               b"x-amz-checksum-crc32:AAAAAA==\r\n\r\n"
        st, _, _ = curl(self.url + "/raw/chunked", "-X", "PUT", "-H", "Content-Encoding: aws-chunked",
                        "-H", "x-amz-decoded-content-length: 11",
                        "-H", "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", data=body)
        self.assertEqual(st, 200)
        self.assertEqual(curl(self.url + "/raw/chunked")[2], b"hello world")
        st, _, body2 = curl(self.url + "/raw/chunked", "-X", "PUT", "-H", "Content-Encoding: aws-chunked",
                            data=b"5\r\nhel")
        self.assertEqual((st, error_code(body2)), (400, "IncompleteBody"))
        st, _, body3 = curl(self.url + "/raw/chunked", "-X", "PUT", "-H", "Content-Encoding: aws-chunked",
                            "-H", "x-amz-decoded-content-length: 99", data=body)
        self.assertEqual((st, error_code(body3)), (400, "IncompleteBody"))
        self.assertEqual(curl(self.url + "/raw/chunked")[2], b"hello world")  # nothing lost
        # HTTP chunked transfer-encoding from curl
        st, _, _ = curl(self.url + "/raw/te", "-X", "PUT", "-H", "Transfer-Encoding: chunked", data=b"te body")
        self.assertEqual(st, 200)
        self.assertEqual(curl(self.url + "/raw/te")[2], b"te body")

    def test_aws_chunked_malformed(self):  # E4: every way an aws-chunked body can be cut or bent
        bad = [b";chunk-signature=ab\r\nhello\r\n0\r\n\r\n",          # no chunk size
               b"1234567890123456789012\r\nx\r\n0\r\n\r\n",           # a size of 22 hex digits
               b"zz\r\nab\r\n0\r\n\r\n",                             # not hex
               b"5",                                                # no line end after the size
               b"5;chunk-signature=ab",                             # nor after its extension
               b"5\r\nhelloXX0\r\n\r\n",                          # a chunk not followed by CRLF
               b"ff\r\nab\r\n0\r\n\r\n",                             # larger than the body
               b"5\r\nhello\r\n"]                                   # no last chunk
        for body in bad:
            st, _, out = curl(self.url + "/raw/bent", "-X", "PUT", "-H", "Content-Encoding: aws-chunked", data=body)
            self.assertEqual((st, error_code(out)), (400, "IncompleteBody"), body)
        self.assertEqual(curl(self.url + "/raw/bent")[0], 404)  # nothing stored
        # announced by x-amz-content-sha256 alone (no Content-Encoding)
        st, _, _ = curl(self.url + "/raw/bent", "-X", "PUT",
                        "-H", "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                        data=b"3\r\nabc\r\n0\r\n\r\n")
        self.assertEqual(st, 200)
        self.assertEqual(curl(self.url + "/raw/bent")[2], b"abc")

    def test_errors(self):  # E3, E5
        st, _, body = curl(self.url + "/nobucket/k")
        self.assertEqual((st, error_code(body)), (404, "NoSuchBucket"))
        self.assertIn(b"<Resource>/nobucket/k</Resource>", body)
        st, _, body = curl(self.url + "/raw/k?acl")
        self.assertEqual((st, error_code(body)), (501, "NotImplemented"))
        st, _, body = curl(self.url + "/raw/k?versions")  # versions of a bucket only
        self.assertEqual((st, error_code(body)), (501, "NotImplemented"))
        st, _, body = curl(self.url + "/raw?versions&version-id-marker=null")  # a version marker needs a key marker
        self.assertEqual((st, error_code(body)), (400, "InvalidArgument"))
        st, _, body = curl(self.url + "/raw/k", "-X", "PATCH")
        self.assertEqual((st, error_code(body)), (501, "NotImplemented"))
        st, _, body = curl(self.url + "/raw/k?uploadId=zzz", "-X", "POST", data=b"<not xml")
        self.assertEqual((st, error_code(body)), (400, "MalformedXML"))
        up = re.search(rb"<UploadId>([^<]+)</UploadId>", curl(self.url + "/raw/mp?uploads", "-X", "POST")[2])
        up = up.group(1).decode()
        for bad in [b"<not xml", b"<CompleteMultipartUpload></CompleteMultipartUpload>",
                    b"<Other><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Other>",
                    b"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>x</ETag></Part>"
                    b"</CompleteMultipartUpload>",
                    b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>"]:
            st, _, body = curl(self.url + "/raw/mp?uploadId=" + up, "-X", "POST", data=bad)
            self.assertEqual((st, error_code(body)), (400, "MalformedXML"), bad)
        st, _, body = curl(self.url + "/raw?delete", "-X", "POST", data=b"<Delete><Object></Object></Delete>")
        self.assertEqual((st, error_code(body)), (400, "MalformedXML"))
        st, _, body = curl(self.url + "/raw/huge", "-X", "PUT", data=b"x" * 100001)
        self.assertEqual((st, error_code(body)), (400, "EntityTooLarge"))
        st, _, body = curl(self.url + "/raw/huge", "-X", "PUT", "-H", "Transfer-Encoding: chunked",
                           data=b"x" * 200000)
        self.assertEqual((st, error_code(body)), (400, "EntityTooLarge"))
        self.assertEqual(curl(self.url + "/raw/huge")[0], 404)  # nothing stored
        st, head, body = curl(self.url + "/raw/none", "-I")
        self.assertEqual((st, body), (404, b""))  # HEAD: no body

    def test_malformed_never_crash(self):  # E5
        port = self.srv.port
        fixed = [b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                 b"PUT /raw/k HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",
                 b"PUT /raw/k HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                 b"PUT /raw/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                 b"GET /raw/%zz%00 HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"GET /raw?list-type=2&max-keys=abc HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"GET /raw?list-type=2&continuation-token=k0 HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"POST /raw/k?uploadId HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n<a>",
                 b"PUT /raw/k?partNumber=x&uploadId=y HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz",
                 b"PUT /raw/c HTTP/1.1\r\nHost: x\r\nx-amz-copy-source: nothing\r\n\r\n",
                 b"GET /raw/k HTTP/1.1\r\nHost: .localhost\r\nRange: bytes=--1\r\n\r\n",
                 b"GET / HTTP/1.1\r\nHost: " + b"h" * 3000 + b".localhost\r\n\r\n"]
        rnd = random.Random(28)
        fuzz = []
        for _ in range(100):
            req = bytearray(rnd.choice(fixed))
            for _ in range(rnd.randrange(1, 6)):
                if req:
                    req[rnd.randrange(len(req))] = rnd.randrange(256)
            fuzz.append(bytes(req))
        for req in fixed + fuzz:
            out = raw_request(port, req)
            self.assertTrue(out == b"" or out.startswith(b"HTTP/1."), (req, out[:80]))
            self.assertTrue(self.srv.alive(), req)
        st, _, body = curl(self.url + "/raw?list-type=2&max-keys=abc")
        self.assertEqual((st, error_code(body)), (400, "InvalidArgument"))
        self.assertEqual(curl(self.url + "/raw?list-type=2")[0], 200)  # still serving


def main():
    global SERVE
    if len(sys.argv) < 2:
        print("usage: test_s3_endpoint.py PATH/TO/s3_serve", file=sys.stderr)
        return 2
    SERVE = sys.argv.pop(1)
    if boto3 is None:
        print("test_s3_endpoint: SKIPPED: boto3 cannot be imported (Debian's python3-boto3)")
        return 77
    if shutil.which("curl") is None:
        print("test_s3_endpoint: SKIPPED: curl is not installed")
        return 77
    for k in list(os.environ):  # the test's own endpoint and keys only
        if k.startswith("AWS_"):
            del os.environ[k]
    prog = unittest.main(exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
