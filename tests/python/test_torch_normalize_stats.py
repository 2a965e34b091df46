"""BatchDataset(normalize="stats.json"): per-level statistics applied in C++ during assembly,
scalar statistics through the packed unpack + normalise path; WindowDataset with a stats file;
all against numpy."""
import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
torch = pytest.importorskip("torch")
xr = pytest.importorskip("xarray")
from lazycube.torch import BatchDataset, WindowDataset  # noqa: E402


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    rng = np.random.default_rng(5)
    t = rng.normal(250.0, 30.0, (8, 3, 6, 6)) + np.arange(3)[None, :, None, None] * 10
    t[rng.random(t.shape) < 0.05] = np.nan
    path = tmp_path_factory.mktemp("tstats") / "cube.zarr"
    ds = xr.Dataset({"t": (("time", "level", "y", "x"), t.astype("f4"))})
    ds.to_zarr(path, encoding={"t": {"chunks": (2, 1, 3, 3)}})
    return str(path), ds


def check_window(item, ds, s, wid):
    """Window `wid` of the (time 2, y 3, x 3) grid of `cube`, normalised per level, against numpy."""
    ti, rest = divmod(wid, 4)
    yi, xi = divmod(rest, 2)
    raw = ds.t.values[2 * ti:2 * ti + 2, :, 3 * yi:3 * yi + 3, 3 * xi:3 * xi + 3].astype("f8")
    want = (raw - s["t"]["mean"][None, :, None, None]) / s["t"]["std"][None, :, None, None]
    np.testing.assert_allclose(item.numpy(), np.moveaxis(want, 1, -1), rtol=2e-6, atol=1e-6, equal_nan=True)


def test_per_level_stats_file_applied_during_assembly(cube, tmp_path):
    path, ds = cube
    s = lazycube.stats(path, keep="level")
    s.to_json(tmp_path / "s.json")
    data = BatchDataset(path, input_dims={"time": 2, "y": 3, "x": 3}, batch_size=4,
                        normalize=str(tmp_path / "s.json"), return_window_ids=True)
    assert data.packed_dtype is None
    n = 0
    for x, ids in data:
        assert x.dtype == torch.float32
        for k, wid in enumerate(ids.tolist()):
            check_window(x[k, 0], ds, s, wid)
            n += 1
    assert n == 16
    with pytest.raises(ValueError, match="packed=True: the statistics are kept along dims"):
        BatchDataset(path, input_dims={"time": 2}, batch_size=4, normalize=s, packed=True)


def test_scalar_stats_go_through_packed_unpack_normalize(era5):
    s = lazycube.stats(era5, variables=["msl"])
    data = BatchDataset(era5, input_dims={"time": 4, "latitude": 8, "longitude": 8}, batch_size=2,
                        variables=["msl"], normalize=s, return_window_ids=True)
    assert data.packed_dtype == np.dtype("int16")  # unpacked and normalised together
    decoded = lazycube.open_dataset(era5)["msl"].values
    x, ids = next(iter(data))
    assert x.dtype == torch.float32
    grid = (61 // 8, 81 // 8)
    for k, wid in enumerate(ids.tolist()):
        ti, rest = divmod(wid, grid[0] * grid[1])
        yi, xi = divmod(rest, grid[1])
        raw = decoded[4 * ti:4 * ti + 4, 8 * yi:8 * yi + 8, 8 * xi:8 * xi + 8]
        want = (raw - s["msl"]["mean"]) / s["msl"]["std"]
        np.testing.assert_allclose(x[k, 0].numpy(), want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_stats_lacking_a_channel_variable(era5):
    s = lazycube.stats(era5, variables=["msl"])
    with pytest.raises(ValueError, match="no statistics for channel variable\\(s\\) 't2m'"):
        BatchDataset(era5, input_dims={"time": 4}, batch_size=2, variables=["msl", "t2m"], normalize=s)


def test_window_dataset_takes_a_stats_file(cube, tmp_path):
    path, ds = cube
    s = lazycube.stats(path, keep="level")
    s.to_json(tmp_path / "s.json")
    data = WindowDataset(path, input_dims={"time": 2, "y": 3, "x": 3}, normalize=str(tmp_path / "s.json"),
                         return_window_ids=True)
    assert len(data) == 16
    loader = torch.utils.data.DataLoader(data, batch_size=5, shuffle=True, num_workers=2,
                                         multiprocessing_context="spawn")
    n = 0
    for x, ids in loader:
        assert x.dtype == torch.float32
        for k, wid in enumerate(ids.tolist()):
            check_window(x[k, 0], ds, s, wid)
            n += 1
    assert n == 16
    other = dict(s.document, variables={"u": s.document["variables"]["t"]})
    with pytest.raises(ValueError, match="no statistics for input variable 't'"):
        WindowDataset(path, input_dims={"time": 2}, normalize=other)
