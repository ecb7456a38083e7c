#!/usr/bin/env python3
"""Runs the command blocks of one Markdown page as a user would type them.

    doc_run.py PAGE.md         (CKH_SRC: the source tree, CKH_BUILD: a build of it)
    doc_run.py --route installed PAGE.md
                               (ckh as the package installs it: /usr/bin/ckh,
                               /usr/share/doc/ckh, ...; no CKH_SRC, no CKH_BUILD)

The conventions (docs/CONTRIBUTING.md, "Docs that run") are HTML comments,
which GitHub does not render, on the line before a fence:

    <!-- doc-test: run [exit=N] [needs=fuse,torch] [timeout=S] [route=R] -->
        the next ```sh block is run; its exit status must be N (default 0);
        with route=build or route=installed, only on that route: a page
        that works with a build tree and with the installed package says
        so with one set-up block per route, and every other block is
        run on both
    <!-- doc-test: output -->
        the next fence is the output of the last run block (stdout and
        stderr together), compared after masking: "N ms" figures, and the
        session's folder, shown as $PWD-like paths, are masked; "..." in a
        line matches any text and a line that is only "..." any lines
    <!-- doc-test: skip REASON -->
        the next ```sh block is not run (REASON says why: a GPU, a cluster,
        a network, minutes of work that another test does)
    <!-- doc-test: setup clone -->
        (anywhere outside fences) the page's blocks start in a copy of the
        source tree, with build/ a link to CKH_BUILD, instead of an empty
        folder: for pages that say "from a clone of this repository"

Every ```sh (bash, shell, console) fence needs run or skip, and an
unlabelled fence may not show a "$ command" line: a page cannot add a
command that is neither run nor said to be unrunnable. The run blocks of
a page are one session, in order, in a fresh temporary folder outside the
source tree: the environment a block exports and the folder it ends in
carry to the next. The session starts with CKH_SRC and CKH_BUILD set,
no other CKH_ variable, and PATH as given (the page sets its own).

Exit status: 0 every block ran as shown; 1 a block did not (its command,
status, output and the expected text are printed); 2 the page breaks the
conventions (file:line named); 77 a block needs what this machine lacks
(FUSE, /usr/bin/python3 with torch): the page is skipped as a whole, since
its later blocks build on the earlier ones.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHELL_LANGS = {"sh", "bash", "shell", "console"}
MARK = re.compile(r"^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")
NEEDS = ("fuse", "torch")
ROUTES = ("build", "installed")


class PageError(Exception):
    pass


def parse(path):
    """The page's blocks: dicts with kind (run, output, skip, plain), line,
    lang, attrs, body; and whether it asks for a clone."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, pending, clone = [], None, False
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARK.match(line)
        if m:
            kind, rest = m.group(1), m.group(2)
            if kind == "setup":
                if rest != "clone":
                    raise PageError(f"{path}:{i + 1}: 'doc-test: setup' expects 'clone', got '{rest}'")
                clone = True
            elif kind in ("run", "output", "skip"):
                if pending:
                    raise PageError(f"{path}:{pending[2]}: 'doc-test: {pending[0]}' is not followed by a fence")
                if kind == "skip" and not rest:
                    raise PageError(f"{path}:{i + 1}: 'doc-test: skip' needs a reason")
                pending = (kind, rest, i + 1)
            else:
                raise PageError(f"{path}:{i + 1}: unknown doc-test marker '{kind}' (run, output, skip, setup)")
            i += 1
            continue
        f = FENCE.match(line)
        if not f:
            if pending and line.strip():
                raise PageError(f"{path}:{pending[2]}: 'doc-test: {pending[0]}' is not followed by a fence "
                                f"(line {i + 1} comes first)")
            i += 1
            continue
        indent, ticks, lang = f.group(1), f.group(2), f.group(3).lower()
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*" + re.escape(ticks[0]) + "{%d,}\\s*$" % len(ticks), lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise PageError(f"{path}:{start}: fence never closed")
        i += 1
        kind, attrs = "plain", {}
        if pending:
            kind = pending[0]
            attrs = {"reason": pending[1]} if kind == "skip" else parse_attrs(path, pending)
            pending = None
        if kind in ("run", "skip") and lang not in SHELL_LANGS:
            raise PageError(f"{path}:{start}: 'doc-test: {kind}' marks a '{lang or 'plain'}' fence; "
                            f"it applies to ```sh blocks")
        if kind == "plain" and lang in SHELL_LANGS:
            raise PageError(f"{path}:{start}: a ```{lang} block without '<!-- doc-test: run -->' or "
                            f"'<!-- doc-test: skip REASON -->' on the line before")
        if kind == "plain" and not lang and any(b.startswith("$ ") for b in body):
            raise PageError(f"{path}:{start}: a block shows a '$ command' line: put the command in a "
                            f"marked ```sh block and its output in a '<!-- doc-test: output -->' block")
        blocks.append({"kind": kind, "line": start, "lang": lang, "attrs": attrs, "body": body})
    if pending:
        raise PageError(f"{path}:{pending[2]}: 'doc-test: {pending[0]}' is not followed by a fence")
    last = None
    for b in blocks:
        if b["kind"] == "run":
            last = b
        elif b["kind"] == "output":
            if last is None or "output" in last:
                raise PageError(f"{path}:{b['line']}: an output block with no run block before it "
                                f"(or a second one for the same run block)")
            last["output"] = b
    return blocks, clone


def parse_attrs(path, pending):
    kind, rest, line = pending
    attrs = {}
    for word in rest.split():
        key, eq, val = word.partition("=")
        if kind == "run" and eq and key == "exit" and val.isdigit():
            attrs["exit"] = int(val)
        elif kind == "run" and eq and key == "timeout" and val.isdigit():
            attrs["timeout"] = int(val)
        elif kind == "run" and eq and key == "needs" and all(n in NEEDS for n in val.split(",")):
            attrs["needs"] = val.split(",")
        elif kind == "run" and eq and key == "route" and val in ROUTES:
            attrs["route"] = val
        else:
            raise PageError(f"{path}:{line}: 'doc-test: {kind}' does not take '{word}' "
                            f"(run takes exit=N, timeout=S, needs={','.join(NEEDS)}, "
                            f"route={'|'.join(ROUTES)}; output takes nothing)")
    return attrs


def missing(need):
    """Why this machine cannot give a block what it needs, or None (the
    same tests as tests/support/skip.sh)."""
    if need == "torch":
        r = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True)
        return None if r.returncode == 0 else "/usr/bin/python3 cannot import torch (install python3-torch)"
    if need == "fuse":
        if not os.path.exists("/dev/fuse"):
            return "FUSE is not available: /dev/fuse is missing"
        try:
            os.close(os.open("/dev/fuse", os.O_RDWR))
        except OSError:
            return "FUSE is not available: cannot open /dev/fuse read-write"
        if os.getuid() != 0 and not shutil.which("fusermount3"):
            return "FUSE is not available: fusermount3 is not on PATH and this is not root"
    return None


def mask(text, session):
    text = text.replace(os.path.realpath(session), "$SESSION").replace(session, "$SESSION")
    text = re.sub(r"\b\d+ ms\b", "N ms", text)
    return "\n".join(l.rstrip() for l in text.rstrip("\n").split("\n"))


def matches(expected, actual):
    """Whether actual fits expected: whole lines, "..." a wildcard within a
    line, a line of "..." any number of lines."""
    parts = []
    for line in expected.split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(r"[^\n]*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.fullmatch("".join(parts), actual + "\n") is not None


def copy_clone(src, dst):
    skip = {".git", "out", "fuzz-work"}
    for name in sorted(os.listdir(src)):
        if name in skip or name.startswith("build"):
            continue
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if os.path.isdir(s) and not os.path.islink(s):
            shutil.copytree(s, d, symlinks=True, ignore=shutil.ignore_patterns("out", "__pycache__"))
        else:
            shutil.copy2(s, d, follow_symlinks=False)
    os.symlink(os.environ["CKH_BUILD"], os.path.join(dst, "build"))


def run_block(b, session, state, env):
    script = (
        f'. "{state}/env"\ncd "$(cat "{state}/cwd")"\n'
        f"trap 'export -p > \"{state}/env.new\"; pwd > \"{state}/cwd.new\"' EXIT\n"
        "set -e\n" + "\n".join(b["body"]) + "\n"
    )
    try:
        r = subprocess.run(["bash", "-c", script], cwd=session, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           timeout=b["attrs"].get("timeout", 300), start_new_session=True)
        out, status = r.stdout.decode("utf-8", "replace"), r.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        status = "a time limit of %d s (a hang guard, not a measure)" % b["attrs"].get("timeout", 300)
    for name in ("env", "cwd"):
        if os.path.exists(f"{state}/{name}.new"):
            os.replace(f"{state}/{name}.new", f"{state}/{name}")
    return status, out


def main():
    args = sys.argv[1:]
    route = "build"
    if len(args) == 3 and args[0] == "--route" and args[1] in ROUTES:
        route, args = args[1], args[2:]
    if len(args) != 1:
        print("usage: doc_run.py [--route build|installed] PAGE.md", file=sys.stderr)
        return 2
    page = args[0]
    name = os.path.relpath(page, os.environ.get("CKH_SRC", ".")) if route == "build" else page
    try:
        blocks, clone = parse(page)
    except (PageError, OSError, UnicodeDecodeError) as e:
        print(f"doc_run: {e}", file=sys.stderr)
        return 2
    if route == "installed" and clone:
        print(f"doc_run: {name} starts from a clone of the source tree ('doc-test: setup clone'); "
              f"it has no installed route", file=sys.stderr)
        return 2
    other = [b for b in blocks if b["kind"] == "run" and b["attrs"].get("route", route) != route]
    for b in other:
        print(f"{name}:{b['line']}: not run: the {b['attrs']['route']} route's set-up")
    runs = [b for b in blocks if b["kind"] == "run" and b["attrs"].get("route", route) == route]
    skips = [b for b in blocks if b["kind"] == "skip"]
    for b in skips:
        print(f"{name}:{b['line']}: not run: {b['attrs']['reason']}")
    if not runs:
        print(f"{name}: no block to run ({len(skips)} marked as not runnable)")
        return 0
    for need in sorted({n for b in runs for n in b["attrs"].get("needs", [])}):
        why = missing(need)
        if why:
            print(f"{name}: SKIPPED: {why}")
            return 77
    src, build = os.environ.get("CKH_SRC"), os.environ.get("CKH_BUILD")
    if route == "build" and (not src or not build):
        print("doc_run: CKH_SRC and CKH_BUILD must name the source tree and its build", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if not k.startswith("CKH_") and k != "PYTHONPATH"}
    env.update(LC_ALL="C.UTF-8", TERM="dumb")
    if route == "build":
        env.update(CKH_SRC=src, CKH_BUILD=build)
    session = tempfile.mkdtemp(prefix="ckh-doc-")
    if src and os.path.realpath(session).startswith(os.path.realpath(src) + os.sep):
        print(f"doc_run: the session folder {session} is inside the source tree", file=sys.stderr)
        return 2
    state = tempfile.mkdtemp(prefix="ckh-doc-state-")
    failed = 0
    try:
        work = os.path.join(session, "work")
        os.mkdir(work)
        if clone:
            copy_clone(src, work)
        env["TMPDIR"] = session
        with open(f"{state}/env", "w") as f:
            f.write("")
        with open(f"{state}/cwd", "w") as f:
            f.write(work + "\n")
        for b in runs:
            want = b["attrs"].get("exit", 0)
            status, out = run_block(b, work, state, env)
            shown = mask(out, work)
            problems = []
            if status != want:
                problems.append(f"exit status {status}, the page says {want}")
            if "output" in b:
                expected = mask("\n".join(b["output"]["body"]), work)
                if not matches(expected, shown):
                    problems.append(f"output differs from the block at line {b['output']['line']}:\n"
                                    f"--- expected\n{expected}\n--- got\n{shown}")
            if problems:
                failed += 1
                print(f"{name}:{b['line']}: FAIL: " + "; ".join(problems))
                print("--- the block\n" + "\n".join(b["body"]))
                if "output" not in b:
                    print("--- its output\n" + out)
                break  # the blocks after it build on it
            print(f"{name}:{b['line']}: ok ({len(b['body'])} line{'s' if len(b['body']) != 1 else ''}"
                  f"{', output compared' if 'output' in b else ''})")
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", session], capture_output=True)
        shutil.rmtree(session, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    if failed:
        return 1
    print(f"{name}: {len(runs)} block{'s' if len(runs) != 1 else ''} ran as shown, {len(skips)} not runnable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
