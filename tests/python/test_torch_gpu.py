"""The GPU hand-off of lazycube.torch: `normalize=` and `packed=` of BatchDataset/WindowDataset
on the CPU against the decoded data normalised with NumPy, lazycube._core.unpack_normalize_host
against a NumPy formula, and the CUDA paths, which skip with the reason when torch has no CUDA
or lazycube no usable device.

The bundled sample's `msl` is stored as int16 with scale_factor 0.5, add_offset 100000 and
_FillValue -32767 (data/era5_sample_v2.zarr/msl/.zattrs).
"""

import numpy as np
import pytest

from conftest import import_lazycube

torch = pytest.importorskip("torch")  # before lazycube: torch must be loaded first
lazycube = import_lazycube()  # skips when not built; fails under ctest (LAZYCUBE_PYTHON_PACKAGE)
import lazycube.torch as lctorch  # noqa: E402
from lazycube import _core  # noqa: E402

DIMS = {"time": 4, "latitude": 16, "longitude": 16}
MSL = (101000.0, 1000.0)  # mean, std used to normalise msl
T2M = (280.0, 12.0)


@pytest.fixture(scope="module")
def url(sample_dir):
    return str(sample_dir / "era5_sample_v2.zarr")


def numpy_reference(raw, transforms):
    """float32 of (raw * scale + offset - mean) / std per channel, NaN at fill/missing."""
    out = np.empty(raw.shape, dtype=np.float32)
    for c, t in enumerate(transforms):
        r = raw[:, c]
        v = (r.astype(np.float64) * t.get("scale", 1.0) + t.get("offset", 0.0) - t.get("mean", 0.0)) \
            / t.get("std", 1.0)
        for key in ("fill", "missing"):
            if t.get(key) is not None:
                v = np.where(r == t[key], np.nan, v)
        out[:, c] = v
    return out


def assert_close(got, want, rtol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=rtol * np.abs(want[ok]).max(initial=1.0))


def epoch(ds):
    return [item if isinstance(item, tuple) else (item,) for item in ds]


# ---- _core.unpack_normalize_host --------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint64", "float32",
                                   "float64"])
def test_unpack_normalize_host_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        raw = rng.integers(max(info.min, -10**6), min(info.max, 10**6), size=(5, 3, 4, 7), dtype=dtype)
    else:
        raw = rng.normal(0, 100, size=(5, 3, 4, 7)).astype(dtype)
        raw[0, 0, 0, :3] = np.nan
    transforms = [
        {"scale": 0.5, "offset": 100000.0, "fill": float(raw[1, 0, 0, 0]), "mean": 101000.0, "std": 1000.0},
        {"scale": 0.01, "offset": -3.0, "missing": float(raw[2, 1, 3, 6]), "mean": 0.0, "std": 2.0},
        {"mean": -1.5, "std": 0.25},
    ]
    out = _core.unpack_normalize_host(raw, transforms)
    assert out.dtype == np.float32 and out.shape == raw.shape
    want = numpy_reference(raw, transforms)
    assert np.isnan(out[1, 0, 0, 0]) and np.isnan(out[2, 1, 3, 6])
    assert_close(out, want)


def test_unpack_normalize_host_takes_any_layout():
    raw = np.arange(2 * 3 * 4, dtype=">i2").reshape(4, 3, 2).transpose(2, 1, 0)  # big-endian, F order
    transforms = [{"scale": 2.0, "offset": 1.0, "mean": 3.0, "std": 4.0}] * 3
    out = _core.unpack_normalize_host(raw, transforms)
    assert_close(out, numpy_reference(raw.astype(np.int16), transforms))
    two_d = _core.unpack_normalize_host(np.array([[1, 2]], dtype=np.int16), [{"std": 2.0}, {"mean": 2.0}])
    np.testing.assert_array_equal(two_d, [[0.5, 0.0]])


def test_unpack_normalize_host_errors_name_the_problem():
    raw = np.zeros((2, 2, 3), dtype=np.int16)
    ok = {"mean": 0.0, "std": 1.0}
    with pytest.raises(lazycube.UsageError, match="channel 1: std must be a finite number > 0"):
        _core.unpack_normalize_host(raw, [ok, {"std": 0.0}])
    with pytest.raises(lazycube.UsageError, match="1 channel transforms for 2 channels"):
        _core.unpack_normalize_host(raw, [ok])
    with pytest.raises(lazycube.UsageError, match="unknown key 'sigma'"):
        _core.unpack_normalize_host(raw, [ok, {"sigma": 1.0}])
    with pytest.raises(lazycube.UsageError, match="unsupported input dtype bool"):
        _core.unpack_normalize_host(raw.astype(bool), [ok, ok])
    with pytest.raises(lazycube.UsageError, match="samples, channels"):
        _core.unpack_normalize_host(np.zeros(3, dtype=np.int16), [ok])


def test_cuda_status_is_consistent():
    assert isinstance(_core.cuda_built(), bool)
    n = _core.cuda_device_count()
    assert n >= 0
    reason = _core.cuda_unavailable_reason()
    assert (reason == "") == (n > 0)
    if not _core.cuda_built():
        assert reason == "lazycube was built without CUDA (no nvcc at configure time)"


def test_pinned_generator_needs_a_device(url):
    if _core.cuda_device_count() > 0:
        pytest.skip("a CUDA device is usable here: pinned batches are exercised by the GPU tests")
    ds = _core.open(url)
    with pytest.raises(lazycube.UsageError, match="pinned_allocator") as err:
        _core.BatchGenerator(ds, DIMS, batch_size=2, variables=["msl"], pinned=True)
    assert _core.cuda_unavailable_reason() in str(err.value)


# ---- BatchDataset / WindowDataset on the CPU --------------------------------------------------


def test_packed_msl_equals_decoded_then_normalised(url):
    packed = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=5, variables=["msl"],
                                  target={"offset": {"time": 1}}, normalize={"msl": MSL})
    assert packed.packed_dtype == np.dtype("int16")
    decoded = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=5, variables=["msl"],
                                   target={"offset": {"time": 1}}, packed=False)
    assert decoded.packed_dtype is None
    got, want = epoch(packed), epoch(decoded)
    assert len(got) == len(want) == len(packed) > 1
    mean, std = MSL
    for (x, y), (xd, yd) in zip(got, want):
        assert x.dtype == torch.float32 and y.dtype == torch.float32
        assert_close(x.numpy(), ((xd.numpy().astype(np.float64) - mean) / std).astype(np.float32))
        assert_close(y.numpy(), ((yd.numpy().astype(np.float64) - mean) / std).astype(np.float32))
    # The generator itself delivered the stored integers.
    raw = packed.generator.batch(0)
    assert raw.arrays[0].dtype == np.int16


def test_packed_without_normalize_just_unpacks(url):
    packed = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=3, variables=["msl"], packed=True)
    decoded = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=3, variables=["msl"], packed=False)
    x, xd = next(iter(packed)), next(iter(decoded))
    assert x.dtype == torch.float32 and xd.dtype.is_floating_point
    assert_close(x.numpy(), xd.numpy().astype(np.float32))


def test_packed_true_with_a_float_channel_names_it(url):
    with pytest.raises(ValueError, match="packed=True: variable 't2m' is stored as float32"):
        lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["msl", "t2m"], packed=True)
    with pytest.raises(ValueError, match="packed=True: .*dtype=float64"):
        lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["msl"], dtype="float64",
                             packed=True)
    with pytest.raises(ValueError, match="packed=True: needs decode_cf=True"):
        lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["msl"], decode_cf=False,
                             packed=True)


def test_auto_mode_with_a_float_channel_normalises_decoded_values(url):
    ds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=4, variables=["t2m", "msl"],
                              dtype="float32", normalize={"t2m": T2M, "msl": MSL})
    assert ds.packed_dtype is None
    plain = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=4, variables=["t2m", "msl"],
                                 dtype="float32")
    (x,), (xd,) = epoch(ds)[0], epoch(plain)[0]
    want = xd.numpy().astype(np.float64)
    want[:, 0] = (want[:, 0] - T2M[0]) / T2M[1]
    want[:, 1] = (want[:, 1] - MSL[0]) / MSL[1]
    assert x.dtype == torch.float32
    assert_close(x.numpy(), want.astype(np.float32))


def test_normalize_float64_stays_float64(url):
    ds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["t2m"], dtype="float64",
                              normalize={"t2m": T2M})
    plain = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["t2m"], dtype="float64")
    x, xd = next(iter(ds)), next(iter(plain))
    assert x.dtype == torch.float64
    np.testing.assert_allclose(x.numpy(), (xd.numpy() - T2M[0]) / T2M[1], rtol=1e-12)


def test_normalize_arguments_are_checked(url):
    with pytest.raises(ValueError, match="normalize: variable 'u10' is not a channel"):
        lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["t2m"], normalize={"u10": (0, 1)})
    with pytest.raises(ValueError, match=r"normalize\['t2m'\].*std a finite number > 0"):
        lctorch.BatchDataset(url, input_dims=DIMS, batch_size=2, variables=["t2m"], normalize={"t2m": (0, 0)})
    with pytest.raises(ValueError, match=r"normalize\['t2m'\] must be a pair"):
        lctorch.WindowDataset(url, DIMS, variables=["t2m"], normalize={"t2m": 3.0})


def test_window_dataset_normalize(url):
    ds = lctorch.WindowDataset(url, DIMS, variables=["msl", "t2m"], normalize={"msl": MSL, "t2m": T2M})
    plain = lctorch.WindowDataset(url, DIMS, variables=["msl", "t2m"])
    for i in (0, len(ds) - 1):
        x, xd = ds[i], plain[i].numpy().astype(np.float64)
        # msl's float64 scale/offset decode to float64; windows default to float32
        assert x.dtype == torch.float32 and x.shape == plain[i].shape
        xd[0] = (xd[0] - MSL[0]) / MSL[1]
        xd[1] = (xd[1] - T2M[0]) / T2M[1]
        assert_close(x.numpy(), xd)


def test_packed_batch_dataset_pickles_its_raw_recipe(url):
    import pickle

    ds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=4, variables=["msl"], normalize={"msl": MSL})
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.packed_dtype == np.dtype("int16")
    a, b = next(iter(ds)), next(iter(clone))
    assert torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))


# ---- GPU --------------------------------------------------------------------------------------


def require_torch_cuda():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA (torch %s): the GPU path is not exercised here" % torch.__version__)


def test_cuda_batches_are_assembled_in_pinned_memory(url, monkeypatch):
    # device="cuda" batches are assembled straight into lazycube's page-locked buffers: torch
    # sees them as pinned and never copies them into its own pinned memory first.
    require_torch_cuda()
    if _core.cuda_device_count() == 0:
        pytest.skip("lazycube's CUDA runtime sees no device: %s" % _core.cuda_unavailable_reason())
    torch.zeros(1, device="cuda")  # torch answers is_pinned() only once it has initialised CUDA
    gen = _core.BatchGenerator(lazycube.open_dataset(url)._core, DIMS, batch_size=2, variables=["msl"],
                               pinned=True)
    assert torch.from_numpy(gen.next().arrays[0].numpy()).is_pinned()
    copies = []
    pin_memory = torch.Tensor.pin_memory
    monkeypatch.setattr(torch.Tensor, "pin_memory",
                        lambda self, *a, **k: copies.append(tuple(self.shape)) or pin_memory(self, *a, **k))
    ds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=4, variables=["msl", "t2m"], device="cuda")
    assert sum(1 for _ in ds) == len(ds) > 0
    assert copies == []


def test_packed_on_cuda_equals_cpu(url):
    require_torch_cuda()
    kwargs = dict(input_dims=DIMS, batch_size=4, variables=["msl"], target={"offset": {"time": 1}},
                  normalize={"msl": MSL})
    cpu = epoch(lctorch.BatchDataset(url, **kwargs))
    gpu = epoch(lctorch.BatchDataset(url, device="cuda", **kwargs))
    assert len(cpu) == len(gpu)
    for (x, y), (xg, yg) in zip(cpu, gpu):
        assert xg.is_cuda and xg.dtype == torch.float32
        assert_close(xg.cpu().numpy(), x.numpy())
        assert_close(yg.cpu().numpy(), y.numpy())


def test_unpack_normalize_device_matches_host():
    require_torch_cuda()
    if _core.cuda_device_count() == 0:
        pytest.skip("lazycube's CUDA kernel cannot run here: %s" % _core.cuda_unavailable_reason())
    rng = np.random.default_rng(5)
    raw = rng.integers(-32768, 32767, size=(3, 4, 9, 11), dtype=np.int16)
    transforms = [{"scale": 0.5, "offset": 1e5, "fill": -32767.0, "mean": 1.01e5, "std": 1e3 * (c + 1)}
                  for c in range(4)]
    src = torch.from_numpy(raw).cuda()
    out = torch.empty(raw.shape, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream()
    _core.unpack_normalize_device(src.data_ptr(), "int16", out.data_ptr(), 3, 4, 99, transforms,
                                  stream.cuda_stream)
    stream.synchronize()
    assert_close(out.cpu().numpy(), _core.unpack_normalize_host(raw, transforms))


@pytest.mark.parametrize("dtype", ["int16", "uint8", "int32", "float32", "float64"])
def test_torch_ops_fallback_matches_the_reference(dtype):
    # The path a CUDA build of torch takes without lazycube's kernel, run here on CPU tensors.
    rng = np.random.default_rng(11)
    raw = (rng.integers(0, 250, size=(4, 2, 3, 5)) - (0 if dtype == "uint8" else 120)).astype(dtype)
    transforms = [{"scale": 0.5, "offset": 1e5, "fill": float(raw[0, 0, 0, 0]), "missing": None,
                   "mean": 1.0001e5, "std": 7.0},
                  {"scale": 1.0, "offset": 0.0, "fill": 0.5, "missing": float(raw[3, 1, 2, 4]),
                   "mean": -3.0, "std": 0.5}]
    got = lctorch._transform_torch(torch.from_numpy(raw), transforms)
    assert got.dtype == (torch.float64 if dtype == "float64" else torch.float32)
    assert np.isnan(got[0, 0, 0, 0].item()) and np.isnan(got[3, 1, 2, 4].item())
    assert_close(got.numpy().astype(np.float32), _core.unpack_normalize_host(raw, transforms), rtol=2e-6)
