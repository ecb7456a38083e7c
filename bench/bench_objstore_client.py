"""The client side of bench/bench_objstore.c: PutObject then GetObject of
COUNT objects of SIZE bytes through boto3 against the S3 endpoint, or the
same bytes written (write, fsync, close) and read back as files of a
folder. Prints "put_mib_s X", "get_mib_s X", "put_ops_s X", "get_ops_s X".
The wall clock is read only to measure.

    bench_objstore_client.py s3 URL BUCKET COUNT SIZE
    bench_objstore_client.py dir PATH COUNT SIZE
"""
import os
import sys
import time


def main(argv):
    mode = argv[0]
    count, size = int(argv[-2]), int(argv[-1])
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    if mode == "s3":
        import boto3
        url, bucket = argv[1], argv[2]
        s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id="ckhtestkey",
                          aws_secret_access_key="ckhtestsecret", region_name="us-east-1")

        def put(i):
            s3.put_object(Bucket=bucket, Key="bench/obj_%d" % i, Body=data)

        def get(i):
            return len(s3.get_object(Bucket=bucket, Key="bench/obj_%d" % i)["Body"].read())
    else:
        folder = argv[1]

        def put(i):
            with open(os.path.join(folder, "obj_%d" % i), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())

        def get(i):
            with open(os.path.join(folder, "obj_%d" % i), "rb") as f:
                return len(f.read())
    t0 = time.perf_counter()
    for i in range(count):
        put(i)
    t1 = time.perf_counter()
    got = sum(get(i) for i in range(count))
    t2 = time.perf_counter()
    if got != count * size:
        print("read back %d bytes, wrote %d" % (got, count * size), file=sys.stderr)
        return 1
    mib = count * size / (1 << 20)
    print("put_mib_s %.2f" % (mib / (t1 - t0)))
    print("get_mib_s %.2f" % (mib / (t2 - t1)))
    print("put_ops_s %.1f" % (count / (t1 - t0)))
    print("get_ops_s %.1f" % (count / (t2 - t1)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
