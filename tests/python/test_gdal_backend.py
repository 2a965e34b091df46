"""The gdal engine from Python: the real reanalysis files (../shared/data/real, expected figures
from its README) and a NetCDF-4 file written here with netCDF4-python, read through
lazycube.open_dataset, xarray's engine="lazycube" and the CLI, compared with netCDF4-python."""

import hashlib
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import import_lazycube, read_npy

lazycube = import_lazycube()
netCDF4 = pytest.importorskip("netCDF4", reason="netCDF4-python (python3-netcdf4) is needed")

sys.path.insert(0, str(Path(__file__).parent))
import netcdf4_fixture  # noqa: E402

ERAINT_RAW_SHA = {
    "z": "f1223a8c006e574238e9cd6fd5695fcacb7416a84c7fb340398f2424f95d4670",
    "u": "ee5401c9b35a3703d105f419c9b6bfa63d67e56d5c496ca83b287bc74d41bc56",
    "v": "c28435138b197a89369421df6cd39a64da7a96516f5fb0d62ab1b04056bc142e",
}
ERAINT_DECODED_SHA = {
    "z": "7a98ca6bae854abebbe02c0dd582b009dba4dd7d050e0d1951c1ae503ecde279",
    "u": "22beb44b255412108a48b20756bafaac208252e46273241acd0a917846339436",
    "v": "9aa885fc1879eff31b2b53b33224d06b3d9444bf9a69cc5e292493f0ad1d854c",
}
ERAINT_COORD_SHA = {
    "longitude": "b03f2ec3572f0137f6e462bce0f7182f262d6b6772faaf9f60f7192bd0719bbe",
    "latitude": "42c2a21cf70d1d28c0fd484f83571695f1a1c9e4c092b644d6fd684b6e64724f",
    "level": "a127bd57a77af55f0b70c66c76a14177a1d8a63e3a76b15701ffa921d77eecd8",
    "month": "f0e6dfdca14da812bd3febae22fe83f4f7ea295365ca71128ed6502c9847b92e",
}
GRIB_SHA_F64 = "0a832c0a183ca6f507b2338718e9f92fa633c809e47dcffecc64ed61d7d62245"


def sha_le(a):
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def real(shared_data):
    path = shared_data / "real"
    if not (path / "eraint_uvz.nc").is_file():
        pytest.skip("real files not found in %s" % path)
    return path


@pytest.fixture(scope="module")
def nc4(tmp_path_factory):
    path = tmp_path_factory.mktemp("nc4") / "fixture.nc"
    netcdf4_fixture.write(str(path))
    return path


def test_eraint_equals_netcdf4_python_and_readme(real):
    path = str(real / "eraint_uvz.nc")
    ds = lazycube.open_dataset(path)
    assert dict(ds.sizes) == {"longitude": 480, "latitude": 241, "level": 3, "month": 2}
    ref = netCDF4.Dataset(path)
    for name in ["z", "u", "v"]:
        got = ds[name].read()
        assert got.dtype == np.float64
        with warnings.catch_warnings():  # "_FillValue not used since it cannot be safely cast"
            warnings.simplefilter("ignore")
            want = np.ma.getdata(ref[name][:])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        assert sha_le(got) == ERAINT_DECODED_SHA[name]
        raw = ds[name].read_raw()
        assert raw.dtype == np.int16 and sha_le(raw) == ERAINT_RAW_SHA[name]
        assert ds[name].attrs["units"] == ref[name].units
        assert ds[name].encoding["scale_factor"] == ref[name].scale_factor
    for name, digest in ERAINT_COORD_SHA.items():
        assert sha_le(ds[name].read()) == digest, name


def test_grib_values_and_times(real):
    ds = lazycube.open_dataset(str(real / "era5-2mt-2019-03-uk.grib"))
    t2m = ds["2T_0-SFC"].read()
    assert t2m.shape == (744, 33, 49) and t2m.dtype == np.float64
    # GDAL's multidimensional view runs Y south to north; the README hashes rows north first.
    assert ds["Y"].read()[0] == 50.0 and ds["Y"].read()[-1] == 58.0
    t2m = t2m[:, ::-1, :]
    assert sha_le(t2m) == GRIB_SHA_F64
    assert hashlib.sha256(t2m.astype("<f4").tobytes()).hexdigest() == \
        "96abea797db80899120259c64a98f4e7b4604e541b2137cfdccaf7f71c84eacf"
    times = ds["TIME"].read()
    assert times.dtype == np.dtype("datetime64[ns]")
    expected = np.arange(np.datetime64("2019-03-01T00:00", "ns"), np.datetime64("2019-04-01T00:00", "ns"),
                         np.timedelta64(1, "h"))
    np.testing.assert_array_equal(times, expected)
    # GDAL's own reading (classic raster API, bands = messages) agrees.
    from osgeo import gdal
    gdal.UseExceptions()
    classic = gdal.Open(str(real / "era5-2mt-2019-03-uk.grib"))
    for band in (1, 372, 744):
        np.testing.assert_array_equal(t2m[band - 1], classic.GetRasterBand(band).ReadAsArray())


def test_xarray_engine_auto_detects(real):
    xr = pytest.importorskip("xarray")
    path = str(real / "eraint_uvz.nc")
    got = xr.open_dataset(path, engine="lazycube")
    want = xr.open_dataset(path, engine="netcdf4")
    for name in ["z", "u", "v", "latitude", "longitude", "level", "month"]:
        np.testing.assert_allclose(got[name].values, want[name].values, rtol=1e-12)
    sub = got["u"].sel(level=500, latitude=slice(45, 44)).isel(month=1)
    np.testing.assert_allclose(sub.values, want["u"].sel(level=500, latitude=slice(45, 44)).isel(month=1).values,
                               rtol=1e-12)


def test_netcdf4_file_equals_netcdf4_python(nc4):
    ds = lazycube.open_dataset(str(nc4))
    assert ds["t"].chunks == (2, 10, 15)
    ref = netCDF4.Dataset(str(nc4))
    want = ref["t"][:].astype("f8").filled(np.nan)
    got = ds["t"].read()
    assert got.dtype == np.float32  # xarray's dtype for masked + scaled int16
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    assert int(np.isnan(got).sum()) == len(netcdf4_fixture.FILL_POINTS)
    np.testing.assert_array_equal(ds["w"].read(), ref["w"][:])
    want_times = np.datetime64("2000-01-01T00:00", "ns") + np.arange(6) * np.timedelta64(6, "h")
    np.testing.assert_array_equal(ds["time"].read(), want_times)
    np.testing.assert_array_equal(ds.sel(time="2000-01-01T12:00")["w"].read(), ref["w"][2])
    np.testing.assert_array_equal(ds["w"].isel(y=slice(None, None, -3)).read(), ref["w"][:, ::-3])


def test_engine_argument(nc4, tmp_path):
    other = tmp_path / "fixture.bin"
    other.write_bytes(nc4.read_bytes())
    assert lazycube.open_dataset(str(other), engine="gdal")["w"].shape == (6, 20, 30)
    assert lazycube.open_dataset(str(other))["w"].shape == (6, 20, 30)  # HDF5 signature
    with pytest.raises(lazycube.UsageError, match="bogus"):
        lazycube.open_dataset(str(nc4), engine="bogus")
    with pytest.raises(lazycube.Error):
        lazycube.open_dataset(str(nc4), engine="zarr")
    missing = str(tmp_path / "missing.nc")
    with pytest.raises(lazycube.NotFoundError, match="missing.nc"):
        lazycube.open_dataset(missing)


def test_cli_info_and_read(lazycube_cli, nc4, tmp_path):
    out = subprocess.run([str(lazycube_cli), "info", str(nc4), "--json"], capture_output=True, text=True,
                         check=True).stdout
    info = json.loads(out)
    assert info["dims"] == {"time": 6, "y": 20, "x": 30}
    assert info["variables"]["t"]["chunks"] == [2, 10, 15]
    assert info["variables"]["t"]["codecs"][0]["name"] == "gdal"
    text = subprocess.run([str(lazycube_cli), "info", str(nc4), "--engine", "gdal"], capture_output=True, text=True,
                          check=True).stdout
    assert "Data variables:" in text and " t " in text
    got = read_npy(lazycube_cli, str(nc4), tmp_path, variable="w", isel=["time=1:4", "x=5"])
    np.testing.assert_array_equal(got, netCDF4.Dataset(str(nc4))["w"][1:4, :, 5])
    raw = read_npy(lazycube_cli, str(nc4), tmp_path, variable="t", raw=True, name="raw.npy")
    np.testing.assert_array_equal(raw, netcdf4_fixture.packed_t())


def test_cache_dir_with_the_gdal_engine_is_an_error_naming_it(tmp_path):
    """GDAL reads remote files through its own network layer, which the disk cache does not
    cover: a cache_dir given for it is refused (naming the option), never silently unused; the
    URL in the message carries no credentials."""
    for url in ("http://user:SECRET@127.0.0.1:9/data.nc", "s3://bucket/data.nc"):
        with pytest.raises(lazycube.UsageError, match="cache_dir") as info:
            lazycube.open_dataset(url, engine="gdal", storage_options={"cache_dir": str(tmp_path)})
        assert "SECRET" not in str(info.value)
