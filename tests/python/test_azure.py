"""Azure Blob Storage (az://) end to end against Azurite on 127.0.0.1 (tests/servers/azurite.py):
the bundled ERA5 samples uploaded with azure-storage-blob read value for value like the local
copies through lazycube.open_dataset and xarray's engine, with SharedKey from a connection string,
from the environment, and with a SAS token made by azure-storage-blob; the CLI with
--option connection_string=...; NetCDF over /vsiaz/ with a SAS; a wrong key is an AuthError
naming the HTTP status and Azure's code, never the key; the torch BatchDataset over az://.
"""

import datetime
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, import_lazycube

xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

sys.path.insert(0, str(REPO / "tests" / "servers"))
import azurite  # noqa: E402

CONTAINER = "samples"
SAMPLES = {"v2": REPO / "data" / "era5_sample_v2.zarr", "v3": REPO / "data" / "era5_sample_v3.zarr"}
AZURE_ENV = ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
             "AZURE_STORAGE_CONNECTION_STRING")


@pytest.fixture(autouse=True)
def clean_azure_env(monkeypatch):
    for name in AZURE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    reason = azurite.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with azurite.AzuriteServer(tmp_path_factory.mktemp("azurite")) as s:
        s.client().create_container(CONTAINER)
        for name, path in SAMPLES.items():
            s.upload_tree(CONTAINER, path, "era5_%s.zarr" % name)
        yield s


def url(name):
    return "az://%s/era5_%s.zarr" % (CONTAINER, name)


def sas_token(server, permission="rl"):
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas
    return generate_container_sas(server.account, CONTAINER, account_key=server.key,
                                  permission=ContainerSasPermissions.from_string(permission),
                                  expiry=datetime.datetime.utcnow() + datetime.timedelta(hours=1))


def assert_same_as_local(remote, local):
    assert list(remote.variables) == list(local.variables)
    for name in local.variables:
        np.testing.assert_array_equal(remote[name].read(), local[name].read())


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_open_dataset_connection_string_equals_local(server, version):
    remote = lazycube.open_dataset(url(version), storage_options={"connection_string": server.connection_string})
    assert_same_as_local(remote, lazycube.open_dataset(str(SAMPLES[version])))


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_xarray_engine_equals_local(server, version):
    so = {"account_name": server.account, "account_key": server.key,
          "connection_string": "BlobEndpoint=%s" % server.endpoint}
    remote = xr.open_dataset(url(version), engine="lazycube", storage_options=so)
    local = xr.open_dataset(str(SAMPLES[version]), engine="lazycube")
    xr.testing.assert_identical(remote.load(), local.load())


def test_environment_credentials(server, monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", server.connection_string)
    assert_same_as_local(lazycube.open_dataset(url("v2")), lazycube.open_dataset(str(SAMPLES["v2"])))
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", "BlobEndpoint=%s" % server.endpoint)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", server.account)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", server.key)
    assert_same_as_local(lazycube.open_dataset(url("v3")), lazycube.open_dataset(str(SAMPLES["v3"])))


def test_sas_token_from_azure_sdk(server, monkeypatch):
    sas = sas_token(server)
    endpoint_only = "AccountName=%s;BlobEndpoint=%s" % (server.account, server.endpoint)
    remote = lazycube.open_dataset(url("v3"), storage_options={"sas_token": sas, "connection_string": endpoint_only})
    assert_same_as_local(remote, lazycube.open_dataset(str(SAMPLES["v3"])))
    # Listing (no consolidated metadata) is signed by the SAS too.
    remote = lazycube.open_dataset(url("v2"), consolidated=False,
                                   storage_options={"sas_token": "?" + sas, "connection_string": endpoint_only})
    assert list(remote.variables) == list(lazycube.open_dataset(str(SAMPLES["v2"])).variables)
    # A signed URL: the SAS as its query string.
    remote = lazycube.open_dataset(url("v3") + "?" + sas, storage_options={"connection_string": endpoint_only})
    assert_same_as_local(remote, lazycube.open_dataset(str(SAMPLES["v3"])))
    sig = [p for p in sas.split("&") if p.startswith("sig=")][0][4:]
    assert sig not in repr(remote.source) and sig not in str(remote["t2m"].source)
    # From the environment, and from a connection string's SharedAccessSignature.
    monkeypatch.setenv("AZURE_STORAGE_SAS_TOKEN", sas)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", endpoint_only)
    assert_same_as_local(lazycube.open_dataset(url("v2")), lazycube.open_dataset(str(SAMPLES["v2"])))
    monkeypatch.delenv("AZURE_STORAGE_SAS_TOKEN")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", endpoint_only + ";SharedAccessSignature=" + sas)
    assert_same_as_local(lazycube.open_dataset(url("v2")), lazycube.open_dataset(str(SAMPLES["v2"])))


def test_wrong_key_is_auth_error_without_secrets(server):
    import base64
    wrong = base64.b64encode(b"this-is-not-the-account-key-at-all").decode()
    so = {"connection_string": server.connection_string.replace(server.key, wrong)}
    with pytest.raises(lazycube.AuthError) as err:
        lazycube.open_dataset(url("v2"), storage_options=so)
    text = str(err.value)
    assert "HTTP 403" in text and ("AuthenticationFailed" in text or "AuthorizationFailure" in text), text
    assert wrong not in text and server.key not in text
    # A SAS for another permission set is refused; its signature never shown.
    sas = sas_token(server, permission="w")
    with pytest.raises(lazycube.AuthError) as err:
        lazycube.open_dataset(url("v2"), storage_options={
            "sas_token": sas, "connection_string": "AccountName=%s;BlobEndpoint=%s" % (server.account, server.endpoint)})
    sig = [p for p in sas.split("&") if p.startswith("sig=")][0][4:]
    assert "HTTP 403" in str(err.value) and sig not in str(err.value)
    # The options' repr hides them too.
    ds = lazycube.open_dataset(url("v2"), storage_options={"connection_string": server.connection_string})
    assert server.key not in repr(ds.source) and server.key not in str(ds.source)


def test_cli_info_and_read(server, lazycube_cli, tmp_path):
    out = subprocess.run([str(lazycube_cli), "info", url("v3"), "--option",
                          "connection_string=" + server.connection_string],
                         capture_output=True, text=True, check=True).stdout
    assert "t2m" in out and server.key not in out
    remote = tmp_path / "remote.npy"
    subprocess.run([str(lazycube_cli), "read", url("v2"), "t2m", "-o", str(remote), "--option",
                    "connection_string=" + server.connection_string], check=True, capture_output=True)
    local = lazycube.open_dataset(str(SAMPLES["v2"]))["t2m"].read()
    np.testing.assert_array_equal(np.load(remote), local)
    bad = subprocess.run([str(lazycube_cli), "info", url("v3"), "--option", "account_key=abc"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "abc" not in bad.stderr


def test_netcdf_over_vsiaz_with_sas(server, tmp_path):
    pytest.importorskip("netCDF4")
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from netcdf4_fixture import write
    path = tmp_path / "f.nc"
    write(str(path))
    server.client().get_container_client(CONTAINER).upload_blob("gdal/f.nc", path.read_bytes(), overwrite=True)
    so = {"sas_token": sas_token(server),
          "connection_string": "AccountName=%s;BlobEndpoint=%s" % (server.account, server.endpoint)}
    remote = lazycube.open_dataset("az://%s/gdal/f.nc" % CONTAINER, storage_options=so)
    assert_same_as_local(remote, lazycube.open_dataset(str(path)))


def _equal(a, b):
    import torch
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


def test_torch_batch_dataset_over_az(server):
    pytest.importorskip("torch")
    import lazycube.torch as lctorch
    kwargs = dict(input_dims={"latitude": 4, "longitude": 4}, batch_size=2, variables=["t2m"])
    remote = list(lctorch.BatchDataset(url("v3"), storage_options={"connection_string": server.connection_string},
                                       **kwargs))
    local = list(lctorch.BatchDataset(str(SAMPLES["v3"]), **kwargs))
    assert len(remote) == len(local) > 0
    assert all(_equal(a, b) for a, b in zip(remote, local))
