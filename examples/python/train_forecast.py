"""Trains a small forecast model with rollout on the bundled sample: inputs at t-1h and t,
targets at t+1h .. t+3h, forcings (solar radiation, day and year progress) from lazycube's
derived forcings, the rollout growing with the epochs (only the lead times in use are read).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_forecast.py [URL] [--epochs N]

Prints one line per epoch: "epoch E rollout K loss FIRST -> LAST".
"""

import argparse

import torch  # before lazycube

import lazycube
import lazycube.torch as lctorch

VARIABLES = ["t2m", "u10", "v10", "msl"]
FORCINGS = ["toa_incident_solar_radiation", "day_progress_sin", "day_progress_cos", "year_progress_sin"]


class Step(torch.nn.Module):
    """One hour ahead: the state at t-1h and t plus the forcings at t+1h -> the state at t+1h."""

    def __init__(self, channels, forcings):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(2 * channels + forcings, 32, 3, padding=1), torch.nn.GELU(),
            torch.nn.Conv2d(32, channels, 3, padding=1))

    def forward(self, previous, current, forcing):
        return current + self.net(torch.cat([previous, current, forcing], dim=1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url", nargs="?", default="data/era5_sample_v2.zarr")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--workers", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(0)

    stats = lazycube.stats(args.url, variables=VARIABLES)  # per-variable mean/std for normalisation
    data = lctorch.ForecastDataset(
        args.url, batch_size=args.batch_size, shuffle="chunk", seed=0, normalize=stats,
        rollout={"start": 1, "every_epochs": 1, "max": 3},
        inputs=VARIABLES, targets=VARIABLES, forcings=FORCINGS,
        input_offsets=["-1h", "0h"], target_offsets=["1h", "2h", "3h"])
    print("%d samples, excluded %s" % (len(data.samples), data.samples.excluded))
    model = Step(len(VARIABLES), len(FORCINGS))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loader = data.loader(num_workers=args.workers)
    for epoch in range(args.epochs):
        data.set_epoch(epoch)
        losses = []
        for batch in loader:
            x, y, f = batch["inputs"], batch["targets"], batch["forcings"]
            previous, current = x[:, 0], x[:, 1]
            loss = 0.0
            for k in range(y.shape[1]):  # autoregressive rollout over the lead times read
                predicted = model(previous, current, f[:, 2 + k])
                loss = loss + torch.nn.functional.mse_loss(predicted, y[:, k])
                previous, current = current, predicted
            loss = loss / y.shape[1]
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        print("epoch %d rollout %d loss %.4f -> %.4f" % (epoch, y.shape[1], losses[0], losses[-1]))


if __name__ == "__main__":
    main()
