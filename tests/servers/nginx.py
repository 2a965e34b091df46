"""A private nginx for pytest (tests/servers/start_nginx.sh), stopped by PID.

    with NginxServer(prefix, root) as server:
        server.url            # http://127.0.0.1:PORT
        server.set_faults("p503 = 0.1")   # body of the Lua table read by faults.lua
        server.stop(); server.start_again()   # a restart: same port and configuration
"""

import os
import shutil
import subprocess
from pathlib import Path

from script_server import ScriptServer
MODULES = Path("/usr/lib/nginx/modules")


def unavailable_reason():
    """Why nginx cannot run here, or None."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        return "nginx is not installed (apt-get install nginx)"
    if not (MODULES / "ngx_http_lua_module.so").exists() or not (MODULES / "ndk_http_module.so").exists():
        return "the nginx lua module is not installed (apt-get install libnginx-mod-http-lua)"
    return None


class NginxServer(ScriptServer):
    def __init__(self, prefix, root):
        self.prefix = Path(prefix)
        env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin")
        super().__init__("start_nginx.sh", [prefix, root], "nginx", env=env)
        self.url = "http://127.0.0.1:%d" % self.port
        self._env = env

    def start_again(self):
        """Starts a stopped server again (the configuration start_nginx.sh wrote: same port,
        root and fault file); returns once it accepts connections."""
        self.proc = subprocess.Popen(["nginx", "-p", "%s/" % self.prefix, "-c", "nginx.conf"], env=self._env)
        self._wait_accepting("nginx")

    def set_faults(self, table):
        (self.prefix / "faults.lua").write_text("return {%s}\n" % table)
