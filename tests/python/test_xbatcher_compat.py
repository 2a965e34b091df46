"""lazycube.BatchGenerator in xbatcher-compatibility mode (batch_size=None) against xbatcher
0.4.0's semantics (../shared/docs/XBATCHER.md), row by row of xbatcher's own test table.

xbatcher is not installed here, so `RefBatcher` below re-derives xbatcher 0.4.0's batches with
plain xarray operations (isel with the patch selectors, <dim>_input renaming, concat along
input_batch, stacking into `sample`, transpose) on the dataset as xarray's own zarr engine opens
it. Every lazycube batch's `to_xarray()` must be `identical` to the reference batch: values,
dims, coordinates (incl. the `sample` MultiIndex) and attributes.
"""
import itertools
import math
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
lazycube = pytest.importorskip("lazycube")
from lazycube.batch import _relayout  # noqa: E402
from lazycube.xarray_backend import LazycubeBackendEntrypoint  # noqa: E402

ENGINE = LazycubeBackendEntrypoint


# ---- reference: xbatcher 0.4.0's batches, built with xarray only ---------------------------

def _windows(n, length, overlap):
    if overlap >= length:
        raise ValueError("overlap %d must be less than the window length %d" % (overlap, length))
    stride = length - overlap
    return [slice(s, s + length) for s in range(0, n, stride) if s + length <= n]


class RefBatcher:
    """xbatcher 0.4.0 BatchGenerator(ds, input_dims, input_overlap, batch_dims,
    concat_input_dims) re-derived: selectors per batch, then the batch object."""

    def __init__(self, ds, input_dims, input_overlap=None, batch_dims=None,
                 concat_input_dims=False, preload_batch=True):
        self.ds = ds
        self.preload = preload_batch
        self.input_dims = dict(input_dims)
        overlap = dict(input_overlap or {})
        batch_dims = dict(batch_dims or {})
        self.concat = concat_input_dims
        both = {d: n for d, n in batch_dims.items() if d in self.input_dims}
        only = {d: n for d, n in batch_dims.items() if d not in self.input_dims}
        if both and not concat_input_dims:
            warnings.warn("dims in both input_dims and batch_dims are ignored: %s" % both)
        sliced = dict(only, **self.input_dims)
        per_dim = []
        for d, length in sliced.items():
            n = ds.sizes[d]  # KeyError for a missing dim
            if length > n:
                raise ValueError("window %d longer than dim %s (%d)" % (length, d, n))
            per_dim.append(_windows(n, length, overlap.get(d, 0)))
        patches = [dict(zip(sliced, combo)) for combo in itertools.product(*per_dim)]

        if not concat_input_dims:
            groups = [[p] for p in patches]
        elif not batch_dims:
            groups = [patches]
        elif not both:
            key = lambda p: tuple((p[d].start, p[d].stop) for d in batch_dims)  # noqa: E731
            groups = [list(g) for _, g in itertools.groupby(patches, key=key)]
        else:
            # A dim in both: ceil(batch/stride) patches per group along it; groups past
            # floor(n/batch) are dropped; group numbers raveled row-major.
            counts, per_group, n_groups = [], [], []
            for d, length in sliced.items():
                n, ov = ds.sizes[d], overlap.get(d, 0)
                count = (n - ov) // (length - ov)
                counts.append(count)
                if d in batch_dims:  # along a batch-only dim: one patch per group
                    stride = length - ov if d in self.input_dims else batch_dims[d]
                    per_group.append(math.ceil(batch_dims[d] / stride))
                else:
                    per_group.append(count + 1)
                n_groups.append(n // batch_dims.get(d, n))
            groups = [[] for _ in range(int(np.prod(n_groups)))]
            for patch, idx in zip(patches, itertools.product(*[range(c) for c in counts])):
                g = [i // pg for i, pg in zip(idx, per_group)]
                if all(gi < ng for gi, ng in zip(g, n_groups)):
                    groups[int(np.ravel_multi_index(g, n_groups))].append(patch)
        self.groups = groups

    def __len__(self):
        return len(self.groups)

    def __getitem__(self, i):
        if not isinstance(i, int):
            raise NotImplementedError("integer keys only")
        i = list(range(len(self.groups)))[i]
        selectors = self.groups[i]
        if self.concat:
            parts = []
            for sel in selectors:
                patch = self.ds.isel(sel)
                renamed = patch.copy()
                for d in self.input_dims:
                    renamed = renamed.rename({d: d + "_input"})
                    with warnings.catch_warnings():  # a DataArray's `in` tests its values
                        warnings.simplefilter("ignore")
                        present = d + "_input" in renamed
                    if present:
                        renamed = renamed.drop_vars(d + "_input")
                        renamed.coords[d] = (d + "_input", patch[d].data, patch[d].attrs)
                parts.append(renamed)
            batch = xr.concat(parts, dim="input_batch")
            inputs = [d + "_input" for d in self.input_dims]
        else:
            batch = self.ds.isel(selectors[0])
            if self.preload:
                batch = batch.load()
            inputs = list(self.input_dims)
        rest = [d for d in batch.sizes if d not in inputs]
        if len(rest) >= 2:
            batch = batch.stack(sample=rest).transpose("sample", *inputs)
        return batch


# ---- fixtures: xbatcher's sample_ds_1d / sample_ds_3d, written to Zarr ----------------------

def _write(ds, path, encoding=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", consolidated=True, encoding=encoding or {})
    return str(path)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("xbatcher")
    rng = np.random.default_rng(0)
    out = {}
    ds1 = xr.Dataset({"foo": (["x"], rng.random(100)), "bar": (["x"], rng.integers(0, 10, 100))},
                     {"x": (["x"], np.arange(100))}, attrs={"title": "sample_ds_1d"})
    ds1["foo"].attrs["units"] = "m"
    out["1d"] = _write(ds1, root / "ds1d.zarr", {"foo": {"chunks": (30,)}})
    out["1d_nocoord"] = _write(ds1.drop_vars("x"), root / "ds1d_nocoord.zarr")
    shape = (10, 50, 100)
    ds3 = xr.Dataset({"foo": (["time", "y", "x"], rng.random(shape)),
                      "bar": (["time", "y", "x"], rng.integers(0, 10, shape))},
                     {"x": (["x"], np.arange(100)), "y": (["y"], np.arange(50))})
    ds3["y"].attrs["long_name"] = "y position"
    out["3d"] = _write(ds3, root / "ds3d.zarr", {"foo": {"chunks": (3, 20, 40)}})
    t60 = xr.Dataset({"foo": (["time"], np.arange(60.0))}, {"time": np.arange(60) * 10})
    out["t60"] = _write(t60, root / "t60.zarr")
    return out


def _open_ref(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, engine="zarr")


def _open_lc(path):
    return xr.open_dataset(path, engine=ENGINE)


def _sample_indices(n, limit=12):
    if n <= limit:
        return list(range(n))
    return sorted(set(np.linspace(0, n - 1, limit).astype(int).tolist()))


def check_identical(path, *args, expected_len=None, expected_dims=None, ds=None, **kwargs):
    """lazycube batches == reference batches, for a spread of indices (all when few)."""
    ref = RefBatcher(_open_ref(path), *args, **kwargs)
    gen = lazycube.BatchGenerator(ds if ds is not None else _open_lc(path), *args, **kwargs)
    assert gen.mode == "xbatcher"
    assert len(gen) == len(ref)
    if expected_len is not None:
        assert len(gen) == expected_len
    for i in _sample_indices(len(ref)):
        got = gen[i]
        want = ref[i]
        assert isinstance(got, xr.Dataset)
        xr.testing.assert_identical(got, want)
        if expected_dims is not None:
            assert dict(got.sizes) == expected_dims
            for name, var in got.data_vars.items():  # validate_batch_dimensions
                assert var.shape == tuple(expected_dims[d] for d in var.dims), name
        # numpy(): the same arrays, zero-copy, laid out as `layouts` says. Where the C++
        # layout stacks `sample` in another level order than xarray (concat mode on a dataset
        # whose first variable is a coordinate), to_xarray() re-lays the data out.
        b = gen.batch(i)
        arrays = b.numpy()
        assert set(arrays) == set(got.data_vars)
        for (name, arr), layout in zip(arrays.items(), b.layouts):
            want_da = got[name]
            levels = list(got.indexes["sample"].names) if "sample" in want_da.dims else []
            if list(layout["sample_dims"]) == levels and list(layout["dims"]) == list(want_da.dims):
                np.testing.assert_array_equal(arr, want_da.values)
            else:
                sizes = {lv: len(got.indexes["sample"].levels[k]) for k, lv in enumerate(levels)}
                fixed = _relayout(arr, list(layout["dims"]), list(layout["sample_dims"]),
                                  list(want_da.dims), levels, sizes)
                np.testing.assert_array_equal(fixed, want_da.values)
    return gen, ref


# ---- xbatcher test_generators.py rows -----------------------------------------------------

@pytest.mark.parametrize("bsize,n", [(5, 20), (6, 16)])
def test_generator_length(stores, bsize, n):
    check_identical(stores["1d"], {"x": bsize}, expected_len=n, expected_dims={"x": bsize})


# (xbatcher's test_generator_getitem: test_xbatcher_dropin.py::test_getitem_errors, every form)


@pytest.mark.parametrize("store", ["1d", "1d_nocoord"])
@pytest.mark.parametrize("bsize", [5, 10])
def test_batch_1d(stores, store, bsize):
    ref_ds = _open_ref(stores[store])
    gen, _ = check_identical(stores[store], {"x": bsize}, expected_len=100 // bsize)
    for n in (0, len(gen) - 1):
        xr.testing.assert_identical(gen[n],
                                    ref_ds.isel(x=slice(n * bsize, (n + 1) * bsize)))


@pytest.mark.parametrize("store", ["1d", "1d_nocoord"])
@pytest.mark.parametrize("bsize,npatch", [(5, 20), (10, 10)])
def test_batch_1d_concat(stores, store, bsize, npatch):
    gen, _ = check_identical(stores[store], {"x": bsize}, concat_input_dims=True,
                             expected_len=1, expected_dims={"input_batch": npatch, "x_input": bsize})
    batch = gen[0]
    assert isinstance(batch, xr.Dataset)
    assert ("x" in batch.coords) == (store == "1d")


def test_batch_1d_concat_duplicate_dim(stores):
    check_identical(stores["1d"], {"x": 5}, batch_dims={"x": 10}, concat_input_dims=True,
                    expected_len=10, expected_dims={"input_batch": 2, "x_input": 5})


@pytest.mark.parametrize("overlap,n", [(1, 11), (4, 16)])
def test_batch_1d_overlap(stores, overlap, n):
    ref_ds = _open_ref(stores["1d"])
    gen, _ = check_identical(stores["1d"], {"x": 10}, input_overlap={"x": overlap},
                             expected_len=n, expected_dims={"x": 10})
    stride = 10 - overlap
    for k in (0, n // 2, n - 1):
        xr.testing.assert_identical(gen[k],
                                    ref_ds.isel(x=slice(k * stride, k * stride + 10)))


@pytest.mark.parametrize("bsize", [5, 10])
def test_batch_3d_1d_input(stores, bsize):
    ref_ds = _open_ref(stores["3d"])
    gen, _ = check_identical(stores["3d"], {"x": bsize}, expected_len=100 // bsize,
                             expected_dims={"sample": 500, "x": bsize})
    for n in (0, len(gen) - 1):
        want = (ref_ds.isel(x=slice(n * bsize, (n + 1) * bsize))
                .stack(sample=["time", "y"]).transpose("sample", "x"))
        xr.testing.assert_identical(gen[n], want)
    assert list(gen.batch(0).layouts[0]["sample_dims"]) == ["time", "y"]


def test_batch_3d_1d_input_batch_dims_concat(stores):
    check_identical(stores["3d"], {"x": 5, "y": 10}, batch_dims={"time": 2},
                    concat_input_dims=True, expected_len=5,
                    expected_dims={"sample": 200, "x_input": 5, "y_input": 10})


def test_batch_3d_1d_input_batch_dims_no_concat(stores):
    # xbatcher's test is xfail (#126): it expects var order (time, x, y) but gets (time, y, x);
    # lazycube reproduces what xbatcher actually returns.
    gen, _ = check_identical(stores["3d"], {"x": 5, "y": 10}, batch_dims={"time": 2},
                             expected_len=500)
    assert gen[0]["foo"].dims == ("time", "y", "x")


def test_batch_3d_input_batch_concat_duplicate_dim(stores):
    check_identical(stores["3d"], {"x": 5, "y": 10}, batch_dims={"x": 10, "y": 20},
                    concat_input_dims=True, expected_len=20,
                    expected_dims={"sample": 40, "x_input": 5, "y_input": 10})


@pytest.mark.parametrize("bsize", [5, 10])
def test_batch_3d_2d_input(stores, bsize):
    ref_ds = _open_ref(stores["3d"])
    gen, _ = check_identical(stores["3d"], {"y": bsize, "x": 20}, expected_len=(50 // bsize) * 5,
                             expected_dims={"time": 10, "y": bsize, "x": 20})
    for n in (0, 7, len(gen) - 1):
        iy, ix = np.unravel_index(n, (50 // bsize, 100 // 20))
        want = ref_ds.isel(y=slice(iy * bsize, (iy + 1) * bsize), x=slice(ix * 20, (ix + 1) * 20))
        xr.testing.assert_identical(gen[n], want)


@pytest.mark.parametrize("bsize", [5, 10])
def test_batch_3d_2d_input_concat(stores, bsize):
    check_identical(stores["3d"], {"y": bsize, "x": 20}, concat_input_dims=True, expected_len=1,
                    expected_dims={"sample": 10 * (50 // bsize) * 5, "y_input": bsize,
                                   "x_input": 20})
    check_identical(stores["3d"], {"time": bsize, "x": 20}, concat_input_dims=True,
                    expected_len=1,
                    expected_dims={"sample": 50 * (10 // bsize) * 5, "time_input": bsize,
                                   "x_input": 20})


def test_concat_overlap_gives_unequal_batches(stores):
    # XBATCHER.md §1, regime 4 with overlap: time=60, input 10, overlap 9, batch 20 gives
    # 3 batches of 20/20/11 patches whose windows run past the nominal batch extent.
    gen, ref = check_identical(stores["t60"], {"time": 10}, input_overlap={"time": 9},
                               batch_dims={"time": 20}, concat_input_dims=True, expected_len=3)
    assert [gen[i].sizes["input_batch"] for i in range(3)] == [20, 20, 11]


def test_duplicate_dim_without_concat_warns(stores):
    with pytest.warns(UserWarning):
        gen = lazycube.BatchGenerator(_open_lc(stores["3d"]), {"x": 10}, batch_dims={"x": 20})
    assert len(gen) == 10
    with pytest.warns(UserWarning):
        check_identical(stores["3d"], {"x": 10}, batch_dims={"x": 20, "time": 5},
                        expected_len=20)


@pytest.mark.parametrize("preload", [True, False])
def test_preload_batch(stores, preload):
    # xbatcher: preload_batch=False leaves dask-backed batches when the input is chunked.
    # lazycube assembles every batch in memory either way; the values are the same.
    path = stores["1d"]
    ref = RefBatcher(_open_ref(path).chunk({"x": 2}), {"x": 2})
    gen = lazycube.BatchGenerator(_open_lc(path), {"x": 2}, preload_batch=preload)
    assert gen.preload_batch is preload
    assert len(gen) == len(ref) == 50
    for i in (0, 25, 49):
        b = gen[i]
        assert not b.chunks
        xr.testing.assert_identical(b, ref[i].load())


def test_input_dim_and_overlap_exceptions(stores):
    ds = _open_lc(stores["1d"])
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(ds, {"x": 110})
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(ds, {"x": 10}, input_overlap={"x": 20})
    with pytest.raises(KeyError):
        lazycube.BatchGenerator(ds, {"z": 10})


def test_to_json_config_round_trip(stores):
    # BatchSchema.to_json's input_dims round trip: the state records the configuration.
    import json
    gen = lazycube.BatchGenerator(_open_lc(stores["3d"]), {"time": 5, "x": 20})
    state = json.loads(json.dumps(gen.state()))
    dims = state["config"]["input_dims"]
    as_dict = dict(dims) if isinstance(dims, list) else dims
    assert as_dict == {"time": 5, "x": 20}
    assert list(as_dict) == ["time", "x"]
    again = lazycube.BatchGenerator(_open_lc(stores["3d"]), {"time": 5, "x": 20})
    again.restore(state)


@pytest.mark.parametrize("preload", [True, False])
def test_batcher_cached_getitem(stores, preload):
    cache = {}

    def preprocess(batch):
        batch = batch.copy()
        batch.attrs["foo"] = "bar"
        return batch

    gen = lazycube.BatchGenerator(_open_lc(stores["1d"]), {"x": 10}, preload_batch=preload,
                                  cache=cache, cache_preprocess=preprocess)
    first = gen[0]
    assert "0/.zgroup" in cache
    second = gen[1]
    assert "1/.zgroup" in cache
    assert first.attrs["foo"] == "bar" and second.attrs["foo"] == "bar"
    cached = gen[0]  # served from the cache
    xr.testing.assert_identical(cached, first)
    plain = lazycube.BatchGenerator(_open_lc(stores["1d"]), {"x": 10})
    uncached = plain[0]
    uncached.attrs["foo"] = "bar"
    xr.testing.assert_identical(cached, uncached)


# ---- accessors and other inputs ------------------------------------------------------------

def test_accessor_matches_generator(stores):
    ds = _open_lc(stores["3d"])
    via_accessor = ds.lazycube.batches(input_dims={"x": 5})
    direct = lazycube.BatchGenerator(ds, input_dims={"x": 5})
    assert len(via_accessor) == len(direct) == 20
    for i in (0, 19):
        xr.testing.assert_identical(via_accessor[i], direct[i])
    assert ds.lazycube.generator is not None


def test_lazycube_dataset_and_url_inputs_match_xarray_input(stores):
    path = stores["3d"]
    ref = RefBatcher(_open_ref(path), {"y": 10, "x": 20}, batch_dims={"time": 2},
                     concat_input_dims=True)
    for source in (path, lazycube.open_dataset(path)):
        gen = lazycube.BatchGenerator(source, {"y": 10, "x": 20}, batch_dims={"time": 2},
                                      concat_input_dims=True)
        assert len(gen) == len(ref) == 5
        for i in (0, 4):
            xr.testing.assert_identical(gen[i], ref[i])


def test_selected_xarray_dataset(stores):
    # An xarray Dataset narrowed by isel and to one variable is batched as such.
    path = stores["3d"]
    ds = _open_lc(path).isel(time=slice(2, 8), y=slice(10, 40))[["foo"]]
    ref = RefBatcher(_open_ref(path).isel(time=slice(2, 8), y=slice(10, 40))[["foo"]],
                     {"x": 25, "y": 10})
    gen = lazycube.BatchGenerator(ds, {"x": 25, "y": 10})
    assert len(gen) == len(ref) == 12
    for i in (0, 5, 11):
        xr.testing.assert_identical(gen[i], ref[i])


def test_loaded_xarray_dataset_still_batches(stores):
    # xarray replaces lazy data by loaded values (e.g. after .values with cache=True); the
    # variables still name their lazycube source, so batching works on the whole dataset.
    ds = _open_lc(stores["3d"])
    ds["foo"].values
    ds = ds.load()
    check_identical(stores["3d"], {"x": 20, "y": 25}, ds=ds, expected_len=10)


# ---- the bundled ERA5 sample (CF times, packed msl) -----------------------------------------

@pytest.mark.parametrize("args,kwargs", [
    (({"latitude": 20, "longitude": 20},), {}),
    (({"latitude": 20, "longitude": 20},), {"input_overlap": {"latitude": 5}}),
    (({"time": 24},), {}),
    (({"latitude": 16, "longitude": 16},), {"batch_dims": {"time": 24}, "concat_input_dims": True}),
    (({"time": 12, "longitude": 27},), {"batch_dims": {"time": 24}, "concat_input_dims": True}),
])
def test_era5_identical(era5, args, kwargs):
    check_identical(era5, *args, **kwargs)


def test_era5_v3_same_batches_as_v2(era5, sample_dir):
    v3 = sample_dir / "era5_sample_v3.zarr"
    if not v3.is_dir():
        pytest.skip("bundled v3 sample missing")
    ref = RefBatcher(_open_ref(era5), {"latitude": 20, "longitude": 40},
                     batch_dims={"time": 48}, concat_input_dims=True)
    gen = lazycube.BatchGenerator(str(v3), {"latitude": 20, "longitude": 40},
                                  batch_dims={"time": 48}, concat_input_dims=True)
    assert len(gen) == len(ref) == 2
    got = gen[1]
    want = ref[1]
    xr.testing.assert_equal(got, want)
