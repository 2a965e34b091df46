"""One rank of the distributed PredictionWriter tests (tests/python/test_prediction_writer.py).

Launched once by PyTorch's launcher with 2 ranks on gloo for several jobs:
    /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 --redirects 9:1 --tee 9:1 \\
        tests/python/prediction_worker.py --url TEMPLATE.zarr --jobs JOBS.json --result PREFIX
JOBS.json: [{"name": ..., "out": OUT.zarr, "blend": "mean", "skip_last": false}, ...]. For each
job every rank reads its shard of a shuffled epoch (BatchDataset, sharded by the process group),
runs the test's "model" (prediction_model) and writes what it predicted; close() is collective
and rank 0 finalises the store. With skip_last, rank 1 leaves out its last batch. Each rank
writes PREFIX.rank<R>.json: {name: {"ids": [...], "flushed_before_close": n, "error": str|None}}
or {name: {"open_error": str}} when the writer could not be made.
"""

import argparse
import json

import torch  # before lazycube
import torch.distributed as dist

import lazycube
import lazycube.torch as lctorch
from prediction_model import BATCH, INPUT_DIMS, INPUT_OVERLAP, OUTPUTS, SEED, VARIABLES, model


def run(url, job, rank):
    ds = lctorch.BatchDataset(url, input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                              variables=VARIABLES, batch_size=BATCH, shuffle=True, seed=SEED,
                              drop_last=False, return_window_ids=True)
    try:
        writer = lazycube.PredictionWriter(url, job["out"], variables=OUTPUTS,
                                           input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                                           blend=job["blend"], chunks={"lat": 6, "lon": 7})
    except lazycube.Error as exc:  # e.g. an existing destination: every rank learns it
        return {"open_error": str(exc)}
    seen = []
    batches = list(ds)
    if job.get("skip_last") and rank == 1:
        batches = batches[:-1]
    for x, ids in batches:
        writer.write(ids, model(x))
        seen += ids.tolist()
    flushed = writer.units_written
    error = None
    try:
        writer.close()
    except lazycube.UsageError as exc:
        error = str(exc)
    return {"ids": seen, "flushed_before_close": flushed, "error": error}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--jobs", required=True)
    p.add_argument("--result", required=True)
    args = p.parse_args()
    with open(args.jobs) as f:
        jobs = json.load(f)

    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    results = {job["name"]: run(args.url, job, rank) for job in jobs}
    with open(args.result + ".rank%d.json" % rank, "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
