"""lazycube.ForecastSamples against references the test builds independently with xarray and
NumPy: anchors matched by time value (gaps, intervals, several streams of other frequencies and
grids), inputs / targets / forcings value for value, missing="skip" / "keep" / "error", the
derived forcings' formulae, rollout reading only the steps it uses, the validity index's disk
cache, resumable schedules, pickling, and the errors that name what is wrong."""

import json
import pickle

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

H = np.timedelta64(1, "h")
LEVELS = [1000, 850, 500]


def _era5_like(path, start="2000-01-01", steps=48, freq_h=6, gap=(20, 22), nan_at=(30,), lat=5, lon=8,
               chunks_time=4, seed=0):
    """A small ERA5-like store: t2m and u10 (time, lat, lon), z (time, level, lat, lon), lsm
    (lat, lon), with time steps [gap) removed and NaN in u10 at the time indices `nan_at` (of the
    full axis)."""
    rng = np.random.default_rng(seed)
    times = np.datetime64(start, "ns") + np.arange(steps) * np.timedelta64(freq_h, "h")
    keep = np.ones(steps, bool)
    keep[gap[0]:gap[1]] = False
    lats = np.linspace(60, -60, lat)
    lons = np.linspace(0, 360, lon, endpoint=False)
    t2m = rng.normal(280, 10, (steps, lat, lon)).astype("float32")
    u10 = rng.normal(0, 5, (steps, lat, lon)).astype("float32")
    for i in nan_at:
        u10[i, 1, 2] = np.nan
    z = rng.normal(5e4, 1e3, (steps, len(LEVELS), lat, lon)).astype("float32")
    lsm = (rng.random((lat, lon)) > 0.5).astype("float32")
    ds = xr.Dataset(
        {"t2m": (("time", "latitude", "longitude"), t2m[keep]),
         "u10": (("time", "latitude", "longitude"), u10[keep]),
         "z": (("time", "level", "latitude", "longitude"), z[keep]),
         "lsm": (("latitude", "longitude"), lsm)},
        coords={"time": times[keep], "level": LEVELS, "latitude": lats, "longitude": lons})
    ds.latitude.attrs["units"] = "degrees_north"
    ds.longitude.attrs["units"] = "degrees_east"
    enc = {v: {"chunks": ds[v].shape if "time" not in ds[v].dims else (chunks_time,) + ds[v].shape[1:]}
           for v in ("t2m", "u10", "z", "lsm")}
    ds.to_zarr(str(path), mode="w", encoding=enc, consolidated=True)
    return str(path)


def _reference_anchors(ds_list, needs, candidates, skip_vars):
    """Anchors every stream has all times for (and, skip_vars, no NaN in the variables read at
    them): needs[s] is a list of (offsets, variables) of stream s."""
    out, reasons = [], {"out_of_range": 0, "time_absent": 0, "missing_values": 0}
    for t in candidates:
        why = None
        for ds, stream_needs in zip(ds_list, needs):
            times = ds.time.values
            for offsets, variables in stream_needs:
                for off in offsets:
                    at = t + off
                    if at < times[0] or at > times[-1]:
                        why = why or "out_of_range"
                    elif at not in times:
                        why = why or "time_absent"
                    elif skip_vars and any(np.isnan(ds[v].sel(time=at).values).any() for v in variables):
                        why = why or "missing_values"
                    if why:
                        break
                if why:
                    break
            if why:
                break
        if why:
            reasons[why] += 1
        else:
            out.append(t)
    return np.array(out, dtype="datetime64[ns]"), reasons


def _fields(ds, variables, times):
    """(len(times), channels, lat, lon) of `variables` at `times`: a level dim becomes channels
    in the order of the data's levels."""
    rows = []
    for t in times:
        chans = []
        for v in variables:
            a = ds[v].sel(time=t).values if "time" in ds[v].dims else ds[v].values
            if a.ndim == 3:
                chans.extend(list(a))
            else:
                chans.append(a)
        rows.append(np.stack(chans))
    return np.stack(rows).astype("float32")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return _era5_like(tmp_path_factory.mktemp("fc") / "era5.zarr")


@pytest.fixture()
def index_dir(tmp_path):
    return str(tmp_path / "validity")


def test_items_match_xarray_reference(store, index_dir):
    ds = xr.open_dataset(store, engine="zarr")
    inputs_off = [-6 * H, 0 * H]
    leads = [6 * H, 12 * H, 18 * H]
    samples = lazycube.ForecastSamples(
        store, inputs=["t2m", "u10", "z"], targets=["t2m", "z"], forcings=["lsm", "year_progress_sin"],
        input_offsets=["-6h", "0h"], target_offsets=["6h", "12h", "18h"], anchor_step="6h",
        index_dir=index_dir)
    candidates = ds.time.values[0] + np.arange(48) * 6 * H
    want, reasons = _reference_anchors(
        [ds], [[(inputs_off, ["t2m", "u10", "z"]), (leads, ["t2m", "z"])]], candidates, True)
    np.testing.assert_array_equal(samples.anchor_times, want)
    assert len(samples) == len(want)
    assert samples.excluded == reasons
    assert reasons["time_absent"] > 0 and reasons["missing_values"] > 0 and reasons["out_of_range"] > 0
    for i in (0, len(samples) // 2, len(samples) - 1):
        item = samples[i]
        t = want[i]
        assert item["anchor"] == t
        x = _fields(ds, ["t2m", "u10", "z"], [t + o for o in inputs_off])
        y = _fields(ds, ["t2m", "z"], [t + o for o in leads])
        assert item["inputs"].dtype == np.float32 and item["inputs"].shape == x.shape
        np.testing.assert_array_equal(item["inputs"], x)
        np.testing.assert_array_equal(item["targets"], y)
        assert item["input_channels"] == ("t2m", "u10", "z_1000", "z_850", "z_500")
        assert item["grid_dims"] == ("latitude", "longitude")
        f = item["forcings"]
        assert f.shape == (5, 2, 5, 8)
        for k, tt in enumerate([t + o for o in inputs_off + leads]):
            np.testing.assert_array_equal(f[k, 0], ds.lsm.values)
            secs = (tt - np.datetime64("1970-01-01", "ns")) / np.timedelta64(1, "s")
            p = np.mod(secs / 86400 / 365.24219, 1.0)
            np.testing.assert_allclose(f[k, 1], np.full((5, 8), np.sin(2 * np.pi * p)), atol=1e-6)


def test_every_source_form_gives_the_same_samples(store, index_dir):
    """A URL, a lazycube Dataset and an xarray Dataset (engine="lazycube", itself a mapping of
    its variables, not a dict of streams) give the same samples."""
    spec = dict(inputs=["t2m", "z"], targets=["t2m"], input_offsets=["-6h", "0h"],
                target_offsets=["6h"], index_dir=index_dir)
    by_url = lazycube.ForecastSamples(store, **spec)
    for source in (lazycube.open_dataset(store), xr.open_dataset(store, engine="lazycube")):
        other = lazycube.ForecastSamples(source, **spec)
        assert other.streams == ("",)
        np.testing.assert_array_equal(other.anchor_times, by_url.anchor_times)
        for i in (0, len(by_url) - 1):
            np.testing.assert_array_equal(other[i]["inputs"], by_url[i]["inputs"])
            np.testing.assert_array_equal(other[i]["targets"], by_url[i]["targets"])


def test_batches_stack_items(store, index_dir):
    samples = lazycube.ForecastSamples(store, inputs=["t2m"], targets=["t2m"], input_offsets=["0h"],
                                       target_offsets=["6h", "12h"], index_dir=index_dir)
    seen = []
    for b in samples.batches(4, shuffle="random", seed=3):
        assert b["inputs"].shape[0] == len(b["samples"]) and b["inputs"].shape[1:] == (1, 1, 5, 8)
        for j, s in enumerate(b["samples"]):
            item = samples[int(s)]
            np.testing.assert_array_equal(b["inputs"][j], item["inputs"])
            np.testing.assert_array_equal(b["targets"][j], item["targets"])
            assert b["anchor"][j] == item["anchor"]
        seen.extend(int(s) for s in b["samples"])
    assert sorted(seen) == list(range(len(samples)))
    assert seen != sorted(seen)
    chunk = [int(s) for b in samples.batches(4, shuffle="chunk", seed=3) for s in b["samples"]]
    assert sorted(chunk) == list(range(len(samples)))


def test_anchor_intervals_include_both_ends(store, index_dir):
    samples = lazycube.ForecastSamples(
        store, inputs=["t2m"], input_offsets=["0h"], missing="keep",
        anchors=["2000-01-02/2000-01-03", slice(np.datetime64("2000-01-06T06"), None)], anchor_step="12h",
        index_dir=index_dir)
    ds = xr.open_dataset(store, engine="zarr")
    first = np.arange(np.datetime64("2000-01-02", "ns"), np.datetime64("2000-01-03T00:00:01", "ns"), 12 * H)
    last = np.arange(np.datetime64("2000-01-06T06", "ns"), ds.time.values[-1] + np.timedelta64(1, "ns"), 12 * H)
    want = [t for t in np.concatenate([first, last]) if t in ds.time.values]
    np.testing.assert_array_equal(samples.anchor_times, np.array(want, "datetime64[ns]"))
    assert samples.anchor_times[1] == np.datetime64("2000-01-02T12", "ns")
    assert np.datetime64("2000-01-03", "ns") in samples.anchor_times


def test_missing_keep_masks_and_error_names_variable(store, index_dir):
    ds = xr.open_dataset(store, engine="zarr")
    nan_time = ds.time.values[np.isnan(ds.u10.values).any(axis=(1, 2))][0]
    keep = lazycube.ForecastSamples(store, inputs=["u10"], input_offsets=["0h"], missing="keep",
                                    anchors=[str(nan_time)], index_dir=index_dir)
    item = keep[0]
    np.testing.assert_array_equal(np.isnan(item["inputs"]), ~item["mask"]["inputs"])
    assert (~item["mask"]["inputs"]).sum() == 1
    err = lazycube.ForecastSamples(store, inputs=["u10"], input_offsets=["0h"], missing="error",
                                   anchors=[str(nan_time)], index_dir=index_dir)
    with pytest.raises(lazycube.MissingDataError, match="u10"):
        err[0]
    skip = lazycube.ForecastSamples(store, inputs=["u10"], input_offsets=["0h"], index_dir=index_dir)
    assert nan_time not in skip.anchor_times
    assert skip.excluded["missing_values"] == 1


def test_validity_index_is_cached(store, index_dir):
    kw = dict(inputs=["u10", "t2m"], input_offsets=["0h"], index_dir=index_dir)
    first = lazycube.ForecastSamples(store, **kw)
    assert not first.core.index_loaded
    again = lazycube.ForecastSamples(store, **kw)
    assert again.core.index_loaded
    np.testing.assert_array_equal(first.anchor_times, again.anchor_times)


def test_validity_index_handed_to_another_process(tmp_path, store):
    # Issue 46: one process builds the index and hands it on (validity_index=): no pass there,
    # the same samples; an index of other data is not taken for this one; a pickle carries it.
    kw = dict(inputs=["u10", "t2m"], input_offsets=["0h"], index_dir="off")
    first = lazycube.ForecastSamples(store, **kw)
    assert not first.core.index_loaded
    given = first.validity_index
    assert isinstance(given, str) and len(json.loads(given)["indexes"]) == 2
    second = lazycube.ForecastSamples(store, validity_index=given, **kw)
    assert second.core.index_loaded
    np.testing.assert_array_equal(first.anchor_times, second.anchor_times)
    assert first.excluded == second.excluded and first.excluded["missing_values"] > 0
    # other data (NaN elsewhere): the given index does not match it, so it is built
    other = _era5_like(tmp_path / "other.zarr", nan_at=(10,))
    built = lazycube.ForecastSamples(other, validity_index=given, **kw)
    assert not built.core.index_loaded
    reference = lazycube.ForecastSamples(other, **kw)
    np.testing.assert_array_equal(built.anchor_times, reference.anchor_times)
    # a spawned worker's copy reads no data for it
    again = pickle.loads(pickle.dumps(first))
    assert again.core.index_loaded
    np.testing.assert_array_equal(again.anchor_times, first.anchor_times)
    assert lazycube.ForecastSamples(store, inputs=["u10"], input_offsets=["0h"], missing="keep").validity_index is None
    with pytest.raises(ValueError, match="validity_index"):
        lazycube.ForecastSamples(store, validity_index="{}", **kw)


def test_two_streams_of_other_frequency_and_grid(tmp_path, store, index_dir):
    hourly = _era5_like(tmp_path / "hourly.zarr", steps=300, freq_h=1, gap=(0, 0), nan_at=(), lat=3, lon=4, seed=1)
    ds6 = xr.open_dataset(store, engine="zarr")
    ds1 = xr.open_dataset(hourly, engine="zarr")
    samples = lazycube.ForecastSamples(
        {"era5": store, "hourly": hourly},
        inputs={"era5": ["t2m"], "hourly": ["t2m", "u10"]}, targets={"era5": ["t2m"]},
        input_offsets=["-6h", "0h"], target_offsets=["6h"], anchor_step="6h", missing="keep",
        index_dir=index_dir)
    candidates = ds6.time.values[0] + np.arange(48) * 6 * H
    want, _ = _reference_anchors(
        [ds6, ds1], [[([-6 * H, 0 * H, 6 * H], ["t2m"])], [([-6 * H, 0 * H], ["t2m", "u10"])]], candidates, False)
    np.testing.assert_array_equal(samples.anchor_times, want)
    item = samples[2]
    t = want[2]
    np.testing.assert_array_equal(item["era5"]["inputs"], _fields(ds6, ["t2m"], [t - 6 * H, t]))
    np.testing.assert_array_equal(item["hourly"]["inputs"], _fields(ds1, ["t2m", "u10"], [t - 6 * H, t]))
    np.testing.assert_array_equal(item["era5"]["targets"], _fields(ds6, ["t2m"], [t + 6 * H]))
    assert item["hourly"]["inputs"].shape == (2, 2, 3, 4)
    assert item["hourly"]["targets"].shape[1] == 0


def _sun_reference(t_end, lat, lon, steps=3600):
    """Top-of-atmosphere incident solar radiation over the hour before t_end (J m-2), by direct
    numerical integration (midpoints, one per second) of S0/R^2 max(0, cos zenith), with the
    Sun's position from the Astronomical Almanac's low-precision formulae at every instant."""
    deg = np.pi / 180
    t0 = (t_end - np.datetime64("2000-01-01T12:00", "ns")) / np.timedelta64(1, "s") - 3600.0
    secs = t0 + (np.arange(steps) + 0.5) * 3600.0 / steps
    n = secs / 86400.0
    L = 280.460 + 0.9856474 * n
    g = (357.528 + 0.9856003 * n) * deg
    lam = (L + 1.915 * np.sin(g) + 0.020 * np.sin(2 * g)) * deg
    eps = (23.439 - 0.0000004 * n) * deg
    R = 1.00014 - 0.01671 * np.cos(g) - 0.00014 * np.cos(2 * g)
    ra = np.arctan2(np.cos(eps) * np.sin(lam), np.cos(lam))
    dec = np.arcsin(np.sin(eps) * np.sin(lam))
    gmst = (280.46061837 + 360.98564736629 * n) * deg
    out = []
    for la, lo in zip(lat, lon):
        h = gmst + lo * deg - ra
        cz = np.sin(la * deg) * np.sin(dec) + np.cos(la * deg) * np.cos(dec) * np.cos(h)
        out.append(np.sum(1361.0 / R ** 2 * np.maximum(cz, 0)) * 3600.0 / steps)
    return np.array(out)


def test_derived_forcings_equal_numpy_references():
    rng = np.random.default_rng(5)
    lat = np.concatenate([rng.uniform(-90, 90, 40), [90, -90, 0, 66.5, -66.5]])
    lon = np.concatenate([rng.uniform(-180, 360, 40), [0, 0, 0, 10, 200]])
    for t in ["2016-06-21T12:00", "2016-12-21T06:00", "1980-03-20T18:00", "2023-09-01T00:00"]:
        t = np.datetime64(t, "ns")
        ns = int(t.astype("int64"))
        secs = ns / 1e9
        got = lazycube._core.derived_forcing("toa_incident_solar_radiation", ns, lat, lon)
        np.testing.assert_allclose(got, _sun_reference(t, lat, lon), rtol=2e-4, atol=1361 * 3600 * 2e-4)
        p_day = np.mod(secs / 86400 + lon / 360, 1.0)
        np.testing.assert_allclose(lazycube._core.derived_forcing("day_progress_sin", ns, lat, lon),
                                   np.sin(2 * np.pi * p_day), atol=1e-9)
        np.testing.assert_allclose(lazycube._core.derived_forcing("day_progress_cos", ns, lat, lon),
                                   np.cos(2 * np.pi * p_day), atol=1e-9)
        p_year = np.mod(secs / 86400 / 365.24219, 1.0)
        np.testing.assert_allclose(lazycube._core.derived_forcing("year_progress_cos", ns, [], [], 3),
                                   np.full(3, np.cos(2 * np.pi * p_year)), atol=1e-9)
    # polar night and day: nothing, and a whole hour of sun at the pole in June
    june = int(np.datetime64("2016-06-21T12:00", "ns").astype("int64"))
    polar = lazycube._core.derived_forcing("toa_incident_solar_radiation", june, [-89.0, 89.0], [0.0, 0.0])
    assert polar[0] == 0 and polar[1] > 0.3 * 1361 * 3600


def test_derived_forcings_in_items_use_the_grid(store, index_dir):
    ds = xr.open_dataset(store, engine="zarr")
    samples = lazycube.ForecastSamples(
        store, inputs=["t2m"], forcings=["toa_incident_solar_radiation", "day_progress_cos"],
        input_offsets=["0h"], target_offsets=[], index_dir=index_dir)
    item = samples[3]
    lat2, lon2 = np.meshgrid(ds.latitude.values, ds.longitude.values, indexing="ij")
    t = item["anchor"]
    want = _sun_reference(t, lat2.ravel(), lon2.ravel()).reshape(lat2.shape) / (1361.0 * 3600)
    np.testing.assert_allclose(item["forcings"][0, 0], want, atol=3e-4)
    secs = (t - np.datetime64("1970-01-01", "ns")) / np.timedelta64(1, "s")
    np.testing.assert_allclose(item["forcings"][0, 1], np.cos(2 * np.pi * np.mod(secs / 86400 + lon2 / 360, 1)),
                               atol=1e-6)


def test_rollout_fetches_only_the_steps_it_uses(tmp_path, index_dir):
    path = _era5_like(tmp_path / "r.zarr", steps=40, gap=(0, 0), nan_at=(), chunks_time=1)
    kw = dict(inputs=["t2m", "z"], targets=["t2m", "z"], input_offsets=["-6h", "0h"],
              target_offsets=["6h", "12h", "18h", "24h"], index_dir=index_dir, cache_bytes=64 << 20)
    fetched = {}
    for k in (1, 4):
        samples = lazycube.ForecastSamples(path, **kw)
        ids = list(range(0, len(samples), 7))  # anchors 42 h apart: no time step shared
        b = samples.batch(ids, rollout=k)
        assert b["targets"].shape[1] == k
        fetched[k] = samples.cache_stats()["bytes_fetched"]
    assert fetched[1] <= 1.1 * (2 + 1) / (2 + 4) * fetched[4]


@pytest.mark.parametrize("shuffle", ["chunk", "random", None])
def test_batches_fetch_the_coming_chunks_ahead(tmp_path, index_dir, shuffle):
    # Issue 46: batches() walks the epoch's order with fetch-ahead (ForecastEpoch): the same
    # batches, in the same order, as without it, each chunk fetched once, and the chunks loaded
    # by the walk ahead of the batches that read them.
    path = _era5_like(tmp_path / "fa.zarr", steps=40, gap=(0, 0), nan_at=(), chunks_time=1)
    kw = dict(inputs=["t2m", "z"], targets=["t2m"], input_offsets=["-6h", "0h"], target_offsets=["6h", "12h"],
              index_dir=index_dir, missing="keep", cache_bytes=64 << 20)
    runs = {}
    for name, extra in (("off", dict(prefetch=0, fetch_ahead_bytes=0)), ("ahead", dict(prefetch=3))):
        samples = lazycube.ForecastSamples(path, **kw)
        batches = list(samples.batches(4, shuffle=shuffle, seed=5, epoch=2, **extra))
        runs[name] = (batches, samples.cache_stats())
    (off, off_stats), (ahead, ahead_stats) = runs["off"], runs["ahead"]
    assert len(off) == len(ahead) == -(-len(lazycube.ForecastSamples(path, **kw)) // 4)
    for a, b in zip(off, ahead):
        np.testing.assert_array_equal(a["samples"], b["samples"])
        np.testing.assert_array_equal(a["inputs"], b["inputs"])
        np.testing.assert_array_equal(a["targets"], b["targets"])
        assert (a["epoch"], a["index"]) == (b["epoch"], b["index"])
    assert [int(b["index"]) for b in ahead] == list(range(len(ahead)))
    assert {int(b["epoch"]) for b in ahead} == {2}
    assert off_stats["fetched_ahead"] == 0
    # (how many the walk loads before the batches reach them depends on timing on a local store;
    # test_fetch_ahead.cpp's ForecastEpoch test counts the round trips over a slow one)
    assert ahead_stats["fetched_ahead"] > 0, ahead_stats
    assert ahead_stats["bytes_fetched"] == off_stats["bytes_fetched"]  # each chunk once, either way


@pytest.mark.parametrize("shuffle", ["random", "chunk"])
def test_schedule_resumes_in_a_job_of_another_size(store, index_dir, shuffle):
    samples = lazycube.ForecastSamples(store, inputs=["t2m"], input_offsets=["0h"], missing="keep",
                                       index_dir=index_dir)
    n = len(samples)
    delivered = []
    # 2 ranks x 2 workers take 3 batches per rank, then a 3-rank job with 1 worker finishes the epoch
    first = [samples.schedule(4, shuffle, 7, 1, rank=r, world_size=2, worker=w, num_workers=2)
             for r in range(2) for w in range(2)]
    for s in first:
        for j in range(s.worker_batches):
            if s.rank_batch_index(j) < 3:
                delivered.extend(s.batch(j))
    remaining = first[0].remaining_after(3)
    assert sum(b - a for a, b in remaining) == n - 3 * 2 * 4
    assert first[0].planned_for == (2, 2)
    later = [samples.schedule(4, shuffle, 7, 1, rank=r, world_size=3, remaining=remaining, planned_for=(2, 2))
             for r in range(3)]
    for s in later:
        for j in range(s.worker_batches):
            delivered.extend(s.batch(j))
    assert sorted(delivered) == list(range(n))
    assert len({s.rank_batches for s in later}) == 1
    # start= resumes from an epoch position: the positions from there on
    tail = samples.schedule(4, shuffle, 7, 1, start=n - 5)
    assert sorted(i for j in range(tail.worker_batches) for i in tail.batch(j)) == sorted(
        samples.schedule(4, shuffle, 7, 1, remaining=[(n - 5, n)]).batch(0)
        + samples.schedule(4, shuffle, 7, 1, remaining=[(n - 5, n)]).batch(1))


def test_pickles_into_another_process_image(store, index_dir):
    samples = lazycube.ForecastSamples(store, inputs=["t2m"], targets=["z"], input_offsets=["0h"],
                                       target_offsets=["6h"], index_dir=index_dir)
    again = pickle.loads(pickle.dumps(samples))
    assert len(again) == len(samples)
    np.testing.assert_array_equal(again[5]["targets"], samples[5]["targets"])
    assert again.core.index_loaded


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_offsets=["6 hours ago"]), "input_offsets\\[0\\].*not a duration"),
    (dict(inputs=["nope"]), "nope"),
    (dict(forcings=["sun_progress_sin"]), "sun_progress_sin"),
    (dict(anchors=["1950-01-01/1950-02-01"]), "no anchor is a sample"),
    (dict(missing="maybe"), "missing"),
    (dict(target_offsets=["6h"]), "targets"),
    (dict(time_dim="valid_time"), "valid_time"),
    (dict(patch_dims={"level": 2}), "level"),
    (dict(anchor_step="-6h"), "anchor_step"),
    (dict(unknown_key=1), "unknown_key"),
])
def test_bad_specifications_name_the_field(store, index_dir, kwargs, match):
    args = dict(inputs=["t2m"], input_offsets=["0h"], index_dir=index_dir)
    args.update(kwargs)
    with pytest.raises((lazycube.Error, TypeError), match=match):
        lazycube.ForecastSamples(store, **args)


def test_time_coordinate_must_increase_and_be_datetime(tmp_path, index_dir):
    t = np.datetime64("2000-01-01", "ns") + np.array([0, 12, 6, 18]) * H
    bad = xr.Dataset({"a": (("time", "x"), np.zeros((4, 2), "float32"))}, coords={"time": t})
    bad.to_zarr(str(tmp_path / "bad.zarr"))
    with pytest.raises(lazycube.UsageError, match="not increasing"):
        lazycube.ForecastSamples(str(tmp_path / "bad.zarr"), inputs=["a"], index_dir=index_dir)
    num = xr.Dataset({"a": (("time", "x"), np.zeros((4, 2), "float32"))}, coords={"time": [0.0, 1, 2, 3]})
    num.to_zarr(str(tmp_path / "num.zarr"))
    with pytest.raises(lazycube.UsageError, match="not datetime64"):
        lazycube.ForecastSamples(str(tmp_path / "num.zarr"), inputs=["a"], index_dir=index_dir)


def test_patches(store, index_dir):
    ds = xr.open_dataset(store, engine="zarr")
    samples = lazycube.ForecastSamples(store, inputs=["t2m"], input_offsets=["0h"], missing="keep",
                                       patch_dims={"longitude": 4}, patch_overlap={"longitude": 2},
                                       index_dir=index_dir)
    assert samples.patches == 3
    assert len(samples) == 3 * len(samples.anchor_times)
    item = samples[4]  # anchor 1, patch 1: longitudes 2..6
    t = samples.anchor_times[1]
    np.testing.assert_array_equal(item["inputs"][0, 0], ds.t2m.sel(time=t).values[:, 2:6])
