"""ckh_warm: the warm-start launcher of `ckh explore` for Python programs
(docs/ARCHITECTURE.md, "Warm starts"; harness/exec/command_warm.c is the
other end). ckh builds this file into its binary and writes it into the
run folder; it is not meant to be run by hand.

ckh starts one launcher per check worker and program, as

    PYTHON [the program's interpreter options] ckh_warm.py FD SCRIPT

in the program's working folder, with the program's environment less the
variables that change from one run to the next (CKH_*, RANK, WORLD_SIZE,
MASTER_PORT, TMPDIR, ...). It

  1. imports what SCRIPT imports at top level: the import statements of
     SCRIPT's module body (also inside top-level if/try/with blocks), and,
     for each module that is the program's own (a file under SCRIPT's
     folder), that module's top-level imports in turn; the program's own
     modules are never imported here (each start imports them itself,
     with its own environment), only the others (the standard library,
     torch, numpy, ...), in the order a cold start meets them;
  2. writes "ready N SKIPPED\n" to FD (N modules imported; SKIPPED the
     names that raised ImportError, which each start imports itself as a
     cold start would, or "-"), or "cold REASON\n" and exits when it
     cannot serve warm starts (an import raised something other than
     ImportError, CUDA was initialised, the imports started threads);
  3. serves requests on FD, one per start of the program: a 4-byte
     little-endian length, then NUL-terminated fields: the pid of the ckh
     process that starts it, the working folder, the log file, the index
     of the script in argv, argc, argv, the count of environment entries,
     the entries, then the mount namespace of the start (exec/command_ns.h):
     its mode (0 none, 1 CLONE_NEWNS, 2 CLONE_NEWUSER | CLONE_NEWNS), the
     disk's folder, the fixed path it is bound at, the uid and gid maps. Ahead of each request it forks a spare process through
     a middle process that exits at once, so that the spare is adopted by
     ckh (the launcher's parent, a child subreaper) and is ckh's child
     exactly as after fork and exec; the spare waits in the launcher's
     process group. A request goes to the spare, the answer is
     "pid N\n" (or "error TEXT\n"), and the next spare is forked while
     that start runs. EOF on FD ends the launcher (and its spare).

The started process, before the program's first line runs: is the leader
of its own process group; is in its own mount namespace with the disk at
the fixed path, made as the cold start's child makes it (one it cannot
make ends the process with status 127 and the reason in its log); dies with ckh (PR_SET_PDEATHSIG); has stdin
/dev/null and stdout and stderr on the log (truncated); the request's
working folder and environment (os.environ and the C environment:
everything the cold start's execve would give, and nothing else); the
signal dispositions and mask a cold start has after the same imports;
sys.argv, sys.orig_argv, sys.path[0], __main__.__file__ as the cold
start's. The script then runs as __main__ at this file's top level, so
SystemExit, an uncaught exception (its traceback shows the program's
frames only) and KeyboardInterrupt end the process as they end a cold one.
"""
import ast
import ctypes
import importlib.util
import os
import sys
import time

_HERE = __file__


def _own_path(name, roots):
    """The source file of module `name` (dotted) when it is the program's
    own (found under one of roots, the script's folder), else None."""
    parts = name.split(".")
    for root in roots:
        base = os.path.join(root, *parts)
        for cand in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(cand):
                return cand
        if os.path.isdir(base):
            return ""  # a namespace package of the program: nothing to read
    return None


def _imports_of(path, package):
    """The modules a source file imports at top level, in order: (name,
    is_from) pairs; relative imports resolved against package."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    found = []

    def walk(body):
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    pkg = package.split(".") if package else []
                    if node.level - 1 > len(pkg):
                        continue
                    pkg = pkg[:len(pkg) - (node.level - 1)]
                    mod = ".".join(pkg + ([mod] if mod else []))
                if mod:
                    found.append(mod)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(node, field, []) or [])
                for h in getattr(node, "handlers", []) or []:
                    walk(h.body)
    walk(tree.body)
    return found


def _plan(script, root):
    """The modules to import before the first start, in the order a cold
    start of script meets them (depth first through the program's own
    modules, which are read, not imported)."""
    order, seen, read = [], set(), set()

    def visit(path, package, depth):
        if path in read or depth > 50:
            return
        read.add(path)
        for name in _imports_of(path, package):
            if name in seen:
                continue
            seen.add(name)
            own = _own_path(name, [root])
            if own is None:
                if name.split(".")[0] != "__main__":
                    order.append(name)
            elif own:
                is_pkg = os.path.basename(own) == "__init__.py"
                visit(own, name if is_pkg else name.rpartition(".")[0], depth + 1)
    visit(script, "", 0)
    return order


def _prepare(script):
    """Step 1: the imports. Returns (count, skipped) or raises _Cold."""
    root = os.path.dirname(os.path.realpath(script))
    if not sys.flags.safe_path:
        sys.path[0] = root  # where a cold start of script finds the program's modules
    done, skipped = 0, []
    for name in _plan(script, root):
        if name in sys.modules:
            done += 1
            continue
        try:
            importlib.import_module(name)
            done += 1
        except ImportError as e:
            skipped.append(name)
            del e
        except BaseException as e:  # noqa: B902 (SystemExit, KeyboardInterrupt too: never warm)
            raise _Cold("importing %s raised %s: %s" % (name, type(e).__name__, e))
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        raise _Cold("the program's imports initialise CUDA, which a forked process cannot use")
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        raise _Cold("the program's imports start %d threads, which a forked process would not have" %
                    (threads - 1))
    return done, skipped


class _Cold(Exception):
    pass


def _read_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_request(fd):
    """One request, as sent: the 4-byte length and the body (None: EOF)."""
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, int.from_bytes(head, "little"))
    return None if body is None else head + body


def _parse(raw):
    f = raw[4:].split(b"\0")
    reaper, cwd, log, at, argc = int(f[0]), f[1], f[2], int(f[3]), int(f[4])
    argv = f[5:5 + argc]
    envc = int(f[5 + argc])
    env = f[6 + argc:6 + argc + envc]
    ns = f[6 + argc + envc:11 + argc + envc]
    return {"reaper": reaper, "cwd": cwd, "log": log, "at": at, "argv": argv, "env": env,
            "ns": (int(ns[0]), ns[1], ns[2], ns[3], ns[4])}


_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


def _enter_ns(ns):
    """The steps of ckh__ns_enter (harness/exec/command_ns.c), in the
    started process (single-threaded: the launcher starts no thread).
    None, or what failed."""
    mode, src, dst, uid_map, gid_map = ns
    if mode == 0:
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def failed(step):
        return "%s: %s" % (step, os.strerror(ctypes.get_errno()))

    if mode == 2:
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
            return failed("unshare(CLONE_NEWUSER | CLONE_NEWNS)")
        for name, text in (("setgroups", b"deny"), ("gid_map", gid_map), ("uid_map", uid_map)):
            try:
                with open("/proc/self/" + name, "wb", buffering=0) as f:
                    f.write(text)
            except FileNotFoundError:
                if name != "setgroups":
                    return "writing /proc/self/%s: no such file" % name
            except OSError as e:
                return "writing /proc/self/%s: %s" % (name, e.strerror)
    elif libc.unshare(_CLONE_NEWNS) != 0:
        return failed("unshare(CLONE_NEWNS)")
    if libc.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
        return failed("making / private (MS_REC | MS_PRIVATE)")
    if libc.mount(src, dst, None, ctypes.c_ulong(_MS_BIND), None) != 0:
        return failed("bind-mounting the checkpoint disk")
    return None


def _say(fd, text):
    os.write(fd, text.encode("utf-8", "replace"))


def _ppid_of(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


class _Spare:
    """A process forked ahead of its request (through a middle process
    that exits at once, so ckh has adopted it), waiting on a pipe: a
    start costs no fork on its way. pid, and w: the pipe's write end."""

    def __init__(self, pid, w):
        self.pid, self.w = pid, w


def _fork_spare(reaper):
    """A new spare, or None (fork failed); in the spare itself, a tuple
    (the pipe's read end, the middle process's pid)."""
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pr, pw = os.pipe()
    try:
        mid = os.fork()
    except OSError:
        for x in (r, w, pr, pw):
            os.close(x)
        return None
    if mid == 0:  # the middle process: fork the spare, say its pid, go
        os.close(w)
        os.close(pr)
        me = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            os._exit(1)
        if pid == 0:
            os.close(pw)
            return (r, me)
        os.write(pw, b"%d" % pid)
        os._exit(0)
    os.close(r)
    os.close(pw)
    said = b""
    while True:
        c = os.read(pr, 64)
        if not c:
            break
        said += c
    os.close(pr)
    os.waitpid(mid, 0)
    if not said.isdigit():
        os.close(w)
        return None
    pid = int(said)
    # The middle process is gone: the spare's parent is now the ckh
    # process that started the launcher (its child subreaper), or the
    # spare is useless.
    if _ppid_of(pid) != reaper:
        os.close(w)
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        return None
    return _Spare(pid, w)


def _serve(fd):
    """Step 3. Returns (the request, the middle process's pid) in a
    started process; the launcher itself never returns (EOF ends it)."""
    reaper = os.getppid()
    spare = _fork_spare(reaper)
    while True:
        if isinstance(spare, tuple):
            return _spare_wait(spare, fd, reaper)
        raw = _read_request(fd)
        if raw is None:
            os._exit(0)  # the spare's pipe closes with it: it ends too
        if spare is None:
            spare = _fork_spare(reaper)
            if isinstance(spare, tuple):
                return _spare_wait(spare, fd, reaper)
            if spare is None:
                _say(fd, "error cannot fork\n")
                continue
        try:
            os.write(spare.w, raw)  # a pipe holds it whole (a request is well under 64 KiB) or blocks
            ok = True
        except OSError:
            ok = False
        os.close(spare.w)
        _say(fd, "pid %d\n" % spare.pid if ok else "error the spare process is gone\n")
        spare = _fork_spare(reaper)  # the next one, while this start runs


def _spare_wait(spare, fd, reaper):
    """The spare: set up what needs no request, then wait for one."""
    r, middle = spare
    os.close(fd)
    while os.getppid() == middle:  # until the middle process is gone
        time.sleep(0.0001)
    ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: dies with ckh
    if os.getppid() != reaper:
        os._exit(127)
    raw = _read_request(r)
    os.close(r)
    if raw is None:
        os._exit(0)  # the launcher ended
    return _parse(raw)


def _become(req):
    """The started process: everything a cold start's fork and exec gives."""
    os.setpgid(0, 0)  # ckh does too: no race with a kill of the group
    null = os.open("/dev/null", os.O_RDONLY)
    log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for x in (null, log):
        if x > 2:
            os.close(x)
    why = _enter_ns(req["ns"])
    if why is not None:
        os.write(2, ("ckh_warm: cannot give the program its checkpoint disk at %s (%s)\n"
                     % (os.fsdecode(req["ns"][2]), why)).encode("utf-8", "replace"))
        os._exit(127)
    os.chdir(req["cwd"])
    os.environb.clear()
    for entry in req["env"]:
        k, _, v = entry.partition(b"=")
        if k:
            os.environb[k] = v
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # found again from this start's TMPDIR
    argv = [os.fsdecode(a) for a in req["argv"]]
    script = argv[req["at"]]
    sys.orig_argv = argv
    sys.argv = argv[req["at"]:]
    if not sys.flags.safe_path:
        sys.path[0] = os.path.dirname(os.path.realpath(script))
    return script if os.path.isabs(script) else os.path.join(os.getcwd(), script)


def _excepthook(kind, value, tb):
    """Tracebacks show the program's frames only, as a cold start's do."""
    while tb is not None and tb.tb_frame.f_code.co_filename == _HERE:
        tb = tb.tb_next
    sys.__excepthook__(kind, value, tb)


def _main():
    fd, script = int(sys.argv[1]), sys.argv[2]
    try:
        done, skipped = _prepare(script)
    except _Cold as e:
        _say(fd, "cold %s\n" % str(e).replace("\n", " ")[:400])
        os._exit(0)
    import gc
    gc.collect()
    gc.freeze()  # the launcher's objects: never scanned again, so a start's collections copy no page of them
    _say(fd, "ready %d %s\n" % (done, ",".join(skipped) or "-"))
    return _become(_serve(fd))


def _clear(mod):
    """Module teardown as Python's finalization does it: names starting
    with an underscore first, then the others (__builtins__ last), each
    set to None, so the objects only the module held are finalised."""
    d = getattr(mod, "__dict__", None)
    if not isinstance(d, dict):
        return
    for first in (True, False):
        for k in list(d):
            if k != "__builtins__" and k.startswith("_") == first:
                d[k] = None


def _end(code, interrupted, before):
    """The end of a started process: Python's own end up to what matters
    (threads joined, atexit handlers, the program's modules torn down,
    cycles collected, every open file flushed), then os._exit. The
    launcher's modules (imported before the fork) are not torn down:
    that would touch, and so copy, most of the launcher's memory, and
    their teardown is nothing the program asked for."""
    import atexit
    import gc
    import io
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:  # noqa: B902 (as Python: the end goes on)
            pass
    atexit._run_exitfuncs()
    _clear(sys.modules.get("__main__"))
    for name in reversed([n for n in list(sys.modules) if n not in before]):
        _clear(sys.modules.get(name))
    gc.collect()
    for o in gc.get_objects():
        if isinstance(o, (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom)):
            try:
                if not o.closed:
                    o.flush()
            except BaseException:  # noqa: B902 (a file that cannot be flushed: as at Python's end)
                pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:  # noqa: B902
            code = code or 120  # Python's status when its streams cannot be flushed
    if interrupted:  # an unhandled KeyboardInterrupt ends Python by SIGINT
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _exit_code(e):
    """The status of SystemExit e, as Python's handle_system_exit."""
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        sys.stderr.write("%s\n" % (c,))
    except BaseException:  # noqa: B902
        pass
    return 1


_ckh_main_path = _main()
_ckh_self = sys.modules["__main__"]  # this module's globals stay alive below
# ---- the started process: the program runs as __main__ ----
import builtins  # noqa: E402
import types  # noqa: E402
from importlib.machinery import SourceFileLoader  # noqa: E402

_ckh_before = set(sys.modules)
_ckh_main = types.ModuleType("__main__")
_ckh_main.__file__ = _ckh_main_path
_ckh_main.__cached__ = None
_ckh_main.__builtins__ = builtins
_ckh_main.__loader__ = SourceFileLoader("__main__", _ckh_main_path)
sys.modules["__main__"] = _ckh_main
sys.excepthook = _excepthook
try:
    with open(_ckh_main_path, "rb") as _ckh_f:
        _ckh_code = compile(_ckh_f.read(), _ckh_main_path, "exec", dont_inherit=True)
    del _ckh_f
    exec(_ckh_code, _ckh_main.__dict__)
    _ckh_status = (0, False)
except SystemExit as _ckh_e:
    _ckh_status = (_exit_code(_ckh_e), False)
    del _ckh_e
except BaseException as _ckh_e:  # noqa: B902 (an uncaught exception: its traceback, status 1)
    sys.excepthook(type(_ckh_e), _ckh_e, _ckh_e.__traceback__)
    _ckh_status = (1, isinstance(_ckh_e, KeyboardInterrupt))
    del _ckh_e
_end(_ckh_status[0], _ckh_status[1], _ckh_before)
