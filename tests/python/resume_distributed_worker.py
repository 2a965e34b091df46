"""One rank of the elastic-resume tests of lazycube.torch.ForecastDataset
(tests/python/test_torch_forecast.py) and BatchDataset (test_torch_batch_resume.py), launched by
torchrun on the gloo backend:

  first   iterates epoch --epoch through ds.loader(num_workers=2, spawned workers) and stops
          after --stop-after batches; writes {"items": [...], "state": state_dict()}
  resume  loads the state rank 0 saved (--state) and finishes the epoch through a loader of
          --workers spawned workers; writes {"items": [...], "batches": n}

--dataset forecast: items are sample ids; batch: window ids (--sliding: 4-step windows with
overlap 3, which cross the sample's 24-step chunks: the epoch planner's blocks). Each rank writes
OUT/<mode>-rank<R>.json with every rank's batch count (all-gathered).
"""

import argparse
import json

import torch  # before lazycube
import torch.distributed as dist

import lazycube
import lazycube.torch as lctorch

SPEC = dict(inputs=["t2m", "u10"], targets=["t2m"], forcings=["year_progress_sin"],
            input_offsets=["-1h", "0h"], target_offsets=["1h", "2h"])
# 288 windows (24 x 3 x 4) of the bundled sample, in chunk-shuffled batches of 4
BATCH = dict(input_dims={"time": 4, "latitude": 20, "longitude": 20}, batch_size=4, variables=["t2m"],
             shuffle="chunk", seed=11, return_window_ids=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--mode", required=True)
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--stop-after", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--state")
    p.add_argument("--index-dir")
    p.add_argument("--dataset", choices=["forecast", "batch"], default="forecast")
    p.add_argument("--sliding", action="store_true")
    args = p.parse_args()
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    if args.dataset == "forecast":
        ds = lctorch.ForecastDataset(args.url, batch_size=4, shuffle="random", seed=11, rollout=1,
                                     index_dir=args.index_dir, **SPEC)
        total = len(ds.samples)

        def items(batch):
            assert batch["targets"].shape[1] == 1
            return [int(s) for s in batch["samples"]]
    else:
        ds = lctorch.BatchDataset(args.url, **BATCH, **({"input_overlap": {"time": 3}} if args.sliding else {}))
        total = ds.generator.total_windows

        def items(batch):
            return [int(w) for w in batch[-1]]
    seen, batches = [], 0
    if args.mode == "first":
        ds.set_epoch(args.epoch)
        loader = ds.loader(num_workers=args.workers, multiprocessing_context="spawn")
        for batch in loader:
            seen.extend(items(batch))
            batches += 1
            if batches == args.stop_after:
                break
        out = {"items": seen, "state": ds.state_dict(), "total": total}
    else:
        with open(args.state) as f:
            ds.load_state_dict(json.load(f))
        loader = ds.loader(num_workers=args.workers, multiprocessing_context="spawn")
        for batch in loader:
            seen.extend(items(batch))
            batches += 1
        out = {"items": seen, "batches": batches, "epoch": ds.epoch}
    counts = [torch.tensor([batches]) for _ in range(dist.get_world_size())]
    dist.all_gather(counts, torch.tensor([batches]))
    out["all_batches"] = [int(c) for c in counts]
    with open("%s/%s-rank%d.json" % (args.out, args.mode, rank), "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
