"""verify_ckpt: a quick "can the job resume from this folder?" check for the
PyTorch jobs of prog_torch_job.py, with the standard library only (no torch
import: about 40 ms a call, where the jobs' own --verify takes 2.5 s). It is
the `verify:` of the explore scenarios, where ckh runs it once per crash state.

It finds the checkpoint the job would load, the way the job finds it:
  --protocol atomic: the file `latest` names (no `latest`: nothing saved yet);
  --protocol direct: the step_<n>.pt with the highest n;
and checks that it is a complete torch.save archive: a zip file whose every
member reads back with the right CRC-32 and that holds a pickled state
(data.pkl). Exit 0 when it is (or when nothing was saved), else 1 with one
line naming the file and what is wrong.

Usage: verify_ckpt.py --protocol atomic|direct [DIR]
DIR defaults to $CKH_CKPT_DIR.
"""
import argparse
import os
import re
import sys
import zipfile


def newest(protocol, dirpath):
    """The checkpoint a job saving with protocol would load from dirpath, or
    None (prog_torch_job.py finds it with this function too)."""
    if not os.path.isdir(dirpath):
        return None
    if protocol == "atomic":
        try:
            with open(os.path.join(dirpath, "latest")) as f:
                name = f.read().strip()
        except FileNotFoundError:
            return None
        if not re.fullmatch(r"step_\d+\.pt", name):
            raise ValueError("%s holds %r, expected step_<n>.pt" % (os.path.join(dirpath, "latest"), name))
        return os.path.join(dirpath, name)
    best = None
    for name in os.listdir(dirpath):
        m = re.fullmatch(r"step_(\d+)\.pt", name)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), name)
    return os.path.join(dirpath, best[1]) if best else None


def check_archive(path):
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        if bad is not None:
            raise ValueError("member %s has a wrong CRC" % bad)
        if not any(n.endswith("/data.pkl") or n == "data.pkl" for n in z.namelist()):
            raise ValueError("no data.pkl: not a torch.save archive")


def main(argv):
    p = argparse.ArgumentParser(prog="verify_ckpt", description=__doc__.splitlines()[0])
    p.add_argument("--protocol", choices=("atomic", "direct"), required=True)
    p.add_argument("dir", nargs="?", default=os.environ.get("CKH_CKPT_DIR", "ckpt"))
    a = p.parse_args(argv)
    path = None
    try:
        path = newest(a.protocol, a.dir)
        if path is None:
            print("verify_ckpt: no checkpoint in %s" % a.dir)
            return 0
        check_archive(path)
    except Exception as e:  # a torn, missing or foreign file: name it
        print("verify_ckpt: cannot resume from %s: %s: %s" % (path or a.dir, type(e).__name__, e))
        return 1
    print("verify_ckpt: %s is a complete checkpoint" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
