"""lazycube.to_zarr of xarray Datasets holding cftime dates (issue 31): for every CF calendar the
store is the one xarray's own ``to_zarr`` writes — read back with ``use_cftime=True`` it is
``identical``, and the stored numbers, their dtype and the ``units``/``calendar`` attributes are
equal (``decode_times=False``). Zarr v2 is compared with xarray directly (zarr-python 2.13 reads
only v2); v3 output is read raw with ``lazycube.open_dataset(decode_cf=False)`` and compared with
xarray's v2 numbers. Dates that cannot be stored are a UsageError naming the variable and the
calendar."""

import numpy as np
import pytest

from conftest import import_lazycube

xr = pytest.importorskip("xarray")
cftime = pytest.importorskip("cftime")
lazycube = import_lazycube()
from lazycube import UsageError  # noqa: E402

CALENDARS = ["standard", "gregorian", "proleptic_gregorian", "julian", "noleap", "365_day", "all_leap",
             "366_day", "360_day"]


def write_both(ds, tmp_path, **lazycube_args):
    """(xarray's store, lazycube's store) of the same Dataset, Zarr v2."""
    ours, theirs = tmp_path / "lazycube.zarr", tmp_path / "xarray.zarr"
    ds.copy(deep=True).to_zarr(theirs)
    lazycube.to_zarr(ds.copy(deep=True), str(ours), format=2, **lazycube_args)
    return theirs, ours


def raw(path, **decode):
    """The stored numbers and attributes (decode_cf=False unless `decode` says otherwise)."""
    return xr.open_dataset(path, engine="zarr", **(decode or dict(decode_cf=False)))


def assert_same_store(theirs, ours):
    with xr.open_dataset(theirs, engine="zarr", use_cftime=True) as a, \
            xr.open_dataset(ours, engine="zarr", use_cftime=True) as b:
        xr.testing.assert_identical(b.load(), a.load())
    with raw(theirs, decode_times=False) as a, raw(ours, decode_times=False) as b:
        xr.testing.assert_identical(b.load(), a.load())
    with raw(theirs) as a, raw(ours) as b:
        xr.testing.assert_identical(b.load(), a.load())
        for name in a.variables:
            assert b[name].dtype == a[name].dtype, name
            np.testing.assert_array_equal(b[name].values, a[name].values, err_msg=name)
            for key in ("units", "calendar", "_FillValue"):
                assert (key in b[name].attrs) == (key in a[name].attrs), (name, key)
                if key in a[name].attrs and key != "_FillValue":
                    assert b[name].attrs[key] == a[name].attrs[key], (name, key)
            assert b[name].encoding["dtype"] == a[name].encoding["dtype"], name


def time_dataset(calendar, periods=4, freq="D", start="2000-01-01", encoding=None):
    ds = xr.Dataset({"v": ("time", np.arange(float(periods)))},
                    coords={"time": xr.cftime_range(start, periods=periods, freq=freq, calendar=calendar)})
    if encoding:
        ds.time.encoding.update(encoding)
    return ds


@pytest.mark.parametrize("calendar", CALENDARS)
def test_issue_example(calendar, tmp_path):
    # The issue's example, with each calendar in turn.
    ds = time_dataset(calendar, encoding=dict(units="days since 2000-01-01", calendar=calendar, dtype="int32"))
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.time.dtype == np.int32
        assert r.time.attrs["units"] == "days since 2000-01-01"
        assert r.time.attrs["calendar"] == calendar
        np.testing.assert_array_equal(r.time.values, [0, 1, 2, 3])


def test_issue_example_exactly(tmp_path):
    ds = xr.Dataset({"v": ("time", np.arange(4.))},
                    coords={"time": xr.cftime_range("2000-01-01", periods=4, calendar="noleap")})
    ds.time.encoding.update(units="days since 2000-01-01", calendar="noleap", dtype="int32")
    lazycube.to_zarr(ds, str(tmp_path / "out.zarr"), format=2)
    ds.to_zarr(tmp_path / "xarray.zarr")
    assert_same_store(tmp_path / "xarray.zarr", tmp_path / "out.zarr")


@pytest.mark.parametrize("calendar", CALENDARS)
@pytest.mark.parametrize("freq", ["D", "6H", "90T", "MS"])
def test_units_inferred_as_xarray_infers_them(calendar, freq, tmp_path):
    # No units, calendar or dtype in the encoding: xarray's infer_datetime_units and the dates'
    # own calendar; int64 numbers (whole multiples of the inferred unit).
    ds = time_dataset(calendar, periods=5, freq=freq, start="1999-12-01")
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.time.dtype == np.int64
        unit = {"D": "days", "6H": "hours", "90T": "minutes", "MS": "days"}[freq]
        assert r.time.attrs["units"] == unit + " since 1999-12-01 00:00:00.000000"


@pytest.mark.parametrize("calendar", CALENDARS)
def test_units_without_dtype_and_fractional_values(calendar, tmp_path):
    # Hourly dates counted in days: xarray stores float64 with a NaN _FillValue.
    ds = time_dataset(calendar, periods=5, freq="6H", encoding=dict(units="days since 1990-01-01"))
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.time.dtype == np.float64
        assert r.time.attrs["calendar"] == ds.time.values[0].calendar


@pytest.mark.parametrize("calendar", CALENDARS)
def test_data_variable_of_cftime_dates(calendar, tmp_path):
    # A 2-D data variable of dates (per-cell times), beside a cftime coordinate, and a float32
    # dtype for the data variable.
    time = xr.cftime_range("2001-02-27", periods=3, freq="D", calendar=calendar)
    cells = np.array([[time[0] + np.timedelta64(h, "h").item() for h in (0, 6, 12)],
                      [time[2] + np.timedelta64(h, "h").item() for h in (1, 2, 3)]], dtype=object)
    ds = xr.Dataset({"valid_time": (("x", "y"), cells), "t": ("time", np.arange(3.0))}, coords={"time": time})
    ds.valid_time.encoding.update(units="hours since 2001-01-01 00:00", dtype="float32")
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.valid_time.dtype == np.float32


@pytest.mark.parametrize("calendar", ["standard", "gregorian", "proleptic_gregorian", "julian", "noleap", "360_day"])
def test_years_outside_datetime64ns(calendar, tmp_path):
    # Year 1 and year 5000: no datetime64[ns] holds them, cftime does.
    dates = np.array([cftime.datetime(1, 1, 1, calendar=calendar), cftime.datetime(1, 3, 1, 12, calendar=calendar),
                      cftime.datetime(5000, 6, 1, calendar=calendar)], dtype=object)
    ds = xr.Dataset({"v": ("time", [1.0, 2.0, 3.0])}, coords={"time": dates})
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    ds.time.encoding.update(units="seconds since 0001-01-01", dtype="int64")
    theirs, ours = write_both(ds, tmp_path / "with_units")
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.time.dtype == np.int64


def test_calendar_alias_in_encoding_is_written(tmp_path):
    # noleap dates with the encoding's "365_day": xarray writes the encoding's name.
    ds = time_dataset("noleap", encoding=dict(units="hours since 2000-01-01", calendar="365_day"))
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.time.attrs["calendar"] == "365_day"


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # xarray's own writer
def test_missing_dates_with_units_are_nan(tmp_path):
    dates = np.array([cftime.DatetimeNoLeap(2000, 1, 1), None, cftime.DatetimeNoLeap(2000, 1, 3)], dtype=object)
    ds = xr.Dataset({"v": ("x", [1.0, 2.0, 3.0])}, coords={"t": ("x", dates)})
    ds.t.encoding.update(units="days since 2000-01-01")
    theirs, ours = write_both(ds, tmp_path)
    with raw(theirs) as a, raw(ours) as b:
        xr.testing.assert_identical(b.load(), a.load())
        assert b.t.dtype == np.float64


def test_encoding_dtype_and_fill_value_go_through_the_cpp_encoder(tmp_path):
    ds = time_dataset("360_day", encoding=dict(units="days since 2000-01-01", dtype="int16", _FillValue=-1))
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
    with raw(ours) as r:
        assert r.time.dtype == np.int16


def test_v3_stored_numbers_equal_xarrays(tmp_path):
    ds = time_dataset("noleap", periods=6, freq="12H", encoding=dict(units="hours since 1999-01-01", dtype="int32"))
    ds.to_zarr(tmp_path / "xarray.zarr")
    lazycube.to_zarr(ds, str(tmp_path / "v3.zarr"))  # format=3
    ours = lazycube.open_dataset(str(tmp_path / "v3.zarr"), decode_cf=False)
    with raw(tmp_path / "xarray.zarr") as theirs:
        assert ours["time"].dtype == theirs.time.dtype == np.int32
        np.testing.assert_array_equal(ours["time"].values, theirs.time.values)
        assert ours["time"].attrs["units"] == theirs.time.attrs["units"]
        assert ours["time"].attrs["calendar"] == theirs.time.attrs["calendar"] == "noleap"
        np.testing.assert_array_equal(ours["v"].values, theirs.v.values)


# --- dates that cannot be stored: UsageError naming the variable and the calendar ---------------

def refused(ds, tmp_path, *words):
    with pytest.raises(UsageError) as info:
        lazycube.to_zarr(ds, str(tmp_path / "refused.zarr"), format=2)
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert not (tmp_path / "refused.zarr").exists()
    return message


def test_mixed_calendars_refused(tmp_path):
    dates = np.array([cftime.DatetimeNoLeap(2000, 1, 1), cftime.DatetimeAllLeap(2000, 1, 2)], dtype=object)
    ds = xr.Dataset({"v": ("x", [1.0, 2.0])}, coords={"when": ("x", dates)})
    refused(ds, tmp_path, "'when'", "'all_leap'", "'noleap'")
    ds.when.encoding.update(units="days since 2000-01-01")  # xarray writes this one silently
    refused(ds, tmp_path, "'when'", "'all_leap'", "'noleap'")


def test_encoding_calendar_other_than_the_dates_refused(tmp_path):
    ds = time_dataset("360_day", encoding=dict(units="days since 2000-01-01", calendar="standard"))
    refused(ds, tmp_path, "'time'", "'360_day'", "'standard'")


def test_object_that_is_not_a_date_refused(tmp_path):
    dates = np.array([cftime.DatetimeJulian(2000, 1, 1), "2000-01-02"], dtype=object)
    ds = xr.Dataset({"v": ("x", [1.0, 2.0])}, coords={"when": ("x", dates)})
    message = refused(ds, tmp_path, "'when'", "'julian'", "str")
    assert "not a cftime date" in message


def test_units_cftime_cannot_count_in_refused(tmp_path):
    ds = time_dataset("noleap", encoding=dict(units="nanoseconds since 2000-01-01"))
    refused(ds, tmp_path, "'time'", "'noleap'", "nanoseconds")


def test_integer_dtype_that_cannot_hold_the_dates_exactly_refused(tmp_path):
    # Hourly dates in days as int32 (xarray rounds them silently).
    ds = time_dataset("all_leap", freq="6H", encoding=dict(units="days since 2000-01-01", dtype="int32"))
    refused(ds, tmp_path, "'time'", "'all_leap'", "whole", "int32")
    # Year 5000 in seconds as int16.
    ds = time_dataset("standard", start="5000-01-01", encoding=dict(units="seconds since 2000-01-01", dtype="int16"))
    refused(ds, tmp_path, "'time'", "'standard'", "int16")
    # A missing date in an integer dtype without a _FillValue.
    dates = np.array([cftime.Datetime360Day(2000, 1, 1), None], dtype=object)
    ds = xr.Dataset({"v": ("x", [1.0, 2.0])}, coords={"t": ("x", dates)})
    ds.t.encoding.update(units="days since 2000-01-01", dtype="int32")
    refused(ds, tmp_path, "'t'", "'360_day'", "_FillValue")


def test_missing_dates_without_units_refused(tmp_path):
    dates = np.array([cftime.DatetimeNoLeap(2000, 1, 1), None], dtype=object)
    ds = xr.Dataset({"v": ("x", [1.0, 2.0])}, coords={"t": ("x", dates)})
    refused(ds, tmp_path, "'t'", "'noleap'", "units")


def test_units_attribute_and_encoding_refused(tmp_path):
    ds = time_dataset("julian")
    ds.time.attrs["units"] = "days since 2000-01-01"
    refused(ds, tmp_path, "'time'", "units")


@pytest.mark.parametrize("calendar", ["noleap", "julian", "360_day"])
@pytest.mark.parametrize("units", ["days since 2000-01-01", None])
def test_reopened_store_writes_back_as_xarray_does(calendar, units, tmp_path):
    # open(use_cftime=True) -> to_zarr: the encoding xarray's engine set (dtype, chunks,
    # compressor, _FillValue of float times, ...) drives both writers alike.
    ds = time_dataset(calendar, periods=6, freq="12H", encoding=dict(units=units) if units else None)
    ds.to_zarr(tmp_path / "src.zarr")
    with xr.open_dataset(tmp_path / "src.zarr", engine="zarr", use_cftime=True) as src:
        theirs, ours = write_both(src.load(), tmp_path)
    assert_same_store(theirs, ours)
    # (xarray's writer rewrites inferred units "... 00:00:00.000000" as "...", so only the dates
    # themselves are the source's.)
    with xr.open_dataset(tmp_path / "src.zarr", engine="zarr", use_cftime=True) as a, \
            xr.open_dataset(ours, engine="zarr", use_cftime=True) as b:
        xr.testing.assert_identical(b.load(), a.load())


def test_dask_backed_dates(tmp_path):
    pytest.importorskip("dask")
    ds = time_dataset("all_leap", periods=8, encoding=dict(units="days since 2000-01-01", dtype="int32")).chunk({"time": 3})
    theirs, ours = write_both(ds, tmp_path)
    assert_same_store(theirs, ours)
