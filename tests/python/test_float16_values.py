"""float16 variables: statistics against numpy on the same values (issue 33's one dtype dispatch
showed lazycube.stats skipping float16 without a word: empty statistics), and the stacked
batches' refusal of float16 naming the variable."""
import warnings

import numpy as np
import pytest
import xarray as xr

from conftest import import_lazycube

lazycube = import_lazycube()

DIMS = {"time": 2, "y": 3, "x": 3}
SHAPE = (8, 6, 9)


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    rng = np.random.default_rng(16)
    h = rng.normal(20.0, 4.0, SHAPE).astype("f2")
    h[rng.random(SHAPE) < 0.05] = np.nan
    path = tmp_path_factory.mktemp("f16") / "cube.zarr"
    xr.Dataset({"h": (("time", "y", "x"), h)}).to_zarr(path, encoding={"h": {"chunks": (3, 4, 5)}})
    return str(path), h


def test_stats_of_float16_equal_numpy(cube):
    path, h = cube
    assert np.dtype(lazycube.open_dataset(path)["h"].dtype) == np.float16
    a = h.astype("f8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for keep, axis in ((None, None), ("time", (1, 2))):
            s = lazycube.stats(path, keep=keep)["h"]
            np.testing.assert_array_equal(s["count"], np.sum(~np.isnan(a), axis=axis))
            np.testing.assert_array_equal(s["nan_count"], np.sum(np.isnan(a), axis=axis))
            for key, f in (("mean", np.nanmean), ("std", np.nanstd), ("min", np.nanmin), ("max", np.nanmax)):
                np.testing.assert_allclose(s[key], f(a, axis=axis), rtol=1e-9, err_msg=key)


def test_float16_is_refused_by_stacked_batches_naming_it(cube):
    """Stacked batches do not take float16 yet (docs/batching.md): a clear error, no garbage."""
    path, _ = cube
    with pytest.raises(lazycube.UsageError, match="'h' has dtype float16"):
        lazycube.BatchGenerator(path, DIMS, batch_size=4, variables=["h"])
