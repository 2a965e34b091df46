"""engine="lazycube" gives what xarray's own zarr engine gives (issue 31): for every CF feature
xarray round-trips through ``to_zarr`` -- ``_Unsigned``, CF ``coordinates`` / ``decode_coords="all"``,
bytes fill values, character arrays with ``_Encoding``, times outside datetime64[ns] with
``use_cftime``, and the encodings (chunks, compressor, filters, dtype, ``_FillValue`` ...) --
``xr.testing.assert_identical`` plus the encodings compared key for key; the batch path gives the
engine's values; and a seeded randomized round trip over dtypes x CF attributes x fill values."""
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from conftest import import_lazycube, redecode_packed  # noqa: E402

lazycube = import_lazycube()

# The encoding keys xarray's zarr engine sets that lazycube must set alike.
ENCODING_KEYS = ("chunks", "preferred_chunks", "compressor", "filters", "dtype", "_FillValue",
                 "missing_value", "units", "calendar", "scale_factor", "add_offset", "_Unsigned",
                 "coordinates", "bounds", "grid_mapping", "formula_terms", "_Encoding", "char_dim_name")


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return type(a) is type(b)
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return type(a) is type(b) and (a == b or (np.isnan(a) and np.isnan(b)))
    return a == b


def assert_same_encoding(theirs, mine):
    for name, var in theirs.variables.items():
        for key in ENCODING_KEYS:
            if key not in var.encoding:
                assert key not in mine[name].encoding, (name, key, mine[name].encoding)
                continue
            assert key in mine[name].encoding, (name, key, mine[name].encoding)
            a, b = var.encoding[key], mine[name].encoding[key]
            assert _same(a, b), (name, key, a, b)


def _raw_unsigned_applied(path):
    """The store opened undecoded, with xarray's UnsignedIntegerCoder applied (the storage of
    `_Unsigned` variables viewed as the other integer type, the fill value too), so that
    conftest.redecode_packed unpacks them by xarray >= 2024.02's dtype rule."""
    raw = xr.open_dataset(path, engine="zarr", mask_and_scale=False)
    for name, var in list(raw.variables.items()):
        flag = var.attrs.get("_Unsigned")
        if flag not in ("true", "false") or var.dtype.kind not in "iu":
            continue
        other = np.dtype("%s%d" % ("u" if flag == "true" else "i", var.dtype.itemsize))
        attrs = dict(var.attrs)
        if "_FillValue" in attrs:
            attrs["_FillValue"] = np.array(attrs["_FillValue"]).astype(var.dtype).view(other)[()]
        raw[name] = xr.Variable(var.dims, np.asarray(var.values).view(other), attrs)
    return raw


def open_both(path, redecode=False, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = xr.open_dataset(path, engine="zarr", **kwargs)
        if redecode:
            theirs = redecode_packed(theirs, _raw_unsigned_applied(path))
    mine = xr.open_dataset(path, engine="lazycube", **kwargs)
    return theirs, mine


def check_identical(path, redecode=False, **kwargs):
    theirs, mine = open_both(path, redecode=redecode, **kwargs)
    xr.testing.assert_identical(theirs.load(), mine.load())
    for name in theirs.variables:
        assert theirs[name].dtype == mine[name].dtype, name
    assert_same_encoding(theirs, mine)
    return theirs, mine


# ---- _Unsigned ------------------------------------------------------------------------------

@pytest.fixture
def unsigned_store(tmp_path):
    """The issue's example: unsigned bytes stored as int8 with _Unsigned, scaled, with a fill."""
    raw = np.array([100, 101, 227, 228, 255], "u1").astype("i1")
    ds = xr.Dataset({"v": ("x", raw), "plain": ("x", raw)})
    ds.v.attrs.update(_Unsigned="true", scale_factor=np.float32(0.1), _FillValue=np.int8(-1))
    ds.plain.attrs.update(_Unsigned="true")
    path = str(tmp_path / "u.zarr")
    ds.to_zarr(path)
    return path


def test_unsigned_decodes_as_xarray(unsigned_store):
    theirs, mine = check_identical(unsigned_store)
    np.testing.assert_allclose(mine.v.values[:4], [10.0, 10.1, 22.7, 22.8], rtol=1e-6)
    assert np.isnan(mine.v.values[4])
    assert mine.plain.dtype == np.uint8 and list(mine.plain.values) == [100, 101, 227, 228, 255]
    assert "_Unsigned" not in mine.v.attrs and mine.v.encoding["_Unsigned"] == "true"
    assert mine.v.encoding["_FillValue"] == np.uint8(255)


def test_unsigned_native_api_and_batches(unsigned_store):
    theirs, _ = open_both(unsigned_store)
    native = lazycube.open_dataset(unsigned_store)
    np.testing.assert_array_equal(native["v"].values, theirs.v.values)
    np.testing.assert_array_equal(native["plain"].values, theirs.plain.values)
    gen = lazycube.BatchGenerator(lazycube.open_dataset(unsigned_store), input_dims={"x": 5})
    batch = next(iter(gen))
    np.testing.assert_array_equal(np.asarray(batch["v"]).ravel(), theirs.v.values)


def test_unsigned_false_on_unsigned_storage(tmp_path):
    ds = xr.Dataset({"v": ("x", np.array([0, 1, 254, 255], "u1"))})
    ds.v.attrs["_Unsigned"] = "false"
    path = str(tmp_path / "s.zarr")
    ds.to_zarr(path)
    _, mine = check_identical(path)
    assert list(mine.v.values) == [0, 1, -2, -1]


# ---- coordinates ----------------------------------------------------------------------------

def test_cf_coordinates_per_variable_and_global(tmp_path):
    ds = xr.Dataset({"a": (("x",), np.arange(3.0)), "b": ((), 1.0)},
                    coords={"lat": ("x", np.arange(3.0) + 10), "scalar": 5, "x": [1, 2, 3]})
    path = str(tmp_path / "c.zarr")
    ds.to_zarr(path)
    theirs, mine = check_identical(path)
    assert set(mine.coords) == {"lat", "scalar", "x"}
    # A lazycube.open_dataset sees the same coordinates, and the batch path ignores them alike.
    native = lazycube.open_dataset(path)
    assert set(native.coords) == {"lat", "scalar", "x"}


def test_coordinates_naming_a_missing_variable_stay_an_attribute(tmp_path):
    ds = xr.Dataset({"a": (("x",), np.arange(3.0), {"coordinates": "nope"})})
    path = str(tmp_path / "m.zarr")
    ds.to_zarr(path)
    # xarray refuses to write a `coordinates` attribute itself: write it into .zattrs directly.
    import zarr

    zarr.open(path)["a"].attrs["coordinates"] = "nope"
    theirs, mine = check_identical(path)
    assert mine.a.attrs["coordinates"] == "nope"


@pytest.mark.parametrize("decode_coords", [True, "all", False])
def test_decode_coords_all_bounds_grid_mapping_formula_terms(tmp_path, decode_coords):
    ds = xr.Dataset({"a": (("lev", "x"), np.ones((2, 3))), "x_bnds": (("x", "nv"), np.zeros((3, 2))),
                     "crs": ((), 0), "ps": (("x",), np.ones(3)), "ap": (("lev",), np.ones(2))},
                    coords={"x": [1.0, 2, 3], "lev": [0.5, 1.0]})
    ds.x.attrs["bounds"] = "x_bnds"
    ds.a.attrs["grid_mapping"] = "crs"
    ds.lev.attrs["formula_terms"] = "ap: ap ps: ps"
    path = str(tmp_path / "b.zarr")
    ds.to_zarr(path)
    theirs, mine = check_identical(path, decode_coords=decode_coords)
    if decode_coords == "all":
        assert {"x_bnds", "crs", "ps", "ap"} <= set(mine.coords)
        assert "grid_mapping" not in mine.a.attrs and mine.a.encoding["grid_mapping"] == "crs"
    else:
        assert "crs" in mine.data_vars and mine.a.attrs["grid_mapping"] == "crs"


# ---- strings --------------------------------------------------------------------------------

def test_bytes_fill_value_masks(tmp_path):
    ds = xr.Dataset({"s": ("x", np.array([b"ab", b"zz", b"cd"]))})
    ds.s.encoding["_FillValue"] = b"zz"
    path = str(tmp_path / "s.zarr")
    ds.to_zarr(path)
    theirs, mine = check_identical(path)
    assert mine.s.dtype == object and mine.s.values[0] == b"ab" and np.isnan(mine.s.values[1])
    # The native API reads the same objects.
    native = lazycube.open_dataset(path)["s"].values
    assert native.dtype == object and native[2] == b"cd" and np.isnan(native[1])


def test_character_arrays_with_encoding_become_text(tmp_path):
    chars = np.array([[b"a", b"b", b""], [b"\xc3", b"\xa9", b"e"]], "S1")
    ds = xr.Dataset({"c": (("x", "n"), chars, {"_Encoding": "utf-8"}),
                     "raw": (("x", "m"), chars)})
    path = str(tmp_path / "ch.zarr")
    ds.to_zarr(path)
    theirs, mine = check_identical(path)
    assert list(mine.c.values) == ["ab", "\u00e9e"] and mine.c.dims == ("x",)
    assert mine.raw.dtype == np.dtype("S3") and list(mine.raw.values) == [b"ab", b"\xc3\xa9e"]
    # Without concat_characters the characters stay as stored.
    check_identical(path, concat_characters=False)


def test_invalid_utf8_is_a_codec_error_naming_the_variable(tmp_path):
    ds = xr.Dataset({"c": (("x", "n"), np.array([[b"\xff", b"a"]], "S1"), {"_Encoding": "utf-8"})})
    path = str(tmp_path / "bad.zarr")
    ds.to_zarr(path)
    with pytest.raises(lazycube.CodecError, match="'c'.*UTF-8"):
        lazycube.open_dataset(path)["c"].values


# ---- times outside datetime64[ns] -------------------------------------------------------------

@pytest.fixture
def year_one_store(tmp_path):
    t = xr.Variable("t", np.array([0, 365, 730], "i8"),
                    {"units": "days since 0001-01-01", "calendar": "standard"})
    path = str(tmp_path / "t.zarr")
    xr.Dataset({"time": t, "v": ("t", np.arange(3.0))}).to_zarr(path)
    return path


@pytest.mark.parametrize("use_cftime", [None, True])
def test_times_outside_ns_give_cftime_as_xarray(year_one_store, use_cftime):
    theirs, mine = check_identical(year_one_store, use_cftime=use_cftime)
    assert mine.time.dtype == object and mine.time.values[1].year == 2


def test_use_cftime_false_fails_as_xarray(year_one_store):
    with pytest.raises(Exception) as theirs:
        xr.open_dataset(year_one_store, engine="zarr", use_cftime=False).time.values
    with pytest.raises(type(theirs.value)):
        xr.open_dataset(year_one_store, engine="lazycube", use_cftime=False).time.values


def test_use_cftime_true_on_ordinary_times(tmp_path):
    ds = xr.Dataset({"v": ("time", np.arange(3.0))},
                    coords={"time": np.array(["2000-01-01", "2000-01-02", "2000-01-03"], "M8[ns]")})
    path = str(tmp_path / "o.zarr")
    ds.to_zarr(path)
    _, mine = check_identical(path, use_cftime=True)
    assert mine.time.dtype == object


def test_native_api_decodes_out_of_range_times_to_seconds(year_one_store):
    time = lazycube.open_dataset(year_one_store)["time"]
    assert time.dtype == np.dtype("M8[s]")
    np.testing.assert_array_equal(time.values, np.array(["0001-01-01", "0002-01-01", "0003-01-01"], "M8[s]"))
    raw = lazycube.open_dataset(year_one_store, decode_cf=False)["time"].values
    assert list(raw) == [0, 365, 730]


# ---- encodings ------------------------------------------------------------------------------

@pytest.mark.parametrize("compressor,filters", [
    (numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE), None),
    (numcodecs.Zstd(3), [numcodecs.Delta("<f8")]),
    (None, None),
])
def test_encoding_round_trips_through_to_zarr(tmp_path, compressor, filters):
    ds = xr.Dataset({"f": (("t", "x"), np.arange(12.0).reshape(3, 4)),
                     "i": (("t", "x"), np.arange(12, dtype="i2").reshape(3, 4))},
                    coords={"t": np.array(["2000-01-01", "2000-01-02", "2000-01-03"], "M8[ns]")})
    # A float32 scale that is not also a short float64 (JSON keeps no float type: cf.cpp).
    ds.i.encoding.update(_FillValue=-9, scale_factor=np.float32(0.1), dtype="i2")
    for name in ("f", "i"):
        var_filters = None if filters is None or name == "i" else [numcodecs.Delta(ds[name].dtype.str)]
        ds[name].encoding.update(compressor=compressor, filters=var_filters, chunks=(2, 4))
    path = str(tmp_path / "e.zarr")
    ds.to_zarr(path)
    _, mine = check_identical(path)
    assert mine.f.encoding["_FillValue"] != mine.f.encoding["_FillValue"]  # NaN, as zarr gives it
    assert mine.i.encoding["_FillValue"] == -9 and isinstance(mine.i.encoding["_FillValue"], np.int16)
    # Written back by xarray and reopened: identical, encodings too.
    again = str(tmp_path / "again.zarr")
    mine.to_zarr(again)
    theirs2, mine2 = check_identical(again)
    xr.testing.assert_identical(theirs2, xr.open_dataset(path, engine="zarr"))


@pytest.mark.parametrize("store", ["unsigned", "coords", "strings"])
def test_undecoded_open_matches_zarr_engine(tmp_path, unsigned_store, store):
    """decode_cf=False: the attributes as stored, the v2 fill value as _FillValue, the same
    encodings (xarray's zarr engine shows them whether or not it decodes)."""
    if store == "unsigned":
        path = unsigned_store
    else:
        ds = (xr.Dataset({"a": (("x",), np.arange(3.0))}, coords={"lat": ("x", np.arange(3.0))})
              if store == "coords" else xr.Dataset({"s": ("x", np.array([b"ab", b"zz"]))}))
        if store == "strings":
            ds.s.encoding["_FillValue"] = b"zz"
        path = str(tmp_path / "raw.zarr")
        ds.to_zarr(path)
    check_identical(path, decode_cf=False)


# ---- randomized round trip ----------------------------------------------------------------------

def _random_case(rng):
    dtype = np.dtype(rng.choice(["i1", "i2", "i4", "u1", "u2", "f4", "f8"]))
    n = int(rng.integers(1, 40))
    if dtype.kind == "f":
        values = rng.normal(0, 100, n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)
    attrs, encoding = {}, {}
    unsigned = dtype.kind in "iu" and dtype.itemsize <= 2 and rng.random() < 0.4
    if unsigned:
        attrs["_Unsigned"] = "true" if dtype.kind == "i" else "false"
    if rng.random() < 0.5:
        encoding["_FillValue"] = values[int(rng.integers(0, n))]
    if rng.random() < 0.3:
        attrs["missing_value"] = values[int(rng.integers(0, n))]
    scaled = rng.random() < 0.5 and dtype.kind in "iu" and not (unsigned and dtype.itemsize > 2)
    if scaled:
        # float32 values that are not also short float64s (JSON keeps no float type: cf.cpp).
        attrs["scale_factor"] = np.float32(rng.choice([0.1, 0.3, 0.01, 1.7]))
        if rng.random() < 0.5:
            attrs["add_offset"] = np.float32(rng.choice([0.7, 10.3, -273.15]))
    if rng.random() < 0.2 and dtype.kind in "iu" and not scaled:
        attrs["units"] = str(rng.choice(["hours since 1979-01-01", "days since 2000-01-01 06:00",
                                         "seconds since 1970-01-01", "hours"]))
    return values, attrs, encoding, unsigned


@pytest.mark.parametrize("seed", range(24))
def test_randomized_cf_round_trip_matches_zarr_engine(tmp_path, seed):
    rng = np.random.default_rng(1000 + seed)
    ds = xr.Dataset()
    for k in range(3):
        values, attrs, encoding, _ = _random_case(rng)
        var = xr.Variable(("x%d" % k,), values, attrs)
        var.encoding.update(encoding)
        ds["v%d" % k] = var
    path = str(tmp_path / "r.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path)
    # The engine follows the running xarray's dtype rule for packed variables, value for value;
    # lazycube's own API follows xarray >= 2024.02's (conftest.redecode_packed, from the undecoded
    # store with _Unsigned applied as xarray applies it).
    theirs, mine = check_identical(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_native = redecode_packed(theirs, _raw_unsigned_applied(path))
    native = lazycube.open_dataset(path)
    for name in theirs.data_vars:
        assert native[name].dtype == want_native[name].dtype, name
        np.testing.assert_array_equal(native[name].values, want_native[name].values)


# ---- NetCDF through GDAL, and the torch dataset ----------------------------------------------

def test_netcdf_unsigned_and_coordinates_match_netcdf4_engine(tmp_path):
    pytest.importorskip("netCDF4")
    raw = np.array([1, 200, 255, 7], "u1").astype("i1")
    ds = xr.Dataset({"v": ("x", raw, {"_Unsigned": "true", "scale_factor": np.float32(0.1)})},
                    coords={"lat": ("x", np.arange(4.0))})
    ds.v.encoding["_FillValue"] = np.int8(-1)
    path = str(tmp_path / "u.nc")
    ds.to_netcdf(path, format="NETCDF4")
    theirs = xr.open_dataset(path, engine="netcdf4")
    mine = xr.open_dataset(path, engine="lazycube")
    xr.testing.assert_identical(theirs.load(), mine.load())
    assert mine.v.encoding["_Unsigned"] == "true" and "lat" in mine.coords


def _netcdf_pair(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = xr.open_dataset(path, engine="netcdf4", **kwargs).load()
    mine = xr.open_dataset(path, engine="lazycube", **kwargs).load()
    return theirs, mine


@pytest.mark.parametrize("decode_coords", [True, "all"])
def test_netcdf_bounds_and_zero_dim_grid_mapping_match_netcdf4_engine(tmp_path, decode_coords):
    pytest.importorskip("netCDF4")
    ds = xr.Dataset({"a": (("x",), np.arange(3.0)), "x_bnds": (("x", "nv"), np.zeros((3, 2))), "crs": ((), 0)},
                    coords={"x": [1.0, 2, 3]})
    ds.x.attrs["bounds"] = "x_bnds"
    ds.a.attrs["grid_mapping"] = "crs"
    path = str(tmp_path / "b.nc")
    ds.to_netcdf(path)
    theirs, mine = _netcdf_pair(path, decode_coords=decode_coords)
    xr.testing.assert_identical(theirs, mine)
    assert ("crs" in mine.coords) == (decode_coords == "all")


@pytest.mark.parametrize("use_cftime", [None, True])
def test_netcdf_times_outside_ns_match_netcdf4_engine(tmp_path, use_cftime):
    pytest.importorskip("netCDF4")
    t = xr.Variable("t", np.array([0, 365, 730], "i8"), {"units": "days since 0001-01-01", "calendar": "standard"})
    path = str(tmp_path / "t.nc")
    xr.Dataset({"time": t, "v": ("t", np.arange(3.0))}).to_netcdf(path)
    theirs, mine = _netcdf_pair(path, use_cftime=use_cftime)
    xr.testing.assert_identical(theirs, mine)
    assert mine.time.dtype == object


def test_netcdf_character_array_with_encoding_matches_netcdf4_engine(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    path = str(tmp_path / "c.nc")
    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("x", 2)
        f.createDimension("n", 3)
        v = f.createVariable("c", "S1", ("x", "n"))
        v._Encoding = "utf-8"
        v.set_auto_chartostring(False)
        v[:] = np.array([[b"a", b"b", b""], [b"\xc3", b"\xa9", b"e"]], "S1")
    theirs, mine = _netcdf_pair(path)
    xr.testing.assert_identical(theirs, mine)
    assert list(mine.c.values) == ["ab", "\u00e9e"] and "_Encoding" not in mine.c.attrs


def test_batch_dataset_gives_the_engines_unsigned_values(unsigned_store):
    torch = pytest.importorskip("torch")
    import lazycube.torch as lt

    theirs, _ = open_both(unsigned_store)
    data = lt.BatchDataset(unsigned_store, input_dims={"x": 5}, variables=["v", "plain"], batch_size=1,
                           dtype="float64")
    x = next(iter(torch.utils.data.DataLoader(data, batch_size=None)))
    x = x[0] if isinstance(x, (tuple, list)) else x
    got = x.numpy().reshape(-1, 5) if x.ndim else x.numpy()
    expected = np.stack([theirs.v.values, theirs.plain.values.astype("f8")])
    rows = got.reshape(-1)
    np.testing.assert_array_equal(np.sort(rows[~np.isnan(rows)]), np.sort(expected[~np.isnan(expected)]))


# ---- packed variables: the running xarray's dtype rule (issue 48, item 8) --------------------

PACKED_CASES = [
    # stored dtype, attributes (float32 attributes as numpy float32 scalars), _FillValue
    ("i2", {"scale_factor": 0.01, "add_offset": 273.15}, None),
    ("i2", {"scale_factor": 0.01, "add_offset": 273.15}, -32767),
    ("i2", {"scale_factor": 0.01}, None),
    ("i2", {"scale_factor": np.float32(0.01), "add_offset": np.float32(5.0)}, None),
    ("i4", {"scale_factor": np.float32(0.5)}, None),
    ("i4", {"scale_factor": 0.5, "add_offset": 1.0}, -1),
    ("u1", {"scale_factor": 0.2}, 255),
    ("f4", {"scale_factor": 2.0, "add_offset": 1.0}, None),
    ("f8", {"scale_factor": np.float32(2.0)}, None),
]


@pytest.mark.parametrize("case", range(len(PACKED_CASES)))
def test_packed_dtype_follows_the_running_xarray(tmp_path, case):
    """xarray changed how it picks the unpacked type in 2024.02 (from the stored dtype alone to
    the attributes' type); engine="lazycube" gives what the running xarray's zarr engine gives,
    dtype and values (2023.01 here: int16 with add_offset -> float64, int32 with a float32 scale
    -> float64, masked int16 -> float32 ...), while lazycube.open_dataset keeps its one rule
    (the attributes', conftest.redecode_packed)."""
    stored, attrs, fill = PACKED_CASES[case]
    values = (np.arange(24) % 11).astype(stored)
    attrs = dict(attrs)
    if fill is not None:
        values[::5] = fill
        attrs["_FillValue"] = np.array(fill, dtype=stored)[()]
    path = str(tmp_path / "p.zarr")
    xr.Dataset({"v": xr.Variable(("x",), values, attrs)}).to_zarr(path, consolidated=False)
    theirs, mine = check_identical(path, consolidated=False)
    assert mine["v"].dtype == theirs["v"].dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_native = redecode_packed(theirs, xr.open_dataset(path, engine="zarr", mask_and_scale=False))
    native = lazycube.open_dataset(path)
    assert native["v"].dtype == want_native["v"].dtype
    np.testing.assert_array_equal(native["v"].values, want_native["v"].values)
