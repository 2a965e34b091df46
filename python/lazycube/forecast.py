"""Forecast training samples (docs/forecast.md): inputs at past offsets, targets at lead times,
forcings (read or derived), over one or several streams, with missing data handled and the
anchors chosen by time value -- declared once, assembled by the compiled engine
(``_core.ForecastSampler``, include/lazycube/batch/forecast.hpp)::

    samples = lazycube.ForecastSamples(
        "era5.zarr", inputs=["t2m", "z"], targets=["t2m", "z"],
        forcings=["lsm", "toa_incident_solar_radiation", "year_progress_sin"],
        input_offsets=["-6h", "0h"], target_offsets=["6h", "12h"],
        anchors=["1979-01-01/2015-12-31", "2017-01-01/2017-12-31"], anchor_step="6h")
    item = samples[0]          # {"anchor", "inputs", "targets", "forcings", ...}
    for batch in samples.batches(8, shuffle="chunk", seed=0, epoch=0, rollout=2): ...

The keyword arguments are the specification's document (ForecastSpec::from_json) with Python
values allowed where the document takes text: durations as ``datetime.timedelta`` /
``numpy.timedelta64`` / ``pandas.Timedelta``, anchors as datetimes and slices.
"""

from __future__ import annotations

import datetime as _dt
import sys
import warnings
from collections.abc import Mapping

import numpy as np

from . import _core
from ._fetch_stats import fetch_stats_of
from .sources import resolve_source

__all__ = ["ForecastSamples", "forecast_document", "rollout_at"]

# The specification's keys, as the core knows them (ForecastSpec::json_keys).
SPEC_KEYS = tuple(_core.FORECAST_KEYS)
DERIVED_FORCINGS = tuple(_core.DERIVED_FORCINGS)


def _duration_text(value, field):
    if isinstance(value, str):
        return value
    if isinstance(value, (_dt.timedelta, np.timedelta64)):
        ns = np.timedelta64(value, "ns").astype("int64")
        return "%dns" % int(ns)
    raise TypeError("%s: expected a duration such as '6h' or a timedelta, got %r" % (field, value))


def _time_text(value, field):
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (_dt.datetime, _dt.date, np.datetime64)):
        if getattr(value, "tzinfo", None) is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return str(np.datetime64(value, "ns"))
    raise TypeError("%s: expected a date-time (text, datetime or numpy.datetime64), got %r" % (field, value))


def _anchor_item(value, field):
    if isinstance(value, slice):
        if value.step is not None:
            raise ValueError("%s: a slice of anchors takes no step (give anchor_step)" % field)
        return {"start": _time_text(value.start, field + ".start"), "end": _time_text(value.stop, field + ".stop")}
    if isinstance(value, Mapping):
        return {k: _time_text(v, "%s[%r]" % (field, k)) for k, v in value.items()}
    return _time_text(value, field)


def forecast_document(**spec) -> dict:
    """The specification document of keyword arguments (Python values turned into the text the
    document takes); unknown keys are left for the core to name."""
    doc = {}
    for key, value in spec.items():
        if value is None:
            continue
        if key in ("input_offsets", "target_offsets"):
            items = [value] if isinstance(value, (str, _dt.timedelta, np.timedelta64)) else list(value)
            value = [_duration_text(v, "%s[%d]" % (key, i)) for i, v in enumerate(items)]
        elif key == "anchor_step":
            value = _duration_text(value, key)
        elif key == "anchors":
            if isinstance(value, (list, tuple)):
                value = [_anchor_item(v, "anchors[%d]" % i) for i, v in enumerate(value)]
            else:
                value = _anchor_item(value, key)
        elif key in ("inputs", "targets", "forcings"):
            if isinstance(value, Mapping):
                value = {str(k): ([v] if isinstance(v, str) else list(v)) if v is not None else None
                         for k, v in value.items()}
            else:
                value = [value] if isinstance(value, str) else list(value)
        elif key in ("patch_dims", "patch_overlap"):
            value = {str(k): int(v) for k, v in dict(value).items()}
        doc[key] = value
    return doc


def rollout_at(rollout, epoch: int, leads: int) -> int:
    """The lead times an epoch trains on: ``rollout`` as an int (0 or None: all ``leads``), or a
    schedule ``{"start": 1, "every_epochs": 2, "max": 12}`` (start + epoch // every_epochs, at
    most max and ``leads``)."""
    if rollout is None:
        return leads
    if isinstance(rollout, Mapping):
        unknown = set(rollout) - {"start", "every_epochs", "max"}
        if unknown:
            raise ValueError("rollout schedule takes start, every_epochs and max, not %s" % ", ".join(sorted(unknown)))
        start = int(rollout.get("start", 1))
        every = int(rollout.get("every_epochs", 1))
        most = int(rollout.get("max", leads))
        if start < 1 or every < 1 or most < 1:
            raise ValueError("rollout schedule: start, every_epochs and max must be at least 1, got %r" % (rollout,))
        return min(start + int(epoch) // every, most, leads)
    k = int(rollout)
    if k < 0 or k > leads:
        raise ValueError("rollout %d: give 1 to %d (the lead times of target_offsets)" % (k, leads))
    return k or leads


def _is_streams(source) -> bool:
    """Whether `source` is ``{stream_name: source}``: a mapping that is not itself a dataset (an
    xarray Dataset is a mapping of its variables, and so may a lazycube Dataset be)."""
    if not isinstance(source, Mapping) or hasattr(source, "_core"):
        return False
    xr = sys.modules.get("xarray")
    return xr is None or not isinstance(source, (xr.Dataset, xr.DataArray))


class ForecastSamples:
    """Forecast samples over one source (URL, lazycube or xarray Dataset) or several
    (``{stream_name: source}``): ``len()``, ``anchor_times``, ``excluded`` (anchors left out, per
    reason), ``samples[i]`` (one item) and ``samples.batches(...)`` (stacked items). Pickles into
    spawned workers (sources are reopened there; the validity index travels with the pickle).
    ``validity_index``: the index another process of the job built (its :attr:`validity_index`),
    used where its data, version and decoding match instead of a pass over the data."""

    def __init__(self, source, inputs=None, targets=None, forcings=None, input_offsets=None,
                 target_offsets=None, anchors=None, anchor_step=None, time_dim="time", missing="skip",
                 patch_dims=None, patch_overlap=None, *, storage_options=None, cache_bytes=None,
                 index_dir=None, progress=None, validity_index=None, **open_args):
        self._document = forecast_document(
            inputs=inputs, targets=targets, forcings=forcings, input_offsets=input_offsets,
            target_offsets=target_offsets, anchors=anchors, anchor_step=anchor_step, time_dim=time_dim,
            missing=missing, patch_dims=patch_dims, patch_overlap=patch_overlap)
        several = _is_streams(source)
        given = source if several else {"": source}
        if not given:
            raise ValueError("source is an empty dict: give at least one stream")
        self._sources = {}
        cores = []
        for name, src in given.items():
            if not isinstance(name, str) or (name == "" and several):
                raise ValueError("stream names must be non-empty strings, got %r" % (name,))
            found, core, _ = resolve_source(src, storage_options, **open_args)
            if core is None:
                core = found.open()
            self._sources[name] = found
            cores.append((name, core))
        self._runtime = {"cache_bytes": cache_bytes, "index_dir": index_dir, "validity_index": validity_index}
        self._core = _core.ForecastSampler(cores, self._document, progress=progress, **self._runtime)
        # what a worker rebuilt from a pickle uses instead of a pass of its own
        self._runtime["validity_index"] = self._core.validity_index or None

    @property
    def validity_index(self):
        """The validity indexes this process built or read (JSON text; None unless missing="skip"):
        what `ForecastSamples(..., validity_index=)` of another process of the job takes instead
        of reading the data again (the torch ForecastDataset hands rank 0's to the other ranks)."""
        return self._core.validity_index or None

    # ---- what the specification resolved to ----
    @property
    def streams(self) -> tuple:
        """Stream names (("",) for a single source)."""
        return tuple(self._sources)

    @property
    def spec(self) -> dict:
        """The resolved specification document (ForecastSpec::to_json)."""
        return self._core.spec

    @property
    def anchor_times(self) -> np.ndarray:
        """The anchors that are samples, ascending (datetime64[ns])."""
        return self._core.anchor_times

    @property
    def excluded(self) -> dict:
        """Anchors left out, per reason: out_of_range (an offset's time lies outside a stream),
        time_absent (inside it, but a gap), missing_values (missing="skip")."""
        return self._core.excluded

    @property
    def patches(self) -> int:
        return self._core.patches

    @property
    def leads(self) -> int:
        return len(self._core.spec["target_offsets"])

    @property
    def core(self):
        return self._core

    def cache_stats(self) -> dict:
        return self._core.cache_stats()

    def __len__(self) -> int:
        return len(self._core)

    def __repr__(self):
        names = ", ".join(repr(n) for n in self.streams if n) or "one stream"
        return "<lazycube.ForecastSamples %d samples (%s), excluded %r>" % (len(self), names, self.excluded)

    # ---- items and batches ----
    def batch(self, ids, rollout=None) -> dict:
        """The samples `ids` stacked on a leading sample dim (see :meth:`__getitem__` for the
        keys), with the first `rollout` lead times (default: all)."""
        k = rollout_at(rollout, 0, self.leads) if self.leads else 0
        return _shape_batch(self._core.batch(list(ids), k), single=self.streams == ("",))

    def __getitem__(self, i) -> dict:
        n = len(self)
        if isinstance(i, slice):
            return self.batch(range(*i.indices(n)))
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("sample %d is out of range (%d samples)" % (i, n))
        return _strip_sample(self.batch([i]))

    def schedule(self, batch_size, shuffle=None, seed=0, epoch=0, rank=0, world_size=1, worker=0,
                 num_workers=1, start=0, drop_last=False, remaining=None, planned_for=None, block_samples=None,
                 active_blocks=None):
        """The epoch's batches for one rank and worker (``_core.EpochBatches``, the batch layer's
        epoch planner, docs/forecast.md "Epochs at scale"): each rank and worker owns a stretch of
        the epoch's order. `remaining`: a resumed epoch's stretches not yet delivered (or `start`:
        the positions from there on); `planned_for`: (world_size, num_workers) of the job that
        began the epoch; `block_samples` / `active_blocks`: shuffle="chunk"'s overrides."""
        n = len(self)
        if remaining is None and start:
            if not 0 <= int(start) <= n:
                raise ValueError("start %d lies outside the epoch's %d samples" % (int(start), n))
            remaining = [(int(start), n)]
        planned = (None, None) if planned_for is None else (int(planned_for[0]), int(planned_for[1]))
        return self._core.schedule(int(batch_size), shuffle, int(seed), int(epoch), int(rank), int(world_size),
                                   int(worker), int(num_workers),
                                   None if remaining is None else [(int(a), int(b)) for a, b in remaining],
                                   bool(drop_last), planned[0], planned[1], int(block_samples or 0),
                                   int(active_blocks or 0))

    def fetch_stats(self) -> dict:
        """What this process's reads fetched (the chunk cache's counters): ``requests`` (chunks
        fetched), ``bytes`` (decoded), ``bytes_needed`` (of the distinct chunks read) and
        ``egress_ratio`` = bytes / bytes_needed (1.0: each chunk fetched once)."""
        return fetch_stats_of(self._core.cache_stats())

    def batches(self, batch_size, shuffle=None, seed=0, epoch=0, rollout=None, drop_last=False, rank=0,
                world_size=1, start=0, prefetch=4, worker=0, num_workers=1, remaining=None, planned_for=None,
                block_samples=None, active_blocks=None, fetch_ahead_bytes=None):
        """Iterates the epoch's batches: `shuffle` None (anchor order), "random" or "chunk" (the
        epoch planner's blocks: each time chunk read during one stretch of the epoch, batches
        mixing distant times), for `rank` of `world_size` (and DataLoader `worker` of
        `num_workers`), each owning a stretch of the epoch's order; `start` / `remaining` /
        `planned_for` resume an epoch (see :meth:`schedule`); `rollout` an int or a schedule.
        Fetch-ahead walks the samples to come in the epoch's order and brings their chunks into
        the cache, many requests at once (`fetch_ahead_bytes`: what it may hold; None: half the
        cache, at most 256 MiB; 0: off), and `prefetch` batches are assembled at once ahead of the loop, on
        background threads (the engine releases the GIL)."""
        sched = self.schedule(batch_size, shuffle, seed, epoch, rank, world_size, worker, num_workers, start, drop_last,
                              remaining, planned_for, block_samples, active_blocks)
        for text in sched.warnings:
            warnings.warn(text, stacklevel=2)
        k = rollout_at(rollout, epoch, self.leads) if self.leads else 0
        single = self.streams == ("",)
        batches = _core.ForecastEpoch(self._core, sched, k, max(int(prefetch), 0),
                                      None if fetch_ahead_bytes is None else int(fetch_ahead_bytes))
        for b in batches:
            yield _shape_batch(b, single)

    def __reduce__(self):
        missing = [n or "<the source>" for n, s in self._sources.items() if s is None]
        if missing:
            raise TypeError("ForecastSamples over %s cannot be pickled: open the data from a URL (or with "
                            "engine='lazycube') so that a worker can reopen it" % ", ".join(missing))
        return (_rebuild, (self._sources, self._document, self._runtime))


def _rebuild(sources, document, runtime):
    obj = ForecastSamples.__new__(ForecastSamples)
    obj._document = dict(document)
    obj._sources = dict(sources)
    obj._runtime = dict(runtime)
    cores = [(name, src.open()) for name, src in sources.items()]
    obj._core = _core.ForecastSampler(cores, obj._document, **obj._runtime)
    return obj


def _shape_batch(b, single):
    """The core's batch dict as users see it: one stream's arrays at the top level, or one dict
    per stream name."""
    out = {"anchor": b["anchors"], "samples": b["samples"].astype(np.int64), "rollout": b["rollout"],
           "epoch": b["epoch"], "index": b["index"]}
    for s in b["streams"]:
        part = {"inputs": s["inputs"], "targets": s["targets"], "input_channels": s["input_channels"],
                "target_channels": s["target_channels"], "grid_dims": s["grid_dims"]}
        if s["forcings"] is not None:
            part["forcings"] = s["forcings"]
            part["forcing_channels"] = s["forcing_channels"]
        if s["inputs_mask"] is not None:
            part["mask"] = {"inputs": s["inputs_mask"], "targets": s["targets_mask"]}
            if s["forcings_mask"] is not None:
                part["mask"]["forcings"] = s["forcings_mask"]
        if s["patches"]:
            part["patches"] = s["patches"]
        if single:
            out.update(part)
        else:
            out[s["stream"]] = part
    return out


def _strip_sample(batch):
    """One sample of a batch of one: the leading sample dim dropped."""
    def strip(v):
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == 1:
            return v[0]
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
            return v[0]
        return v
    out = {k: strip(v) for k, v in batch.items() if k not in ("epoch", "index", "rollout")}
    out["sample"] = int(batch["samples"][0])
    del out["samples"]
    return out
