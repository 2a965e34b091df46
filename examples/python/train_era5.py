"""Trains a small CNN to predict t2m one hour ahead from (t2m, u10, v10) on a lazycube cube.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_era5.py [URL] [--steps N]
        [--workers N] [--batch-size N] [--device auto|cpu|cuda]

Batches are assembled in C++ (chunk-grouped shuffle, prefetched), handed to PyTorch without a
copy, and sharded automatically across DataLoader workers (and torch.distributed ranks). On a
GPU (--device cuda, the default when torch sees one) lazycube assembles them in pinned memory
and copies them on a side stream while the model trains on the previous batch; the loader then
runs in this process (the copy needs it), so --workers is ignored.
"""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader
from tqdm import tqdm

from lazycube.torch import BatchDataset


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", nargs="?", default="data/era5_sample_v2.zarr")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                    help="where to train (auto: cuda when torch sees a GPU)")
    args = ap.parse_args()
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if use_cuda else "cpu")
    workers = 0 if use_cuda else args.workers

    data = BatchDataset(args.url, input_dims={"time": 1, "latitude": 32, "longitude": 32},
                        batch_size=args.batch_size, variables=["t2m", "u10", "v10"],
                        target={"variables": ["t2m"], "offset": {"time": 1}},
                        shuffle="chunk", seed=0, device=device if use_cuda else None)
    loader = DataLoader(data, batch_size=None, num_workers=workers, persistent_workers=workers > 0)
    # x: (sample, channel=3, time=1, 32, 32) -> predict y: (sample, 1, 1, 32, 32)
    model = nn.Sequential(nn.Conv3d(3, 16, (1, 3, 3), padding=(0, 1, 1)), nn.ReLU(),
                          nn.Conv3d(16, 1, (1, 3, 3), padding=(0, 1, 1))).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    step, windows, t0 = 0, 0, time.perf_counter()
    losses = []
    with tqdm(total=args.steps, unit="batch") as bar:
        epoch = 0
        while step < args.steps:
            data.set_epoch(epoch)
            for x, y in loader:
                # Normalise per batch (temperatures in K, winds in m/s).
                mean = x.mean(dim=(0, 2, 3, 4), keepdim=True)
                std = x.std(dim=(0, 2, 3, 4), keepdim=True) + 1e-6
                xn = (x - mean) / std
                yn = (y - mean[:, :1]) / std[:, :1]
                loss = nn.functional.mse_loss(model(xn), yn)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                windows += x.shape[0]
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
                if step >= args.steps:
                    break
            epoch += 1
    seconds = time.perf_counter() - t0
    first = sum(losses[:5]) / min(5, len(losses))
    last = sum(losses[-5:]) / min(5, len(losses))
    print(f"steps {step}  epochs {epoch}  loss {first:.4f} -> {last:.4f}  "
          f"{windows / seconds:.0f} windows/s ({seconds:.1f} s) on {device}")


if __name__ == "__main__":
    main()
