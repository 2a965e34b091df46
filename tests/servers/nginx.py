"""A private nginx for pytest (tests/servers/start_nginx.sh), stopped by PID.

    with NginxServer(prefix, root) as server:
        server.url            # http://127.0.0.1:PORT
        server.set_faults("p503 = 0.1")   # body of the Lua table read by faults.lua
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = Path("/usr/lib/nginx/modules")


def unavailable_reason():
    """Why nginx cannot run here, or None."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        return "nginx is not installed (apt-get install nginx)"
    if not (MODULES / "ngx_http_lua_module.so").exists() or not (MODULES / "ndk_http_module.so").exists():
        return "the nginx lua module is not installed (apt-get install libnginx-mod-http-lua)"
    return None


class NginxServer:
    def __init__(self, prefix, root):
        self.prefix = Path(prefix)
        env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin")
        self.proc = subprocess.Popen(["bash", str(HERE / "start_nginx.sh"), str(prefix), str(root)],
                                     stdout=subprocess.PIPE, env=env)
        line = self.proc.stdout.readline().decode().strip()
        if not line:
            self.stop()
            raise RuntimeError("start_nginx.sh printed no port")
        self.port = int(line)
        self.url = "http://127.0.0.1:%d" % self.port
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.01)
        self.stop()
        raise RuntimeError("nginx did not start")

    def set_faults(self, table):
        (self.prefix / "faults.lua").write_text("return {%s}\n" % table)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
