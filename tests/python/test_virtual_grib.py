"""Virtual GRIB (issue 34): an Icechunk repository whose virtual chunks are the messages of a real
GRIB file (the ERA5 2 m temperature GRIB1 file of ../shared/data/real, and the same file converted
to GRIB2), codec gribberish, read through lazycube.open_dataset, xarray's lazycube engine, the CLI
(info, read) and the torch BatchDataset: every field equals GDAL's decoding of the file (osgeo.gdal,
its GRIB driver; within 1e-3 K, the precision of GDAL's own float32 unpacking of GRIB2).

The repository is written by lazycube_bench_grib (tests/bench/bench_grib.cpp, with the tests'
Icechunk writer): no Icechunk library is installed here.
"""

import json
import subprocess

import numpy as np
import pytest

from conftest import build_dir, import_lazycube

xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

REAL = "era5-2mt-2019-03-uk.grib"


def _tool():
    tool = build_dir() / "tests" / "bench" / "lazycube_bench_grib"
    if not tool.is_file():
        pytest.skip("lazycube_bench_grib not built at %s (needs ecCodes and LAZYCUBE_BUILD_BENCH)" % tool)
    return tool


def _run(*args):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return p


def _gdal_fields(path):
    gdal = pytest.importorskip("osgeo.gdal")
    gdal.UseExceptions()
    gdal.SetConfigOption("GRIB_NORMALIZE_UNITS", "NO")  # the values as stored (Kelvin, not Celsius)
    gdal.SetConfigOption("GRIB_ADJUST_LONGITUDE_RANGE", "NO")
    ds = gdal.Open(str(path))
    return np.stack([ds.GetRasterBand(b).ReadAsArray().astype(np.float64) for b in range(1, ds.RasterCount + 1)])


@pytest.fixture(scope="module", params=["grib1", "grib2"])
def repo(request, shared_data, tmp_path_factory):
    """(repository path, its virtual chunk container prefix, GDAL's fields of the GRIB file)."""
    real = shared_data / "real" / REAL
    if not real.is_file():
        pytest.skip("real file %s not found" % real)
    tool = _tool()
    tmp = tmp_path_factory.mktemp("virtual_grib_" + request.param)
    data = tmp / "data"
    data.mkdir()
    grib = data / "era5.grib"
    if request.param == "grib2":
        _run(tool, "grib2", real, grib)
    else:
        grib.write_bytes(real.read_bytes())
    info = json.loads(_run(tool, "repo", grib, tmp / "repo").stdout.splitlines()[-1])
    assert info["messages"] == 744
    return tmp / "repo", "file://%s/" % data, _gdal_fields(grib)


def test_open_dataset_reads_every_field_as_gdal(repo):
    path, prefix, want = repo
    ds = lazycube.open_dataset(str(path), virtual_chunk_containers={prefix: {}})
    got = ds["t2m"].values
    assert got.shape == want.shape == (744, 33, 49)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3)
    # One field through a selection (one virtual chunk read).
    np.testing.assert_allclose(ds["t2m"].isel(time=100).values, want[100], rtol=0, atol=1e-3)


def test_xarray_engine_reads_every_field_as_gdal(repo):
    path, prefix, want = repo
    xds = xr.open_dataset(str(path), engine="lazycube", virtual_chunk_containers={prefix: {}})
    assert xds["t2m"].dims == ("time", "latitude", "longitude")
    np.testing.assert_allclose(xds["t2m"].values, want, rtol=0, atol=1e-3)
    np.testing.assert_allclose(xds["t2m"].isel(time=slice(10, 20)).values, want[10:20], rtol=0, atol=1e-3)


def test_cli_info_and_read(repo, lazycube_cli, tmp_path):
    path, prefix, want = repo
    info = _run(lazycube_cli, "info", path, "--virtual", prefix, "--json")
    assert "t2m" in info.stdout
    out = tmp_path / "t2m.npy"
    _run(lazycube_cli, "read", path, "t2m", "--virtual", prefix, "--isel", "time=0:50", "-o", out)
    np.testing.assert_allclose(np.load(out), want[:50], rtol=0, atol=1e-3)
    # Not authorised: an error naming the GRIB file's URL, never fill values.
    p = subprocess.run([str(lazycube_cli), "read", str(path), "t2m", "-o", str(tmp_path / "no.npy")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "not authorised" in p.stderr


def test_cli_convert_reads_back_as_the_source(repo, lazycube_cli, tmp_path):
    """`lazycube convert` of the GRIB messages (maps, one per virtual chunk) to time series: the
    Zarr v2 output read by xarray (zarr-python) equals xarray's reading of the source (its
    lazycube engine) value for value, and GDAL's fields; the v3 sharded output (edge shards and
    inner chunks across the array's end) equals it through lazycube."""
    path, prefix, want = repo
    src = xr.open_dataset(str(path), engine="lazycube", virtual_chunk_containers={prefix: {}})
    v2, v3 = tmp_path / "v2.zarr", tmp_path / "v3.zarr"
    _run(lazycube_cli, "convert", path, v2, "--virtual", prefix, "--format", "2", "--chunks",
         "time=96,latitude=16,longitude=16", "--codec", "blosc:lz4:5:shuffle", "--no-progress")
    out = xr.open_dataset(v2, engine="zarr")
    assert out["t2m"].encoding["chunks"] == (96, 16, 16)
    np.testing.assert_array_equal(out["t2m"].values, src["t2m"].values)
    np.testing.assert_array_equal(out["time"].values, src["time"].values)
    np.testing.assert_allclose(out["t2m"].values, want, rtol=0, atol=1e-3)
    _run(lazycube_cli, "convert", path, v3, "--virtual", prefix, "--chunks", "time=96,latitude=16,longitude=16",
         "--shards", "time=192,latitude=32,longitude=32", "--codec", "blosc:lz4:5:shuffle", "--no-progress")
    np.testing.assert_array_equal(lazycube.open_dataset(str(v3))["t2m"].values, src["t2m"].values)


def test_torch_batch_dataset(repo):
    torch = pytest.importorskip("torch")  # noqa: F841
    import lazycube.torch as lctorch
    path, prefix, want = repo
    batches = lctorch.BatchDataset(str(path), input_dims={"time": 1, "latitude": 33, "longitude": 49}, batch_size=4,
                                   variables=["t2m"], virtual_chunk_containers={prefix: {}})
    seen = 0
    for batch in batches:
        x = batch.numpy().astype(np.float64).reshape(-1, 33, 49)
        assert x.shape[0] <= 4
        # Each window is one whole field of the file (in the dataset's window order).
        for field in x:
            k = int(np.argmin(np.abs(want - field).reshape(744, -1).max(axis=1)))
            np.testing.assert_allclose(field, want[k], rtol=0, atol=1e-2)
        seen += x.shape[0]
        if seen >= 12:
            break
    assert seen >= 12
