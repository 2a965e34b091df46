"""A GCS stand-in with service-account auth on loopback, for the Python tests:
tests/servers/gcs_token_server.py (verifies RS256 JWTs against a throwaway RSA key made with the
openssl CLI) and nginx serving ROOT's buckets, admitting only the tokens that server issued.

    with serving(tmp, www) as gcs:   # www/BUCKET/... is what gs://BUCKET/... reads
        gcs["endpoint"], gcs["key"], gcs["wrong_key"]   # endpoint_url, key files
        gcs["www"]                                       # the directory served

The module fixture `gcs` serves the bundled ERA5 sample as gs://bkt/era5.zarr (import it into a
test module: `from gcs_service_account_fixture import gcs`).
"""

import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ERA5 = HERE.parents[1] / "data" / "era5_sample_v2.zarr"
URL = "gs://bkt/era5.zarr"
SERVERS = HERE.parent / "servers"
if str(SERVERS) not in sys.path:
    sys.path.insert(0, str(SERVERS))
import nginx  # noqa: E402


def unavailable_reason():
    """Why the stand-in cannot run here, or None."""
    reason = nginx.unavailable_reason()
    if reason:
        return reason
    if shutil.which("openssl") is None:
        return "the openssl command is not installed"
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return "python3-cryptography is not installed (the token server verifies JWTs with it)"
    return None


def _rsa_key(path):
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                    str(path)], check=True, capture_output=True)
    return path.read_text()


@contextlib.contextmanager
def serving(tmp, www):
    tmp = Path(tmp)
    private = _rsa_key(tmp / "key.pem")
    subprocess.run(["openssl", "pkey", "-in", str(tmp / "key.pem"), "-pubout", "-out", str(tmp / "public.pem")],
                   check=True, capture_output=True)
    issued = tmp / "issued-tokens"
    issued.write_text("")
    server = subprocess.Popen([sys.executable, str(SERVERS / "gcs_token_server.py"), str(tmp / "public.pem"),
                               str(issued)], stdout=subprocess.PIPE)
    try:
        port = int(server.stdout.readline())
        fields = {"type": "service_account", "private_key_id": "k1", "private_key": private,
                  "client_email": "reader@lazycube-test.iam.gserviceaccount.com",
                  "token_uri": "http://127.0.0.1:%d/token" % port}
        (tmp / "key.json").write_text(json.dumps(fields))
        (tmp / "wrong-key.json").write_text(json.dumps(dict(fields, private_key=_rsa_key(tmp / "wrong.pem"))))
        with nginx.NginxServer(tmp / "nginx", www) as s:
            s.set_faults("bearer_tokens = '%s'" % issued)
            yield {"endpoint": s.url, "key": tmp / "key.json", "wrong_key": tmp / "wrong-key.json", "www": Path(www)}
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("gcs")
    (tmp / "www" / "bkt").mkdir(parents=True)
    (tmp / "www" / "bkt" / "era5.zarr").symlink_to(ERA5)
    with serving(tmp, tmp / "www") as g:
        yield g
