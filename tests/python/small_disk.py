"""A small file system for full-disk tests: a tmpfs of a few hundred KiB mounted on a folder
(needs root, as CI runs; elsewhere the tests skip with the reason).

    with SmallDisk(path, "512k") as disk:   # mounted on `path` (created); inodes=N: N files at most
        disk.free()                         # bytes free
        disk.resize("8m")                   # remount with room (the files stay)
    # unmounted here, also after a failure
"""

import os
import subprocess
from pathlib import Path


def _mount(*args):
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


class SmallDisk:
    def __init__(self, path, size, inodes=None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        options = "size=%s,mode=0755" % size + (",nr_inodes=%d" % inodes if inodes else "")
        proc = _mount("-t", "tmpfs", "-o", options, "tmpfs", str(self.path))
        if proc.returncode != 0:
            raise PermissionError("mount -t tmpfs failed: %s" % (proc.stderr.strip() or proc.returncode))

    def free(self):
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def resize(self, size):
        proc = _mount("-o", "remount,size=%s" % size, str(self.path))
        assert proc.returncode == 0, proc.stderr

    def unmount(self):
        if subprocess.run(["umount", str(self.path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)  # busy: detach

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unmount()


def unavailable_reason(scratch):
    """Why a tmpfs cannot be mounted here (not root, no mount permission), or None. Tries one
    on `scratch`."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root (CI runs the tests as root)"
    try:
        SmallDisk(scratch, "64k").unmount()
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None
