"""GCS service accounts through the Python package and the CLI, against
the loopback stand-in of gcs_service_account_fixture.py (a token server that verifies the RS256
JWT, nginx admitting only the tokens it issued)."""

import subprocess

import numpy as np
import pytest

from gcs_service_account_fixture import ERA5 as LOCAL, URL, gcs  # noqa: F401,F811 (gcs: a fixture)
from conftest import import_lazycube

lazycube = import_lazycube()


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



def test_netcdf_over_gs_with_a_key_file_says_why_gdal_is_refused(gcs, tmp_path):
    """GDAL 3.6 cannot send bearer tokens: a private NetCDF object on GCS read with a service
    account fails with an error that says so (not a bare "no such file"), and never hangs."""
    try:
        import netCDF4  # noqa: F401
    except ImportError:
        pytest.skip("netCDF4-python is not installed (it writes the NetCDF fixture)")
    import netcdf4_fixture
    local = tmp_path / "fixture.nc"
    netcdf4_fixture.write(str(local))
    (gcs["www"] / "bkt" / "nc").mkdir(parents=True, exist_ok=True)
    (gcs["www"] / "bkt" / "nc" / "fixture.nc").write_bytes(local.read_bytes())
    options = {"token": str(gcs["key"]), "endpoint_url": gcs["endpoint"]}
    with pytest.raises(lazycube.Error) as err:
        lazycube.open_dataset("gs://bkt/nc/fixture.nc", storage_options=options)
    msg = str(err.value)
    assert "bearer tokens" in msg and "HMAC" in msg, msg
    assert "service account" in msg, msg
    assert "PRIVATE KEY" not in msg and "eyJ" not in msg
