"""CF decoding of every numeric stored dtype (the typed decode loops of src/dataset/cf.cpp)
against xarray's zarr engine: packed integers with scale/offset and fill values, masked and
scaled floats, through lazycube.open_dataset and through batches. Packed variables are expected in
the dtype of their attributes (xarray >= 2024.02; conftest.redecode_packed)."""

import warnings

import numpy as np
import pytest

from conftest import import_lazycube, redecode_packed

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")

# name -> (stored dtype, encoding beyond the dtype)
CASES = {
    "i1_scaled": ("i1", {"scale_factor": 0.25, "add_offset": 3.0, "_FillValue": -128}),
    "i2_packed": ("i2", {"scale_factor": 0.5, "add_offset": 100000.0, "_FillValue": -32767}),
    "i2_scale_only": ("i2", {"scale_factor": 0.01}),
    "i2_offset_missing": ("i2", {"add_offset": -7.5, "missing_value": 9999}),
    "i4_packed": ("i4", {"scale_factor": 1e-3, "add_offset": 250.0, "_FillValue": -2147483647}),
    "i8_fill": ("i8", {"_FillValue": -1}),
    "u1_scaled": ("u1", {"scale_factor": 2.0, "_FillValue": 255}),
    "u2_packed": ("u2", {"scale_factor": 0.1, "add_offset": -50.0, "_FillValue": 65535}),
    "u4_offset": ("u4", {"add_offset": 1.5, "_FillValue": 0}),
    "u8_fill": ("u8", {"_FillValue": 7}),
    "f4_masked_scaled": ("f4", {"scale_factor": 2.0, "_FillValue": -9999.0}),
    "f8_offset": ("f8", {"add_offset": 0.125, "_FillValue": 1e20}),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(3)
    shape = (6, 7, 9)
    data = {}
    encoding = {}
    for name, (dtype, enc) in CASES.items():
        info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
        scale, offset = enc.get("scale_factor", 1.0), enc.get("add_offset", 0.0)
        if info is not None:
            raw = rng.integers(max(info.min, -30000) + 1, min(info.max, 30000) - 1, size=shape, dtype=np.int64)
            values = raw * scale + offset
        else:
            values = rng.standard_normal(shape) * 100
        values = values.astype("f8")
        values.flat[::11] = np.nan  # written as the fill value
        data[name] = (("time", "lat", "lon"), values)
        encoding[name] = dict(enc, dtype=dtype, chunks=(4, 7, 5))
    path = tmp_path_factory.mktemp("cf") / "dtypes.zarr"
    xr.Dataset(data).to_zarr(path, mode="w", encoding=encoding)
    return path


@pytest.fixture(scope="module")
def expected(store):
    warnings.simplefilter("ignore")
    # packed variables: the dtype of their attributes (see conftest.redecode_packed)
    with xr.open_zarr(store) as ds, xr.open_zarr(store, mask_and_scale=False) as raw:
        yield redecode_packed(ds.load(), raw.load())


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_dtype_match_xarray(store, expected, name):
    got = lazycube.open_dataset(str(store))[name].values
    want = expected[name].values
    assert got.dtype == want.dtype
    assert np.isnan(want).any() == np.isnan(got).any()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["i2_packed", "u2_packed", "i4_packed", "f4_masked_scaled"])
def test_batches_decode_the_same_values(store, expected, name):
    gen = lazycube.BatchGenerator(str(store), input_dims={"time": 2, "lat": 7, "lon": 9},
                                  batch_size=3, variables=[name])
    batch = gen[0]
    x = batch.arrays[0].numpy()  # (sample, channel, time, lat, lon)
    want = expected[name].values
    assert len(batch.windows) == 3 and x.shape[:2] == (3, 1)
    for k, window in enumerate(batch.windows):
        (t0, nt), (y0, ny), (x0, nx) = window
        np.testing.assert_array_equal(x[k, 0], want[t0:t0 + nt, y0:y0 + ny, x0:x0 + nx].astype(x.dtype))
