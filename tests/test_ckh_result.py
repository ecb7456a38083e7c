"""Tests for tools/ckh_result.py, the Python side of the result protocol
(docs/SCENARIOS.md, "Result protocol"): the lines it writes, the checks it
applies before writing, its digests, and the environment helpers. That ckh's
C reader accepts its lines field for field is tests/test_result_protocol.c.

Run by CTest with /usr/bin/python3: test `ckh_result_py` runs Writer, Digests
and Environment, `ckh_result_py_torch` the tensor cases (TensorDigests), which
are skipped, saying so, where torch cannot be imported: exit 77, CTest's skip.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tools")
sys.path.insert(0, os.path.abspath(TOOLS))

import ckh_result as ckh  # noqa: E402

try:
    import torch
except ImportError:  # the tensor cases say why they are skipped
    torch = None


class Env:
    """Sets environment variables for a block and restores them."""

    def __init__(self, **kv):
        self.kv = kv
        self.old = {}

    def __enter__(self):
        for k, v in self.kv.items():
            self.old[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Writer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ckh-result-py-")
        self.path = os.path.join(self.dir.name, "result.jsonl")

    def tearDown(self):
        ckh._writer().close()
        self.dir.cleanup()

    def lines(self):
        with open(self.path) as f:
            return f.read().splitlines()

    def test_exact_lines(self):
        with Env(CKH_RESULT=self.path):
            ckh.resume(4, epoch=1)
            ckh.step(5, epoch=1, digests={"weights": 255, "rng": "9E3779B97F4A7C15"},
                     values={"lr": 0.1}, samples=[3, 17])
            ckh.save(8, epoch=1, ok=False, rc=-2, error="ENOENT: /ckpt/step_8.pt")
            ckh.save(8, epoch=1)
            ckh.final(epochs=3, steps=30, total=30, digest=0x0123456789ABCDEF,
                      values={"loss": 0.25}, blobs=["model", "optim"])
        self.assertEqual(self.lines(), [
            '{"kind":"resume","step":4,"epoch":1}',
            '{"kind":"step","step":5,"epoch":1,"digests":{"weights":"00000000000000ff",'
            '"rng":"9e3779b97f4a7c15"},"values":{"lr":0.1},"samples":[3,17]}',
            '{"kind":"save","step":8,"epoch":1,"ok":false,"rc":-2,'
            '"error":"ENOENT: /ckpt/step_8.pt"}',
            '{"kind":"save","step":8,"epoch":1,"ok":true}',
            '{"kind":"final","epochs":3,"steps":30,"total":30,"digest":"0123456789abcdef",'
            '"values":{"loss":0.25},"blobs":["model","optim"]}',
        ])

    def test_appends_across_incarnations(self):
        with Env(CKH_RESULT=self.path):
            ckh.step(1)
            ckh._writer().close()  # a new process opens the same file again
            ckh.step(2)
        self.assertEqual([json.loads(l)["step"] for l in self.lines()], [1, 2])

    def test_follows_the_environment(self):
        other = os.path.join(self.dir.name, "other.jsonl")
        with Env(CKH_RESULT=self.path):
            ckh.step(1)
        with Env(CKH_RESULT=other):
            ckh.step(2)
        self.assertEqual(len(self.lines()), 1)
        self.assertEqual(ckh.read(other), [{"kind": "step", "step": 2, "epoch": 0}])

    def test_unset_writes_nothing_but_checks(self):
        with Env(CKH_RESULT=None):
            self.assertFalse(ckh.under_ckh())
            ckh.step(1, digests={"w": 1})
            with self.assertRaises(ValueError):
                ckh.step(0)
        self.assertFalse(os.path.exists(self.path))

    def test_values_converted(self):
        with Env(CKH_RESULT=self.path):
            ckh.step(1, values={"int": 3, "flag": True, "neg0": -0.0, "tiny": 5e-324})
        rec = json.loads(self.lines()[0])
        self.assertEqual(rec["values"]["int"], 3.0)
        self.assertEqual(rec["values"]["flag"], 1.0)
        self.assertEqual(str(rec["values"]["neg0"]), "-0.0")
        self.assertEqual(rec["values"]["tiny"], 5e-324)

    def test_non_finite_values_as_strings(self):
        # JSON has no NaN or Infinity: the protocol carries them as strings,
        # and the line stays strict JSON.
        with Env(CKH_RESULT=self.path):
            ckh.step(1, values={"loss": float("nan"), "up": float("inf"), "down": float("-inf")})
        line = self.lines()[0]
        rec = json.loads(line, parse_constant=lambda c: self.fail("bare %s in %s" % (c, line)))
        self.assertEqual(rec["values"], {"loss": "NaN", "up": "Infinity", "down": "-Infinity"})

    def test_text_made_readable(self):
        # NUL is refused by ckh's reader and lone surrogates are not UTF-8
        with Env(CKH_RESULT=self.path):
            ckh.save(1, ok=False, error="a\x00b\udcff \u00e9")
        line = self.lines()[0]
        self.assertTrue(line.isascii())
        self.assertEqual(json.loads(line)["error"], "a\ufffdb? \u00e9")

    def test_oserror(self):
        with Env(CKH_RESULT=self.path):
            try:
                open(os.path.join(self.dir.name, "missing", "x"))
            except OSError as e:
                ckh.save(3, ok=False, error=e)
        rec = json.loads(self.lines()[0])
        self.assertEqual(rec["rc"], -2)
        self.assertIn("missing/x", rec["error"])

    def test_malformed_refused(self):
        bad = [
            lambda: ckh.step(0),
            lambda: ckh.step(1.0),
            lambda: ckh.step(True),
            lambda: ckh.step(1, epoch=-1),
            lambda: ckh.step(1 << 63),
            lambda: ckh.step(1, digests={"": 1}),
            lambda: ckh.step(1, digests={"a" * 64: 1}),
            lambda: ckh.step(1, digests={"w": -1}),
            lambda: ckh.step(1, digests={"w": 1 << 64}),
            lambda: ckh.step(1, digests={"w": "0123"}),
            lambda: ckh.step(1, digests={"d%d" % i: i for i in range(33)}),
            lambda: ckh.step(1, values={"x": "1"}),
            lambda: ckh.step(1, digests={"x": 1}, values={"x": 1}),
            lambda: ckh.step(1, samples=[-1]),
            lambda: ckh.resume(-1),
            lambda: ckh.save(1, ok=1),
            lambda: ckh.save(1, ok=True, rc=-5),
            lambda: ckh.save(1, ok=False, rc=5),
            lambda: ckh.final(blobs=[""]),
            lambda: ckh.final(blobs=["a,b"]),
            lambda: ckh.final(digest=1.5),
        ]
        with Env(CKH_RESULT=self.path):
            for i, call in enumerate(bad):
                with self.subTest(case=i):
                    with self.assertRaises((ValueError, TypeError)):
                        call()
        self.assertFalse(os.path.exists(self.path))

    def test_read_refuses_torn_line(self):
        with open(self.path, "w") as f:
            f.write('{"kind":"step","step":1}\n{"kind":"st')
        with self.assertRaises(ValueError):
            ckh.read(self.path)

    def test_fsync_option(self):
        with ckh.Result(self.path, fsync=True) as r:
            r.step(1)
            r.final(steps=1)
        self.assertEqual([json.loads(l)["kind"] for l in self.lines()], ["step", "final"])


class Digests(unittest.TestCase):
    def test_hex16(self):
        self.assertEqual(ckh.hex16(0), "0000000000000000")
        self.assertEqual(ckh.hex16((1 << 64) - 1), "ffffffffffffffff")
        self.assertEqual(ckh.hex16("ABCDEF0123456789"), "abcdef0123456789")

    def test_digest_bytes_is_blake2b_64(self):
        want = int.from_bytes(hashlib.blake2b(b"abc", digest_size=8).digest(), "big")
        self.assertEqual(ckh.digest_bytes(b"abc"), want)
        self.assertEqual(ckh.digest_bytes(bytearray(b"abc")), want)

    def test_digest_plain(self):
        a = {"b": [1, 2.5, None, True, "x", b"y"], "a": {"n": 1}}
        b = {"a": {"n": 1}, "b": [1, 2.5, None, True, "x", b"y"]}
        self.assertEqual(ckh.digest(a), ckh.digest(b))  # key order does not count
        # every change counts, including a type that prints alike
        for other in ({"a": {"n": 2}, "b": a["b"]}, {"a": {"n": 1.0}, "b": a["b"]},
                      {"a": {"n": True}, "b": a["b"]}, {"a": {"n": "1"}, "b": a["b"]},
                      {"a": {"n": 1}, "b": a["b"][:-1]}, {"a": {"n": 1}, "b": a["b"] + [0]},
                      {"a": {"n": 1}, "b": ([1, 2.5], [None, True, "x", b"y"])}):
            self.assertNotEqual(ckh.digest(a), ckh.digest(other), other)
        self.assertNotEqual(ckh.digest(0.0), ckh.digest(-0.0))
        self.assertNotEqual(ckh.digest(["ab", "c"]), ckh.digest(["a", "bc"]))

    def test_digest_same_in_another_process(self):
        obj = {"w": [0.1, 0.2], "step": 7, 3: "int key"}
        out = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, %r); import ckh_result as c; "
             "print(c.digest({3: 'int key', 'step': 7, 'w': [0.1, 0.2]}))" % os.path.abspath(TOOLS)],
            check=True, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="123"))
        self.assertEqual(int(out.stdout), ckh.digest(obj))

    def test_unknown_type_named(self):
        with self.assertRaises(TypeError) as cm:
            ckh.digest({"model": {"layer": object()}})
        self.assertIn("state['model']['layer']", str(cm.exception))

    def test_torch_not_imported(self):
        out = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, %r); import ckh_result as c; "
             "c.digest({'a': [1.0]}); print('torch' in sys.modules)" % os.path.abspath(TOOLS)],
            check=True, capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "False")


@unittest.skipIf(torch is None, "torch cannot be imported by %s" % sys.executable)
class TensorDigests(unittest.TestCase):
    def test_state_dict(self):
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 3)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        m(torch.ones(2, 4)).sum().backward()
        opt.step()
        d1 = ckh.digest({"model": m.state_dict(), "optim": opt.state_dict()})
        # a copy through torch.save/torch.load digests the same
        path = os.path.join(tempfile.mkdtemp(prefix="ckh-result-py-"), "s.pt")
        torch.save({"model": m.state_dict(), "optim": opt.state_dict()}, path)
        loaded = torch.load(path, map_location="cpu")
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
        self.assertEqual(ckh.digest(loaded), d1)
        # one bit of one weight changes it
        with torch.no_grad():
            w = m.weight.view(-1)
            w[5] = torch.nextafter(w[5], torch.tensor(1e9))
        self.assertNotEqual(ckh.digest({"model": m.state_dict(), "optim": opt.state_dict()}), d1)

    def test_layout_does_not_count_dtype_and_shape_do(self):
        t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        self.assertEqual(ckh.digest(t), ckh.digest(t.t().contiguous().t()))  # strides
        self.assertEqual(ckh.digest(t), ckh.digest(t.clone().requires_grad_(True)))
        self.assertNotEqual(ckh.digest(t), ckh.digest(t.reshape(4, 3)))
        self.assertNotEqual(ckh.digest(t), ckh.digest(t.double()))
        self.assertNotEqual(ckh.digest(t), ckh.digest(t.to(torch.bfloat16)))
        self.assertEqual(ckh.digest(torch.empty(0)), ckh.digest(torch.empty(0)))
        self.assertNotEqual(ckh.digest(torch.empty(0)), ckh.digest(torch.empty(0, 2)))

    def test_tensor_values_and_samples(self):
        path = os.path.join(tempfile.mkdtemp(prefix="ckh-result-py-"), "r.jsonl")
        with ckh.Result(path) as r:
            r.step(torch.tensor(2), values={"loss": torch.tensor(0.5)},
                   samples=torch.tensor([4, 1, 9]))
        self.assertEqual(ckh.read(path), [{"kind": "step", "step": 2, "epoch": 0,
                                           "values": {"loss": 0.5}, "samples": [4, 1, 9]}])
        os.unlink(path)
        os.rmdir(os.path.dirname(path))


class Environment(unittest.TestCase):
    def test_ranks(self):
        with Env(RANK="3", WORLD_SIZE="4", LOCAL_RANK="1", CKH_NODE="rank_3"):
            self.assertEqual((ckh.rank(), ckh.world_size(), ckh.local_rank(), ckh.node()),
                             (3, 4, 1, "rank_3"))
        with Env(RANK=None, WORLD_SIZE=None, LOCAL_RANK=None, CKH_NODE=None):
            self.assertEqual((ckh.rank(), ckh.world_size(), ckh.local_rank(), ckh.node()),
                             (0, 1, 0, ""))
        with Env(RANK="x"):
            with self.assertRaises(ValueError) as cm:
                ckh.rank()
            self.assertIn("RANK='x'", str(cm.exception))

    def test_ckpt_dir(self):
        with tempfile.TemporaryDirectory(prefix="ckh-result-py-") as d:
            mount = os.path.join(d, "mnt")
            with Env(CKH_CKPT_DIR=mount):
                self.assertEqual(ckh.ckpt_dir(), mount)
                self.assertTrue(os.path.isdir(mount))
            with Env(CKH_CKPT_DIR=None):
                self.assertEqual(ckh.ckpt_dir(os.path.join(d, "local")), os.path.join(d, "local"))
                self.assertTrue(os.path.isdir(os.path.join(d, "local")))


if __name__ == "__main__":
    # Exit 77, CTest's skip (SKIP_RETURN_CODE), when every test that ran was
    # skipped (TensorDigests without torch), each reason printed.
    result = unittest.main(verbosity=1, exit=False).result
    for test, why in result.skipped:
        print("test_ckh_result: SKIPPED %s: %s" % (test.id(), why))
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun and len(result.skipped) == result.testsRun else 0)
