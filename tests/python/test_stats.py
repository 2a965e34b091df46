"""lazycube.stats / `lazycube stats` against numpy and xarray (float64, 1e-9 relative) on the
bundled samples and on random data with NaNs (reduced over all dims, and with kept dims); the
JSON written by the CLI; the Zarr output opened by xarray; normalize= in BatchGenerator and
BatchDataset against a numpy computation; bad input."""
import json
import os
import subprocess
import warnings

import numpy as np
import pytest

from conftest import import_lazycube, redecode_packed

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

RTOL = 1e-9
KEYS = ("count", "nan_count", "mean", "std", "min", "max")


def numpy_stats(a, axis):
    """What lazycube.stats must equal: numpy on the fully loaded float64 array."""
    a = np.asarray(a, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
        return {"count": np.sum(~np.isnan(a), axis=axis), "nan_count": np.sum(np.isnan(a), axis=axis),
                "mean": np.nanmean(a, axis=axis), "std": np.nanstd(a, axis=axis),
                "min": np.nanmin(a, axis=axis), "max": np.nanmax(a, axis=axis)}


def assert_stats_equal(got, want):
    np.testing.assert_array_equal(got["count"], want["count"])
    np.testing.assert_array_equal(got["nan_count"], want["nan_count"])
    for key in ("mean", "std", "min", "max"):
        np.testing.assert_allclose(got[key], want[key], rtol=RTOL, atol=0, equal_nan=True, err_msg=key)


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    """Random (time, level, y, x) float32 and float64 with NaNs (one all-NaN level slice at
    time 2), chunked so that blocks straddle nothing evenly; written by zarr-python."""
    rng = np.random.default_rng(20)
    shape = (13, 4, 9, 11)
    t = rng.normal(250.0, 30.0, shape) + np.arange(4)[None, :, None, None] * 10
    t[rng.random(shape) < 0.07] = np.nan
    t[2, 1] = np.nan
    q = (rng.gamma(2.0, 1e-3, shape)).astype("f4")
    q[rng.random(shape) < 0.02] = np.nan
    path = tmp_path_factory.mktemp("stats") / "cube.zarr"
    ds = xr.Dataset({"t": (("time", "level", "y", "x"), t), "q": (("time", "level", "y", "x"), q)},
                    coords={"level": [1000, 850, 500, 250]})
    ds.to_zarr(path, encoding={"t": {"chunks": (3, 1, 4, 5)}, "q": {"chunks": (5, 2, 9, 4)}})
    return str(path), ds


@pytest.mark.parametrize("name", ["era5_sample_v2.zarr", "era5_sample_v3.zarr"])
def test_samples_equal_numpy(sample_dir, name):
    path = sample_dir / name
    if not path.is_dir():
        pytest.skip("bundled sample missing: %s" % path)
    ds = lazycube.open_dataset(str(path))
    for keep, axis in ((None, None), ("time", (1, 2)), ("latitude", (0, 2))):
        s = lazycube.stats(str(path), keep=keep)
        assert set(s) == {"msl", "t2m", "u10", "v10"}
        for v in s:
            assert s[v]["dims"] == (() if keep is None else (keep,))
            assert_stats_equal(s[v], numpy_stats(ds[v].values, axis))


def test_sample_v2_equals_xarray(era5):
    """Against xarray's own decoding and reductions (skipna=True), packed msl decoded as
    lazycube decodes it (float64, conftest.redecode_packed)."""
    decoded = redecode_packed(xr.open_zarr(era5), xr.open_zarr(era5, mask_and_scale=False))
    s = lazycube.stats(era5, dims=["latitude", "longitude"])
    for v in s:
        a = decoded[v].astype("f8")
        np.testing.assert_allclose(s[v]["mean"], a.mean(["latitude", "longitude"], skipna=True).values, rtol=RTOL)
        np.testing.assert_allclose(s[v]["std"], a.std(["latitude", "longitude"], skipna=True).values, rtol=RTOL)
        np.testing.assert_allclose(s[v]["max"], a.max(["latitude", "longitude"]).values, rtol=RTOL)


@pytest.mark.parametrize("keep, axis", [(None, None), (["level"], (0, 2, 3)), (["x"], (0, 1, 2)),
                                        (["time", "level"], (2, 3)), (["level", "x"], (0, 2)),
                                        (["y", "x"], (0, 1)), (["level", "y", "x"], (0,))])
def test_random_with_nans_equals_numpy(cube, keep, axis):
    path, ds = cube
    s = lazycube.stats(path, keep=keep)
    for v in ("t", "q"):
        assert s[v]["dims"] == tuple(keep or ())
        assert_stats_equal(s[v], numpy_stats(ds[v].values, axis))
    if keep == ["time", "level"]:  # the all-NaN slice
        assert s["t"]["count"][2, 1] == 0 and np.isnan(s["t"]["mean"][2, 1])


def test_dims_is_the_complement_of_keep_and_equals_xarray(cube):
    path, ds = cube
    by_dims = lazycube.stats(path, variables=["t"], dims=["time", "y", "x"])
    by_keep = lazycube.stats(path, variables="t", keep="level")
    assert list(by_dims) == ["t"]
    for key in KEYS:
        np.testing.assert_array_equal(by_dims["t"][key], by_keep["t"][key])
    np.testing.assert_allclose(by_dims["t"]["mean"], ds.t.mean(["time", "y", "x"], skipna=True).values, rtol=RTOL)
    np.testing.assert_allclose(by_dims["t"]["std"], ds.t.std(["time", "y", "x"], skipna=True).values, rtol=RTOL)
    # an xarray Dataset opened by lazycube's engine goes through the same pass
    xds = xr.open_dataset(path, engine="lazycube")
    np.testing.assert_array_equal(lazycube.stats(xds, keep="level")["t"]["mean"], by_keep["t"]["mean"])


def test_json_round_trip_and_xarray_output(cube, tmp_path):
    path, _ = cube
    s = lazycube.stats(path, keep="level")
    s.to_json(tmp_path / "s.json")
    back = lazycube.Stats.from_json(tmp_path / "s.json")
    for key in KEYS:
        np.testing.assert_array_equal(back["t"][key], s["t"][key])
    out = s.to_xarray()
    np.testing.assert_array_equal(out["t_std"].values, s["t"]["std"])
    s.to_zarr(tmp_path / "s.zarr")
    z = xr.open_zarr(tmp_path / "s.zarr")
    assert z["q_mean"].dims == ("level",)
    np.testing.assert_array_equal(z["q_mean"].values, s["q"]["mean"])
    np.testing.assert_array_equal(z["t_nan_count"].values, s["t"]["nan_count"])


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_cli_json_schema_equals_python_and_zarr_opens_in_xarray(lazycube_cli, cube, tmp_path):
    path, ds = cube
    out = tmp_path / "stats.json"
    p = run(lazycube_cli, "stats", path, "--keep", "level", "--variables", "t,q", "-o", out,
            "--zarr", tmp_path / "stats.zarr", "--no-progress")
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "lazycube-stats" and doc["version"] == 1 and doc["ddof"] == 0
    assert list(doc["variables"]) == ["t", "q"]
    t = doc["variables"]["t"]
    assert t["dims"] == ["level"] and t["shape"] == [4]
    assert set(t) == {"dims", "shape", *KEYS}
    assert all(isinstance(x, int) for x in t["count"])
    assert_stats_equal(lazycube.Stats(doc)["t"], numpy_stats(ds.t.values, (0, 2, 3)))
    z = xr.open_zarr(tmp_path / "stats.zarr")
    np.testing.assert_array_equal(z["t_std"].values, np.array(t["std"]))
    # --netcdf: a NetCDF-4 file xarray opens (netCDF4 engine), the same values
    p = run(lazycube_cli, "stats", path, "--keep", "level", "--netcdf", tmp_path / "stats.nc")
    assert p.returncode == 0, p.stderr
    with xr.open_dataset(tmp_path / "stats.nc") as nc:
        assert nc["t_mean"].dims == ("level",) and nc["t_count"].dtype == np.uint64
        np.testing.assert_array_equal(nc["t_mean"].values, np.array(t["mean"], dtype=float))
        np.testing.assert_array_equal(nc["t_nan_count"].values, t["nan_count"])
        assert nc["t_std"].attrs["ddof"] == 0
    p = run(lazycube_cli, "stats", path, "--netcdf", tmp_path / "a.nc", "--zarr", tmp_path / "a.zarr")
    assert p.returncode == 2 and "excludes" in p.stderr, p.stderr
    # stdout without -o; --dims as the complement; scalars without kept dims
    p = run(lazycube_cli, "stats", path, "--dims", "time,level,y,x", "--variables", "q")
    assert p.returncode == 0, p.stderr
    q = json.loads(p.stdout)["variables"]["q"]
    assert q["dims"] == [] and isinstance(q["mean"], float)
    np.testing.assert_allclose(q["std"], np.nanstd(ds.q.values.astype("f8")), rtol=RTOL)
    # --progress draws on stderr only; stdout keeps the same JSON
    p = run(lazycube_cli, "stats", path, "--dims", "time,level,y,x", "--variables", "q", "--progress")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["variables"]["q"] == q


def test_cli_bad_input_names_it(lazycube_cli, cube):
    path, _ = cube
    p = run(lazycube_cli, "stats", path, "--keep", "lev")
    assert p.returncode == 1 and "unknown dim 'lev'" in p.stderr, p.stderr
    p = run(lazycube_cli, "stats", path, "--variables", "nope")
    assert p.returncode == 1 and "nope" in p.stderr, p.stderr
    p = run(lazycube_cli, "stats", path, "--keep", "level", "--dims", "time")
    assert p.returncode == 2 and "excludes" in p.stderr, p.stderr


def test_python_bad_input(cube, tmp_path):
    path, _ = cube
    with pytest.raises(lazycube.SelectionError, match="'lev'"):
        lazycube.stats(path, keep=["lev"])
    with pytest.raises(lazycube.SelectionError, match="'lev'"):
        lazycube.stats(path, dims=["lev"])
    with pytest.raises(lazycube.NotFoundError, match="nope"):
        lazycube.stats(path, variables=["nope"])
    with pytest.raises(ValueError, match="not both"):
        lazycube.stats(path, dims="time", keep="level")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        lazycube.Stats.from_json(bad)
    doc = lazycube.stats(path, keep="level").document
    doc["variables"]["t"]["mean"] = [1.0, 2.0]
    with pytest.raises(lazycube.UsageError, match="variable 't' \"mean\" must be a list of 4"):
        lazycube.Stats(doc)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batch_generator_normalize_equals_numpy(cube, tmp_path, dtype):
    """Per-level statistics broadcast over each window's levels; x and y (shifted target)."""
    path, ds = cube
    s = lazycube.stats(path, keep="level")
    s.to_json(tmp_path / "s.json")
    gen = lazycube.BatchGenerator(path, input_dims={"time": 2, "y": 3, "x": 4}, batch_size=5,
                                  variables=["t", "q"], target={"variables": ["t"], "offset": {"time": 1}},
                                  dtype=dtype, normalize=str(tmp_path / "s.json"))
    rtol = 1e-12 if dtype == "float64" else 2e-6
    seen = 0
    for batch in gen:
        x, y = batch.numpy()
        assert x.dtype == np.dtype(dtype)
        for k, w in enumerate(batch.windows):
            (t0, _), (y0, _), (x0, _) = w
            for c, v in enumerate(["t", "q"]):
                raw = ds[v].values[t0:t0 + 2, :, y0:y0 + 3, x0:x0 + 4].astype("f8")
                want = (raw - s[v]["mean"][None, :, None, None]) / s[v]["std"][None, :, None, None]
                # batch dims: (sample, channel, time, y, x, level)
                np.testing.assert_allclose(x[k, c], np.moveaxis(want, 1, -1), rtol=rtol, atol=1e-6 if dtype == "float32" else 0, equal_nan=True)
            raw = ds["t"].values[t0 + 1:t0 + 3, :, y0:y0 + 3, x0:x0 + 4].astype("f8")
            want = (raw - s["t"]["mean"][None, :, None, None]) / s["t"]["std"][None, :, None, None]
            np.testing.assert_allclose(y[k, 0], np.moveaxis(want, 1, -1), rtol=rtol, atol=1e-6 if dtype == "float32" else 0, equal_nan=True)
            seen += 1
    assert seen == 35  # 6 x 3 x 2 windows, batches of 5, drop_last


def test_batch_generator_normalize_bad_input(cube, tmp_path):
    path, _ = cube
    s = lazycube.stats(path, variables=["t"], keep="level")
    args = dict(input_dims={"time": 2, "y": 3, "x": 4}, batch_size=2)
    with pytest.raises(lazycube.UsageError, match="no statistics for input variable 'q'"):
        lazycube.BatchGenerator(path, variables=["t", "q"], normalize=s, **args)
    with pytest.raises(lazycube.UsageError, match="float batch dtype"):
        lazycube.BatchGenerator(path, variables=["t"], dtype="int32", normalize=s, **args)
    doc = s.document
    doc["variables"]["t"]["std"][2] = 0.0
    with pytest.raises(lazycube.UsageError, match="std > 0"):
        lazycube.BatchGenerator(path, variables=["t"], normalize=doc, **args)
    with pytest.raises(lazycube.UsageError, match="along dim 'level'"):  # stats of another selection
        lazycube.BatchGenerator(lazycube.open_dataset(path).isel(level=slice(0, 2)), variables=["t"],
                                normalize=lazycube.stats(path, variables=["t"], keep="level"), **args)
    with pytest.raises(FileNotFoundError):
        lazycube.BatchGenerator(path, variables=["t"], normalize=str(tmp_path / "missing.json"), **args)
    with pytest.raises(TypeError, match="normalize must be"):
        lazycube.BatchGenerator(path, variables=["t"], normalize=3, **args)


def test_unchunked_variable_larger_than_a_block_equals_numpy():
    """An in-memory variable is one chunk; at 74 MB it is read in parts (blocks of <= 64 MiB)."""
    rng = np.random.default_rng(3)
    a = rng.normal(5.0, 2.0, (2300, 4000))
    a[rng.random(a.shape) < 0.01] = np.nan
    s = lazycube.stats(xr.Dataset({"a": (("y", "x"), a)}), keep="y")
    assert_stats_equal(s["a"], numpy_stats(a, 1))


def test_multi_store_dataset_equals_numpy(cube, tmp_path):
    """Statistics over lazycube.open_mfdataset (two stores joined along time) equal numpy on
    the whole array: blocks follow each part's chunks."""
    _, ds = cube
    paths = []
    for i, part in enumerate((slice(0, 6), slice(6, None))):
        paths.append(str(tmp_path / ("part%d.zarr" % i)))
        ds.isel(time=part).to_zarr(paths[-1], encoding={"t": {"chunks": (4, 1, 9, 11)}})
    joined = lazycube.open_mfdataset(paths, concat_dim="time")
    s = lazycube.stats(joined, keep="level")
    for v in ("t", "q"):
        assert_stats_equal(s[v], numpy_stats(ds[v].values, (0, 2, 3)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_per_pixel_stats_over_many_keys_equal_numpy(tmp_path, dtype):
    """Kept trailing dims with more keys than one reduction task takes (the tiled path): several
    chunks per dim, NaNs (whole pixels NaN at the first step, one pixel NaN throughout)."""
    rng = np.random.default_rng(47)
    a = (rng.normal(280.0, 12.0, (7, 150, 130)) + np.linspace(0, 50, 130)).astype(dtype)
    a[rng.random(a.shape) < 0.05] = np.nan
    a[0, :10] = np.nan
    a[:, 3, 4] = np.nan
    path = str(tmp_path / "pixels.zarr")
    xr.Dataset({"v": (("time", "y", "x"), a)}).to_zarr(path, encoding={"v": {"chunks": (3, 64, 50)}})
    s = lazycube.stats(path, keep=["y", "x"])
    assert s["v"]["dims"] == ("y", "x")
    assert_stats_equal(s["v"], numpy_stats(a, 0))
    assert s["v"]["count"][3, 4] == 0 and np.isnan(s["v"]["std"][3, 4])
