"""What the user hands in, resolved into a pipeline description: a URL or path, a
``lazycube.Dataset``, a ``_core.Dataset``, or an xarray Dataset -- opened with
``engine="lazycube"`` (possibly narrowed with isel/sel or to some variables), combined by
``xr.open_mfdataset(..., engine="lazycube")``, opened by another engine from a path lazycube
reads, or in memory -- becomes a :class:`lazycube.pipeline.Source` (or MultiSource /
MemorySource) and the ``_core.Dataset`` to read (:func:`resolve_source`).

Below the core API (``BatchGenerator``, ``stats``) and the adapters (torch datasets, the
``ds.lazycube`` accessor, xarray's engine) that take such arguments; above the lazy xarray view
(``xarray_view``), whose backend arrays it recognises. xarray is imported inside the functions
that need it only (python/lazycube/_layers.py).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from . import _core, _errors
from .pipeline import MemorySource, MultiSource, Source, in_memory, open_once

__all__ = ["resolve_source", "source_of", "core_dataset_of", "multi_file_source",
           "foreign_source"]


def resolve_source(obj, storage_options=None, memory=True, **open_args):
    """(Source or None, core dataset or None, xarray Dataset or None) for what the user passed:
    a URL or path (opened with `storage_options` / `open_args`), a ``lazycube.Dataset``, a
    ``_core.Dataset`` (no Source: usable in this process only), or an xarray Dataset opened with
    ``engine="lazycube"`` (possibly narrowed with isel/sel or to some variables) or opened by
    another engine from a path lazycube reads (:func:`foreign_source`), or (`memory`) an
    xarray Dataset in memory (MemorySource, read in place). TypeError for anything else
    (dask-backed or lazily computed data)."""
    if isinstance(obj, (str, os.PathLike)):
        source = Source(obj, storage_options, **{k: v for k, v in open_args.items() if v is not None})
        return source, None, None
    xr = sys.modules.get("xarray")
    if xr is not None and isinstance(obj, xr.Dataset) and storage_options is not None \
            and not any(v is not None for v in open_args.values()):
        # storage options reopen what another engine opened (xarray does not keep them)
        try:
            source_of(obj)
        except TypeError:
            found = foreign_source(obj, storage_options)
            if found is not None:
                return found[1], found[0], obj
            raise
    given = sorted(k for k, v in dict(open_args, storage_options=storage_options).items()
                   if v is not None)
    if given:
        raise ValueError("%s apply to opening a URL; this %s is already open (pass them to "
                         "lazycube.open_dataset / xr.open_dataset instead)"
                         % (", ".join(given), type(obj).__name__))
    if isinstance(obj, _core.Dataset):
        return None, obj, None
    core = getattr(obj, "_core", None)
    if isinstance(core, _core.Dataset):
        return getattr(obj, "source", None), core, None
    if xr is not None and isinstance(obj, xr.DataArray):
        raise TypeError("lazycube takes a Dataset; for one variable pass ds[[name]] (a Dataset) "
                        "or variables=[name]")
    if xr is not None and isinstance(obj, xr.Dataset):
        try:
            core, source = source_of(obj)
        except TypeError:
            # xr.open_mfdataset(..., engine="lazycube"), or opened by another engine from a
            # path lazycube reads: reopened by lazycube
            found = multi_file_source(obj) or foreign_source(obj)
            if found is None:
                if not (memory and in_memory(obj)):
                    raise
                # in memory: read in place through the same engine
                source = MemorySource(obj)
                return source, source.open(), obj
            core, source = found
        return source, core, obj
    raise TypeError("expected a URL, a lazycube Dataset or an xarray Dataset opened with "
                    "engine='lazycube', got %s" % type(obj).__name__)


# ---- finding the lazycube dataset behind an xarray Dataset -------------------------------

def _reopened_backend(var):
    """For a variable (xarray.DataArray) whose values xarray has loaded: its lazycube array,
    reopened from the Source in its encoding, when its shape shows no selection (full extent on
    every dim)."""
    from .xarray_view import _SOURCE_KEY, LazycubeBackendArray
    source = var.encoding.get(_SOURCE_KEY)
    if not isinstance(source, (Source, MultiSource)):
        return None
    core = open_once(source)
    name = var.name
    if name not in core:
        return None
    backend = LazycubeBackendArray(core[name], core, source=source)
    if backend.dims != tuple(var.dims) or backend.shape != tuple(var.shape):
        return None  # selected after loading: the selection cannot be recovered
    return backend, None


def _backend_of(data):
    """(LazycubeBackendArray, key tuple) under xarray's wrappers, or None."""
    from xarray.core import indexing

    from .xarray_view import LazycubeBackendArray
    key = None
    seen = 0
    while data is not None and seen < 16:
        seen += 1
        if isinstance(data, LazycubeBackendArray):
            return data, key
        if isinstance(data, indexing.LazilyIndexedArray):
            key = data.key.tuple
        elif isinstance(data, (indexing.LazilyVectorizedIndexedArray,)):
            return None
        data = getattr(data, "array", None)
    return None


def core_dataset_of(xds):
    """(the lazycube ``_core.Dataset`` behind `xds`, narrowed to its selection, names of its
    data variables); see source_of()."""
    core, _source = source_of(xds)
    return core, list(xds.data_vars)


def source_of(xds):
    """(``_core.Dataset``, Source or None) behind an xarray Dataset opened with
    engine="lazycube": the lazycube dataset restricted to the Dataset's positional selection
    (``isel``/``sel`` with slices/integers), and its Source with that selection and the data
    variables the Dataset keeps (None when the dataset was built around a ``_core.Dataset`` of
    unknown origin).

    Raises TypeError for a Dataset that lazycube does not back (opened by another engine,
    built in memory, loaded, or transformed beyond selection)."""
    cores = set()
    core = source = None
    selection: dict[str, Any] = {}
    problems = []
    loaded = []
    for name, var in xds.data_vars.items():
        found = _backend_of(var.variable._data)
        if found is None:
            loaded.append((name, var))
            continue
        backend, key = found
        if core is None:
            core, source = backend.dataset, backend.source
        cores.add(id(backend.dataset))
        if key is None:
            key = (slice(None),) * len(backend.dims)
        kept = []
        for dim, k, n in zip(backend.dims, key, backend.shape):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                sel = None if (start, stop, step) == (0, n, 1) else slice(start, stop, step)
                kept.append(dim)
            elif isinstance(k, (int, np.integer)):
                sel = int(k)
            else:
                raise TypeError("variable %r was indexed with an array; lazycube.BatchGenerator "
                                "accepts xarray selections by slices and integers only" % name)
            if sel is None:
                if dim in selection and selection[dim] is not None:
                    raise TypeError("variables disagree on the selection of dim %r" % dim)
                selection.setdefault(dim, None)
            else:
                prev = selection.get(dim, sel)
                if prev != sel:
                    raise TypeError("variables disagree on the selection of dim %r" % dim)
                selection[dim] = sel
        if tuple(kept) != tuple(var.dims):
            raise TypeError("variable %r was transposed or reshaped after opening; "
                            "lazycube.BatchGenerator needs its dims as stored" % name)
    for name, var in loaded:
        # Values loaded by xarray: the variable must cover its whole array (then its
        # selection is "none"); it is read from the dataset of its lazy siblings, or from a
        # reopened one when every variable was loaded.
        found = _reopened_backend(var)
        if found is None:
            problems.append(name)
            continue
        backend, _ = found
        if core is None:
            core, source = backend.dataset, backend.source
            cores.add(id(core))
        for dim in backend.dims:
            if selection.get(dim) is not None:
                problems.append(name)
                break
            selection.setdefault(dim, None)
    if problems or core is None:
        if core is None and not problems:
            raise TypeError("the xarray Dataset has no data variables")
        raise TypeError(
            "variables %s of this xarray Dataset are not read by lazycube (in memory, loaded or "
            "opened by another engine). Open the data with xr.open_dataset(url, "
            "engine='lazycube') (or lazycube.open_dataset(url)) and select with isel/sel only."
            % ", ".join(repr(p) for p in problems))
    if len(cores) > 1:
        raise TypeError("the xarray Dataset mixes variables of several lazycube datasets")
    selection = {d: s for d, s in selection.items() if s is not None}
    if selection:
        core = core.isel(selection)
    if source is not None:
        names = list(xds.data_vars)
        source = source.isel(selection)
        if set(names) != set(core.data_var_names()):
            source = source.keep([v for v in core.data_var_names() if v in set(names)])
    return core, source


# ---- xarray Datasets another engine opened from a path lazycube reads --------------------

# Layers of the dask graph xarray builds when it opens a file with chunks= and slices it
# (isel): any other layer computes new values, which the file does not hold.
_OPEN_LAYERS = ("original-open_dataset-", "open_dataset-", "getitem-")


def _file_values(var) -> bool:
    """True when `var`'s values are the file's, lazily selected: a backend array under
    xarray's lazy indexing (basic or outer, not vectorized), or a dask graph of opening and
    slicing only. Values in memory may have been changed, so they never qualify."""
    from xarray.backends import BackendArray
    from xarray.core import indexing

    data = var.variable._data
    layers = getattr(getattr(data, "dask", None), "layers", None)
    if layers is not None:
        return all(str(name).startswith(_OPEN_LAYERS) for name in layers)
    for _ in range(16):
        if isinstance(data, BackendArray):
            return True
        if isinstance(data, indexing.LazilyVectorizedIndexedArray) or data is None:
            return False
        data = getattr(data, "array", None)
    return False


def _positions(have, want):
    """The slice of `have` whose values are `want` (a contiguous, evenly stepped run), or None."""
    want = np.asarray(want)
    if want.size == 0 or have.dtype != want.dtype:
        return None
    starts = np.flatnonzero(have == want[0])
    if starts.size != 1:
        return None
    start = int(starts[0])
    if want.size == 1:
        return slice(start, start + 1, 1)
    nexts = np.flatnonzero(have == want[1])
    if nexts.size != 1 or int(nexts[0]) <= start:
        return None
    step = int(nexts[0]) - start
    sel = slice(start, start + step * (want.size - 1) + 1, step)
    return sel if np.array_equal(have[sel], want) else None


def _same_values(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


class _SourceCloser:
    """The close callback of a Dataset this engine opened (nothing to close): it carries the
    Source, so that ``xr.open_mfdataset(paths, engine="lazycube")``, which keeps its files'
    close callbacks in order, can be read as one lazycube dataset (:func:`multi_file_source`)."""

    __slots__ = ("source",)

    def __init__(self, source):
        self.source = source

    def __call__(self):
        return None


def multi_file_source(xds):
    """(``_core.Dataset``, MultiSource) for ``xr.open_mfdataset(paths, engine="lazycube",
    combine="nested", concat_dim=dim)`` (or by_coords, when that kept the order) as returned --
    no selection applied since, and every data variable concatenated along one dim -- or None."""
    close = getattr(xds, "_close", None)  # partial(_multi_file_closer, closers), in path order
    if getattr(getattr(close, "func", None), "__name__", "") != "_multi_file_closer" or not close.args:
        return None
    closers = close.args[0]
    if not closers or not all(isinstance(c, _SourceCloser) for c in closers):
        return None
    sources = [c.source for c in closers]
    try:
        parts = [dict(open_once(s).dims) for s in sources]
    except (_errors.Error, OSError, ValueError):
        return None
    sizes = dict(xds.sizes)
    dims = [d for d in sizes if all(d in p for p in parts) and sum(p[d] for p in parts) == sizes[d]
            and any(p[d] != sizes[d] for p in parts)] if len(parts) > 1 else []
    if len(parts) > 1 and len(dims) != 1:
        return None
    source = MultiSource("concat", sources, dim=dims[0]) if dims else sources[0]
    try:
        core = open_once(source)
    except _errors.Error:
        return None  # xarray combined what lazycube's rules refuse: leave it to xarray
    names = list(xds.data_vars)
    if dict(core.dims) != sizes or any(n not in core.data_var_names() for n in names):
        return None
    for name in names + list(xds.coords):
        if name in core and tuple(core[name].dims) != tuple(xds[name].dims):
            return None
    if set(names) != set(core.data_var_names()):
        source = source.keep([v for v in core.data_var_names() if v in set(names)])
    return core, source


def foreign_source(xds, storage_options=None):
    """(``_core.Dataset``, Source) for an xarray Dataset another engine (zarr, netcdf4,
    h5netcdf, ...) opened from a path or URL lazycube reads (``encoding["source"]``; xarray
    does not keep the storage options it was opened with: ``storage_options`` gives them), with the
    user's positional selection (recovered from the index coordinates) and data variables --
    or None when lazycube cannot give the same values (values in memory or computed, a
    selection it cannot recover, other dims, dtypes or coordinates)."""
    path = xds.encoding.get("source")
    names = list(xds.data_vars)
    if not isinstance(path, (str, os.PathLike)) or not names:
        return None
    if not all(_file_values(xds[n]) for n in names):
        return None
    source = Source(path, storage_options)
    try:
        full = open_once(source)
    except (_errors.Error, OSError, ValueError, KeyError):
        if storage_options is not None:
            raise  # reopening was asked for explicitly: say why it failed
        return None
    sizes = dict(full.dims)
    if any(n not in full.data_var_names() for n in names):
        return None
    selection = {}
    for dim in sizes:
        if dim in xds.sizes and xds.sizes[dim] == sizes[dim]:
            continue
        if dim not in full or dim not in xds.coords:
            return None  # no labels to find the selection by
        have = np.asarray(full[dim].read())
        want = xds[dim].values
        if dim in xds.sizes:
            sel = _positions(have, want)
        else:  # dropped by an integer selection: a scalar coordinate remains
            at = np.flatnonzero(have == want) if want.ndim == 0 else []
            sel = int(at[0]) if len(at) == 1 else None
        if sel is None:
            return None
        selection[dim] = sel
    core = full.isel(selection) if selection else full
    for name in names:
        mine, theirs = core[name], xds[name]
        if tuple(mine.dims) != tuple(theirs.dims) or tuple(mine.shape) != tuple(theirs.shape) \
                or np.dtype(mine.dtype) != theirs.dtype:
            return None
        if theirs.ndim and theirs.size:  # one value, read both ways
            corner = {d: slice(0, 1) for d in theirs.dims}
            if not _same_values(mine.isel(corner).read(),
                                theirs.isel(corner).values):
                return None
    for dim in xds.indexes:
        if dim in core and dim in sizes and not _same_values(core[dim].read(), xds[dim].values):
            return None
    source = source.isel(selection)
    if set(names) != set(core.data_var_names()):
        source = source.keep([v for v in core.data_var_names() if v in set(names)])
    return core, source
