"""The dtype of stacked and torch batches (issue 31): float32 unless ``dtype=`` says otherwise.

A store written by xarray's ``to_zarr`` as ERA5 is: int16 variables packed with float64
``scale_factor``/``add_offset`` (lazycube decodes them to float64, as xarray >= 2024.02), a plain
float64 variable, and integer variables. The stacked BatchGenerator, BatchDataset (packed=False
and auto) and WindowDataset give float32 equal, value for value, to a NumPy float64 reference
cast to float32; ``dtype=float64`` gives the reference exactly; integer channels keep their
dtype; the xbatcher-compatible generator (batch_size=None) still gives float64.

Needs the built package (build/python, found by conftest); skips visibly when it is not built.
"""

import warnings

import numpy as np
import pytest

from conftest import import_lazycube

torch = pytest.importorskip("torch")  # before lazycube: torch must be loaded first
xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")
lazycube = import_lazycube()  # skips when not built; fails under ctest (LAZYCUBE_PYTHON_PACKAGE)
import lazycube.torch as lctorch  # noqa: E402

SHAPE = {"time": 8, "latitude": 12, "longitude": 16}
DIMS = {"time": 2, "latitude": 4, "longitude": 8}
GRID = [SHAPE[d] // n for d, n in DIMS.items()]  # windows along each dim (no overlap)
N_WINDOWS = int(np.prod(GRID))
# ERA5-like packing: float64 attributes that no float32 equals
PACKING = {"msl": (0.0123456789012345, 100000.123456789), "sp": (0.0987654321098765, 90000.987654321)}
FILL = -32767
FLOATS = ["msl", "sp", "t64"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """(path, {variable: NumPy reference}): msl and sp int16-packed (float64 scale/offset,
    _FillValue, a few missing points), t64 float64, label int32, cls int16."""
    path = str(tmp_path_factory.mktemp("dtype") / "packed.zarr")
    rng = np.random.default_rng(31)
    shape = tuple(SHAPE.values())
    dims = tuple(SHAPE)
    data, encoding = {}, {}
    for name, (scale, offset) in PACKING.items():
        values = offset + scale * rng.integers(-30000, 30000, size=shape).astype(np.float64)
        values[rng.random(shape) < 0.05] = np.nan
        data[name] = (dims, values)
        encoding[name] = {"dtype": "int16", "scale_factor": np.float64(scale),
                          "add_offset": np.float64(offset), "_FillValue": np.int16(FILL)}
    data["t64"] = (dims, 280.0 + rng.standard_normal(shape) / 3.0)  # not float32 values
    data["label"] = (dims, rng.integers(-(2 ** 30), 2 ** 30, size=shape).astype(np.int32))
    data["cls"] = (dims, rng.integers(-1000, 1000, size=shape).astype(np.int16))
    coords = {"time": np.arange(SHAPE["time"]), "latitude": np.linspace(90, -90, SHAPE["latitude"]),
              "longitude": np.linspace(0, 337.5, SHAPE["longitude"])}
    xr.Dataset(data, coords=coords).to_zarr(path, encoding=encoding, mode="w")

    # The reference: the stored integers decoded in float64 with NumPy, as CF says
    group = zarr.open_group(path, mode="r")
    ref = {}
    for name in PACKING:
        raw = group[name][...]
        attrs = group[name].attrs
        assert raw.dtype == np.int16
        assert type(attrs["scale_factor"]) is float and type(attrs["add_offset"]) is float
        decoded = raw.astype(np.float64) * attrs["scale_factor"] + attrs["add_offset"]
        decoded[raw == FILL] = np.nan
        assert np.isnan(decoded).any()
        ref[name] = decoded
    for name in ("t64", "label", "cls"):
        ref[name] = group[name][...]
    assert ref["t64"].dtype == np.float64 and ref["label"].dtype == np.int32
    assert not np.array_equal(ref["t64"].astype(np.float32).astype(np.float64), ref["t64"])
    return path, ref


def window_sel(wid):
    """The slices of window `wid` (row-major over DIMS, last dim fastest)."""
    sel = []
    for (d, n), k in zip(reversed(list(DIMS.items())), reversed(GRID)):
        wid, i = divmod(wid, k)
        sel.append(slice(i * n, (i + 1) * n))
    return tuple(reversed(sel))


def expected(ref, variables, ids, dtype):
    """(sample, channel, time, latitude, longitude) of the reference, cast to `dtype`."""
    return np.stack([np.stack([ref[v][window_sel(int(w))] for v in variables]) for w in ids]).astype(dtype)


def check(got, ref, variables, ids, dtype):
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected(ref, variables, ids, dtype))  # NaN where NaN


def test_store_decodes_packed_to_float64(store):
    """The premise: lazycube decodes the packed int16 variables to float64 (their attributes')."""
    path, ref = store
    ds = lazycube.open_dataset(path)
    for name in FLOATS:
        assert np.dtype(ds[name].dtype) == np.float64, name
    np.testing.assert_array_equal(ds["msl"].values, ref["msl"])
    # xarray's engine follows the running xarray's rule instead (2023.01: masked int16 -> float32):
    # exactly what its zarr engine gives.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = xr.open_dataset(path, engine="lazycube")
        z = xr.open_dataset(path, engine="zarr")
    assert x["msl"].dtype == z["msl"].dtype
    np.testing.assert_array_equal(x["msl"].values, z["msl"].values)


# ---- the stacked BatchGenerator ------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"dtype": None}], ids=["unset", "dtype=None"])
def test_stacked_generator_defaults_to_float32(store, kw):
    path, ref = store
    gen = lazycube.BatchGenerator(path, DIMS, batch_size=5, variables=FLOATS, drop_last=False, **kw)
    seen = []
    for b in gen:
        check(b.numpy(), ref, FLOATS, b.window_ids, np.float32)
        assert b.to_xarray()["x"].dtype == np.float32
        seen.extend(int(w) for w in b.window_ids)
    assert sorted(seen) == list(range(N_WINDOWS))


@pytest.mark.parametrize("dtype", [np.float64, "float64"])
def test_stacked_generator_float64_keeps_the_reference(store, dtype):
    path, ref = store
    gen = lazycube.BatchGenerator(path, DIMS, batch_size=6, variables=FLOATS, dtype=dtype)
    for b in gen:
        check(b.numpy(), ref, FLOATS, b.window_ids, np.float64)


def test_stacked_generator_other_dtypes_are_asked_for(store):
    path, ref = store
    b = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=["cls"], dtype="int32")[1]
    check(b.numpy(), ref, ["cls"], b.window_ids, np.int32)


def test_integer_channels_keep_their_dtype(store):
    """No float involved: one integer dtype stays; an integer target beside float x stays too."""
    path, ref = store
    b = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=["label"])[2]
    check(b.numpy(), ref, ["label"], b.window_ids, np.int32)
    b = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=["msl", "t64"], target="label")[1]
    x, y = b.numpy()
    check(x, ref, ["msl", "t64"], b.window_ids, np.float32)
    check(y, ref, ["label"], b.window_ids, np.int32)
    # integers of two dtypes stacked into a float (float64 before the default): float32
    b = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=["cls", "label"])[0]
    check(b.numpy(), ref, ["cls", "label"], b.window_ids, np.float32)
    b = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=["cls", "label"], dtype="float64")[0]
    check(b.numpy(), ref, ["cls", "label"], b.window_ids, np.float64)


def test_generator_pickles_with_its_dtype(store):
    import pickle
    path, ref = store
    gen = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=FLOATS)
    again = pickle.loads(pickle.dumps(gen))
    b = again.batch(3)
    check(b.numpy(), ref, FLOATS, b.window_ids, np.float32)


def test_core_float_dtype_option(store):
    """The core option behind the default: a float common dtype becomes float_dtype; only in
    stacked mode; only float32/float64."""
    path, _ref = store
    ds = lazycube.open_dataset(path)
    core = ds._core if hasattr(ds, "_core") else ds
    gen = lazycube._core.BatchGenerator(core, DIMS, batch_size=2, variables=FLOATS)
    assert gen.batch(0).arrays[0].numpy().dtype == np.float64  # the core's own default
    gen = lazycube._core.BatchGenerator(core, DIMS, batch_size=2, variables=FLOATS, float_dtype="float32")
    assert gen.batch(0).arrays[0].numpy().dtype == np.float32
    with pytest.raises(lazycube.UsageError, match="float_dtype must be float32 or float64"):
        lazycube._core.BatchGenerator(core, DIMS, batch_size=2, variables=FLOATS, float_dtype="int16")
    with pytest.raises(lazycube.UsageError, match="float_dtype needs a batch_size"):
        lazycube._core.BatchGenerator(core, DIMS, float_dtype="float32")


# ---- the xbatcher-compatible generator: unchanged ------------------------------------------

def test_xbatcher_mode_keeps_float64(store):
    path, ref = store
    gen = lazycube.BatchGenerator(path, input_dims=DIMS)  # batch_size=None: xbatcher's batches
    assert gen.mode == "xbatcher"
    batch = gen[0]
    for name in FLOATS:
        assert batch[name].dtype == np.float64, name
    assert batch["label"].dtype == np.int32
    whole = lazycube.open_dataset(path).to_xarray()  # lazycube's own decoding (the generator's)
    want = whole.isel({d: slice(0, n) for d, n in DIMS.items()})
    for name in FLOATS + ["label"]:
        np.testing.assert_array_equal(batch[name].transpose(*DIMS).values, want[name].values)
    np.testing.assert_array_equal(batch["msl"].transpose(*DIMS).values, ref["msl"][window_sel(0)])
    assert gen.batch(0).numpy()["msl"].dtype == np.float64


# ---- torch datasets ------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{"packed": False}, {}, {"dtype": None}],
                         ids=["packed=False", "auto", "dtype=None"])
def test_batch_dataset_defaults_to_float32(store, kw):
    path, ref = store
    data = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=5, variables=FLOATS,
                                return_window_ids=True, **kw)
    assert data.packed_dtype is None  # t64 is not packed: decoded batches
    n = 0
    for x, ids in data:
        assert x.dtype == torch.float32
        check(x, ref, FLOATS, ids.tolist(), np.float32)
        n += len(ids)
    assert n == N_WINDOWS


def test_batch_dataset_auto_packed_still_engages(store):
    """dtype unset: the packed int16 path is taken, and gives float32 of the reference (the CPU
    unpack computes v * scale + offset in double and rounds once, as the reference is cast)."""
    path, ref = store
    data = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=5, variables=["msl", "sp"],
                                return_window_ids=True)
    assert data.packed_dtype == np.dtype("int16")
    for x, ids in data:
        assert x.dtype == torch.float32
        check(x, ref, ["msl", "sp"], ids.tolist(), np.float32)
    explicit = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=5, variables=["msl", "sp"],
                                    dtype=torch.float32)
    assert explicit.packed_dtype == np.dtype("int16")
    # float64 asked: packed (float32) does not apply, the decoded float64 values come
    wide = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=5, variables=["msl", "sp"],
                                dtype=torch.float64, return_window_ids=True)
    assert wide.packed_dtype is None
    x, ids = next(iter(wide))
    check(x, ref, ["msl", "sp"], ids.tolist(), np.float64)


@pytest.mark.parametrize("dtype", [torch.float64, np.float64, "float64"])
def test_batch_dataset_float64_keeps_the_reference(store, dtype):
    path, ref = store
    data = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=7, variables=FLOATS,
                                dtype=dtype, packed=False, return_window_ids=True)
    for x, ids in data:
        assert x.dtype == torch.float64
        check(x, ref, FLOATS, ids.tolist(), np.float64)


def test_batch_dataset_integer_target(store):
    path, ref = store
    data = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=4, variables=["msl", "t64"],
                                target="label", return_window_ids=True)
    x, y, ids = next(iter(data))
    assert x.dtype == torch.float32 and y.dtype == torch.int32
    check(x, ref, ["msl", "t64"], ids.tolist(), np.float32)
    check(y, ref, ["label"], ids.tolist(), np.int32)


def test_batch_dataset_normalize_dict_is_float32(store):
    path, ref = store
    data = lctorch.BatchDataset(path, input_dims=DIMS, batch_size=4, variables=FLOATS, packed=False,
                                normalize={"t64": (280.0, 2.0)}, return_window_ids=True)
    x, ids = next(iter(data))
    assert x.dtype == torch.float32
    want = expected(ref, FLOATS, ids.tolist(), np.float32)
    want[:, 2] = (want[:, 2].astype(np.float64) - 280.0) / 2.0
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)


def test_batch_dataset_over_a_generator_yields_its_dtype(store):
    path, ref = store
    gen = lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=FLOATS)
    x = next(iter(lctorch.BatchDataset(gen)))
    assert x.dtype == torch.float32


@pytest.mark.parametrize("kw,dtype", [({}, np.float32), ({"dtype": None}, np.float32),
                                      ({"dtype": torch.float64}, np.float64)],
                         ids=["unset", "dtype=None", "float64"])
def test_window_dataset(store, kw, dtype):
    path, ref = store
    data = lctorch.WindowDataset(path, DIMS, variables=FLOATS, **kw)
    assert len(data) == N_WINDOWS
    for i in (0, 7, N_WINDOWS - 1):
        item = data[i]
        assert item.dtype == getattr(torch, np.dtype(dtype).name)
        np.testing.assert_array_equal(item.numpy(), expected(ref, FLOATS, [i], dtype)[0])
    loader = torch.utils.data.DataLoader(data, batch_size=6)
    assert next(iter(loader)).dtype == getattr(torch, np.dtype(dtype).name)
    x, y = lctorch.WindowDataset(path, DIMS, variables=FLOATS, target="label", **kw)[3]
    assert x.dtype == getattr(torch, np.dtype(dtype).name)
    assert y.dtype == (torch.int32 if "dtype" not in kw or kw["dtype"] is None else torch.float64)
