"""``lazycube.torch.ForecastDataset``: batches of forecast samples (lazycube.ForecastSamples) as
torch tensors, sharded over distributed ranks and DataLoader workers, with rollout, per-channel
normalisation from ``lazycube stats`` files and an elastic resume (docs/forecast.md).

Sharding (the batch layer's epoch planner, ``_core.EpochBatches``; docs/forecast.md "Epochs at
scale"): each rank owns a contiguous stretch of the epoch's order -- with shuffle="chunk",
blocks of samples whose time chunks overlap, several interleaved at once -- so that a chunk is
fetched by one rank, about once; every rank yields the same number of batches. DataLoader worker
w of n takes its rank's batches w, w + n, ..., which lie in the worker's own part of the rank's
stretch, and the DataLoader hands them out in the rank's order. Ranks and world size come from
``lazycube.pipeline.resolve_shard`` (torch.distributed when initialised; explicit ``rank=`` /
``world_size=`` win).

Resume: ``state_dict()`` counts the batches the training loop received -- iterating the dataset
itself, or a loader made by :meth:`ForecastDataset.loader` (a DataLoader that counts what it
yields and knows its worker count; a plain DataLoader cannot tell the dataset) -- and records the
stretches of the epoch's order not yet delivered, with the shards the order was planned for.
Every rank receives as many batches, so rank 0's state describes the job;
``load_state_dict(state)`` in a job of any world size and worker count continues that epoch, and
across both runs every sample of the epoch is delivered once.

Fetch counters: ``fetch_stats()`` adds up what this rank's processes (the workers included)
fetched -- requests, bytes, the bytes of the distinct chunks needed and the egress ratio -- so a
training job can log what an epoch costs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy
import torch
import torch.utils.data

from ._fetch_stats import FETCH_KEYS, with_ratio
from .forecast import ForecastSamples, _rebuild, rollout_at
from .pipeline import keep_foreign, resolve_shard
from .statistics import Stats, normalize_document
from .torch_loader import CountingLoader, warn_uncounted

__all__ = ["ForecastDataset"]

_STATE_FORMAT = "lazycube-forecast-state"
_STATE_VERSION = 2  # 2: the epoch planner's stretches ("remaining", "planned_for")
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


def _samples_with_one_validity_pass(source, kwargs):
    """ForecastSamples(source, **kwargs); in a torch.distributed job of several ranks, rank 0
    builds the validity index (one pass over the data for the whole job, whatever the nodes
    share) and broadcasts it, and the other ranks build theirs from it without reading the data."""
    import torch.distributed as dist
    # (rank 0's index is None where there is none to build: missing other than "skip")
    if (kwargs.get("validity_index") is not None
            or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1):
        return ForecastSamples(source, **kwargs)
    box, samples, failed = [None], None, None
    if dist.get_rank() == 0:
        try:
            samples = ForecastSamples(source, **kwargs)
            box = [("index", samples.validity_index)]
        except Exception as e:  # the other ranks wait on the broadcast: tell them, then raise
            failed, box = e, [("error", "%s: %s" % (type(e).__name__, e))]
    dist.broadcast_object_list(box, src=0)
    if failed is not None:
        raise failed
    kind, value = box[0]
    if kind == "error":
        raise RuntimeError("ForecastDataset: rank 0 could not build the samples (%s)" % value)
    return samples if samples is not None else ForecastSamples(source, validity_index=value, **kwargs)


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
                 drop_last=False, rank=None, world_size=None, prefetch=4, block_samples=None, active_blocks=None,
                 fetch_ahead_bytes=None, **kwargs):
        super().__init__()
        if isinstance(samples, ForecastSamples):
            if kwargs:
                raise TypeError("ForecastDataset(samples) takes no ForecastSamples arguments (got %s)"
                                % ", ".join(sorted(kwargs)))
        else:
            samples = _samples_with_one_validity_pass(samples, kwargs)
        self.samples = samples
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1, got %r" % (batch_size,))
        self.shuffle = shuffle
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.prefetch = int(prefetch)
        self.fetch_ahead_bytes = None if fetch_ahead_bytes is None else int(fetch_ahead_bytes)
        if self.fetch_ahead_bytes is not None and self.fetch_ahead_bytes < 0:
            raise ValueError("fetch_ahead_bytes must be >= 0 (0: off), got %r" % (fetch_ahead_bytes,))
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
        self._resume = None  # {"epoch", "remaining", "planned_for"} of a resumed epoch
        self.block_samples = block_samples
        self.active_blocks = active_blocks
        # what this rank's processes fetched (FETCH_KEYS), added up across its DataLoader workers
        self._fetched = torch.zeros(len(FETCH_KEYS), dtype=torch.int64).share_memory_()
        self._received = 0
        self._received_workers = None
        # batches DataLoader workers yielded this epoch: a plain DataLoader's, if nothing counted
        self._yielded_in_workers = torch.zeros(1, dtype=torch.int64).share_memory_()
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
        self._yielded_in_workers.zero_()

    def _resumed(self, epoch):
        """The stretches and planned shards of a resumed epoch `epoch`, or (None, None)."""
        r = self._resume
        if r is not None and r["epoch"] == epoch:
            return r["remaining"], r["planned_for"]
        return None, None

    def _schedule(self, epoch, rank, world, worker=0, nworkers=1, samples=None):
        remaining, planned = self._resumed(epoch)
        return (samples or self.samples).schedule(
            self.batch_size, self.shuffle, self.seed, epoch, rank, world, worker, nworkers, 0, self.drop_last,
            remaining, planned, self.block_samples, self.active_blocks)

    def state_dict(self, received=None, num_workers=None) -> dict:
        """Where the job stands: the epoch and the stretches of its order not yet delivered once
        every rank received `received` batches (default: what this dataset or its loader()
        yielded) through `num_workers` DataLoader workers (default: the counting loader's, else
        0: none)."""
        rank, world = self._shard()
        epoch = self.epoch
        if received is None:
            warn_uncounted(self)
        k = self._received if received is None else int(received)
        n = num_workers if num_workers is not None else self._received_workers
        n = max(1, int(n or 0))
        if k < 0:
            raise ValueError("state_dict: received must be >= 0")
        sched = self._schedule(epoch, 0, world, 0, n)
        return {"format": _STATE_FORMAT, "version": _STATE_VERSION, "epoch": epoch,
                "remaining": [[int(a), int(b)] for a, b in sched.remaining_after(k)],
                "planned_for": [int(x) for x in sched.planned_for],
                "samples": len(self.samples), "batch_size": self.batch_size, "seed": self.seed,
                "shuffle": _shuffle_name(self.shuffle),
                "spec": self.samples.spec}

    def load_state_dict(self, state: Mapping):
        """Continues the epoch of `state` where it stood, in this job whatever its world size
        and worker count (ValueError when it belongs to other samples or another order). Call it
        before the DataLoader starts its workers."""
        if not isinstance(state, Mapping) or state.get("format") != _STATE_FORMAT:
            raise ValueError("not a ForecastDataset state (format %r)" % (state.get("format") if isinstance(state, Mapping) else state,))
        if state.get("version") != _STATE_VERSION or "remaining" not in state:
            raise ValueError("the state was written by an older lazycube (version %r, no 'remaining' stretches): "
                             "its epoch order is not this version's; start the epoch again" % (state.get("version"),))
        for key, mine in (("samples", len(self.samples)), ("seed", self.seed), ("shuffle", _shuffle_name(self.shuffle)),
                          ("batch_size", self.batch_size),
                          ("spec", self.samples.spec)):
            if state.get(key) != mine:
                raise ValueError("the state belongs to other forecast samples: its %s is %r, this dataset's %r"
                                 % (key, state.get(key), mine))
        remaining = [(int(a), int(b)) for a, b in state["remaining"]]
        planned = tuple(int(x) for x in state["planned_for"])
        epoch = int(state["epoch"])
        self._resume = {"epoch": epoch, "remaining": remaining, "planned_for": planned}
        try:
            self._schedule(epoch, 0, planned[0], 0, planned[1])  # checks the stretches now
        except Exception:
            self._resume = None
            raise
        self._epoch.fill_(epoch)
        self._received = 0

    def fetch_stats(self) -> dict:
        """What this rank fetched so far, its DataLoader workers included: ``requests``,
        ``bytes`` (decoded), ``bytes_needed`` (of the distinct chunks each process read) and
        ``egress_ratio`` (lazycube.ForecastSamples.fetch_stats)."""
        return with_ratio(dict(zip(FETCH_KEYS, (int(x) for x in self._fetched.tolist()))))

    # ---- iteration ----
    def __len__(self):
        """Batches this rank receives in the current epoch (all workers together)."""
        rank, world = self._shard()
        return int(self._schedule(self.epoch, rank, world).rank_batches)

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
        remaining, planned = self._resumed(epoch)
        seen = samples.fetch_stats()
        for batch in samples.batches(self.batch_size, self.shuffle, self.seed, epoch, self.rollout, self.drop_last,
                                     rank, world, 0, self.prefetch, worker=worker, num_workers=nworkers,
                                     remaining=remaining, planned_for=planned, block_samples=self.block_samples,
                                     active_blocks=self.active_blocks, fetch_ahead_bytes=self.fetch_ahead_bytes):
            now = samples.fetch_stats()
            self._fetched += torch.tensor([now[k] - seen[k] for k in FETCH_KEYS], dtype=torch.int64)
            seen = now
            if counting:
                self._received += 1
            else:
                self._yielded_in_workers += 1
            yield self._tensors(batch)

    def __iter__(self):
        return self._batches(counting=torch.utils.data.get_worker_info() is None)

    def loader(self, **kwargs) -> torch.utils.data.DataLoader:
        """A DataLoader over this dataset (batch_size=None: items are whole batches) that counts
        the batches it yields to the training loop, for state_dict()."""
        kwargs.setdefault("batch_size", None)
        return CountingLoader(self, **kwargs)
