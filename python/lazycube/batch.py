"""``lazycube.BatchGenerator``: training batches out of a data cube.

Two modes, chosen by ``batch_size``:

* ``batch_size=None`` — **xbatcher compatibility**: xbatcher 0.4.0's arguments, semantics and
  outputs. ``gen[i]`` and iteration give what xbatcher gives for the same arguments -- an
  ``xarray.Dataset`` for a Dataset, an ``xarray.DataArray`` for a DataArray -- ``identical`` to
  xbatcher's batch (values, dims, coordinates incl. the ``sample`` MultiIndex, ``input_batch``
  and ``<dim>_input``, attributes), with xbatcher's ``cache``/``cache_preprocess``. The fast
  :class:`Batch` (zero-copy ``numpy()``, no xarray) is asked for explicitly: ``gen.batch(i)``
  and ``gen.batches()``.
* ``batch_size=N`` — **stacked**: N windows per batch, the variables stacked along ``channel``:
  ``x`` with dims ``(sample, channel, <input dims>, ...)`` (and ``y`` with a ``target``), with
  seeded shuffling (``"random"`` or chunk-aware ``"chunk"``), sharding over ranks and workers,
  a NaN filter and resumable state.

Stacked batches' dtype: ``dtype=`` when given, for ``x`` and ``y`` (a NumPy dtype; the torch
datasets take torch dtypes too: ``dtype=numpy.float64`` or ``torch.float64`` keeps float64).
Unset (``dtype=None`` is the same), ``x`` and ``y`` each take the common dtype of their channels
-- their own when all agree, else a float -- and a float one is made **float32**, torch's default
dtype: float64 variables and CF-decoded packed data (float64 ``scale_factor``/``add_offset``, as
ERA5's) arrive as float32; integer and bool channels of one dtype keep it (an int32 target stays
int32 beside a float32 ``x``); integers of different dtypes, which stack into a float, stack into
float32 (exact up to 2**24: ask ``dtype="float64"`` for wider values). The cast is done in C++
during assembly. xbatcher mode (``batch_size=None``) is not affected: it gives what xbatcher
gives (float64 where xarray decodes to float64).

Batches are read, decoded and assembled in C++ on a thread pool, ``prefetch`` batches ahead of
the iterating caller, through lazycube's chunk cache (``cache_bytes``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Iterator, Mapping

import numpy as np

from . import _core
from .dataset import Dataset
from .pipeline import OPEN_ARGS, MemorySource, MultiSource, Pipeline, scrub
from .sources import resolve_source
from .statistics import normalize_document
from .xbatcher_compat import (NumpyViews, XarrayWindows, build_batch, cache_batch, cached_batch,
                              placeholder, relayout as _relayout, stack_levels)

__all__ = ["BatchGenerator", "Batch"]

# The dtype floating stacked batches default to: torch's default dtype (see generator_arguments).
DEFAULT_FLOAT_DTYPE = "float32"


def generator_arguments(args: Mapping) -> dict:
    """The generator's document (the fields of the core's BatchOptions::from_json,
    docs/batching.md "One document") from the arguments as users write them. Only what JSON
    cannot carry is converted here: ``dtype``/``float_dtype`` as any NumPy dtype -> its name,
    ``normalize`` (a stats file, Stats or document) -> the stats document, mappings (e.g.
    ``ds.sizes``) -> dicts, ``variables`` as any iterable -> a list; stacked batches default to
    float32 floats (module doc). ``target``, ``filter``, ``shuffle`` and every value are checked
    by the core, once (BatchGenerator, the torch datasets)."""
    out = dict(args)
    if out.get("normalize") is not None:
        out["normalize"] = normalize_document(out["normalize"])
    if out.get("dtype") is not None:
        out["dtype"] = np.dtype(out["dtype"]).name
    elif out.get("batch_size"):
        # Stacked batches (the torch datasets' too) are float32 when their values are floats and
        # dtype is unset (None counts as unset): the core's common dtype of the channels, with
        # a float one (float64: CF-decoded packed data, float64 variables) cast to float32 during
        # assembly; integer and bool batches keep their dtype. x and y each (module doc).
        out.setdefault("float_dtype", DEFAULT_FLOAT_DTYPE)
    if out.get("float_dtype") is not None:
        out["float_dtype"] = np.dtype(out["float_dtype"]).name
    variables = out.get("variables")
    if variables is not None and not isinstance(variables, (str, list)):
        out["variables"] = list(variables)
    for key in ("input_dims", "input_overlap", "batch_dims"):
        if isinstance(out.get(key), Mapping) and not isinstance(out[key], dict):
            out[key] = dict(out[key])
    return out


class BatchGenerator:
    """Batches of windows of a data cube (see the module docstring for the two modes).

    Parameters follow xbatcher's ``BatchGenerator`` (``ds, input_dims, input_overlap,
    batch_dims, concat_input_dims``; ``preload_batch``, ``cache`` and ``cache_preprocess`` are
    accepted as keywords), then lazycube's: ``batch_size`` (None: xbatcher mode), ``variables``,
    ``target`` (``{"variables": [...], "offset": {"time": 1}}``), ``shuffle`` (False/True or
    "none"/"random"/"chunk"), ``seed``, ``drop_last``, ``rank``/``world_size``,
    ``worker``/``num_workers``, ``block_samples``/``active_blocks`` (shuffle "chunk" over
    windows that read several chunks along their first dim: the epoch planner's blocks, derived
    from the cache and the windows' footprint when None; docs/batching.md "The epoch planner"),
    ``prefetch``, ``cache_bytes``, ``fetch_ahead_bytes`` (decoded
    chunks fetched ahead along the epoch's order; None: starts at the cache budget less the
    room batches re-read chunks from, at most 256 MiB, and grows within that room to 8 s of the
    batches' reading; 0: off), ``dtype`` (stacked mode; unset or
    None: the channels' common dtype, float32 when it is a float: see the module doc),
    ``filter`` (``{"variable": ..., "max_nan_fraction": ...}``), ``normalize`` (stacked mode:
    a stats JSON path from ``lazycube stats -o``, a ``lazycube.Stats`` or its document:
    ``(x - mean) / std`` per channel of x and y during assembly in C++, broadcast over the
    statistics' kept dims; every channel's variable needs statistics, stds must be > 0, the
    dtype a float), ``pinned``, ``storage_options`` and the
    open arguments of :data:`lazycube.pipeline.OPEN_ARGS` (``decode_cf``, ``mask_valid_range``,
    ...: for a URL).

    ``ds`` may be a URL, a lazycube Dataset, or any ``xarray.Dataset`` / ``xarray.DataArray``;
    the fastest reader is chosen for it (``gen.reader`` says which):

    * ``"lazycube"`` -- data lazycube reads: a URL, ``lazycube.open_dataset``, xarray objects
      opened with ``engine="lazycube"`` (narrowed with ``isel``/``sel`` or to some variables),
      and objects another engine opened from a path lazycube reads (``encoding["source"]``),
      which are reopened with the same selection and variables when that gives the same data.
      Windows are read and assembled in C++, prefetched.
    * ``"xarray"`` -- anything else (NumPy in memory, dask-backed data): the same windows cut
      from the object itself with xarray (xbatcher mode only); dask-backed batches stay lazy
      with ``preload_batch=False``.

    ``rank``/``world_size`` None (default): torch.distributed's rank and world size when a
    process group is initialised, else 0 and 1. ``gen.pipeline`` is the picklable description
    (:class:`lazycube.pipeline.Pipeline`) the generator is built from; pickling sends it (with
    the position), and the other process reopens the source.
    """

    def __init__(self, ds, input_dims, input_overlap=None, batch_dims=None,
                 concat_input_dims=False, *, batch_size=None, variables=None, target=None,
                 shuffle=False, seed=0, drop_last=True, rank=None, world_size=None, prefetch=2,
                 cache_bytes=None, **more):
        worker = int(more.pop("worker", 0))
        num_workers = int(more.pop("num_workers", 1))
        extras = dict(preload_batch=bool(more.pop("preload_batch", True)),
                      cache=more.pop("cache", None),
                      cache_preprocess=more.pop("cache_preprocess", None))
        storage_options = more.pop("storage_options", None)
        open_args = {k: more.pop(k) for k in OPEN_ARGS if k in more}
        generator = {"dtype": more.pop("dtype", None), "filter": more.pop("filter", None),
                     "pinned": bool(more.pop("pinned", False)),
                     "fetch_ahead_bytes": more.pop("fetch_ahead_bytes", None),
                     "block_samples": more.pop("block_samples", None),
                     "active_blocks": more.pop("active_blocks", None),
                     "normalize": more.pop("normalize", None)}
        if more:
            raise TypeError("BatchGenerator() got unexpected keyword arguments: %s"
                            % ", ".join(sorted(more)))
        if batch_size is not None:
            batch_size = int(batch_size)
            if batch_size <= 0:
                raise ValueError("batch_size must be a positive integer or None "
                                 "(None: xbatcher-compatible batches)")

        found = _lazycube_input(ds, storage_options, open_args, batch_size, concat_input_dims,
                                extras["preload_batch"])
        if found is None:
            # data lazycube does not read: xbatcher mode through xarray
            lazycube_only = {k: v for k, v in dict(
                target=target, shuffle=shuffle or None, filter=generator["filter"],
                dtype=generator["dtype"], pinned=generator["pinned"] or None,
                normalize=generator["normalize"]).items()
                if v is not None}
            if lazycube_only:
                raise ValueError("%s need data lazycube reads (a URL, lazycube.open_dataset, or "
                                 "an xarray object opened from a file or URL); this %s is in "
                                 "memory or dask-backed" % (", ".join(sorted(lazycube_only)),
                                                            type(ds).__name__))
            obj = ds if variables is None or not hasattr(ds, "data_vars") else \
                ds[[variables] if isinstance(variables, str) else list(variables)]
            self._setup_windows(ds, XarrayWindows(
                obj, dict(input_dims), dict(input_overlap or {}), dict(batch_dims or {}),
                concat_input_dims, extras["preload_batch"]), extras)
            for message in self._windows.warnings:
                warnings.warn(message, UserWarning, stacklevel=2)
            return
        source, core, xds, xobj = found
        if xobj is not None and not isinstance(xobj, type(xds)):
            variables = [xobj.name]  # a DataArray: its variable
            extras["dataarray"] = xobj.name
        elif variables is None and xds is not None:
            all_vars = list((core if core is not None else source.open()).data_var_names())
            if set(xds.data_vars) != set(all_vars):
                variables = [v for v in all_vars if v in set(xds.data_vars)]
        generator = generator_arguments(dict(
            generator, input_dims=input_dims, input_overlap=input_overlap or None,
            batch_dims=batch_dims or None, concat_input_dims=bool(concat_input_dims),
            batch_size=0 if batch_size is None else batch_size,
            # xbatcher mode has no partial batches (its windows are whole by construction).
            drop_last=bool(drop_last) if batch_size is not None else False,
            variables=variables, target=target, shuffle=shuffle, seed=int(seed),
            prefetch=int(prefetch), cache_bytes=cache_bytes))
        self._setup(Pipeline(source, generator, rank, world_size, local=core), ds, xobj, worker,
                    num_workers, extras)
        for message in self._core.warnings:
            warnings.warn(message, UserWarning, stacklevel=2)

    def _setup(self, pipeline, ds, xobj, worker, num_workers, extras):
        """Builds this process's core generator from `pipeline` (the constructor, unpickling)."""
        g = pipeline.generator
        self.ds = ds
        self._pipeline = pipeline
        self._windows = None
        self._worker, self._num_workers = worker, num_workers
        self._core = pipeline.build(worker, num_workers)
        self._core_ds = pipeline.dataset()
        self._xobj = xobj  # the xarray object xbatcher would see (None: the whole source)
        self._input_dims = dict(g["input_dims"])
        self._input_overlap = dict(g["input_overlap"] or {})
        self._batch_dims = dict(g["batch_dims"] or {})
        self._concat_input_dims = g["concat_input_dims"]
        self._kwargs = g
        self._set_extras(extras)

    def _setup_windows(self, ds, windows, extras):
        """xbatcher mode over an xarray object lazycube does not read (XarrayWindows)."""
        self.ds = ds
        self._pipeline = None
        self._windows = windows
        self._core = self._core_ds = None
        self._xobj = windows.obj
        self._input_dims = dict(windows.input_dims)
        self._input_overlap = dict(windows.input_overlap)
        self._batch_dims = dict(windows.batch_dims)
        self._concat_input_dims = windows.concat
        self._kwargs = {"batch_size": 0}
        self._set_extras(extras)

    def _set_extras(self, extras):
        self._extras = extras
        self._preload_batch = extras["preload_batch"]
        self.cache = extras["cache"]
        self.cache_preprocess = extras["cache_preprocess"]
        self._finished = False
        self._template = None
        self._views = False  # not looked at yet (_template_views)
        self._coords = None

    @property
    def pipeline(self) -> Pipeline:
        """The picklable description this generator is built from (source, arguments, shard)."""
        self._need_core("pipeline")
        return self._pipeline

    @property
    def reader(self) -> str:
        """"lazycube" (read and assembled by lazycube's core) or "xarray" (in-memory or
        dask-backed data, cut with xarray)."""
        return "xarray" if self._windows is not None else "lazycube"

    def _need_core(self, what):
        if self._core is None:
            raise TypeError(
                "%s needs data lazycube reads (a URL, lazycube.open_dataset, or an xarray object "
                "opened from a file or URL); this generator's data is in memory or dask-backed "
                "and is batched through xarray" % what)

    # ---- xbatcher's read-only configuration --------------------------------------------
    @property
    def input_dims(self) -> dict:
        return dict(self._input_dims)

    @property
    def input_overlap(self) -> dict:
        return dict(self._input_overlap)

    @property
    def batch_dims(self) -> dict:
        return dict(self._batch_dims)

    @property
    def concat_input_dims(self) -> bool:
        return self._concat_input_dims

    @property
    def preload_batch(self) -> bool:
        return self._preload_batch

    # ---- lazycube --------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """"xbatcher" (batch_size None) or "stacked"."""
        return "xbatcher" if self._core is None else self._core.mode

    @property
    def batch_size(self):
        return None if self._kwargs["batch_size"] == 0 else self._kwargs["batch_size"]

    @property
    def total_windows(self) -> int:
        self._need_core("total_windows")
        return self._core.total_windows

    @property
    def shard_windows(self) -> int:
        self._need_core("shard_windows")
        return self._core.shard_windows

    @property
    def epoch(self) -> int:
        return 0 if self._core is None else self._core.epoch

    @property
    def warnings(self) -> list:
        return self._windows.warnings if self._core is None else list(self._core.warnings)

    @property
    def core(self):
        """The underlying ``lazycube._core.BatchGenerator`` (None for the "xarray" reader)."""
        return self._core

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch`` from its beginning (its order depends on (seed, epoch))."""
        self._need_core("set_epoch")
        self._core.set_epoch(int(epoch))
        self._finished = False

    def state(self) -> dict:
        """Resumable position (JSON-compatible dict)."""
        self._need_core("state")
        return self._core.state()

    def restore(self, state: dict) -> None:
        """Continues from ``state()`` of a generator with the same data and configuration."""
        self._need_core("restore")
        self._core.restore(state)
        self._finished = False

    def cache_stats(self) -> dict:
        self._need_core("cache_stats")
        return self._core.cache_stats()

    def __len__(self) -> int:
        return len(self._windows if self._core is None else self._core)

    def _position(self, idx) -> int:
        """xbatcher's index rules: an int (NotImplementedError otherwise), negative from the
        end, IndexError "list index out of range" outside."""
        if isinstance(idx, np.integer):
            idx = int(idx)
        if not isinstance(idx, int):
            raise NotImplementedError(
                "%s.__getitem__ currently requires a single integer key" % type(self).__name__)
        n = len(self)
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError("list index out of range")
        return idx

    def __getitem__(self, idx):
        """xbatcher mode: batch ``idx`` as xbatcher returns it (``xarray.Dataset`` or
        ``DataArray``, through the cache when one is set). Stacked mode: a :class:`Batch`."""
        windows = self._windows
        if windows is not None and self.cache is None and type(idx) is int and \
                0 <= idx < windows.size:
            return windows.batch(idx)  # (the common case of the xarray reader, shortest path)
        idx = self._position(idx)
        if self.mode != "xbatcher":
            return self.batch(idx)
        hit = cached_batch(self.cache, idx, self._preload_batch)
        if hit is not None:
            return hit
        if self._windows is not None:
            out = self._windows.batch(idx)
        else:
            out = self.batch(idx).to_xarray()
        if self.cache is not None:
            out = cache_batch(self.cache, idx, out, self.cache_preprocess)
        return out

    def batch(self, idx) -> "Batch":
        """Batch ``idx`` as a lazycube :class:`Batch` (any mode): zero-copy ``numpy()``,
        ``to_xarray()``, the windows and layouts; read by lazycube's core."""
        idx = self._position(idx)
        self._need_core("batch()")
        return Batch(self, self._core.batch(idx, epoch=self.epoch), idx)

    def batches(self) -> Iterator["Batch"]:
        """One epoch of lazycube :class:`Batch` objects (any mode), prefetched in the
        background. After a completed epoch a new iteration replays the same epoch unless
        set_epoch() chose another."""
        self._need_core("batches()")
        if self._finished:
            self._core.set_epoch(self._core.epoch)
            self._finished = False
        while True:
            b = self._core.next()
            if b is None:
                self._finished = True
                return
            yield Batch(self, b, int(b.index))

    def __iter__(self):
        """One epoch: xbatcher mode yields what ``gen[i]`` gives, in index order; stacked mode
        yields :class:`Batch` objects (see batches())."""
        if self.mode != "xbatcher":
            return self.batches()
        if self._windows is not None or self.cache is not None:
            return (self[i] for i in range(len(self)))
        return (b.to_xarray() for b in self.batches())

    def __repr__(self) -> str:
        text = ("lazycube.BatchGenerator(mode=%r, reader=%r, input_dims=%r, input_overlap=%r, "
                "batch_dims=%r, concat_input_dims=%r, batches=%d)"
                % (self.mode, self.reader, self._input_dims, self._input_overlap,
                   self._batch_dims, self._concat_input_dims, len(self)))
        # never a secret of the source (lazycube.pipeline.scrub), whatever is shown above
        return scrub(text) if self._pipeline is None else self._pipeline.scrub(text)

    def __reduce__(self):
        if self._windows is not None:  # the object itself travels (in memory, or dask)
            return (_rebuild_windows, (self.ds, self._input_dims, self._input_overlap,
                                       self._batch_dims, self._concat_input_dims, self._extras))
        # the pipeline (TypeError when its source is unknown) with this generator's position
        return (_rebuild, (self._pipeline.replace(state=self.state()), self._worker,
                           self._num_workers, self._extras))

    # ---- xarray views ---------------------------------------------------------------------
    def _xarray_template(self):
        """The object xbatcher would see, with each data variable replaced by a zero-byte
        placeholder of its shape and the coordinates loaded: xbatcher's selection, renaming,
        concat and stacking are replayed on it to obtain the batch's coordinates and dims."""
        if self._template is None:
            from .xarray_view import to_xarray  # imports xarray
            base = self._xobj
            if base is None:
                base = to_xarray(self._core_ds)
                name = self._extras.get("dataarray")
                if name is not None:
                    base = base[name]
            keep = self._kwargs["variables"]
            if isinstance(keep, str):
                keep = [keep]
            if keep is not None and hasattr(base, "data_vars"):
                base = base.drop_vars([v for v in base.data_vars if v not in set(keep)])
            self._template = placeholder(base)
        return self._template

    def _template_views(self):
        """NumpyViews over the template when a batch is one window with nothing to stack (the
        fast assembly of the xarray object), else None."""
        if self._views is False:
            template = self._xarray_template()
            plain = not self._concat_input_dims and \
                len(stack_levels(template, self._input_dims)) < 2
            self._views = NumpyViews.of(template) if plain else None
        return self._views

    def _coord_arrays(self):
        """Index coordinates (and their attrs) of the dataset, loaded once (stacked mode)."""
        if self._coords is None:
            coords = {}
            core = self._core_ds
            dims = {name for name, _ in core.dims}
            for name in core.coord_names():
                if name in dims:
                    var = core[name]
                    if list(var.dims) == [name]:
                        coords[name] = dict(var.attrs)
            self._coords = coords
        return self._coords


def _is_dask_backed(obj) -> bool:
    variables = obj.variables.values() if hasattr(obj, "data_vars") else [obj.variable]
    return any(v.chunks is not None for v in variables)


def _lazycube_input(ds, storage_options, open_args, batch_size, concat, preload):
    """(Source, core dataset, xarray Dataset, xarray object xbatcher sees) when lazycube's core
    reads `ds` (see BatchGenerator), or None when xbatcher mode must cut it with xarray."""
    xr = sys.modules.get("xarray")
    if xr is None or not isinstance(ds, (xr.Dataset, xr.DataArray)):
        source, core, xds = resolve_source(ds, storage_options, **open_args)
        return source, core, xds, xds
    dataarray = isinstance(ds, xr.DataArray)
    reason = None
    if batch_size is None and not preload and _is_dask_backed(ds):
        reason = "preload_batch=False keeps dask-backed batches lazy"
    elif dataarray and concat:
        # xbatcher aligns a DataArray's patches on their <dim>_input index (outer join)
        reason = "a DataArray in concat mode"
    elif dataarray and not (isinstance(ds.name, str) and ds.name not in ds.coords):
        reason = "a DataArray without a variable name"
    if reason is None:
        try:
            if dataarray:
                as_dataset = ds.to_dataset()
                if isinstance(ds.encoding.get("source"), str):  # netcdf4 records it per variable
                    as_dataset.encoding["source"] = ds.encoding["source"]
            # in memory: stacked batches read it in place through the core; xbatcher mode
            # cuts NumPy views of it (XarrayWindows), which is faster for xarray batches
            source, core, xds = resolve_source(as_dataset if dataarray else ds, storage_options,
                                               memory=batch_size is not None, **open_args)
            if dataarray:
                names = (core if core is not None else source.open()).data_var_names()
                if ds.name not in names:
                    raise TypeError("%r is not a variable of its source" % ds.name)
            return source, core, xds, ds
        except TypeError as exc:
            reason = str(exc)
    if batch_size is not None:
        raise NotImplementedError(
            "stacked batches (batch_size=N) read through lazycube's core, which does not read "
            "this %s (%s): open the data with xr.open_dataset(url, engine='lazycube') or "
            "lazycube.open_dataset(url), or use batch_size=None" % (type(ds).__name__, reason))
    if storage_options is not None:
        raise ValueError("storage_options apply to opening a URL, or to reopening a Dataset "
                         "another engine opened from one; this %s cannot be reopened (%s)"
                         % (type(ds).__name__, reason))
    return None


def _rebuild(pipeline, worker, num_workers, extras):
    gen = BatchGenerator.__new__(BatchGenerator)
    source = pipeline.source
    # a URL (or in-memory data) without selection rebuilds from it; anything else around the source
    plain = not isinstance(source, MultiSource) and not source.selection and source.variables is None
    ds = source.obj if isinstance(source, MemorySource) else source.url if plain else None
    gen._setup(pipeline.replace(state=None), ds, None, worker, num_workers, extras)
    if not plain:
        gen.ds = Dataset(gen._core_ds, source)
    gen.restore(pipeline.state)
    return gen


def _rebuild_windows(ds, input_dims, input_overlap, batch_dims, concat, extras):
    return BatchGenerator(ds, input_dims, input_overlap, batch_dims, concat, **extras)


class Batch:
    """One batch: ``numpy()`` (zero-copy arrays) or ``to_xarray()``; the C++ batch's fields
    (``arrays``, ``target``, ``channels``, ``windows``, ``window_ids``, ``coords``, ``layouts``,
    ``epoch``, ``index``...) are available as attributes."""

    def __init__(self, generator: BatchGenerator, core_batch, index: int):
        self._gen = generator
        self._batch = core_batch
        self._index = index

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._batch, name)

    @property
    def index(self) -> int:
        return self._index

    @property
    def mode(self) -> str:
        return self._gen.mode

    def numpy(self):
        """xbatcher mode: {variable: ndarray} in xbatcher's layout. Stacked mode: x, or (x, y)
        with a target. The arrays share the batch's buffer (no copy)."""
        if self._gen.mode == "xbatcher":
            return {a.name: a.numpy() for a in self._batch.arrays}
        x = self._batch.arrays[0].numpy()
        if self._batch.target is not None:
            return x, self._batch.target.numpy()
        return x

    @property
    def x(self):
        return self._batch.arrays[0].numpy()

    @property
    def y(self):
        t = self._batch.target
        return None if t is None else t.numpy()

    def __len__(self) -> int:
        return len(self._batch.windows)

    def __repr__(self) -> str:
        arrays = ", ".join("%s%s" % (a.name, tuple(a.shape)) for a in self._batch.arrays)
        return "lazycube.Batch(index=%d, epoch=%d, %s)" % (self._index, self._batch.epoch, arrays)

    def to_xarray(self):
        """xbatcher mode: the ``xarray.Dataset`` (``DataArray`` for a DataArray input) xbatcher
        0.4.0 returns for this batch (``gen[i]`` is this, through the generator's ``cache``).
        Stacked mode: an ``xarray.Dataset`` with ``x`` (and ``y``) over (sample, channel, ...),
        ``channel`` labels, ``window_id`` and ``<dim>_start`` per window, and the window's labels
        ``window_<dim>`` over (sample, <dim>) for each window dim with an index coordinate. A
        variable named like a dim (data with dims x or y) is called ``x_data`` / ``y_data``."""
        if self._gen.mode != "xbatcher":
            return self._stacked_to_xarray()
        return self._xbatcher_to_xarray()

    def _xbatcher_to_xarray(self):
        gen = self._gen
        template = gen._xarray_template()
        dims = list(self._batch.window_dims)
        selectors = [{d: slice(int(s), int(s) + int(c)) for d, (s, c) in zip(dims, w)}
                     for w in self._batch.windows]
        views = gen._template_views()
        if views is not None:
            # one window, nothing stacked: the template's window with the core's arrays
            return views.isel(selectors[0], {a.name: a.numpy() for a in self._batch.arrays})
        out, levels, sizes = build_batch(template, selectors, gen.input_dims,
                                         gen.concat_input_dims)
        dataarray = not hasattr(out, "data_vars")
        names = [out.name] if dataarray else list(out.data_vars)
        data = {}
        for array, layout in zip(self._batch.arrays, self._batch.layouts):
            name = array.name
            if name not in names:
                raise RuntimeError("lazycube: batch variable %r is not in the dataset" % name)
            want = out if dataarray else out[name]
            values = _relayout(array.numpy(), list(layout["dims"]),
                               list(layout.get("sample_dims") or []), list(want.dims),
                               levels if "sample" in want.dims else [], sizes)
            if tuple(values.shape) != tuple(want.shape):
                raise RuntimeError("lazycube: batch variable %r has shape %r, xarray expects %r"
                                   % (name, values.shape, want.shape))
            data[name] = values
        if dataarray:
            return out.copy(deep=False, data=data[out.name])
        missing = set(names) - set(data)
        if missing:
            out = out.drop_vars(sorted(missing))
        return out.copy(deep=False, data=data)

    def _stacked_to_xarray(self):
        import xarray as xr
        b = self._batch
        x = b.arrays[0]
        dims = set(x.dims) | (set(b.target.dims) if b.target is not None else set())

        def var_name(name):  # xarray forbids a variable named like one of its dims (x, y)
            return name + "_data" if name in dims else name
        data_vars = {var_name(x.name): (tuple(x.dims), x.numpy())}
        coords: dict[str, Any] = {}
        if list(b.channels) and "channel" in x.dims:
            coords["channel"] = ("channel", np.asarray(list(b.channels), dtype=object))
        if b.target is not None:
            y = b.target
            ydims = tuple(y.dims)
            if "channel" in ydims and list(b.target_channels) != list(b.channels):
                ydims = tuple("target_channel" if d == "channel" else d for d in ydims)
                coords["target_channel"] = ("target_channel",
                                            np.asarray(list(b.target_channels), dtype=object))
            data_vars[var_name(y.name)] = (ydims, y.numpy())
        if len(b.window_ids):
            coords["window_id"] = ("sample", np.asarray(b.window_ids, dtype=np.uint64))
        attrs_of = self._gen._coord_arrays()
        for dim, labels in dict(b.coords).items():
            if dim in x.dims:
                # (sample, dim) labels cannot be named like the dim itself (not an index).
                coords["window_%s" % dim] = (("sample", dim), np.asarray(labels),
                                             attrs_of.get(dim, {}))
        for k, dim in enumerate(b.window_dims):
            starts = np.asarray([w[k][0] for w in b.windows], dtype=np.int64)
            coords["%s_start" % dim] = ("sample", starts)
        return xr.Dataset(data_vars, coords=coords)
