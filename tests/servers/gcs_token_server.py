"""A stand-in for Google's OAuth2 token endpoint (the service-account JWT-bearer grant), for the
GCS service-account tests. Run with Debian's /usr/bin/python3 (python3-cryptography):

    gcs_token_server.py PUBLIC_KEY_PEM TOKENS_FILE [--expires-in SECONDS] [--scope SCOPE]

Prints its port on stdout, then serves on 127.0.0.1 until SIGTERM.

POST /token (application/x-www-form-urlencoded grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer
&assertion=JWT): the JWT must be RS256-signed by the key whose public half is PUBLIC_KEY_PEM, with
iss, scope (SCOPE when given), aud = this endpoint's URL, iat and exp = iat + 3600 (within a
minute of now). Then it issues a fresh access token valid EXPIRES_IN seconds (default 3600) and
appends "TOKEN EXPIRY_EPOCH" to TOKENS_FILE: nginx's faults.lua (`bearer_tokens`) accepts only
those tokens, and only until they expire. Refusals are HTTP 400 with Google's JSON error form
{"error": "invalid_grant", "error_description": ...}.

GET /stats answers {"issued": N, "refused": M}.
"""

import argparse
import base64
import json
import secrets
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Refused(Exception):
    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("public_key")
    ap.add_argument("tokens_file")
    ap.add_argument("--expires-in", type=float, default=3600.0)
    ap.add_argument("--scope", default=None)
    args = ap.parse_args()
    with open(args.public_key, "rb") as f:
        public_key = serialization.load_pem_public_key(f.read())
    lock = threading.Lock()
    stats = {"issued": 0, "refused": 0}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    audience = "http://127.0.0.1:%d/token" % port

    def verify(form):
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            raise Refused("unsupported_grant_type", "grant_type is not jwt-bearer")
        assertion = form.get("assertion", [""])[0]
        parts = assertion.split(".")
        if len(parts) != 3:
            raise Refused("invalid_grant", "Malformed JWT")
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        if header.get("alg") != "RS256" or header.get("typ") != "JWT":
            raise Refused("invalid_grant", "JWT header is not RS256/JWT")
        try:
            public_key.verify(b64url_decode(parts[2]), (parts[0] + "." + parts[1]).encode(),
                              padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise Refused("invalid_grant", "Invalid JWT Signature.")
        now = time.time()
        if claims.get("aud") != audience:
            raise Refused("invalid_grant", "Invalid JWT: audience is not the token endpoint")
        if not claims.get("iss"):
            raise Refused("invalid_grant", "Invalid JWT: no iss")
        if args.scope and claims.get("scope") != args.scope:
            raise Refused("invalid_scope", "scope is not " + args.scope)
        iat, exp = claims.get("iat", 0), claims.get("exp", 0)
        if abs(iat - now) > 60 or exp - iat != 3600:
            raise Refused("invalid_grant", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path != "/stats":
                return self.reply(404, {"error": "not_found"})
            with lock:
                self.reply(200, dict(stats))

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            form = urllib.parse.parse_qs(self.rfile.read(length).decode())
            if self.path != "/token":
                return self.reply(404, {"error": "not_found"})
            try:
                verify(form)
            except Refused as e:
                with lock:
                    stats["refused"] += 1
                return self.reply(400, {"error": e.args[0], "error_description": e.args[1]})
            except (ValueError, KeyError, TypeError):
                with lock:
                    stats["refused"] += 1
                return self.reply(400, {"error": "invalid_grant", "error_description": "Malformed JWT"})
            token = "ya29.test-" + secrets.token_hex(16)
            with lock:
                with open(args.tokens_file, "a") as f:
                    f.write("%s %.3f\n" % (token, time.time() + args.expires_in))
                stats["issued"] += 1
            lifetime = int(args.expires_in) if args.expires_in.is_integer() else args.expires_in  # Google: an int
            self.reply(200, {"access_token": token, "expires_in": lifetime, "token_type": "Bearer"})

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
