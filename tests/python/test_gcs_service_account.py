"""GCS service accounts through the Python package and the CLI: a throwaway RSA key in a key JSON
whose token_uri is tests/servers/gcs_token_server.py (it verifies the RS256 JWT), and nginx
standing in for GCS's XML API, admitting only tokens that server issued."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, import_lazycube

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402

lazycube = import_lazycube()
LOCAL = REPO / "data" / "era5_sample_v2.zarr"
URL = "gs://bkt/era5.zarr"


def rsa_key(path):
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                    str(path)], check=True, capture_output=True)
    return path.read_text()


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip(reason)
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    pytest.importorskip("cryptography", reason="python3-cryptography (the token server verifies JWTs with it)")
    tmp = tmp_path_factory.mktemp("gcs")
    private = rsa_key(tmp / "key.pem")
    subprocess.run(["openssl", "pkey", "-in", str(tmp / "key.pem"), "-pubout", "-out", str(tmp / "public.pem")],
                   check=True, capture_output=True)
    issued = tmp / "issued-tokens"
    issued.write_text("")
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "servers" / "gcs_token_server.py"),
                               str(tmp / "public.pem"), str(issued)], stdout=subprocess.PIPE)
    try:
        port = int(server.stdout.readline())
        fields = {"type": "service_account", "private_key_id": "k1", "private_key": private,
                  "client_email": "reader@lazycube-test.iam.gserviceaccount.com",
                  "token_uri": "http://127.0.0.1:%d/token" % port}
        (tmp / "key.json").write_text(json.dumps(fields))
        (tmp / "wrong-key.json").write_text(json.dumps(dict(fields, private_key=rsa_key(tmp / "wrong.pem"))))
        (tmp / "www" / "bkt").mkdir(parents=True)
        (tmp / "www" / "bkt" / "era5.zarr").symlink_to(LOCAL)
        with nginx.NginxServer(tmp / "nginx", tmp / "www") as s:
            s.set_faults("bearer_tokens = '%s'" % issued)
            yield {"endpoint": s.url, "key": tmp / "key.json", "wrong_key": tmp / "wrong-key.json"}
    finally:
        server.terminate()
        server.wait(timeout=10)


def cli(exe, *args):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)


def test_open_dataset_with_a_key_file_reads_like_local(gcs):
    remote = lazycube.open_dataset(URL, storage_options={"token": str(gcs["key"]), "endpoint_url": gcs["endpoint"]})
    local = lazycube.open_dataset(str(LOCAL))
    assert set(remote.variables) == set(local.variables)
    for name in local.variables:
        np.testing.assert_array_equal(remote[name].values, local[name].values)


def test_wrong_key_is_an_auth_error_without_secrets(gcs):
    with pytest.raises(lazycube.AuthError) as err:
        lazycube.open_dataset(URL, storage_options={"token": str(gcs["wrong_key"]), "endpoint_url": gcs["endpoint"]})
    msg = str(err.value)
    assert "invalid_grant" in msg and "HTTP 400" in msg
    assert str(gcs["wrong_key"]) in msg  # the key file's path is named, not masked
    assert "PRIVATE KEY" not in msg and "eyJ" not in msg


def test_cli_info_with_a_key_file(lazycube_cli, gcs):
    r = cli(lazycube_cli, "info", URL, "--option", "token=%s" % gcs["key"], "--option", "endpoint_url=%s" % gcs["endpoint"])
    assert r.returncode == 0, r.stderr
    assert "t2m" in r.stdout
    r = cli(lazycube_cli, "info", URL, "--option", "token=%s" % gcs["wrong_key"], "--option", "endpoint_url=%s" % gcs["endpoint"])
    assert r.returncode != 0
    assert "invalid_grant" in r.stderr and "PRIVATE KEY" not in r.stderr
