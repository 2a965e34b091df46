"""Zarr v3 `struct` arrays (issue 34) through lazycube.open_dataset and xarray's engine: stores
written by hand from the zarr-extensions spec (fields packed in declaration order, every field
in the bytes codec's byte order), compared with the NumPy structured array they were written
from; struct_fields=True for one variable per field; batches refuse records naming the variable."""
import json

import numpy as np
import pytest
import xarray as xr

from conftest import import_lazycube, run_cli

lazycube = import_lazycube()

POINT = {"name": "struct", "configuration": {"fields": [
    {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "int16"}]}}
STRUCT = {"name": "struct", "configuration": {"fields": [
    {"name": "id", "data_type": "int32"}, {"name": "flags", "data_type": "uint8"},
    {"name": "value", "data_type": "float64"}, {"name": "c", "data_type": "complex64"},
    {"name": "t", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}},
    {"name": "point", "data_type": POINT}]}}
FILL = {"id": -1, "flags": 255, "value": "NaN", "c": [1.0, 2.0], "t": 0, "point": {"x": 0.5, "y": -2}}


def _dtype(order):
    """The records as NumPy packs them (the spec's layout), fields in `order` ('<' or '>')."""
    point = np.dtype([("x", order + "f4"), ("y", order + "i2")])
    return np.dtype([("id", order + "i4"), ("flags", "u1"), ("value", order + "f8"), ("c", order + "c8"),
                     ("t", order + "M8[s]"), ("point", point)])


def _records(n):
    r = np.zeros(n, dtype=_dtype("<"))
    r["id"] = np.arange(n) * 1000 - 7
    r["flags"] = np.arange(n) + 1
    r["value"] = np.arange(n) + 0.25
    r["c"] = np.arange(n) - 1j * np.arange(n)
    r["t"] = np.datetime64("2020-01-01T00:00:00", "s") + np.arange(n) * 3600
    r["point"]["x"] = np.arange(n) * 1.5
    r["point"]["y"] = -3 * np.arange(n)
    return r


def _fill_record():
    f = np.zeros(1, dtype=_dtype("<"))
    f["id"], f["flags"], f["value"], f["c"] = -1, 255, np.nan, 1 + 2j
    f["t"] = np.datetime64(0, "s")
    f["point"]["x"], f["point"]["y"] = 0.5, -2
    return f[0]


def _write(root, records, chunk, endian, absent=(), codecs=None):
    """A group with `rec` (dims obs) chunked by `chunk`, chunks in `absent` left out."""
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    var = root / "rec"
    var.mkdir()
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [len(records)], "data_type": STRUCT,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": FILL,
        "codecs": codecs or [{"name": "bytes", "configuration": {"endian": endian}}],
        "dimension_names": ["obs"], "attributes": {"long_name": "observations"},
    }
    (var / "zarr.json").write_text(json.dumps(meta))
    stored = records.astype(_dtype(">" if endian == "big" else "<"))
    for k in range(-(-len(records) // chunk)):
        if k in absent:
            continue
        block = np.zeros(chunk, dtype=stored.dtype)
        part = stored[k * chunk:(k + 1) * chunk]
        block[:len(part)] = part
        (var / "c").mkdir(exist_ok=True)
        (var / "c" / str(k)).write_bytes(block.tobytes())


def _expected(records, absent, chunk):
    want = records.copy()
    for k in absent:
        want[k * chunk:(k + 1) * chunk] = _fill_record()
    return want


def _assert_records_equal(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    # NaN fill values: compare the bytes.
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("endian", ["little", "big"])
def test_records_read_as_a_numpy_structured_array(tmp_path, endian):
    records = _records(7)
    _write(tmp_path / "s.zarr", records, 3, endian, absent=(1,))
    ds = lazycube.open_dataset(str(tmp_path / "s.zarr"))
    got = np.asarray(ds["rec"].read())
    assert got.dtype.names == ("id", "flags", "value", "c", "t", "point")
    assert got.dtype.itemsize == 8 + 4 + 1 + 8 + 8 + 6  # packed, no padding
    assert got.dtype.fields["point"][1] == 29
    _assert_records_equal(got, _expected(records, (1,), 3))
    # Fields as NumPy gives them.
    np.testing.assert_array_equal(got["point"]["y"][:3], records["point"]["y"][:3])
    assert np.isnan(got["value"][3])


def test_xarray_engine_shows_one_structured_variable(tmp_path):
    records = _records(5)
    _write(tmp_path / "s.zarr", records, 2, "big", absent=(2,))
    ds = xr.open_dataset(tmp_path / "s.zarr", engine="lazycube")
    assert list(ds.data_vars) == ["rec"]
    assert ds["rec"].dims == ("obs",)
    assert ds["rec"].attrs["long_name"] == "observations"
    _assert_records_equal(ds["rec"].values, _expected(records, (2,), 2))
    # isel on the records
    _assert_records_equal(ds["rec"].isel(obs=slice(1, 3)).values, records[1:3])


def test_sharded_records(tmp_path):
    records = _records(6)
    sharding = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "index_location": "start"}}
    root = tmp_path / "s.zarr"
    _write(root, records, 6, "big", codecs=[sharding], absent=(0,))
    # One shard: the index (3 inner chunks, offset/length little-endian) first, then the chunks.
    stored = records.astype(_dtype(">"))
    index = np.array([[48 + 2 * k * stored.itemsize, 2 * stored.itemsize] for k in range(3)], dtype="<u8")
    (root / "rec" / "c").mkdir()
    (root / "rec" / "c" / "0").write_bytes(index.tobytes() + stored.tobytes())
    got = np.asarray(lazycube.open_dataset(str(root))["rec"].read())
    _assert_records_equal(got, records)


def test_struct_fields_gives_one_variable_per_field(tmp_path):
    records = _records(5)
    _write(tmp_path / "s.zarr", records, 2, "little", absent=(1,))
    want = _expected(records, (1,), 2)
    ds = lazycube.open_dataset(str(tmp_path / "s.zarr"), struct_fields=True)
    names = ["rec.id", "rec.flags", "rec.value", "rec.c", "rec.t", "rec.point.x", "rec.point.y"]
    assert list(ds.data_vars) == names
    for name in names:
        path = name.split(".")[1:]
        expected = want[path[0]] if len(path) == 1 else want[path[0]][path[1]]
        got = np.asarray(ds[name].read())
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)
    xds = xr.open_dataset(tmp_path / "s.zarr", engine="lazycube", struct_fields=True)
    np.testing.assert_array_equal(xds["rec.point.x"].values, want["point"]["x"])
    assert xds["rec.id"].attrs["long_name"] == "observations"
    assert xds["rec.t"].dtype == np.dtype("datetime64[s]") or xds["rec.t"].dtype == np.dtype("datetime64[ns]")


def test_batches_take_fields_not_records(tmp_path):
    records = _records(8)
    _write(tmp_path / "s.zarr", records, 4, "little")
    url = str(tmp_path / "s.zarr")
    with pytest.raises(lazycube.UsageError, match=r"variable 'rec' has dtype struct\{.*struct_fields=True"):
        lazycube.BatchGenerator(lazycube.open_dataset(url), {"obs": 2}, batch_size=2, variables=["rec"])
    gen = lazycube.BatchGenerator(lazycube.open_dataset(url, struct_fields=True), {"obs": 2}, batch_size=2,
                                  variables=["rec.value"])
    first = next(iter(gen))
    np.testing.assert_array_equal(np.asarray(first.numpy()).reshape(-1), records["value"][:4])


def test_torch_batch_dataset_refuses_records(tmp_path):
    pytest.importorskip("torch")
    try:
        import lazycube.torch as lctorch
    except ImportError as exc:  # built without the torch adapter
        pytest.skip(str(exc))
    records = _records(8)
    _write(tmp_path / "s.zarr", records, 4, "little")
    url = str(tmp_path / "s.zarr")
    with pytest.raises(lazycube.UsageError, match="variable 'rec'"):
        lctorch.BatchDataset(url, input_dims={"obs": 2}, batch_size=2, variables=["rec"])
    ds = lctorch.BatchDataset(url, input_dims={"obs": 2}, batch_size=2, variables=["rec.id"], struct_fields=True)
    assert len(ds) > 0


def test_numpy_structured_dtype_strings(tmp_path):
    _write(tmp_path / "s.zarr", _records(2), 2, "little")
    v = lazycube.open_dataset(str(tmp_path / "s.zarr"))["rec"]
    assert v.dtype == _dtype("<")
    assert np.dtype(v.dtype.descr) == _dtype("<")


def test_cli_info_shows_the_record_type(lazycube_cli, tmp_path):
    _write(tmp_path / "s.zarr", _records(2), 2, "big")
    text = run_cli(lazycube_cli, "info", tmp_path / "s.zarr").stdout
    assert "struct{id: int32, flags: uint8, value: float64, c: complex64, t: datetime64[s], " \
           "point: struct{x: float32, y: int16}}" in text
    rec = json.loads(run_cli(lazycube_cli, "info", "--json", tmp_path / "s.zarr").stdout)["variables"]["rec"]
    assert rec["dtype"] == "|V35"
    assert [(f["name"], f["offset"], f["dtype"]) for f in rec["fields"]] == [
        ("id", 0, "<i4"), ("flags", 4, "|u1"), ("value", 5, "<f8"), ("c", 13, "<c8"), ("t", 21, "<M8[s]"),
        ("point", 29, "|V6")]
    assert [(f["name"], f["offset"]) for f in rec["fields"][-1]["fields"]] == [("x", 0), ("y", 4)]
    # The descriptor NumPy rebuilds the records' dtype from.
    descr = np.dtype({"names": [f["name"] for f in rec["fields"][:-1]],
                      "formats": [f["dtype"] for f in rec["fields"][:-1]],
                      "offsets": [f["offset"] for f in rec["fields"][:-1]], "itemsize": 35})
    assert descr["t"] == np.dtype("<M8[s]")

    # --struct-fields: one variable per field, which read takes by name.
    text = run_cli(lazycube_cli, "info", "--struct-fields", tmp_path / "s.zarr").stdout
    assert "rec.point.y" in text and "int16" in text
    out = tmp_path / "y.npy"
    run_cli(lazycube_cli, "read", tmp_path / "s.zarr", "rec.point.y", "--struct-fields", "-o", out)
    np.testing.assert_array_equal(np.load(out), _records(2)["point"]["y"])
    # The whole records: an .npy of the structured dtype.
    run_cli(lazycube_cli, "read", tmp_path / "s.zarr", "rec", "-o", out)
    records = np.load(out)
    assert records.dtype == _dtype("<")
    assert records.tobytes() == _records(2).tobytes()


# ---- Zarr v2 structured dtypes, written by zarr-python 2 ---------------------------------------

@pytest.mark.parametrize("order", ["<", ">"])
def test_v2_structured_array_matches_xarrays_zarr_engine(tmp_path, order):
    zarr = pytest.importorskip("zarr")
    dt = np.dtype([("a", order + "i4"), ("b", order + "f8"), ("p", [("x", order + "f4"), ("y", "u1")])])
    values = np.array([(1, 2.0, (3.0, 4)), (5, 6.0, (7.0, 8)), (-9, 0.5, (1.5, 255))], dtype=dt)
    path = str(tmp_path / "v2.zarr")
    root = zarr.open_group(path, mode="w")
    # zarr 2.13 with NumPy 1.24 cannot normalise a structured fill value: null (zeros).
    z = root.create_dataset("rec", shape=(5,), chunks=(2,), dtype=dt, fill_value=None)
    z[:3] = values
    z.attrs["_ARRAY_DIMENSIONS"] = ["obs"]
    zarr.consolidate_metadata(path)
    got = xr.open_dataset(path, engine="lazycube")["rec"].values
    assert got.dtype.names == ("a", "b", "p")
    assert got.dtype == dt.newbyteorder("=")
    # zarr-python 2 itself; records 3 and 4 (null fill: zarr-python leaves them uninitialised)
    # read as zeros.
    np.testing.assert_array_equal(got[:3], zarr.open_array(path + "/rec", mode="r")[:3])
    assert got[3:].tobytes() == bytes(2 * dt.itemsize)
    if order == "<":
        # xarray's zarr engine (xarray 2023.01 cannot cast big-endian records to native ones).
        np.testing.assert_array_equal(got[:3], xr.open_dataset(path, engine="zarr")["rec"].values[:3])
    native = lazycube.open_dataset(path, struct_fields=True)
    np.testing.assert_array_equal(np.asarray(native["rec.p.x"].read())[:3], values["p"]["x"])


def test_v2_structured_fields_in_two_byte_orders_are_refused(tmp_path):
    root = tmp_path / "mixed.zarr"
    root.mkdir()
    (root / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2], "chunks": [2], "dtype": [["a", "<i4"], ["b", ">f8"]],
        "compressor": None, "filters": None, "fill_value": None, "order": "C"}))
    with pytest.raises(lazycube.MetadataError, match="field 'b' has another byte order"):
        lazycube.open_dataset(str(root))
