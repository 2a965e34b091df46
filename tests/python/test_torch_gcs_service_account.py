"""The torch datasets over gs:// with a service-account key file, in DataLoader workers (each
worker opens its own store and gets its own tokens), against the loopback stand-in of
gcs_service_account_fixture.py: every window equals the local read."""

import numpy as np
import pytest

import gcs_service_account_fixture as gsa
from conftest import REPO, import_lazycube

torch = pytest.importorskip("torch")  # before lazycube
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402
from torch.utils.data import DataLoader, Subset  # noqa: E402

LOCAL = REPO / "data" / "era5_sample_v2.zarr"
DIMS = {"time": 4, "latitude": 16, "longitude": 16}


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    reason = gsa.unavailable_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("gcs")
    (tmp / "www" / "bkt").mkdir(parents=True)
    (tmp / "www" / "bkt" / "era5.zarr").symlink_to(LOCAL)
    with gsa.serving(tmp, tmp / "www") as g:
        yield g


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_window_dataset_in_workers(gcs, method):
    options = {"token": str(gcs["key"]), "endpoint_url": gcs["endpoint"]}
    remote = lctorch.WindowDataset("gs://bkt/era5.zarr", input_dims=DIMS, variables=["t2m", "msl"],
                                   storage_options=options)
    local = lctorch.WindowDataset(str(LOCAL), input_dims=DIMS, variables=["t2m", "msl"])
    assert len(remote) == len(local)
    picks = list(range(0, len(local), max(1, len(local) // 12)))
    loader = DataLoader(Subset(remote, picks), batch_size=None, num_workers=2, multiprocessing_context=method)
    got = [item.numpy() for item in loader]
    assert len(got) == len(picks)
    for i, item in zip(picks, got):
        np.testing.assert_array_equal(item, local[i].numpy())
