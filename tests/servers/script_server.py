"""A test server started by one of the start_*.sh scripts here: the script prints the port on
stdout and then runs the server in the foreground; it is stopped by PID (SIGTERM)."""

import signal
import socket
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


class ScriptServer:
    def __init__(self, script, args, name, env=None):
        self.proc = subprocess.Popen(["bash", str(HERE / script), *map(str, args)], stdout=subprocess.PIPE, env=env)
        line = self.proc.stdout.readline().decode().strip()
        if not line:
            self.stop()
            raise RuntimeError("%s printed no port" % script)
        self.port = int(line)
        self._wait_accepting(name)

    def _wait_accepting(self, name):
        for _ in range(1500):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.01)
        self.stop()
        raise RuntimeError("%s did not start" % name)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
