"""The torch datasets over gs:// with a service-account key file, in DataLoader workers (each
worker opens its own store and gets its own tokens), against the loopback stand-in of
gcs_service_account_fixture.py: every window equals the local read."""

import numpy as np
import pytest

from gcs_service_account_fixture import ERA5 as LOCAL, URL, gcs  # noqa: F401,F811 (gcs: a fixture)
from conftest import import_lazycube

torch = pytest.importorskip("torch")  # before lazycube
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402
from torch.utils.data import DataLoader, Subset  # noqa: E402

DIMS = {"time": 4, "latitude": 16, "longitude": 16}


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_window_dataset_in_workers(gcs, method):
    options = {"token": str(gcs["key"]), "endpoint_url": gcs["endpoint"]}
    remote = lctorch.WindowDataset(URL, input_dims=DIMS, variables=["t2m", "msl"],
                                   storage_options=options)
    local = lctorch.WindowDataset(str(LOCAL), input_dims=DIMS, variables=["t2m", "msl"])
    assert len(remote) == len(local)
    picks = list(range(0, len(local), max(1, len(local) // 12)))
    loader = DataLoader(Subset(remote, picks), batch_size=None, num_workers=2, multiprocessing_context=method)
    got = [item.numpy() for item in loader]
    assert len(got) == len(picks)
    for i, item in zip(picks, got):
        np.testing.assert_array_equal(item, local[i].numpy())
