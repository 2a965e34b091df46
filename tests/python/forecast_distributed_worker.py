"""One rank of the elastic-resume test of lazycube.torch.ForecastDataset
(tests/python/test_torch_forecast.py), launched by torchrun on the gloo backend:

  first   iterates epoch --epoch through ds.loader(num_workers=2, spawned workers) and stops
          after --stop-after batches; writes {"samples": [...], "state": state_dict()}
  resume  loads the state rank 0 saved (--state) and finishes the epoch through a loader of
          --workers spawned workers; writes {"samples": [...], "batches": n}

Each rank writes OUT/<mode>-rank<R>.json; all ranks all-reduce their batch count, which must be
equal (a DDP job steps together).
"""

import argparse
import json

import torch  # before lazycube
import torch.distributed as dist

import lazycube
import lazycube.torch as lctorch

SPEC = dict(inputs=["t2m", "u10"], targets=["t2m"], forcings=["year_progress_sin"],
            input_offsets=["-1h", "0h"], target_offsets=["1h", "2h"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--mode", required=True)
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--stop-after", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--state")
    p.add_argument("--index-dir", required=True)
    args = p.parse_args()
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    ds = lctorch.ForecastDataset(args.url, batch_size=4, shuffle="random", seed=11, rollout=1,
                                 index_dir=args.index_dir, **SPEC)
    seen, batches = [], 0
    if args.mode == "first":
        ds.set_epoch(args.epoch)
        loader = ds.loader(num_workers=args.workers, multiprocessing_context="spawn")
        for batch in loader:
            assert batch["targets"].shape[1] == 1
            seen.extend(int(s) for s in batch["samples"])
            batches += 1
            if batches == args.stop_after:
                break
        out = {"samples": seen, "state": ds.state_dict(), "total": len(ds.samples)}
    else:
        with open(args.state) as f:
            ds.load_state_dict(json.load(f))
        loader = ds.loader(num_workers=args.workers, multiprocessing_context="spawn")
        for batch in loader:
            seen.extend(int(s) for s in batch["samples"])
            batches += 1
        out = {"samples": seen, "batches": batches, "epoch": ds.epoch}
    counts = [torch.tensor([batches]) for _ in range(dist.get_world_size())]
    dist.all_gather(counts, torch.tensor([batches]))
    out["all_batches"] = [int(c) for c in counts]
    with open("%s/%s-rank%d.json" % (args.out, args.mode, rank), "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
