"""The Zarr v3 data types of the zarr-extensions registry (issue 34), each in a store written by
hand (zarr.json + raw chunk bytes, `bytes` codec; zarr-python 3 is not installable here):
bfloat16 and float8_* read as float32, fixed-length ASCII/UCS-4 strings as S<n>/U<n>,
numpy.datetime64/timedelta64 with unit and scale_factor (and the older spellings). The
expected values are computed here from each format's definition."""
import json
import warnings

import numpy as np
import pytest
import xarray as xr

from conftest import import_lazycube, run_cli

lazycube = import_lazycube()

# name: (exponent bits, mantissa bits, bias, edges) as the registry's README files define them
FLOAT8 = {
    "float8_e3m4": (3, 4, 3, "ieee"),
    "float8_e4m3": (4, 3, 7, "ieee"),
    "float8_e4m3b11fnuz": (4, 3, 11, "fnuz"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
    "float8_e8m0fnu": (8, 0, 127, "e8m0"),
}


def float8_value(name, p):
    e, m, bias, edges = FLOAT8[name]
    if edges == "e8m0":
        return np.nan if p == 0xFF else 2.0 ** (p - 127)
    if edges == "fnuz" and p == 0x80:
        return np.nan
    sign = -1.0 if p & 0x80 else 1.0
    exponent = (p >> m) & ((1 << e) - 1)
    mantissa = p & ((1 << m) - 1)
    if edges == "ieee" and exponent == (1 << e) - 1:
        return sign * np.inf if mantissa == 0 else np.nan
    if exponent == 0:
        return sign * mantissa / 2.0 ** m * 2.0 ** (1 - bias)
    return sign * (1 + mantissa / 2.0 ** m) * 2.0 ** (exponent - bias)


def write_array(root, name, data_type, raw, n, fill_value=0, attrs=None):
    d = root / name
    (d / "c").mkdir(parents=True)
    meta = {"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [n]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill_value, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": attrs or {}, "dimension_names": [f"i_{name}"]}
    (d / "zarr.json").write_text(json.dumps(meta))
    (d / "c" / "0").write_bytes(raw)


# The finite formats (no infinity, no NaN): stored one per byte, the upper bits ignored.
FINITE = {"float6_e2m3fn": (2, 3, 1), "float6_e3m2fn": (3, 2, 3), "float4_e2m1fn": (2, 1, 1)}


def finite_value(name, p):
    e, m, bias = FINITE[name]
    p &= (1 << (1 + e + m)) - 1
    sign = -1.0 if p >> (e + m) else 1.0
    exponent = (p >> m) & ((1 << e) - 1)
    mantissa = p & ((1 << m) - 1)
    if exponent == 0:
        return sign * mantissa / 2.0 ** m * 2.0 ** (1 - bias)
    return sign * (1 + mantissa / 2.0 ** m) * 2.0 ** (exponent - bias)


BF16_BITS = np.array([0x3F80, 0xC000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8000, 0x4049], dtype="<u2")
TIMES = np.array([0, -1, 17000, np.iinfo(np.int64).min], dtype="<i8")
ASCII = np.array([b"hi", b"xyz"], dtype="S3")
UCS4 = np.array(["\u00e9t", "\u00e9!"], dtype="<U2")

# variable: (data_type, raw chunk bytes, length, fill_value, expected values as numpy)
CASES = {
    **{name: (name, bytes(range(256)), 256, "NaN",
              np.array([float8_value(name, p) for p in range(256)], dtype="f4")) for name in FLOAT8},
    **{name: (name, bytes(range(256)), 256, 1.5,
              np.array([finite_value(name, p) for p in range(256)], dtype="f4")) for name in FINITE},
    "bfloat16": ("bfloat16", BF16_BITS.tobytes(), len(BF16_BITS), "0x7fc0",
                 (BF16_BITS.astype("<u4") << 16).view("<f4")),
    "ascii": ({"name": "fixed-length-ascii", "configuration": {"length_bits": 24}}, ASCII.tobytes(), 2, "", ASCII),
    "ucs4": ({"name": "fixed-length-ucs4", "configuration": {"length_bits": 64}}, UCS4.tobytes(), 2, "", UCS4),
    "dt_10ms": ({"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 10}},
                TIMES.tobytes(), 4, "NaT", TIMES.view("M8[10ms]")),
    "td_h": ({"name": "numpy.timedelta64", "configuration": {"unit": "h", "scale_factor": 1}},
             TIMES.tobytes(), 4, "NaT", TIMES.view("m8[h]")),
    "dt_old": ({"name": "numpy.datetime64", "configuration": {"unit": "s"}}, TIMES.tobytes(), 4, "NaT",
               TIMES.view("M8[s]")),
    "dt_draft": ({"name": "datetime64", "configuration": {"unit": "D"}}, TIMES.tobytes(), 4, "NaT",
                 TIMES.view("M8[D]")),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("v3_dtypes") / "types.zarr"
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    for name, (data_type, raw, n, fill, _) in CASES.items():
        write_array(root, name, data_type, raw, n, fill)
    return root


def assert_same(got, want, name):
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok], err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]), err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("name", list(CASES))
def test_lazycube_reads_each_type(store, name):
    want = CASES[name][4]
    var = lazycube.open_dataset(str(store))[name]
    assert np.dtype(var.dtype) == want.dtype
    assert_same(np.asarray(var.read_raw()), want, name)


@pytest.mark.parametrize("name", list(CASES))
def test_xarray_engine_reads_each_type(store, name):
    want = CASES[name][4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(str(store), engine="lazycube", mask_and_scale=False, decode_times=False,
                             decode_timedelta=False)
        got = ds[name].values
    if want.dtype.kind == "S" or want.dtype.kind == "U":
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=name)
        return
    assert_same(got, want, name)


def test_fill_values_of_narrow_floats_and_ascii(tmp_path):
    root = tmp_path / "fill.zarr"
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    cases = {"e5m2": ("float8_e5m2", -2, -2.0), "bf16": ("bfloat16", 0.1, np.float32(0.10009765625)),
             "e8m0": ("float8_e8m0fnu", "0x7f", 1.0), "fnuz": ("float8_e4m3fnuz", "0x80", np.nan)}
    for name, (data_type, fill, _) in cases.items():
        write_array(root, name, data_type, b"", 3, fill)
        (root / name / "c" / "0").unlink()  # no chunk: every element reads the fill value
    ds = lazycube.open_dataset(str(root))
    for name, (_, _, want) in cases.items():
        got = np.asarray(ds[name].read_raw())
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.full(3, want, dtype="f4"), err_msg=name)


def test_bad_float8_fill_value_names_the_type(tmp_path):
    root = tmp_path / "bad.zarr"
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    write_array(root, "v", "float8_e4m3fnuz", bytes(2), 2, "Infinity")
    with pytest.raises(Exception, match="float8_e4m3fnuz has no infinity"):
        lazycube.open_dataset(str(root))["v"].read_raw()


def test_xarray_engine_with_its_default_decoding(store):
    """xr.open_dataset(path, engine="lazycube") as users call it: the widened floats, strings and
    times arrive with the same values and dtypes (no CF attributes here, so nothing is decoded)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(str(store), engine="lazycube")
        for name in ("float8_e5m2", "float8_e8m0fnu", "bfloat16", "ascii", "ucs4", "dt_10ms", "td_h"):
            want = CASES[name][4]
            got = ds[name].values
            if want.dtype.kind in "SU":
                np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=name)
            else:
                assert_same(got, want, name)  # times keep their unit and scale (M8[10ms])


def test_cli_info_says_what_widened_types_store(store, lazycube_cli):
    text = run_cli(lazycube_cli, "info", store).stdout
    for name in ("bfloat16", "float8_e5m2", "float4_e2m1fn"):
        line = next(line for line in text.splitlines() if line.split()[:1] == [name])
        assert "float32 (stored %s)" % name in line, line
    line = next(line for line in text.splitlines() if line.split()[:1] == ["dt_10ms"])
    assert "stored" not in line
    variables = json.loads(run_cli(lazycube_cli, "info", "--json", store).stdout)["variables"]
    assert variables["float6_e3m2fn"]["dtype"] == "<f4"
    assert variables["float6_e3m2fn"]["stored_dtype"] == "float6_e3m2fn"
    assert variables["bfloat16"]["stored_dtype"] == "bfloat16"
    assert "stored_dtype" not in variables["ucs4"]


def test_finite_formats_refuse_nan_and_out_of_range_fills(tmp_path):
    root = tmp_path / "bad.zarr"
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    write_array(root, "v", "float4_e2m1fn", bytes(2), 2, "NaN")
    with pytest.raises(lazycube.MetadataError, match="float4_e2m1fn has no NaN"):
        lazycube.open_dataset(str(root))
    write_array(tmp_path, "w.zarr", "float6_e2m3fn", bytes(2), 2, 8.0)
    with pytest.raises(lazycube.MetadataError, match="out of range: its largest value is 7.5"):
        lazycube.open_dataset(str(tmp_path / "w.zarr"))
