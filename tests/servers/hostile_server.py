"""A hostile HTTP server for tests (127.0.0.1, a free port printed on stdout, then serving until
SIGTERM). Paths:

  /files/<path>          the file <root>/<path>, with Range (206) support
  /mixed/<path>          as /files/ when <root>/<path> is a file, else as /endless/ (a Zarr
                         array whose metadata is real and whose chunk bodies never end)
  /endless/<anything>    200 (206 to a Range request) with a body that never ends
  /liar/<anything>       200 announcing Content-Length: 10**15, then a body that never ends
  /redirect/<port>/<p>   302 to http://127.0.0.1:<port>/<p>
  /redirect-file/<any>   302 to file:///etc/passwd
  /loop/<n>              302 to /loop/<n+1>, forever

Usage: python3 hostile_server.py ROOT"""

import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
CHUNK = b"\xab" * 65536


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: it can be endless

    def log_message(self, *args):
        pass

    def _endless(self, status, headers):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            while True:
                self.wfile.write(CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path
        rng = self.headers.get("Range")
        if path.startswith("/mixed/"):
            file = os.path.normpath(os.path.join(ROOT, path[len("/mixed/"):]))
            if file.startswith(ROOT) and os.path.isfile(file):
                path = "/files/" + path[len("/mixed/"):]
            else:
                path = "/endless/" + path[len("/mixed/"):]
        if path.startswith("/endless/"):
            status = 206 if rng else 200
            headers = [("Content-Range", "bytes 0-1023/1024")] if rng else []
            return self._endless(status, headers)
        if path.startswith("/liar/"):
            return self._endless(200, [("Content-Length", str(10**15))])
        m = re.match(r"^/redirect/(\d+)/(.*)$", path)
        if m:
            return self._redirect("http://127.0.0.1:%s/%s" % (m.group(1), m.group(2)))
        if path.startswith("/redirect-file/"):
            return self._redirect("file:///etc/passwd")
        m = re.match(r"^/loop/(\d+)$", path)
        if m:
            return self._redirect("/loop/%d" % (int(m.group(1)) + 1))
        if path.startswith("/files/"):
            file = os.path.normpath(os.path.join(ROOT, path[len("/files/"):]))
            if not file.startswith(ROOT) or not os.path.isfile(file):
                self.send_error(404)
                return
            data = open(file, "rb").read()
            m = re.match(r"bytes=(\d+)-(\d*)", rng or "")
            if m:
                first = int(m.group(1))
                last = int(m.group(2)) if m.group(2) else len(data) - 1
                last = min(last, len(data) - 1)
                body = data[first:last + 1]
                self.send_response(206)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(data)))
            else:
                body = data
                self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return
        self.send_error(404)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
