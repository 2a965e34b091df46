"""A moto S3 server for pytest (the PATH python3 has moto and boto3; Debian's /usr/bin/python3,
which runs pytest, has neither), loaded through moto_setup.py and stopped by PID.

    with MotoServer(bucket, {"/src/dir": "key/prefix"}) as s3:
        s3.endpoint                 # http://127.0.0.1:PORT
        s3.key_id, s3.secret        # an IAM user's access key (allowed everything)
        s3.upload(bucket, trees)    # more trees (authentication off)
        s3.create_bucket(name)
        s3.set_auth(True)           # SigV4 checked on every request from now on
"""

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETUP = HERE / "moto_setup.py"


def _python():
    return shutil.which("python3")


def unavailable_reason():
    """Why moto cannot run here, or None."""
    exe = _python()
    if exe is None or subprocess.run([exe, "-c", "import moto, boto3"], capture_output=True).returncode != 0:
        return "moto/boto3 are not installed for the PATH python3 (python3 -m moto.server)"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trees(trees):
    return ["%s=%s" % (src, prefix) for src, prefix in trees.items()]


class MotoServer:
    def __init__(self, bucket, trees):
        self.python = _python()
        self.endpoint = "http://127.0.0.1:%d" % _free_port()
        port = self.endpoint.rsplit(":", 1)[1]
        self.proc = subprocess.Popen([self.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", port],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1):
                        break
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("the moto server did not start")
                    time.sleep(0.05)
            creds = json.loads(self._setup("setup", bucket, *_trees(trees)))
        except BaseException:
            self.stop()
            raise
        self.key_id, self.secret = creds["key_id"], creds["secret"]
        self.session_key_id, self.session_secret = creds["session_key_id"], creds["session_secret"]
        self.session_token = creds["session_token"]

    def _setup(self, command, *args):
        return subprocess.run([self.python, str(SETUP), command, self.endpoint, *map(str, args)],
                              capture_output=True, text=True, check=True).stdout

    def upload(self, bucket, trees):
        self._setup("upload", bucket, *_trees(trees))

    def create_bucket(self, bucket):
        self._setup("bucket", bucket)

    def set_auth(self, on):
        subprocess.run([self.python, str(SETUP), "auth", "on" if on else "off", self.endpoint], check=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
