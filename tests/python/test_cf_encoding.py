"""CF encoding (src/dataset/cf_encode.cpp, via _core.cf_encode) against xarray's own
xarray.conventions.encode_cf_variable: the same stored values (dtype and bits, NaN where xarray
has NaN) and the same attributes, for floats with NaN, packed integers, datetimes with and
without units/calendar, NaT, timedeltas, booleans and strings; and an error where xarray raises
one. Where lazycube is stricter (a value that does not fit the packed dtype) it must raise."""

import math
import re
import warnings

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")
from lazycube import _core  # noqa: E402
from xarray.conventions import encode_cf_variable  # noqa: E402

from test_cf_decode_dtypes import CASES as DECODE_CASES  # noqa: E402

# The packed and masked stored types the decoding is tested with (name -> (stored dtype,
# encoding)), and a float32 scale attribute.
PACKED = dict(DECODE_CASES)
PACKED["i2_scale_f32_attr"] = ("i2", {"scale_factor": np.float32(0.1), "_FillValue": np.int16(-1)})


def packed_values(stored, enc, decoded_dtype, seed):
    """Decoded values whose packed form fits `stored` (NaN at every 5th place when there is a
    fill value)."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(stored) if np.dtype(stored).kind in "iu" else None
    lo, hi = (max(info.min + 1, -30000), min(info.max - 1, 30000)) if info else (-1e4, 1e4)
    raw = rng.integers(lo, hi, size=40).astype("f8")
    x = raw * enc.get("scale_factor", 1.0) + enc.get("add_offset", 0.0)
    if "_FillValue" in enc or "missing_value" in enc:
        x[::5] = np.nan
    return x.astype(decoded_dtype)


def dt(*texts):
    return np.array(texts, dtype="M8[ns]")


HOUR = np.timedelta64(1, "h")

# name -> (values, attrs, encoding)
CASES = {
    "f4_nan": (np.array([1.5, np.nan, -3.25], "f4"), {"long_name": "t"}, {}),
    "f8_nan": (np.array([1.5, np.nan, 1e300], "f8"), {}, {}),
    "f2_nan": (np.array([1.5, np.nan], "f2"), {}, {}),
    "f8_fill": (np.array([2.0, np.nan]), {}, {"_FillValue": -9999.0}),
    "f8_no_fill": (np.array([2.0, np.nan]), {}, {"_FillValue": None}),
    "f8_missing_value": (np.array([2.0, np.nan]), {}, {"missing_value": -9.0}),
    "f8_to_f4": (np.array([0.1, np.nan, 3e38]), {}, {"dtype": "f4"}),
    "f8_to_i4_rounding": (np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1e6 + 0.4999]), {}, {"dtype": "i4"}),
    "i4_plain": (np.array([1, -2, 2**31 - 1], "i4"), {"units": "m"}, {}),
    "i8_to_f4": (np.array([1, 2**40 + 1], "i8"), {}, {"dtype": "f4"}),
    "i2_scaled_no_dtype": (np.array([3, 7, -20], "i2"), {}, {"scale_factor": 0.1}),
    "bool": (np.array([True, False, True]), {}, {}),
    "bool_as_u1": (np.array([True, False]), {}, {"dtype": "u1"}),
    "str": (np.array(["a", "bc"]), {"long_name": "station"}, {}),
    "str_object_missing": (np.array(["a", None, "ccc"], dtype=object), {}, {}),
    "bytes_object_missing": (np.array([b"a", None], dtype=object), {}, {}),
    "time_hourly": (dt("2000-01-01T06:00", "2000-01-01T12:00", "2000-01-02"), {}, {}),
    "time_single": (dt("2000-01-01T00:00:00.5"), {}, {}),
    "time_ms": (dt("2000-01-01T00:00:00.5", "2000-01-02T06:00"), {}, {}),
    "time_ns": (dt("2000-01-01T00:00:00.000000001", "2000-01-01T00:00:00.000000004"), {}, {}),
    "time_nat": (dt("NaT", "2000-01-01", "2000-01-03"), {}, {}),
    "time_all_nat": (dt("NaT", "NaT"), {}, {}),
    "time_units": (dt("2000-01-01", "2000-01-02T06:00"), {}, {"units": "days since 1999-12-31 12:00"}),
    "time_units_midnight": (dt("1950-01-01", "2000-01-01"), {}, {"units": "hours since 1900-01-01 00:00:00"}),
    "time_units_zone": (dt("2000-01-01", "2000-01-02T06:00"), {},
                        {"units": "Hours since 2000-01-01T00:00:00+05:00", "calendar": "standard"}),
    "time_calendar_gregorian": (dt("2000-01-01", "2000-03-01"), {}, {"calendar": "gregorian"}),
    "time_int32_fill": (dt("2000-01-03", "NaT"), {},
                        {"units": "days since 2000-01-01", "dtype": "i4", "_FillValue": -1}),
    "time_f4": (dt("2000-01-01", "2000-01-01T12:00"), {}, {"units": "days since 2000-01-01", "dtype": "f4"}),
    "time_2d": (dt("2000-01-01", "2000-01-02", "NaT", "2000-01-05").reshape(2, 2), {}, {}),
    "time_before_1970": (dt("1900-01-01T00:00", "1850-06-01T00:00"), {}, {}),
    # Other calendars: xarray counts datetime64 values with cftime.date2num.
    "time_noleap": (dt("2000-01-01", "2000-03-01T06:00", "2001-01-01"), {}, {"calendar": "noleap"}),
    "time_365_day_nat": (dt("2001-01-01", "NaT", "2001-12-31"), {}, {"calendar": "365_day"}),
    "time_all_leap": (dt("1999-03-01", "2000-03-01T06:00"), {}, {"calendar": "all_leap"}),
    "time_366_day_units": (dt("2001-03-01"), {}, {"calendar": "366_day", "units": "days since 2001-01-01"}),
    "time_360_day": (dt("2000-01-30", "2000-03-01T06:00", "2000-02-29"), {}, {"calendar": "360_day"}),
    "time_julian": (dt("2000-01-01", "1900-03-01T12:00"), {}, {"calendar": "julian", "units": "days since 1900-01-01"}),
    "time_noleap_microseconds": (dt("2000-01-01T00:00:00.0000015", "NaT"), {},
                                 {"calendar": "noleap", "units": "seconds since 2000-01-01"}),
    "timedelta_hours": (np.array([1, 2, -3], "m8[h]").astype("m8[ns]"), {}, {}),
    "timedelta_nat": (np.array([1, 2, "NaT"], "m8[h]").astype("m8[ns]"), {}, {}),
    "timedelta_days": (np.array([6, 36], "m8[h]").astype("m8[ns]"), {}, {"units": "days"}),
    "timedelta_singular": (np.array([90], "m8[m]").astype("m8[ns]"), {}, {"units": "hour"}),
    "timedelta_ns": (np.array([1, 1000], "m8[ns]"), {}, {}),
}
for _name, (_stored, _enc) in PACKED.items():
    for _decoded in ("f4", "f8"):
        CASES["packed_%s_from_%s" % (_name, _decoded)] = (
            packed_values(_stored, _enc, _decoded, len(CASES)), {}, dict(_enc, dtype=_stored))


# Where lazycube differs on purpose: name -> why. The values are compared everywhere else.
FILL_DEVIATIONS = {
    # float32 data, float64 stored type: xarray's fillna keeps the float32 working array and
    # writes float32(1e20) = 1.0000000200408773e20 where the attribute says 1e20, so its own
    # decoding does not mask those points; lazycube writes the fill value itself.
    "packed_f8_offset_from_f4": "xarray stores float32(_FillValue)",
}


def plain(value):
    """An attribute value as plain Python: numpy scalars unwrapped, "NaN" spelled as a float."""
    if isinstance(value, np.generic):
        value = value.item()
    if value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("inity", ""))
    return value


def same_attr(a, b):
    a, b = plain(a), plain(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("name", sorted(CASES))
def test_encoding_matches_xarray(name):
    values, attrs, encoding = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = encode_cf_variable(xr.Variable(tuple("xy"[:values.ndim]), values, attrs, encoding), name=name)
    stored, written = _core.cf_encode(values, attrs, encoding, name)
    assert stored.dtype == expected.dtype, name
    assert stored.shape == expected.shape
    exp = np.asarray(expected.values)
    if name in FILL_DEVIATIONS:
        holes = np.isnan(values)
        assert (stored[holes] == plain(written["_FillValue"])).all()
        assert not (exp[holes] == plain(expected.attrs["_FillValue"])).any(), "xarray was fixed: drop the deviation"
        stored, exp = stored[~holes], exp[~holes]
    if exp.dtype.kind == "f":
        assert np.array_equal(stored, exp, equal_nan=True), (stored, exp)
        assert np.array_equal(np.signbit(stored), np.signbit(exp))
    else:
        assert np.array_equal(stored, exp), (stored, exp)
    assert set(written) == set(expected.attrs), (written, expected.attrs)
    for key, value in expected.attrs.items():
        assert same_attr(written[key], value), (key, written[key], value)


def test_round_trip_through_the_decoding():
    """What cf_encode writes, xarray's decode_cf_variable reads back as the values encoded."""
    for name in ("time_nat", "time_units", "timedelta_nat", "f4_nan", "packed_i2_packed_from_f8"):
        values, attrs, encoding = CASES[name]
        stored, written = _core.cf_encode(values, attrs, encoding, name)
        written = {k: plain(v) for k, v in written.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy casting NaN while decoding NaT
            decoded = xr.conventions.decode_cf_variable(name, xr.Variable(("x",), stored, written)).values
        if "scale_factor" in encoding:
            np.testing.assert_allclose(decoded, values, atol=encoding["scale_factor"] / 2, equal_nan=True)
        else:
            np.testing.assert_array_equal(decoded, values)


# Encodings xarray rejects too: both raise ValueError (lazycube.UsageError is one).
REJECTED = {
    "conflicting_fill": (np.array([1.0, np.nan]), {}, {"_FillValue": -1.0, "missing_value": -2.0}),
    "unknown_calendar": (dt("2000-01-01"), {}, {"calendar": "martian"}),
    "attr_twice": (dt("2000-01-01"), {"units": "s"}, {}),
    "noleap_leap_day": (dt("2000-01-01", "2000-02-29"), {}, {"calendar": "noleap"}),
    "day_31_in_360_day": (dt("2000-01-31"), {}, {"calendar": "360_day", "units": "days since 1999-12-30"}),
    "bad_time_unit": (np.array([1], "m8[h]").astype("m8[ns]"), {}, {"units": "fortnights"}),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_like_xarray(name):
    values, attrs, encoding = REJECTED[name]
    with pytest.raises((ValueError, KeyError)):
        encode_cf_variable(xr.Variable(("x",), values, attrs, encoding), name=name)
    with pytest.raises(lazycube.UsageError, match=name):
        _core.cf_encode(values, attrs, encoding, name)


def test_stricter_than_xarray_on_values_that_do_not_fit():
    """numpy's astype gives garbage for NaN or out-of-range values; lazycube names the variable."""
    with pytest.raises(lazycube.UsageError, match="'precip'.*int16"):
        _core.cf_encode(np.array([1.0, 40000.0]), {}, {"dtype": "i2"}, "precip")
    with pytest.raises(lazycube.UsageError, match="'sst'.*_FillValue"):
        _core.cf_encode(np.array([1.0, np.nan]), {}, {"dtype": "i2", "scale_factor": 0.5}, "sst")


def test_matches_what_xarray_to_zarr_stores(tmp_path):
    """Through xarray's zarr backend: the stored array equals cf_encode's values, its .zattrs
    the attributes, and its fill_value the _FillValue attribute (the zarr backend moves it out
    of the attributes: what lazycube's writer has to do)."""
    zarr = pytest.importorskip("zarr")
    # xarray's zarr backend stores variable-length bytes as fixed-length "|S<n>"
    # (ensure_fixed_length_bytes): a rule of the Zarr writer, after the CF encoding.
    names = [n for n in sorted(CASES) if n not in FILL_DEVIATIONS and n != "bytes_object_missing"]
    data_vars = {}
    for name in names:
        values, attrs, encoding = CASES[name]
        dims = tuple("%s_%d" % (name, k) for k in range(values.ndim))
        data_vars[name] = xr.Variable(dims, values, attrs, encoding)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.Dataset(data_vars).to_zarr(tmp_path / "out.zarr", consolidated=False)
    group = zarr.open_group(str(tmp_path / "out.zarr"), mode="r")
    for name in names:
        values, attrs, encoding = CASES[name]
        stored, written = _core.cf_encode(values, attrs, encoding, name)
        array = group[name]
        on_disk = array[...]
        assert on_disk.dtype == stored.dtype, name
        if stored.dtype.kind == "f":
            assert np.array_equal(on_disk, stored, equal_nan=True), name
        else:
            assert np.array_equal(on_disk, stored), name
        fill = written.pop("_FillValue", None)
        if fill is None:
            assert array.fill_value is None, name
        else:
            assert same_attr(fill, array.fill_value), (name, fill, array.fill_value)
        zattrs = dict(array.attrs)
        zattrs.pop("_ARRAY_DIMENSIONS")
        assert set(zattrs) == set(written), (name, zattrs, written)
        for key, value in zattrs.items():
            assert same_attr(written[key], value), (name, key, written[key], value)


@pytest.mark.parametrize("seed", range(40))
def test_random_packings_match_xarray(seed):
    """Random decoded types, stored types, scales, offsets and fill values (fixed seeds): the
    float32/float64 arithmetic and the rounding must agree with numpy's value for value."""
    rng = np.random.default_rng(1000 + seed)
    decoded = rng.choice(["f2", "f4", "f8", "i1", "i2", "i4", "u2"])
    stored = str(rng.choice(["i1", "i2", "i4", "u1", "u2", "f4", "f8"]))
    encoding = {"dtype": stored}
    if rng.random() < 0.7:
        encoding["scale_factor"] = float(rng.choice([0.01, 0.1, 0.5, 2.0, 1e-3, rng.uniform(1e-3, 10)]))
        if rng.random() < 0.3:
            encoding["scale_factor"] = np.float32(encoding["scale_factor"])
    if rng.random() < 0.6:
        encoding["add_offset"] = float(rng.choice([0.0, 273.15, -50.0, rng.uniform(-1e3, 1e3)]))
    kind = np.dtype(stored).kind
    info = np.iinfo(stored) if kind in "iu" else None
    if info is not None or rng.random() < 0.5:
        encoding["_FillValue"] = int(info.max) if info is not None else -9999.0
    # Packed values that fit: drawn in the stored range, unpacked, cast to the decoded type.
    lo, hi = (info.min + 1, info.max - 1) if info is not None else (-1e4, 1e4)
    raw = rng.uniform(lo, hi, size=200)
    x = raw * float(encoding.get("scale_factor", 1.0)) + encoding.get("add_offset", 0.0)
    if np.dtype(decoded).kind == "f":
        x[rng.random(200) < 0.1] = np.nan
    else:
        x = np.clip(np.round(x), np.iinfo(decoded).min, np.iinfo(decoded).max)
    values = x.astype(decoded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = encode_cf_variable(xr.Variable(("x",), values, {}, encoding), name="v")
    exp = np.asarray(expected.values)
    try:
        stored_values, written = _core.cf_encode(values, {}, encoding, "v")
    except lazycube.UsageError as err:
        # Stricter than numpy (whose cast wraps): only for a packed value truly past the stored
        # range (the decoded type's rounding can push one there).
        found = re.search(r"element (\d+) \((\S+)\) does not fit", str(err))
        assert found and info is not None, err
        packed = float(found.group(2))
        assert not info.min <= np.around(packed) <= info.max, err
        return
    assert stored_values.dtype == exp.dtype
    holes = np.isnan(values) if values.dtype.kind == "f" else np.zeros(values.shape, bool)
    assert np.array_equal(stored_values[~holes], exp[~holes], equal_nan=True), (encoding, decoded)
    if holes.any():
        fill = plain(written["_FillValue"])
        assert np.array_equal(stored_values[holes], np.full(holes.sum(), fill, stored_values.dtype), equal_nan=True)
    for key, value in expected.attrs.items():
        assert same_attr(written[key], value), (key, written[key], value)
