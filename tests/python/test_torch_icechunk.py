"""The torch datasets over an Icechunk repository (issue 18): the version, group and virtual chunk
containers given to BatchDataset / WindowDataset reach spawned DataLoader workers, which reopen
the repository (the container's credentials travel in the pickle, masked in repr). The virtual
chunk is served by moto with SigV4 checked.
"""

import sys

import numpy as np
import pytest

from conftest import REPO, import_lazycube

torch = pytest.importorskip("torch")  # before lazycube
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "servers"))
import moto_server  # noqa: E402

DIMS = {"dim_0": 5, "dim_1": 5}


@pytest.fixture(scope="module")
def repository(shared_data):
    path = shared_data / "icechunk-fixtures" / "test-repo-v2"
    if not path.is_dir():
        pytest.skip("Icechunk fixture not found at %s" % path)
    return path


@pytest.fixture(scope="module")
def container(repository, tmp_path_factory, no_aws_environment):
    """moto holding the virtual chunk at s3://testbucket/can_read_old/chunk-1 (SigV4 on), and the
    container options that authorise it."""
    reason = moto_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    virtual = tmp_path_factory.mktemp("virtual")
    (virtual / "chunk-1").write_bytes(next((repository / "chunks").iterdir()).read_bytes())
    with moto_server.MotoServer("testbucket", {virtual: "can_read_old"}) as server:
        server.set_auth(True)
        yield {"s3://testbucket/": {"endpoint_url": server.endpoint, "region_name": "us-east-1",
                                    "key": server.key_id, "secret": server.secret}}


def test_spawned_workers_reopen_the_chosen_version(repository, container):
    open_args = dict(tag="it works!", group="group1/big_chunks", virtual_chunk_containers=container)
    secret = container["s3://testbucket/"]["secret"]
    batches = lctorch.BatchDataset(str(repository), input_dims=DIMS, batch_size=2, variables=["big_chunks"],
                                   **open_args)
    assert secret not in repr(batches._pipeline) and "***" in repr(batches._pipeline)
    windows = lctorch.WindowDataset(lazycube.open_dataset(str(repository), **open_args), input_dims=DIMS)
    assert len(windows) == 4
    for dataset, batch_size in ((batches, None), (windows, 2)):
        loader = DataLoader(dataset, batch_size=batch_size, num_workers=1, multiprocessing_context="spawn")
        items = list(loader)
        assert sum(int(x.shape[0]) for x in items) == 4
        for x in items:
            np.testing.assert_array_equal(x.numpy(), np.full(tuple(x.shape), 42.0, dtype=np.float32))
