"""``lazycube.torch.ForecastDataset``: batches of forecast samples (lazycube.ForecastSamples) as
torch tensors, sharded over distributed ranks and DataLoader workers, with rollout, per-channel
normalisation from ``lazycube stats`` files and an elastic resume (docs/forecast.md).

Sharding: one epoch's order of samples (a function of seed and epoch) is dealt in batches: rank r
of W takes global batches r, r + W, ... (the last round's remaining samples dealt in batches that
differ by at most one sample, so every rank yields the same number of batches), and DataLoader
worker w of n takes its rank's batches w, w + n, ..., which the DataLoader hands out in rank
order. Ranks and world size come from ``lazycube.pipeline.resolve_shard`` (torch.distributed
when initialised; explicit ``rank=`` / ``world_size=`` win).

Resume: ``state_dict()`` counts the batches the training loop received -- iterating the dataset
itself, or a loader made by :meth:`ForecastDataset.loader` (a DataLoader that counts what it
yields; a plain DataLoader cannot tell the dataset) -- and says which epoch position they reach:
``start + received * world_size * batch_size``. Every rank receives as many batches, so rank 0's
state describes the job; ``load_state_dict(state)`` in a job of any world size and worker count
continues that epoch from there, and across both runs every sample of the epoch is delivered
once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy
import torch
import torch.utils.data

from .forecast import ForecastSamples, _rebuild, rollout_at
from .pipeline import keep_foreign, resolve_shard
from .statistics import Stats, normalize_document
from .torch_loader import CountingLoader

__all__ = ["ForecastDataset"]

_STATE_FORMAT = "lazycube-forecast-state"
# A forked DataLoader worker reads through a chunk cache of its own (the inherited process-wide
# cache may hold chunks a parent thread was loading at fork time).
_FORK_CACHE_BYTES = 512 << 20


def _shuffle_name(shuffle):
    """The registered order's name a shuffle argument means (as the core's states write it)."""
    if shuffle is None or shuffle is False:
        return "none"
    if shuffle is True:
        return "random"
    return str(shuffle)


def _channel_norm(stats, channels, role):
    """(mean, std) float32 arrays over `channels` (the core's (name, variable, at, derived)),
    from the statistics of each channel's variable at the channel's element of its kept dims.
    Derived forcings are already scaled (docs/forecast.md); a forcing variable without statistics
    is left as it is; an input or target variable without them is a ValueError."""
    mean = numpy.zeros(len(channels), numpy.float32)
    std = numpy.ones(len(channels), numpy.float32)
    for c, (name, var, at, derived) in enumerate(channels):
        if derived:
            continue
        if var not in stats:
            if role == "forcings":
                continue
            raise ValueError("normalize: no statistics for %s variable %r (the statistics hold: %s)"
                             % (role[:-1], var, ", ".join(stats) or "nothing"))
        s = stats[var]
        index = []
        for d in s["dims"]:
            if d not in at:
                raise ValueError("normalize: the statistics of %r keep dim %r, which is not one of its "
                                 "channel dims (%s): compute them keeping only those (lazycube stats --dims)"
                                 % (var, d, ", ".join(at) or "none"))
            index.append(at[d])
        m, sd = float(s["mean"][tuple(index)]), float(s["std"][tuple(index)])
        if not (numpy.isfinite(m) and numpy.isfinite(sd) and sd > 0):
            raise ValueError("normalize: %s of %r has mean %r and std %r; std must be a finite number > 0"
                             % (name, var, m, sd))
        mean[c], std[c] = m, sd
    return mean, std


class ForecastDataset(torch.utils.data.IterableDataset):
    """Batches of forecast samples as dicts of tensors: ``ForecastDataset(samples, batch_size=8)``
    over a :class:`lazycube.ForecastSamples`, or ``ForecastDataset(source, batch_size=8,
    inputs=..., targets=..., ...)`` with ForecastSamples' own arguments.

    Items: ``{"anchor", "samples", "inputs", "targets", "forcings", ...}`` (one stream) or
    ``{stream: {...}}`` per stream, tensors with a leading sample dim (as
    ``ForecastSamples.batches``). ``rollout``: the lead times used (an int, or a schedule
    ``{"start": 1, "every_epochs": 2, "max": 12}`` evaluated per epoch); only those are read.
    ``normalize``: a stats file of ``lazycube stats`` (or a :class:`lazycube.Stats` / document),
    ``(v - mean) / std`` per channel with each channel's level. ``device``: tensors are moved
    there (pinned and non-blocking for CUDA)."""

    def __init__(self, samples, *, batch_size, shuffle=None, seed=0, rollout=None, normalize=None, device=None,
                 drop_last=False, rank=None, world_size=None, prefetch=4, **kwargs):
        super().__init__()
        if isinstance(samples, ForecastSamples):
            if kwargs:
                raise TypeError("ForecastDataset(samples) takes no ForecastSamples arguments (got %s)"
                                % ", ".join(sorted(kwargs)))
        else:
            samples = ForecastSamples(samples, **kwargs)
        self.samples = samples
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1, got %r" % (batch_size,))
        self.shuffle = shuffle
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.prefetch = int(prefetch)
        self.rollout = rollout
        if samples.leads:
            rollout_at(rollout, 0, samples.leads)  # checks it now
        self.device = torch.device(device) if device is not None else None
        if self.device is not None and self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("ForecastDataset(device=%r): CUDA is not available" % str(device))
        self._explicit = (rank, world_size)
        self._inherited = resolve_shard(rank, world_size)
        self._pid = os.getpid()
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()
        self._start = torch.zeros(2, dtype=torch.int64).share_memory_()  # (epoch + 1, position) of a resume
        self._received = 0
        self._norm = None
        if normalize is not None:
            stats = Stats(normalize_document(normalize))
            core = samples.core
            self._norm = {}
            for s, name in enumerate(core.stream_names):
                for role in ("inputs", "targets", "forcings"):
                    channels = core.channels(s, role)
                    if channels:
                        self._norm[(name, role)] = _channel_norm(stats, channels, role)

    # ---- processes and shards ----
    def __getstate__(self):
        state = dict(self.__dict__)
        return state

    def _samples(self):
        if os.getpid() != self._pid and self.samples._sources is not None:
            # a forked worker: its own core objects over a private cache; the parent's stay alive
            keep_foreign(self.samples._core)
            runtime = dict(self.samples._runtime)
            runtime["cache_bytes"] = runtime.get("cache_bytes") or _FORK_CACHE_BYTES
            self.samples = _rebuild(self.samples._sources, self.samples._document, runtime)
            self._pid = os.getpid()
        return self.samples

    def _shard(self):
        if self._explicit != (None, None):
            return resolve_shard(*self._explicit)
        return resolve_shard(inherited=self._inherited)

    # ---- epochs and resume ----
    @property
    def epoch(self) -> int:
        return int(self._epoch.item())

    def set_epoch(self, epoch):
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError("epoch must be >= 0")
        self._epoch.fill_(epoch)
        self._received = 0

    def _start_position(self, epoch):
        return int(self._start[1]) if int(self._start[0]) == epoch + 1 else 0

    def state_dict(self, received=None) -> dict:
        """Where the job stands: the epoch and the epoch position the received batches reach
        (`received`: the batches this rank's loop received in this epoch, if the loop counts them
        itself; default: what this dataset or its loader() yielded)."""
        rank, world = self._shard()
        epoch = self.epoch
        k = self._received if received is None else int(received)
        sched = self.samples.schedule(self.batch_size, self.shuffle, self.seed, epoch, rank, world, 0, 1,
                                      self._start_position(epoch), self.drop_last)
        return {"format": _STATE_FORMAT, "epoch": epoch, "position": int(sched.position(k)),
                "samples": len(self.samples), "batch_size": self.batch_size, "seed": self.seed,
                "shuffle": _shuffle_name(self.shuffle),
                "spec": self.samples.spec}

    def load_state_dict(self, state: Mapping):
        """Continues the epoch of `state` from its position, in this job whatever its world size
        and worker count (ValueError when it belongs to other samples or another order)."""
        if not isinstance(state, Mapping) or state.get("format") != _STATE_FORMAT:
            raise ValueError("not a ForecastDataset state (format %r)" % (state.get("format") if isinstance(state, Mapping) else state,))
        for key, mine in (("samples", len(self.samples)), ("seed", self.seed), ("shuffle", _shuffle_name(self.shuffle)),
                          ("batch_size", self.batch_size),
                          ("spec", self.samples.spec)):
            if state.get(key) != mine:
                raise ValueError("the state belongs to other forecast samples: its %s is %r, this dataset's %r"
                                 % (key, state.get(key), mine))
        position = int(state["position"])
        if not 0 <= position <= len(self.samples):
            raise ValueError("state position %d is outside the epoch's %d samples" % (position, len(self.samples)))
        self._epoch.fill_(int(state["epoch"]))
        self._start[0] = int(state["epoch"]) + 1
        self._start[1] = position
        self._received = 0

    # ---- iteration ----
    def __len__(self):
        """Batches this rank receives in the current epoch (all workers together)."""
        rank, world = self._shard()
        return int(self.samples.schedule(self.batch_size, self.shuffle, self.seed, self.epoch, rank, world, 0, 1,
                                         self._start_position(self.epoch), self.drop_last).rank_batches)

    def _tensors(self, batch):
        def one(key, value, stream):
            if not isinstance(value, numpy.ndarray):
                return value
            if value.dtype.kind == "M":
                return torch.from_numpy(value.astype("int64"))
            t = torch.from_numpy(value)
            if self._norm is not None and key in ("inputs", "targets", "forcings") and (stream, key) in self._norm:
                mean, std = self._norm[(stream, key)]
                shape = (1, 1, -1) + (1,) * (t.dim() - 3)
                t = (t - torch.from_numpy(mean).view(shape)) / torch.from_numpy(std).view(shape)
            if self.device is not None:
                if self.device.type == "cuda":
                    t = t.pin_memory().to(self.device, non_blocking=True)
                else:
                    t = t.to(self.device)
            return t

        names = [n for n in self.samples.streams]
        if names == [""]:
            return {k: (one(k, v, "") if not isinstance(v, dict) else {m: one(m, x, "") for m, x in v.items()})
                    for k, v in batch.items()}
        out = {}
        for k, v in batch.items():
            if k in names:
                out[k] = {m: (one(m, x, k) if not isinstance(x, dict) else {mm: one(mm, xx, k) for mm, xx in x.items()})
                          for m, x in v.items()}
            else:
                out[k] = one(k, v, None)
        return out

    def _batches(self, counting):
        samples = self._samples()
        rank, world = self._shard()
        info = torch.utils.data.get_worker_info()
        worker, nworkers = (info.id, info.num_workers) if info is not None else (0, 1)
        epoch = self.epoch
        for batch in samples.batches(self.batch_size, self.shuffle, self.seed, epoch, self.rollout, self.drop_last,
                                     rank, world, self._start_position(epoch), self.prefetch, worker=worker,
                                     num_workers=nworkers):
            if counting:
                self._received += 1
            yield self._tensors(batch)

    def __iter__(self):
        return self._batches(counting=torch.utils.data.get_worker_info() is None)

    def loader(self, **kwargs) -> torch.utils.data.DataLoader:
        """A DataLoader over this dataset (batch_size=None: items are whole batches) that counts
        the batches it yields to the training loop, for state_dict()."""
        kwargs.setdefault("batch_size", None)
        return CountingLoader(self, **kwargs)
