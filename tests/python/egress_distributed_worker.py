"""One rank of the W = 8 epoch test of lazycube.torch.ForecastDataset
(tests/python/test_torch_forecast_egress.py), launched by torchrun on the gloo backend: iterates
one epoch of shuffle="chunk" batches through a chunk cache of --cache-bytes (its own, as each
rank of a job has) and writes OUT/rank<R>.json with the samples it received, its batch count and
its fetch counters; the validity index is built by one rank: the others wait on its lock in
--index-dir and read it, or, with --separate-index-dirs (ranks as on nodes that share no folder),
receive it from rank 0 over the process group."""

import argparse
import json

import torch  # before lazycube
import torch.distributed as dist

import lazycube.torch as lctorch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--index-dir", required=True)
    p.add_argument("--cache-bytes", type=int, required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--separate-index-dirs", action="store_true")
    args = p.parse_args()
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    index_dir = "%s/rank%d" % (args.index_dir, rank) if args.separate_index_dirs else args.index_dir
    ds = lctorch.ForecastDataset(args.url, batch_size=8, shuffle="chunk", seed=3, inputs=["t2m"],
                                 targets=["t2m"], input_offsets=["-6h", "0h"],
                                 target_offsets=["6h", "12h", "18h", "24h"], cache_bytes=args.cache_bytes,
                                 index_dir=index_dir)
    seen, batches = [], 0
    for batch in ds.loader(num_workers=args.workers):
        seen.extend(int(s) for s in batch["samples"])
        batches += 1
    out = {"items": seen, "batches": batches, "len": len(ds), "fetched": ds.fetch_stats(),
           "index_loaded": bool(ds.samples.core.index_loaded)}
    with open("%s/rank%d.json" % (args.out, rank), "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
