"""One rank of the distributed PredictionWriter test (tests/python/test_prediction_writer.py).

Launched by PyTorch's launcher with 2 ranks on gloo:
    /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 --redirects 9:1 --tee 9:1 \\
        tests/python/prediction_worker.py --url TEMPLATE.zarr --out OUT.zarr --blend mean
Each rank reads its shard of a shuffled epoch (BatchDataset, sharded by the process group),
runs the "model" of the test (prediction_model) and writes what it predicted; close() is
collective and rank 0 finalises the store.
"""

import argparse
import json

import torch  # before lazycube
import torch.distributed as dist

import lazycube
import lazycube.torch as lctorch
from prediction_model import BATCH, INPUT_DIMS, INPUT_OVERLAP, OUTPUTS, SEED, VARIABLES, model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--blend", required=True)
    p.add_argument("--ids", required=True, help="JSON file per rank: the window ids written, in order")
    p.add_argument("--skip-last", action="store_true",
                   help="rank 1 leaves out its last batch: close() must fail on every rank")
    args = p.parse_args()

    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    ds = lctorch.BatchDataset(args.url, input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                              variables=VARIABLES, batch_size=BATCH, shuffle=True, seed=SEED,
                              drop_last=False, return_window_ids=True)
    try:
        writer = lazycube.PredictionWriter(args.url, args.out, variables=OUTPUTS,
                                           input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                                           blend=args.blend, chunks={"lat": 6, "lon": 7})
    except lazycube.Error as exc:  # e.g. an existing destination: every rank learns it
        with open(args.ids + ".rank%d.json" % rank, "w") as f:
            json.dump({"open_error": str(exc)}, f)
        dist.destroy_process_group()
        return
    seen = []
    batches = list(ds)
    if args.skip_last and rank == 1:
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
    with open(args.ids + ".rank%d.json" % rank, "w") as f:
        json.dump({"ids": seen, "flushed_before_close": flushed, "error": error}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
