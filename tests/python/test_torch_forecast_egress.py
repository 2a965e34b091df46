"""The epoch planner across processes (docs/forecast.md "Epochs at scale"): 8 torchrun ranks
(gloo), each with its own small chunk cache, read one epoch of chunk-shuffled forecast samples
of a store with one time step per chunk. Every sample is delivered exactly once, every rank
yields as many batches, the chunks the job fetched add up to about the bytes its samples need
(egress, from the ranks' own counters), and the validity index is built by one process only,
whether the ranks share an index directory or not."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import import_lazycube, torchrun

torch = pytest.importorskip("torch")
zarr = pytest.importorskip("zarr")
lazycube = import_lazycube()

HERE = Path(__file__).resolve().parent
STEPS, NY, NX = 1500, 8, 16  # six-hourly, one step per chunk


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("egress") / "era5_steps.zarr"
    root = zarr.open_group(str(path), mode="w")
    t = root.create_dataset("time", data=np.arange(STEPS, dtype="int64") * 6, chunks=(STEPS,), fill_value=None)
    t.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 2000-01-01", "calendar": "standard"})
    rng = np.random.default_rng(0)
    a = root.create_dataset("t2m", data=rng.standard_normal((STEPS, NY, NX)).astype("float32"),
                            chunks=(1, NY, NX), compressor=None)
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
    return str(path)


@pytest.mark.parametrize("separate_index_dirs", [False, True], ids=["shared-index-dir", "separate-index-dirs"])
def test_eight_ranks_fetch_each_chunk_about_once(store, tmp_path, separate_index_dirs):
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    step_bytes = NY * NX * 4
    cache = 64 * 6 * step_bytes  # 64 sample footprints of 6 steps
    index_dir = tmp_path / "validity"
    torchrun(HERE / "egress_distributed_worker.py", 8, "--url", store, "--out", tmp_path, "--index-dir", index_dir,
             "--cache-bytes", cache, *(["--separate-index-dirs"] if separate_index_dirs else []), timeout=600)
    ranks = [json.loads((tmp_path / ("rank%d.json" % r)).read_text()) for r in range(8)]
    samples = STEPS - 5  # anchors with -6h and +24h inside the data
    delivered = sorted(s for r in ranks for s in r["items"])
    assert delivered == list(range(samples))
    assert len({r["batches"] for r in ranks}) == 1 and ranks[0]["batches"] == ranks[0]["len"]
    fetched = sum(r["fetched"]["bytes"] for r in ranks)
    needed = STEPS * step_bytes  # every step is read by some sample
    print("job egress %.3f; per rank %s" % (fetched / needed, [r["fetched"]["egress_ratio"] for r in ranks]))
    assert fetched / needed <= 1.10, (fetched / needed, [r["fetched"] for r in ranks])
    for r in ranks:
        assert r["fetched"]["egress_ratio"] <= 1.10
    # one validity pass for the job: one rank built it, seven read it (from the index directory
    # they share, or, sharing none as on separate nodes, from rank 0 over the process group)
    assert sum(not r["index_loaded"] for r in ranks) == 1
