"""`lazycube convert` and lazycube.convert / lazycube.to_zarr (issue 19): every converted store
reads back equal to its source — xarray `identical` for Zarr v2 output read by zarr-python 2.13,
lazycube (decoded and raw) for v3 — with the asked layout (chunks, shards, codec) in the
metadata; --variables / --isel; bad input refused before anything is written; an existing
destination refused unless --overwrite; --resume after an interruption gives the same store as
an uninterrupted run."""

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import REPO, import_lazycube, run_cli

xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

SAMPLE_V2 = REPO / "data" / "era5_sample_v2.zarr"
SAMPLE_V3 = REPO / "data" / "era5_sample_v3.zarr"


def store_files(root):
    """{relative path: bytes} of every file under `root`."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def assert_lazycube_equal(dst, src, decode_cf=True):
    a = lazycube.open_dataset(str(src), decode_cf=decode_cf)
    b = lazycube.open_dataset(str(dst), decode_cf=decode_cf)
    assert sorted(a.variables) == sorted(b.variables)
    for name in a.variables:
        va, vb = a[name], b[name]
        assert va.dims == vb.dims, name
        assert va.dtype == vb.dtype, name
        np.testing.assert_array_equal(va.values, vb.values, err_msg=name)
    assert dict(a.attrs) == dict(b.attrs)


def zarr_json(path):
    with open(os.path.join(path, "zarr.json")) as fh:
        return json.load(fh)


def test_v2_output_is_identical_in_xarray(lazycube_cli, tmp_path):
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(dst), "--format", "2", "--chunks", "time=24")
    src = xr.open_zarr(SAMPLE_V2)
    out = xr.open_zarr(dst)  # zarr-python 2.13 reads it, consolidated
    xr.testing.assert_identical(out.load(), src.load())
    for name in src.data_vars:
        assert out[name].encoding["chunks"] == (24,) + src[name].encoding["chunks"][1:]
        assert out[name].encoding["dtype"] == src[name].encoding["dtype"]  # copied as stored


def test_v3_sharded_output_reads_back_equal(lazycube_cli, tmp_path):
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(dst), "--chunks", "time=8,latitude=32",
            "--shards", "time=48", "--codec", "blosc:lz4:5:shuffle")
    assert_lazycube_equal(dst, SAMPLE_V2)
    assert_lazycube_equal(dst, SAMPLE_V2, decode_cf=False)
    meta = zarr_json(dst / "t2m")
    assert meta["dimension_names"] == ["time", "latitude", "longitude"]
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [48, 32, 40]  # one chunk per shard elsewhere
    sharding = meta["codecs"][0]
    assert sharding["name"] == "sharding_indexed"
    assert sharding["configuration"]["chunk_shape"] == [8, 32, 40]
    assert any(c["name"] == "blosc" for c in sharding["configuration"]["codecs"])
    assert zarr_json(dst)["consolidated_metadata"]["metadata"]["t2m"]["shape"] == [96, 61, 81]


@pytest.mark.parametrize("codec", ["zstd:3", "gzip:6", "zlib:5", "lz4", "none"])
def test_codecs(lazycube_cli, tmp_path, codec):
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V3), str(dst), "--codec", codec)
    assert_lazycube_equal(dst, SAMPLE_V3, decode_cf=False)


def test_variables_and_isel(lazycube_cli, tmp_path):
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(dst), "--format", "2", "--variables", "t2m",
            "--isel", "time=10:30", "--isel", "latitude=::2")
    out = xr.open_zarr(dst)
    src = xr.open_zarr(SAMPLE_V2)[["t2m"]].isel(time=slice(10, 30), latitude=slice(None, None, 2))
    xr.testing.assert_identical(out.load(), src.load())


@pytest.mark.parametrize("args,needle", [
    (["--codec", "snappy:3"], "snappy"),
    (["--codec", "zstd:abc"], "zstd:abc"),
    (["--chunks", "level=4"], "level"),
    (["--shards", "time=20", "--chunks", "time=8"], "time=20"),
    (["--format", "2", "--shards", "time=48"], "shards"),
    (["--variables", "nope"], "nope"),
    (["--isel", "depth=3"], "depth"),
])
def test_bad_input_is_refused_before_writing(lazycube_cli, tmp_path, args, needle):
    dst = tmp_path / "out.zarr"
    r = subprocess.run([str(lazycube_cli), "convert", str(SAMPLE_V2), str(dst), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert needle in r.stderr, r.stderr
    assert not dst.exists() or not any(dst.iterdir())


def test_existing_destination_needs_overwrite(lazycube_cli, tmp_path):
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V3), str(dst))
    r = subprocess.run([str(lazycube_cli), "convert", str(SAMPLE_V2), str(dst), "--format", "2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "out.zarr" in r.stderr, r.stderr
    assert_lazycube_equal(dst, SAMPLE_V3)  # untouched
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(dst), "--format", "2", "--overwrite")
    xr.testing.assert_identical(xr.open_zarr(dst).load(), xr.open_zarr(SAMPLE_V2).load())
    assert not (dst / "zarr.json").exists()  # nothing of the v3 store is left


def test_resume_after_partial_write_is_identical(lazycube_cli, tmp_path):
    whole = tmp_path / "whole.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(whole), "--chunks", "time=4", "--shards", "time=8")
    files = store_files(whole)
    # An interrupted run: metadata not yet written, some shards missing, one cut short.
    part = tmp_path / "part.zarr"
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(part), "--chunks", "time=4", "--shards", "time=8")
    for rel in list(store_files(part)):
        if rel.endswith("zarr.json"):
            os.remove(part / rel)
    shards = sorted(rel for rel in files if "/c/" in rel)
    for rel in shards[::3]:
        os.remove(part / rel)
    cut = shards[1]
    with open(part / cut, "r+b") as fh:
        fh.truncate(len(files[cut]) // 2)
    r = subprocess.run([str(lazycube_cli), "convert", str(SAMPLE_V2), str(part), "--chunks", "time=4",
                        "--shards", "time=8"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0  # not without --resume
    run_cli(lazycube_cli, "convert", str(SAMPLE_V2), str(part), "--chunks", "time=4", "--shards", "time=8",
            "--resume")
    assert store_files(part) == files


def test_resume_after_kill_is_identical(lazycube_cli, tmp_path):
    # A source large enough that the conversion is still running when it is killed.
    src = tmp_path / "big.zarr"
    values = np.random.default_rng(7).standard_normal((400, 180, 360)).astype("f4")
    xr.Dataset({"x": (("time", "y", "x_"), values)}).to_zarr(src)
    args = ["convert", str(src), "--chunks", "time=1", "--codec", "gzip:9"]
    whole = tmp_path / "whole.zarr"
    run_cli(lazycube_cli, args[0], args[1], str(whole), *args[2:], timeout=300)
    part = tmp_path / "part.zarr"
    proc = subprocess.Popen([str(lazycube_cli), args[0], args[1], str(part), *args[2:]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (part / "x" / "c").exists() and len(list((part / "x" / "c").iterdir())) >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (part / "x" / "zarr.json").exists(), "killed too late to test resuming"
    run_cli(lazycube_cli, args[0], args[1], str(part), *args[2:], "--resume", timeout=300)
    assert store_files(part) == store_files(whole)


def test_python_convert_and_to_zarr(tmp_path):
    n = lazycube.convert(str(SAMPLE_V2), str(tmp_path / "a.zarr"), chunks={"time": 24}, format=2)
    assert n > 0
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "a.zarr").load(), xr.open_zarr(SAMPLE_V2).load())
    ds = lazycube.open_dataset(str(SAMPLE_V3))
    lazycube.to_zarr(ds, str(tmp_path / "b.zarr"), chunks={"time": 12}, shards={"time": 48}, codec="zstd:5")
    assert_lazycube_equal(tmp_path / "b.zarr", SAMPLE_V3)
    with pytest.raises(lazycube.Error, match="b.zarr"):
        lazycube.to_zarr(ds, str(tmp_path / "b.zarr"))
    with pytest.raises(lazycube.CodecError, match="snappy"):
        lazycube.convert(str(SAMPLE_V2), str(tmp_path / "c.zarr"), codec="snappy")
    assert not (tmp_path / "c.zarr").exists()


def test_to_zarr_of_an_xarray_dataset_matches_xarrays_own(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(0)
    a = rng.standard_normal((10, 4, 5)).astype("f4")
    a[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {"a": (("time", "y", "x"), a), "p": (("time", "y", "x"), rng.standard_normal((10, 4, 5)) * 10 + 280)},
        coords={"time": pd.date_range("2020-01-01", periods=10, freq="6H"), "y": np.arange(4.0),
                "x": np.arange(5.0), "lat": (("y", "x"), rng.standard_normal((4, 5)))},
        attrs={"title": "packed and masked"})
    ds["p"].encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0, "_FillValue": -32767}
    ds.to_zarr(tmp_path / "xarray.zarr")
    lazycube.to_zarr(ds, str(tmp_path / "v2.zarr"), chunks={"time": 4}, format=2)
    lazycube.to_zarr(ds, str(tmp_path / "v3.zarr"), chunks={"time": 4}, shards={"time": 8})
    ref = xr.open_zarr(tmp_path / "xarray.zarr").load()
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "v2.zarr").load(), ref)
    assert xr.open_zarr(tmp_path / "v2.zarr")["p"].encoding["dtype"] == np.dtype("int16")
    # The v3 copy holds the same stored values and decodes as lazycube decodes xarray's own store
    # (packed data in the dtype of its attributes, xarray >= 2024.02; see test_cf_decode_dtypes).
    v3 = lazycube.open_dataset(str(tmp_path / "v3.zarr"))
    theirs = lazycube.open_dataset(str(tmp_path / "xarray.zarr"))
    for name in ("a", "p", "lat", "time", "x", "y"):
        np.testing.assert_array_equal(v3[name].values, theirs[name].values, err_msg=name)
        np.testing.assert_array_equal(v3[name].read_raw(), theirs[name].read_raw(), err_msg=name)
    assert v3["p"].stored_dtype == np.dtype("int16")
    assert v3["p"].encoding["coordinates"] == "lat"


def test_netcdf_source_v2_output_is_identical(lazycube_cli, tmp_path):
    import pandas as pd

    rng = np.random.default_rng(1)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), (rng.standard_normal((12, 20, 30)) * 5 + 280).astype("f4")),
         "sp": (("time", "lat", "lon"), rng.standard_normal((12, 20, 30)) * 100 + 101325)},
        coords={"time": pd.date_range("2021-01-01", periods=12, freq="1D"), "lat": np.linspace(-10, 10, 20),
                "lon": np.linspace(0, 29, 30)},
        attrs={"Conventions": "CF-1.8"})
    ds["t2m"].attrs = {"units": "K", "long_name": "2 metre temperature"}
    ds["sp"].encoding = {"dtype": "int16", "scale_factor": 0.1, "add_offset": 101325.0, "_FillValue": -32767}
    ds.to_netcdf(tmp_path / "in.nc")
    run_cli(lazycube_cli, "convert", str(tmp_path / "in.nc"), str(tmp_path / "v2.zarr"), "--format", "2",
            "--chunks", "time=4")
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "v2.zarr").load(),
                                xr.open_dataset(tmp_path / "in.nc").load())
    run_cli(lazycube_cli, "convert", str(tmp_path / "in.nc"), str(tmp_path / "v3.zarr"), "--shards", "time=12",
            "--chunks", "time=3")
    assert_lazycube_equal(tmp_path / "v3.zarr", tmp_path / "in.nc")


def test_icechunk_source_at_a_snapshot(lazycube_cli, tmp_path, shared_data):
    repo = shared_data / "icechunk-fixtures" / "test-repo-v2"
    if not repo.exists():
        pytest.skip("no Icechunk fixture at %s" % repo)
    # The commit that filled the data (later ones add a virtual chunk in another bucket).
    log = json.loads(run_cli(lazycube_cli, "log", str(repo), "--json").stdout)
    snapshot = next(e["id"] for e in log if e["message"] == "fill data")
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", str(repo), str(dst), "--snapshot", snapshot, "--variables",
            "group1/big_chunks", "--chunks", "dim_0=2")
    src = lazycube.open_dataset(str(repo), snapshot=snapshot, group="group1/big_chunks")
    out = lazycube.open_dataset(str(dst))
    np.testing.assert_array_equal(out["big_chunks"].values, src["big_chunks"].values)
    assert out["big_chunks"].attrs["this"] == "is a nice array"
    n = lazycube.convert(str(repo), str(tmp_path / "py.zarr"), snapshot=snapshot, group="group1/big_chunks")
    assert n > 0
    np.testing.assert_array_equal(lazycube.open_dataset(str(tmp_path / "py.zarr"))["big_chunks"].values,
                                  src["big_chunks"].values)


def test_to_zarr_keeps_scalar_coordinates(tmp_path):
    ds = xr.Dataset({"a": (("y", "x"), np.arange(12.0).reshape(3, 4))},
                    coords={"y": np.arange(3), "x": np.arange(4), "t": np.datetime64("2020-01-01T06:00")})
    ds.to_zarr(tmp_path / "xarray.zarr")
    lazycube.to_zarr(ds, str(tmp_path / "v2.zarr"), format=2)
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "v2.zarr").load(), xr.open_zarr(tmp_path / "xarray.zarr").load())
