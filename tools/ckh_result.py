"""ckh_result: report what a training job did to ckh, one call per record.

A program run by ckh as a command job (docs/SCENARIOS.md, "Command jobs")
tells ckh what it did by writing JSON lines to the file named by the
CKH_RESULT environment variable: the result protocol of docs/SCENARIOS.md
("Result protocol") and include/ckh/record.h. This module writes exactly
those lines, so a Python job needs one call per record:

    import ckh_result as ckh
    ckh.resume(step=4, epoch=1)                     # after loading a checkpoint
    ckh.step(5, epoch=1, digests={"weights": ckh.digest(model.state_dict())},
             values={"lr": 0.1, "loss": loss.item()}, samples=[3, 17])
    ckh.save(8, epoch=1, ok=True)                   # after each save attempt
    ckh.final(epochs=3, steps=30, digest=ckh.digest(model.state_dict()))

Outside ckh (CKH_RESULT unset) every call checks its arguments and writes
nothing, so the same script runs anywhere. Each record is one write(2) of
one whole line to a file opened with O_APPEND, so a program killed at any
point leaves only whole lines (what ckh reads is never torn).

Digests are 64-bit values shown as 16 hex digits. digest(obj) hashes a
PyTorch state_dict (or any nesting of dicts, lists, tensors, numbers,
strings and bytes) deterministically: BLAKE2b-64 over a tagged encoding
that takes dict entries in sorted key order and each tensor's dtype, shape
and raw bytes (copied to contiguous CPU memory first). torch is never
imported by this module; tensors are recognised by their methods.

The environment ckh gives a node is exposed too: ckpt_dir() (CKH_CKPT_DIR,
the checkpoint folder ckh serves; a local folder outside ckh), rank(),
world_size(), local_rank(), node() and under_ckh().

Standard library only, Python 3.9 or later. Installed with ckh under
share/ckh/python (docs/PROGRAMS.md says how to import it).
"""

import ctypes
import hashlib
import json
import math
import os
import re
import struct

__all__ = [
    "Result", "step", "resume", "save", "final", "digest", "digest_bytes", "hex16",
    "ckpt_dir", "rank", "world_size", "local_rank", "node", "under_ckh", "read",
]

# Limits of the protocol (include/ckh/record.h).
NAME_MAX = 63          # longest digest or value name
FIELDS_MAX = 32        # most digests, and most values, in one record
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,%d}\Z" % NAME_MAX)
_HEX16_RE = re.compile(r"[0-9a-fA-F]{16}\Z")


# ---- environment ----

def under_ckh():
    """True when the program runs under ckh (CKH_RESULT is set)."""
    return bool(os.environ.get("CKH_RESULT"))


def ckpt_dir(default="ckpt", create=True):
    """The checkpoint folder: CKH_CKPT_DIR under ckh (the mount ckh serves
    and injects faults into), else `default` (relative to the working
    folder). Created when missing unless create is False."""
    path = os.environ.get("CKH_CKPT_DIR") or default
    if create:
        os.makedirs(path, exist_ok=True)
    return path


def _env_int(name, default):
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError("ckh_result: environment variable %s=%r is not an integer" % (name, text))


def rank():
    """RANK (torchrun's convention; ckh sets it per node), 0 when unset."""
    return _env_int("RANK", 0)


def world_size():
    """WORLD_SIZE, 1 when unset."""
    return _env_int("WORLD_SIZE", 1)


def local_rank():
    """LOCAL_RANK, 0 when unset."""
    return _env_int("LOCAL_RANK", 0)


def node():
    """CKH_NODE, ckh's name for this node ("rank_1"), or "" outside ckh."""
    return os.environ.get("CKH_NODE", "")


# ---- digests ----

def hex16(d):
    """A digest as the protocol writes it: 16 lowercase hex digits. Takes
    an int in 0..2^64-1 or a string of 16 hex digits."""
    if isinstance(d, bool):
        raise TypeError("ckh_result: a digest is an int in 0..2^64-1 or 16 hex digits, got a bool")
    if isinstance(d, int):
        if d < 0 or d > UINT64_MAX:
            raise ValueError("ckh_result: digest %d is outside 0..2^64-1" % d)
        return "%016x" % d
    if isinstance(d, str) and _HEX16_RE.match(d):
        return d.lower()
    raise ValueError("ckh_result: a digest is an int in 0..2^64-1 or 16 hex digits, got %r" % (d,))


def digest_bytes(data):
    """BLAKE2b-64 of bytes (or any object with the buffer protocol), as an int."""
    return int.from_bytes(hashlib.blake2b(bytes(data), digest_size=8).digest(), "big")


def _is_tensor(x):
    # torch.Tensor without importing torch: the methods digest() uses.
    t = type(x)
    return (t.__module__.startswith("torch") and hasattr(x, "data_ptr")
            and hasattr(x, "element_size") and hasattr(x, "numel"))


def _tensor_bytes(t):
    """Raw bytes of a tensor's elements in row-major order."""
    t = t.detach()
    if getattr(t, "is_sparse", False):
        t = t.to_dense()
    for resolve in ("resolve_conj", "resolve_neg"):
        if hasattr(t, resolve):
            t = getattr(t, resolve)()
    t = t.cpu().contiguous()
    n = t.numel() * t.element_size()
    if n == 0:
        return b""
    return ctypes.string_at(t.data_ptr(), n)


def _len(h, n):
    h.update(struct.pack("<Q", n))


def _feed(h, obj, path):
    """Feeds one object's tagged encoding to h; path names it in errors."""
    if obj is None:
        h.update(b"N")
    elif isinstance(obj, bool):
        h.update(b"T" if obj else b"F")
    elif isinstance(obj, int):
        s = str(obj).encode()
        h.update(b"I")
        _len(h, len(s))
        h.update(s)
    elif isinstance(obj, float):
        h.update(b"D" + struct.pack("<d", obj))
    elif isinstance(obj, str):
        s = obj.encode("utf-8", "surrogatepass")
        h.update(b"S")
        _len(h, len(s))
        h.update(s)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        b = bytes(obj)
        h.update(b"B")
        _len(h, len(b))
        h.update(b)
    elif _is_tensor(obj):
        dtype = str(obj.dtype).encode()
        shape = tuple(int(s) for s in obj.shape)
        h.update(b"X")
        _len(h, len(dtype))
        h.update(dtype)
        _len(h, len(shape))
        for s in shape:
            _len(h, s)
        data = _tensor_bytes(obj)
        _len(h, len(data))
        h.update(data)
    elif hasattr(obj, "tobytes") and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        # a numpy array or scalar
        dtype = str(obj.dtype).encode()
        data = obj.tobytes()
        h.update(b"A")
        _len(h, len(dtype))
        h.update(dtype)
        _len(h, len(obj.shape))
        for s in obj.shape:
            _len(h, int(s))
        _len(h, len(data))
        h.update(data)
    elif isinstance(obj, dict):
        h.update(b"M")
        _len(h, len(obj))
        for k in sorted(obj, key=lambda k: (type(k).__name__, repr(k))):
            _feed(h, k, path + "[key]")
            _feed(h, obj[k], "%s[%r]" % (path, k))
    elif isinstance(obj, (list, tuple)):
        h.update(b"L")
        _len(h, len(obj))
        for i, v in enumerate(obj):
            _feed(h, v, "%s[%d]" % (path, i))
    else:
        raise TypeError("ckh_result.digest: %s is a %s; digest() takes dicts, lists, tuples, "
                        "tensors, numpy arrays, numbers, strings, bytes and None"
                        % (path, type(obj).__name__))


def digest(obj):
    """Deterministic 64-bit digest (an int) of a state_dict or any nesting
    of dicts (entries in sorted key order), lists, tuples, tensors (dtype,
    shape and bytes), numpy arrays, numbers, strings, bytes and None. The
    same values give the same digest in every process and on every run;
    a tensor's device, strides and requires_grad do not count."""
    h = hashlib.blake2b(digest_size=8)
    _feed(h, obj, "state")
    return int.from_bytes(h.digest(), "big")


# ---- checking records ----

def _int(v, key, lo, hi):
    if isinstance(v, bool):
        raise TypeError("ckh_result: %r must be an integer, got %r" % (key, v))
    if not isinstance(v, int):
        # accept integral objects (a 0-d tensor, numpy int) through __index__
        try:
            v = v.__index__()
        except (AttributeError, TypeError):
            raise TypeError("ckh_result: %r must be an integer, got %r" % (key, v))
    if v < lo or v > hi:
        raise ValueError("ckh_result: %r must be in %d..%d, got %d" % (key, lo, hi, v))
    return int(v)


def _name(n, what):
    if not isinstance(n, str) or not _NAME_RE.match(n):
        raise ValueError("ckh_result: %s name %r must be 1 to %d letters, digits, '_', '.' or '-'"
                         % (what, n, NAME_MAX))
    return n


def _digests(d):
    if d is None:
        return None
    if len(d) > FIELDS_MAX:
        raise ValueError("ckh_result: at most %d digests in one record, got %d" % (FIELDS_MAX, len(d)))
    return {_name(k, "digest"): hex16(v) for k, v in d.items()}


def _values(d):
    if d is None:
        return None
    if len(d) > FIELDS_MAX:
        raise ValueError("ckh_result: at most %d values in one record, got %d" % (FIELDS_MAX, len(d)))
    out = {}
    for k, v in d.items():
        _name(k, "value")
        if isinstance(v, bool):
            v = 1.0 if v else 0.0
        if isinstance(v, (str, bytes)):
            raise TypeError("ckh_result: value %r must be a number, got %r" % (k, v))
        try:
            f = float(v)  # a Python number, a 0-d tensor, a numpy scalar
        except (TypeError, ValueError):
            raise TypeError("ckh_result: value %r must be a number, got %r" % (k, v))
        # JSON has no literal for NaN and the infinities: the protocol
        # carries them as these strings (a diverged loss is a fact to record).
        if math.isnan(f):
            out[k] = "NaN"
        elif math.isinf(f):
            out[k] = "Infinity" if f > 0 else "-Infinity"
        else:
            out[k] = f
    return out


def _text(s):
    """A string the reader accepts: valid UTF-8 without NUL."""
    s = str(s).replace("\x00", "\ufffd")
    return s.encode("utf-8", "replace").decode("utf-8")


# ---- the writer ----

class Result:
    """Writes result records to one file. path None: checks, writes nothing.

    The file is opened for appending on the first record (records of an
    earlier incarnation of the job stay); each record is one os.write of
    one whole line. fsync=True also fsyncs after each line (ckh reads the
    file after the process is gone, so this is only for readers that must
    survive a machine crash)."""

    def __init__(self, path, fsync=False):
        self.path = path or None  # file written (None: records are dropped)
        self.fsync = fsync        # fsync after each line
        self._fd = -1             # open descriptor, -1 until the first record

    def close(self):
        """Closes the file; a later record opens it again."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _write(self, rec):
        if self.path is None:
            return
        line = (json.dumps(rec, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
                + "\n").encode("ascii")
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                               0o644)
        view = memoryview(line)
        while view:  # one write for any line a regular file takes whole
            n = os.write(self._fd, view)
            view = view[n:]
        if self.fsync:
            os.fsync(self._fd)

    def step(self, step, epoch=0, digests=None, values=None, samples=None):
        """One unit of progress (an optimizer step, >= 1): the digests of
        the state after it, its values (lr, loss) and the sample ids this
        node consumed in it (ints, or a tensor of them)."""
        rec = {"kind": "step", "step": _int(step, "step", 1, INT64_MAX),
               "epoch": _int(epoch, "epoch", 0, INT64_MAX)}
        d = _digests(digests)
        v = _values(values)
        if d and v:
            both = sorted(set(d) & set(v))
            if both:
                raise ValueError("ckh_result: name %r is both a digest and a value" % both[0])
        if d:
            rec["digests"] = d
        if v:
            rec["values"] = v
        if samples is not None:
            if hasattr(samples, "tolist"):
                samples = samples.tolist()
            rec["samples"] = [_int(s, "samples", 0, UINT64_MAX) for s in samples]
        self._write(rec)

    def resume(self, step, epoch=0):
        """After restoring a checkpoint: the step (and epoch) it holds."""
        self._write({"kind": "resume", "step": _int(step, "step", 0, INT64_MAX),
                     "epoch": _int(epoch, "epoch", 0, INT64_MAX)})

    def save(self, step, epoch=0, ok=True, rc=None, error=None):
        """One checkpoint save attempt: ok, or failed with rc (a negative
        errno or ckh code; -5, EIO, by default) and an error text naming
        the file. An OSError may be given as error: its errno gives rc."""
        if not isinstance(ok, bool):
            raise TypeError("ckh_result: 'ok' must be True or False, got %r" % (ok,))
        rec = {"kind": "save", "step": _int(step, "step", 0, INT64_MAX),
               "epoch": _int(epoch, "epoch", 0, INT64_MAX), "ok": ok}
        if isinstance(error, OSError):
            if rc is None and error.errno:
                rc = -error.errno
            error = "%s: %s" % (error.strerror or error, error.filename or "")
        if not ok:
            rec["rc"] = _int(-5 if rc is None else rc, "rc", -(1 << 31), -1)
        elif rc not in (None, 0):
            raise ValueError("ckh_result: a save that succeeded has rc 0, got %r" % (rc,))
        if error is not None:
            rec["error"] = _text(error)
        self._write(rec)

    def final(self, epochs=0, steps=0, total=0, digest=None, values=None, blobs=None):
        """When the job is done: epochs and steps done, the headline total,
        a digest of the final state, named final values and the names of
        what the node holds."""
        rec = {"kind": "final", "epochs": _int(epochs, "epochs", 0, INT64_MAX),
               "steps": _int(steps, "steps", 0, INT64_MAX),
               "total": _int(total, "total", -INT64_MAX - 1, INT64_MAX)}
        if digest is not None:
            rec["digest"] = hex16(digest)
        v = _values(values)
        if v:
            rec["values"] = v
        if blobs is not None:
            names = []
            for b in blobs:
                if not isinstance(b, str) or not b or "," in b:
                    raise ValueError("ckh_result: a blob name is a non-empty string without ',', "
                                     "got %r" % (b,))
                names.append(_text(b))
            rec["blobs"] = names
        self._write(rec)


_default = None


def _writer():
    global _default
    if _default is None or _default.path != (os.environ.get("CKH_RESULT") or None):
        if _default is not None:
            _default.close()
        _default = Result(os.environ.get("CKH_RESULT"))
    return _default


def step(step, epoch=0, digests=None, values=None, samples=None):
    """Result.step on the file named by CKH_RESULT (nothing when unset)."""
    _writer().step(step, epoch, digests, values, samples)


def resume(step, epoch=0):
    """Result.resume on the file named by CKH_RESULT (nothing when unset)."""
    _writer().resume(step, epoch)


def save(step, epoch=0, ok=True, rc=None, error=None):
    """Result.save on the file named by CKH_RESULT (nothing when unset)."""
    _writer().save(step, epoch, ok, rc, error)


def final(epochs=0, steps=0, total=0, digest=None, values=None, blobs=None):
    """Result.final on the file named by CKH_RESULT (nothing when unset)."""
    _writer().final(epochs, steps, total, digest, values, blobs)


# The protocol's strings for the values JSON has no literal for.
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def read(path):
    """The records of a result file, as a list of dicts (for tests and
    tools; ckh's own reader is stricter). A torn last line is an error."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        raise ValueError("%s: the last line is not whole" % path)
    for i, line in enumerate(data.decode("utf-8").split("\n"), 1):
        if line.strip():
            # "-0" (how C's %.17g writes -0.0) must stay a negative zero
            rec = json.loads(line, parse_int=lambda t: -0.0 if t == "-0" else int(t))
            if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
                raise ValueError("%s:%d: expected a JSON object with a string \"kind\"" % (path, i))
            if isinstance(rec.get("values"), dict):
                rec["values"] = {k: _NON_FINITE.get(v, v) if isinstance(v, str) else v
                                 for k, v in rec["values"].items()}
            out.append(rec)
    return out
