"""One rank of the distributed BatchDataset test (tests/python/test_torch_distributed.py).

Launched by PyTorch's launcher, e.g.
    /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 --redirects 9:1 --tee 9:1 \\
        tests/python/distributed_worker.py --url data/era5_sample_v2.zarr --out DIR --mode full

Modes (several may be given, comma-separated, and run in turn; each rank writes DIR/<mode>-rank<R>.json):
  full       epochs 0..E-1 in full: {"epochs": {e: [window ids in the order seen]}}
  interrupt  epoch --epoch, stops after --stop-after batches: {"ids": [...], "state": state()}
  workers    epoch 0 through a DataLoader with 2 forked workers per rank: {"ids": [...]}
  resume     restores the state the same rank saved in interrupt mode, finishes that epoch:
             {"ids": [...]}
  forms      epoch 0 of each BatchDataset construction form -- URL, lazycube.open_dataset(url),
             lazycube.BatchGenerator(lazycube.open_dataset(url)) -- through a DataLoader with 2
             workers (forked; spawned for the generator form), sharded by the process group:
             {"ids": {form: [...]}}; and with an explicit rank=0/world_size=1 (URL and generator
             forms), which wins over the process group: {"explicit": {form: [...]}}
Every mode also all-reduces the number of windows seen over the gloo group ("total").
"""

import argparse
import json
import os

import torch  # before lazycube
import torch.distributed as dist
from torch.utils.data import DataLoader

import lazycube
import lazycube.torch as lctorch

INPUT = {"time": 4, "latitude": 16, "longitude": 16}
VARS = ["t2m", "u10", "v10"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--mode", required=True, help="full, interrupt or resume; several: comma-separated")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--stop-after", type=int, default=3)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()

    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert int(os.environ["LOCAL_RANK"]) == rank
    for mode in args.mode.split(","):
        run(args, mode, rank, world)
    dist.barrier()
    dist.destroy_process_group()


def run(args, mode, rank, world):
    assert mode in ("full", "workers", "interrupt", "resume", "forms"), mode
    if mode == "forms":
        return run_forms(args, rank, world)
    ds = lctorch.BatchDataset(args.url, input_dims={"time": 4, "latitude": 16, "longitude": 16},
                              batch_size=16, variables=["t2m", "u10", "v10"], shuffle="random",
                              seed=args.seed, target={"offset": {"time": 1}}, return_window_ids=True)
    loader = DataLoader(ds, batch_size=None, num_workers=0)
    out = {"rank": rank, "world_size": world, "len": len(ds),
           "total_windows": int(ds.generator.total_windows)}
    seen = 0

    if mode == "full":
        out["epochs"] = {}
        for epoch in range(args.epochs):
            ds.set_epoch(epoch)
            ids = []
            for x, y, wid in loader:
                assert x.shape == y.shape and x.shape[0] == len(wid)
                ids.extend(wid.tolist())
            out["epochs"][str(epoch)] = ids
            seen += len(ids)
    elif mode == "workers":  # epoch 0 through 2 forked DataLoader workers per rank
        ds = lctorch.BatchDataset(args.url, input_dims={"time": 4, "latitude": 16, "longitude": 16},
                                  batch_size=16, variables=["t2m", "u10", "v10"], shuffle="random",
                                  seed=args.seed, target={"offset": {"time": 1}}, return_window_ids=True,
                                  num_workers=2)
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
        batches = [wid.tolist() for _x, _y, wid in loader]
        ids = [i for b in batches for i in b]
        out["ids"], out["len"], out["batches"] = ids, len(ds), len(batches)
        seen = len(ids)
    elif mode == "interrupt":
        ds.set_epoch(args.epoch)
        ids = []
        for k, (_x, _y, wid) in enumerate(loader):
            ids.extend(wid.tolist())
            if k + 1 == args.stop_after:
                break
        out["ids"], out["state"] = ids, ds.state()
        seen = len(ids)
    else:
        with open(os.path.join(args.out, "interrupt-rank%d.json" % rank)) as f:
            state = json.load(f)["state"]
        ds.restore(state)
        ids = []
        for _x, _y, wid in loader:
            ids.extend(wid.tolist())
        out["ids"] = ids
        seen = len(ids)

    total = torch.tensor([seen], dtype=torch.int64)
    dist.all_reduce(total)  # a real collective over the gloo group
    out["total"] = int(total.item())
    with open(os.path.join(args.out, "%s-rank%d.json" % (mode, rank)), "w") as f:
        json.dump(out, f)


def run_forms(args, rank, world):
    def ids(ds, context="fork"):
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=context)
        return [i for _x, wid in loader for i in wid.tolist()]

    common = dict(batch_size=16, variables=VARS, shuffle="random", seed=args.seed, drop_last=False)
    gen = lazycube.BatchGenerator(lazycube.open_dataset(args.url), INPUT, **common)
    out = {"rank": rank, "world_size": world, "total_windows": gen.total_windows, "ids": {
        "url": ids(lctorch.BatchDataset(args.url, input_dims=INPUT, return_window_ids=True, **common)),
        "lazycube": ids(lctorch.BatchDataset(lazycube.open_dataset(args.url), input_dims=INPUT,
                                             return_window_ids=True, **common)),
        "generator": ids(lctorch.BatchDataset(gen, return_window_ids=True), "spawn"),
    }, "explicit": {
        "url": ids(lctorch.BatchDataset(args.url, input_dims=INPUT, return_window_ids=True, rank=0,
                                        world_size=1, **common)),
        "generator": ids(lctorch.BatchDataset(
            lazycube.BatchGenerator(args.url, INPUT, rank=0, world_size=1, **common),
            return_window_ids=True)),
    }}
    with open(os.path.join(args.out, "forms-rank%d.json" % rank), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
