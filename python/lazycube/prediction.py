"""``lazycube.PredictionWriter``: model outputs for the windows of a ``BatchGenerator`` (or a
torch dataset over it) written back as a Zarr store on the template's grid, overlaps blended.

    writer = lazycube.PredictionWriter(ds, "pred.zarr", variables={"t2m_pred": ("lat", "lon")},
                                       input_dims={"lat": 32, "lon": 32},
                                       input_overlap={"lat": 8, "lon": 8}, blend="hann")
    for batch in gen.batches():                       # or (x, ids) from a torch DataLoader
        writer.write(batch, model(batch.x))
    writer.close()

Windows are those of the batch layer's ``WindowGrid`` (``_core.WindowGrid``: the starts,
strides and row-major numbering a ``BatchGenerator`` uses for the same ``input_dims`` and
``input_overlap``). Each output shard (a chunk when unsharded) accumulates weighted sums and
weight sums in float64; it is divided, cast and stored as soon as every window of the grid that
touches it has arrived, and its buffers are freed: memory holds only the shards in flight.
Decisions (weights, the flush rule, distributed writing): docs/prediction.md.
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Mapping

import numpy as np

from . import _core
from ._errors import UsageError
from .dataset import Dataset, open_dataset
from .pipeline import StorageOptions, resolve_shard

__all__ = ["PredictionWriter", "blend_weights"]

BLENDS = ("mean", "hann", "last")
# The encoding keys CF encoding reads (include/lazycube/dataset/cf_encode.hpp); an xarray
# encoding holds more (chunks, compressor, lazycube's source) that do not concern values.
_CF_ENCODING_KEYS = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units",
                     "calendar")


def _codec(codec, format):
    """The codec as given, else the default of every Zarr output (_core.default_zarr_codec)."""
    return codec or _core.default_zarr_codec(format)


def blend_weights(blend: str, length: int) -> np.ndarray:
    """The 1-D weights of one window dim of `length` elements: ones for "mean" and "last";
    for "hann" ``w[i] = sin(pi * (i + 0.5) / length) ** 2`` -- the Hann window sampled at cell
    centres, symmetric, largest in the middle and never zero (its smallest value,
    ``sin(pi / (2 * length)) ** 2``, is at the two ends), so a cell covered by one window only
    keeps that window's value."""
    if blend == "hann":
        return np.sin(np.pi * (np.arange(length) + 0.5) / length) ** 2
    return np.ones(length)


def _xarray_template(template):
    """The template as an xarray Dataset (lazy: only coordinates are loaded). A URL is opened
    with lazycube.open_dataset as it is (storage options: pass the opened Dataset)."""
    import xarray as xr

    if isinstance(template, xr.DataArray):
        return template.to_dataset(name=template.name or "__xarray_dataarray_variable__")
    if isinstance(template, xr.Dataset):
        return template
    if isinstance(template, str) or hasattr(template, "__fspath__"):
        template = open_dataset(str(template))
    if isinstance(template, Dataset):
        return template.to_xarray()
    raise TypeError("template must be an xarray Dataset/DataArray, a lazycube Dataset or a URL, "
                    "not %s" % type(template).__name__)


def _dims_arg(variables):
    if not isinstance(variables, Mapping) or not variables:
        raise TypeError("variables must be a non-empty dict {name: dims}, e.g. "
                        "{'t2m_pred': ('lat', 'lon')}; got %r" % (variables,))
    out = {}
    for name, dims in variables.items():
        if isinstance(dims, str):
            dims = (dims,)
        try:
            dims = tuple(str(d) for d in dims)
        except TypeError:
            raise TypeError("variables[%r] must be a tuple of dim names, not %r" % (name, dims)) from None
        if len(set(dims)) != len(dims):
            raise ValueError("variables[%r] names a dim twice: %r" % (name, dims))
        out[str(name)] = dims
    return out


def _per_variable(value, names, what):
    """`value` for every variable: one value for all, or a dict {name: value}."""
    if isinstance(value, Mapping):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError("%s names unknown variables %s (variables: %s)"
                             % (what, sorted(unknown), ", ".join(names)))
        return {n: value.get(n) for n in names}
    return {n: value for n in names}


def _to_numpy(tensor):
    """A torch tensor (any device) or array-like as a NumPy array."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(tensor, torch.Tensor):
        tensor = tensor.detach().to("cpu")
        if tensor.dtype == torch.bfloat16:  # (autocast outputs) NumPy has no bfloat16
            tensor = tensor.float()
        return tensor.numpy()
    return np.asarray(tensor)


def _fill_json(value):
    """A fill value as the Zarr metadata writes it ("NaN", "Infinity", numbers)."""
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    return int(value)


class _Unit:
    """One output unit (shard or chunk) in flight: float64 accumulators over its extent and the
    number of windows still expected."""
    __slots__ = ("values", "weights", "got")

    def __init__(self, extent, weight_shape):
        self.values = np.zeros(extent)  # weighted sum ("last": the values)
        self.weights = np.zeros(weight_shape)  # weight sum ("last": 1 where written)
        self.got = 0


class _Output:
    """An output variable: its array writer and the window -> unit arithmetic."""

    def __init__(self, name, dims, array, window_axes, counts, layout, weights):
        self.name, self.dims, self.array = name, dims, array
        self.window_axes = window_axes  # axis of each window dim (input_dims order) in dims
        # one sample of the tensor (window dims, then the others) -> this variable's dim order
        self.transpose = [layout.index(d) for d in dims]
        # the window's weights in this variable's dim order (1 along the other dims)
        self.weight = np.ones([1] * len(dims))
        for axis, w in zip(window_axes, weights):
            shape = [1] * len(dims)
            shape[axis] = len(w)
            self.weight = self.weight * w.reshape(shape)
        self.unit_shape = tuple(array.unit_shape)
        self.grid_shape = tuple(array.grid_shape)
        # per window dim: windows touching each unit index along it
        self.counts = counts
        self.units = {}

    def expected(self, index):
        n = 1
        for k, axis in enumerate(self.window_axes):
            n *= int(self.counts[k][index[axis]])
        return n


class PredictionWriter:
    """Writes model outputs for the windows of `template` to a Zarr store at `url`.

    ``template``: the dataset the windows came from (a lazycube Dataset, an xarray
    Dataset/DataArray, or a URL): its dim sizes define the window grid and its coordinates over
    the output dims (index, multi-dimensional and scalar) are copied to the output.
    ``variables={name: dims}``: the output variables (every one has each window dim; its other
    dims are written whole from each window). ``input_dims``/``input_overlap``: the
    generator's, which fixes the windows
    (``_core.WindowGrid``). ``blend``: "mean" (overlapping predictions averaged), "hann"
    (weighted by :func:`blend_weights`, normalised by the summed weights) or "last" (the window
    written last wins).

    Keyword-only: ``dtype`` (default float32; one for all or {name: dtype}), ``fill_value``
    (what cells no window covers hold; default NaN, required for integer dtypes), ``attrs``
    ({name: attrs}), ``chunks``/``shards``/``codec``/``format``/``overwrite``/``storage_options``
    as :func:`lazycube.to_zarr` takes them (dims not in ``chunks`` keep the template's chunk
    length, or the whole dim), ``rank``/``world_size`` (None: torch.distributed's, as the
    batch pipelines resolve them).

    ``write(windows, tensor)``: ``windows`` is a lazycube ``Batch`` (its windows), an xarray
    Dataset of ``Batch.to_xarray()`` (``<dim>_start``), window ids (an int, a sequence, an array
    or an int64 tensor -- what ``return_window_ids=True`` gives in lazycube.torch), a whole item
    of those datasets (``(x, [y,] ids)``, as the DataLoader yields it), or window starts
    ``{dim: [start per sample]}``. ``tensor`` (NumPy, or torch on any device, bfloat16 too) is
    laid out as stacked batches are: ``(sample, channel, <window dims in input_dims order>,
    <other dims in the first variable's order>)`` with one channel per output variable, in
    ``variables`` order; with one variable the channel axis may be left out. Call write() from
    one thread (the DataLoader's consumer).

    ``close()`` writes the metadata (the store is then complete and readable). With windows
    missing it raises UsageError naming them and the shards left incomplete, writes nothing of
    those shards and commits nothing, unless ``close(allow_incomplete=True)``: the store is then
    committed with the incomplete shards left as the fill value, and a warning names them.
    Under torch.distributed every rank makes a writer with the same arguments and writes its
    own windows; ``close()`` is collective (see docs/prediction.md).
    """

    def __init__(self, template, url, variables, input_dims, input_overlap=None, blend="mean", *,
                 dtype="float32", fill_value=None, attrs=None, chunks=None, shards=None, codec=None,
                 format=3, overwrite=False, storage_options=None, rank=None, world_size=None):
        if blend not in BLENDS:
            raise ValueError("blend must be one of %s, not %r" % (", ".join(map(repr, BLENDS)), blend))
        if format not in (2, 3):
            raise ValueError("format must be 2 or 3, not %r" % (format,))
        if format == 2 and shards:
            raise ValueError("shards need Zarr v3 (format=3)")
        if not isinstance(input_dims, Mapping) or not input_dims:
            raise TypeError("input_dims must be a non-empty dict {dim: window length}")
        self.blend = blend
        self.url = str(url)
        self.variables = _dims_arg(variables)
        names = list(self.variables)
        xds = _xarray_template(template)
        sizes = {str(d): int(n) for d, n in xds.sizes.items()}
        self.input_dims = {str(k): int(v) for k, v in input_dims.items()}
        self.input_overlap = {str(k): int(v) for k, v in dict(input_overlap or {}).items()}
        for what, mapping in (("input_dims", self.input_dims), ("input_overlap", self.input_overlap)):
            for dim in mapping:
                if dim not in sizes:
                    raise UsageError("%s: the template has no dim %r (dims: %s)"
                                     % (what, dim, ", ".join(sizes)))
        self._grid = _core.WindowGrid(list(sizes.items()), list(self.input_dims.items()),
                                      self.input_overlap)
        self._grid_dims = self._grid.dims  # per window dim: dim, size, length, stride, count
        self._window_dims = [g["dim"] for g in self._grid_dims]
        first_other = None
        for name, dims in self.variables.items():
            for dim in dims:
                if dim not in sizes:
                    raise UsageError("variables[%r]: the template has no dim %r (dims: %s)"
                                     % (name, dim, ", ".join(sizes)))
            missing = [d for d in self._window_dims if d not in dims]
            if missing:
                raise UsageError("variables[%r] lacks the window dim(s) %s: every output variable "
                                 "has each input dim" % (name, ", ".join(missing)))
            other = [d for d in dims if d not in self.input_dims]
            if first_other is None:
                first_other = other
            elif set(other) != set(first_other):
                raise UsageError("variables[%r] has the other dims %s, variables[%r] %s: the "
                                 "variables are channels of one tensor, so they share their dims"
                                 % (name, other, names[0], first_other))
        self._other_dims = first_other
        self._sizes = sizes
        # The layout of one sample of the tensor (after the channel axis).
        self._sample_shape = tuple(self.input_dims[d] for d in self._window_dims) + \
            tuple(sizes[d] for d in self._other_dims)
        dtypes = {n: np.dtype(t) for n, t in _per_variable(dtype, names, "dtype").items()}
        fills = _per_variable(fill_value, names, "fill_value")
        for n in names:
            if fills[n] is None:
                if dtypes[n].kind not in "fc":
                    raise ValueError("fill_value is needed for the %s variable %r: the value of "
                                     "cells no window covers" % (dtypes[n], n))
                fills[n] = float("nan")
        self._dtypes, self._fills = dtypes, fills
        var_attrs = _per_variable(attrs, names, "attrs")
        self._weights = [blend_weights(blend, g["length"]) for g in self._grid_dims]

        self.rank, self.world_size = resolve_shard(rank, world_size)
        self._dist = None
        if self.world_size > 1:
            dist = sys.modules.get("torch.distributed")
            if dist is None or not dist.is_initialized():
                raise UsageError("PredictionWriter with world_size=%d needs an initialised "
                                 "torch.distributed process group (close() gathers the shards "
                                 "several ranks touched on rank 0)" % self.world_size)
            self._dist = dist
        options = StorageOptions(storage_options).core() or {}
        # The template's coordinates copied: those over output dims only (scalars too).
        out_dims = {d for dims in self.variables.values() for d in dims}
        self._coords = {str(c): tuple(str(d) for d in v.dims) for c, v in xds.coords.items()
                        if set(v.dims) <= out_dims and c not in self.variables}
        chunk_len = self._chunk_lengths(xds, chunks, shards, sizes)
        self._spec = (dtypes, var_attrs, chunk_len, bool(shards), _codec(codec, format), format)
        # Rank 0 prepares the destination (output specs checked first, then the coordinates
        # written) before the other ranks open it keeping what is there; its failure is every
        # rank's (no rank is left waiting).
        # prepare(): what the mode removes (overwrite: the old store; resume: nothing before
        # commit) goes now, on every rank before any rank writes a unit.
        error = None
        if self.rank == 0:
            try:
                self._writer = _core.ZarrWriter(self.url, options,
                                                mode="overwrite" if overwrite else "create")
                self._declare_outputs()
                self._writer.prepare()
                self._write_coords(xds, chunk_len, codec, format)
            except Exception as exc:
                error = exc
        self._agree(error)
        if self._dist is not None:
            error = None
            if self.rank != 0:
                try:
                    self._writer = _core.ZarrWriter(self.url, options, mode="resume")
                    self._declare_outputs()
                    self._writer.prepare()
                except Exception as exc:
                    error = exc
            self._agree_all(error)
        self._seen = np.zeros((self._grid.size + 7) // 8, dtype=np.uint8)  # a bit per window
        self._closed = False
        self.units_written = 0

    # ---- set-up ---------------------------------------------------------------------------
    def _agree(self, error):
        """Raises rank 0's `error` (None: success) on every rank (one process: raises it)."""
        if self._dist is None:
            if error is not None:
                raise error
            return
        box = [None if error is None else (type(error), str(error))]
        self._dist.broadcast_object_list(box, src=0)
        if error is not None:
            raise error
        if box[0] is not None:
            cls, message = box[0]
            raise cls("rank 0: " + message)

    def _agree_all(self, error):
        """Raises on every rank the error of any rank (the lowest), None meaning success."""
        errors = [None] * self.world_size
        self._dist.all_gather_object(errors, None if error is None else (type(error), str(error)))
        if error is not None:
            raise error
        for r, e in enumerate(errors):
            if e is not None:
                raise e[0]("rank %d: %s" % (r, e[1]))

    def _declare_outputs(self):
        """The output arrays (specs checked, nothing written) and their unit arithmetic."""
        dtypes, var_attrs, chunk_len, sharded, codecs, format = self._spec
        self._outputs = []
        for n, dims in self.variables.items():
            a = dict(var_attrs[n] or {})
            # the non-index coordinates written for it, named as xarray names them
            extra = [c for c, cdims in self._coords.items()
                     if cdims != (c,) and set(cdims) <= set(dims)]
            if extra and "coordinates" not in a:
                a["coordinates"] = " ".join(extra)
            fill = _fill_json(dtypes[n].type(self._fills[n]))
            if format == 3:
                a.setdefault("_FillValue", fill)
            array = self._writer.create_array(
                n, dtypes[n], [self._sizes[d] for d in dims], [chunk_len[d][0] for d in dims],
                [chunk_len[d][1] for d in dims] if sharded else [], codecs, fill, list(dims), a,
                format)
            axes = [dims.index(d) for d in self._window_dims]
            counts = [self._touch_counts(k, array.unit_shape[axes[k]])
                      for k in range(len(self._window_dims))]
            self._outputs.append(_Output(n, dims, array, axes, counts,
                                         self._window_dims + self._other_dims, self._weights))

    def _chunk_lengths(self, xds, chunks, shards, sizes):
        """{dim: (chunk length, shard length)}: chunks/shards as given, else the template's
        chunk length along the dim (its encoding, as lazycube.to_zarr keeps the source's), else
        the whole dim."""
        out = {}
        chunks, shards = dict(chunks or {}), dict(shards or {})
        for what, mapping in (("chunks", chunks), ("shards", shards)):
            for dim, n in mapping.items():
                if dim not in sizes:
                    raise UsageError("%s: the template has no dim %r (dims: %s)"
                                     % (what, dim, ", ".join(sizes)))
                if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                    raise ValueError("%s[%r] must be a positive int, not %r" % (what, dim, n))
        for dim, size in sizes.items():
            chunk = chunks.get(dim)
            if chunk is None:
                for var in list(xds.data_vars.values()) + list(xds.coords.values()):
                    preferred = var.encoding.get("preferred_chunks") or {}
                    if dim in preferred:
                        chunk = int(preferred[dim])
                        break
            chunk = max(1, min(int(chunk or size), max(size, 1)))
            shard = int(shards.get(dim, chunk))
            if shard % chunk:
                raise UsageError("shards: %s=%d is not a multiple of the chunk length %d"
                                 % (dim, shard, chunk))
            out[dim] = (chunk, shard)
        return out

    def _write_coords(self, xds, chunk_len, codec, format):
        """The template's coordinate variables over the output dims, CF-encoded as
        lazycube.to_zarr encodes them (_core.cf_encode), one unit each."""
        codecs = _codec(codec, format)
        for name in self._coords:
            var = xds.coords[name]
            encoding = {k: v for k, v in var.encoding.items() if k in _CF_ENCODING_KEYS}
            # (np.array, not ascontiguousarray: that makes a scalar 1-d)
            values, attrs = _core.cf_encode(np.array(var.values, order="C"), dict(var.attrs),
                                            encoding, str(name))
            attrs = dict(attrs)
            fill = attrs.get("_FillValue")
            if fill is not None and format == 2:
                del attrs["_FillValue"]
            if format == 2 and not var.dims:  # a scalar: xarray needs its (empty) dim list
                attrs["_ARRAY_DIMENSIONS"] = []
            array = self._writer.create_array(
                str(name), values.dtype, list(values.shape), [max(1, n) for n in values.shape],
                [], codecs, fill, [str(d) for d in var.dims], attrs, format)
            if values.size:
                array.write_unit([0] * values.ndim, np.array(values, order="C"))

    def _touch_counts(self, k, unit_len):
        """Per unit index along window dim k: the windows of the grid that touch it."""
        g = self._grid_dims[k]
        n_units = -(-g["size"] // unit_len)
        starts = np.arange(g["count"], dtype=np.int64) * g["stride"]
        first = starts // unit_len
        last = (starts + g["length"] - 1) // unit_len
        diff = np.zeros(n_units + 1, dtype=np.int64)
        np.add.at(diff, first, 1)
        np.add.at(diff, last + 1, -1)
        return np.cumsum(diff)[:n_units]

    # ---- windows ----------------------------------------------------------------------------
    def _describe(self, per_dim):
        return "{%s}" % ", ".join("%s: %d" % (g["dim"], int(w) * g["stride"])
                                  for g, w in zip(self._grid_dims, per_dim))

    def _ids_from_starts(self, starts, lengths=None):
        """Window ids from {dim: starts} (one start per sample), checked against the grid."""
        unknown = set(starts) - set(self._window_dims)
        missing = [d for d in self._window_dims if d not in starts]
        if unknown or missing:
            raise UsageError("window starts name the dims %s; the windows slide over %s"
                             % (sorted(starts), self._window_dims))
        cols = [np.asarray(starts[d], dtype=np.int64).reshape(-1) for d in self._window_dims]
        n = len(cols[0])
        if any(len(c) != n for c in cols):
            raise UsageError("window starts: every dim needs one start per sample (%s)"
                             % ", ".join("%s: %d" % (d, len(c)) for d, c in zip(self._window_dims, cols)))
        per_dim = np.empty((n, len(cols)), dtype=np.int64)
        for k, (g, c) in enumerate(zip(self._grid_dims, cols)):
            w = c // g["stride"]
            bad = (c < 0) | (c % g["stride"] != 0) | (w >= g["count"])
            if lengths is not None:
                bad |= np.asarray(lengths[g["dim"]], dtype=np.int64).reshape(-1) != g["length"]
            if bad.any():
                s = int(np.flatnonzero(bad)[0])
                where = ", ".join("%s: %d" % (d, int(cc[s])) for d, cc in zip(self._window_dims, cols))
                raise UsageError(
                    "the window starting at {%s} is not a window of the grid: along %r windows "
                    "are %d long and start at multiples of %d below %d (input_dims=%r, "
                    "input_overlap=%r)" % (where, g["dim"], g["length"], g["stride"],
                                           g["count"] * g["stride"], self.input_dims,
                                           self.input_overlap))
            per_dim[:, k] = w
        return self._grid.ravel(per_dim)

    def _window_ids(self, windows):
        """Window ids (int64 array) of the `windows` argument of write()."""
        if hasattr(windows, "window_dims") and hasattr(windows, "windows"):  # a (core) Batch
            dims = list(windows.window_dims)
            ranges = list(windows.windows)
            if set(dims) != set(self._window_dims):
                raise UsageError("the batch's windows slide over %s; this writer's over %s"
                                 % (dims, self._window_dims))
            starts = {d: [w[k][0] for w in ranges] for k, d in enumerate(dims)}
            lengths = {d: [w[k][1] for w in ranges] for k, d in enumerate(dims)}
            return self._ids_from_starts(starts, lengths)
        xr = sys.modules.get("xarray")
        if xr is not None and isinstance(windows, xr.Dataset):
            names = ["%s_start" % d for d in self._window_dims]
            if all(n in windows.coords for n in names):
                return self._ids_from_starts({d: windows.coords["%s_start" % d].values
                                              for d in self._window_dims})
            raise UsageError("this xarray Dataset has no window starts (%s): pass a batch of a "
                             "stacked BatchGenerator's to_xarray(), window ids or starts"
                             % ", ".join(names))
        if isinstance(windows, Mapping):
            return self._ids_from_starts(dict(windows))
        if isinstance(windows, (tuple, list)) and len(windows) >= 2 and \
                getattr(windows[0], "ndim", 0) >= 2:
            # an item of lazycube.torch's datasets: (x, [y,] window ids)
            ids = _to_numpy(windows[-1])
            if ids.dtype.kind not in "iu" or ids.ndim > 1:
                raise UsageError("this item of %d tensors ends with no window ids: make the torch "
                                 "dataset with return_window_ids=True, or pass the ids"
                                 % len(windows))
            windows = ids
        ids = _to_numpy(windows)
        if ids.dtype.kind not in "iu" or ids.ndim > 1:
            raise TypeError("windows must be a Batch, window ids (ints), or {dim: starts}; got "
                            "%s of dtype %s" % (type(windows).__name__, ids.dtype))
        ids = ids.reshape(-1).astype(np.int64)
        bad = (ids < 0) | (ids >= self._grid.size)
        if bad.any():
            raise UsageError("window id %d is not in the grid (%d windows for input_dims=%r, "
                             "input_overlap=%r)" % (int(ids[bad][0]), self._grid.size,
                                                    self.input_dims, self.input_overlap))
        return ids

    # ---- writing ------------------------------------------------------------------------------
    def write(self, windows, tensor):
        """Adds the predictions `tensor` for `windows` (see the class docstring); shards whose
        windows have all arrived are written now."""
        if self._closed:
            raise UsageError("PredictionWriter.write() after close()")
        ids = self._window_ids(windows)
        data = _to_numpy(tensor)
        nvars = len(self._outputs)
        want = (len(ids), nvars) + self._sample_shape
        if data.shape == (len(ids),) + self._sample_shape and nvars == 1:
            data = data[:, None]
        if data.shape != want:
            raise UsageError(
                "the predictions have shape %s; %d window(s) need %s: (sample, channel=%d "
                "[%s], %s)%s" % (tuple(data.shape), len(ids), want, nvars, ", ".join(self.variables),
                                 ", ".join(self._window_dims + self._other_dims),
                                 " (or without the channel axis)" if nvars == 1 else ""))
        if data.dtype.kind not in "fiub":
            raise TypeError("the predictions have dtype %s; numbers are needed" % data.dtype)
        per_dim = self._grid.unravel(ids)
        bits = (1 << (7 - (ids & 7))).astype(np.uint8)
        if len(np.unique(ids)) != len(ids) or (self._seen[ids >> 3] & bits).any():
            dup = next(int(i) for k, i in enumerate(ids)
                       if self._seen[i >> 3] & (1 << (7 - (i & 7))) or i in ids[:k])
            raise UsageError(
                "window %d (at %s) was already written: each window is written once (a second "
                "write would count twice in the shards' completeness and, with blend=%r, %s)"
                % (dup, self._describe(self._grid.unravel(np.array([dup]))[0]), self.blend,
                   "replace the first" if self.blend == "last" else "weigh twice"))
        np.bitwise_or.at(self._seen, ids >> 3, bits)
        for s in range(len(ids)):
            for c, out in enumerate(self._outputs):
                self._add(out, per_dim[s], data[s, c])

    def _add(self, out, per_dim, sample):
        """One window's values (window dims in input_dims order, then the other dims) into the
        units of `out` it touches."""
        values = np.transpose(sample, out.transpose)
        ndim = len(out.dims)
        starts = [0] * ndim
        for k, axis in enumerate(out.window_axes):
            starts[axis] = int(per_dim[k]) * self._grid_dims[k]["stride"]
        # Unit index ranges along each axis: the window's span (window dims), every unit (others).
        ranges = []
        for axis, dim in enumerate(out.dims):
            u = out.unit_shape[axis]
            if axis in out.window_axes:
                length = self.input_dims[dim]
                ranges.append(range(starts[axis] // u, (starts[axis] + length - 1) // u + 1))
            else:
                ranges.append(range(out.grid_shape[axis]))
        weight = out.weight
        for index in np.ndindex(*[len(r) for r in ranges]):
            index = tuple(r[i] for r, i in zip(ranges, index))
            origin = [i * u for i, u in zip(index, out.unit_shape)]
            extent = [min(u, self._sizes[d] - o) for u, d, o in zip(out.unit_shape, out.dims, origin)]
            unit_sl, win_sl = [], []
            for axis in range(ndim):
                lo = max(origin[axis], starts[axis])
                hi = min(origin[axis] + extent[axis], starts[axis] + values.shape[axis])
                unit_sl.append(slice(lo - origin[axis], hi - origin[axis]))
                win_sl.append(slice(lo - starts[axis], hi - starts[axis]))
            unit = out.units.get(index)
            if unit is None:
                wshape = [e if a in out.window_axes else 1 for a, e in enumerate(extent)]
                unit = out.units[index] = _Unit(extent, wshape)
            wsl = tuple(s if a in out.window_axes else slice(None) for a, s in enumerate(win_sl))
            usl_w = tuple(s if a in out.window_axes else slice(None) for a, s in enumerate(unit_sl))
            part = values[tuple(win_sl)]
            if self.blend == "last":
                unit.values[tuple(unit_sl)] = part
                unit.weights[usl_w] = 1.0
            else:
                w = weight[wsl]
                unit.values[tuple(unit_sl)] += w * part
                unit.weights[usl_w] += w
            unit.got += 1
            if unit.got == out.expected(index):
                self._flush(out, index, unit)

    def _flush(self, out, index, unit):
        """Divides, casts and stores a complete unit, and frees it."""
        values = self._finish(out, unit)
        out.array.write_unit(list(index), values)
        del out.units[index]
        self.units_written += 1

    def _finish(self, out, unit):
        covered = np.broadcast_to(unit.weights > 0, unit.values.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = unit.values if self.blend == "last" else unit.values / unit.weights
        values = np.where(covered, values, self._fills[out.name])
        return np.ascontiguousarray(values.astype(self._dtypes[out.name]))

    @property
    def pending_units(self) -> int:
        """Units (shards, or chunks when unsharded) held in memory, waiting for windows."""
        return sum(len(o.units) for o in self._outputs)

    # ---- closing ------------------------------------------------------------------------------
    def close(self, allow_incomplete=False):
        """Writes what is left and the metadata (see the class docstring). Collective under
        torch.distributed: every rank calls it."""
        if self._closed:
            return
        self._closed = True
        if self._dist is not None:
            self._close_distributed(allow_incomplete)
        else:
            self._finalise([{(o.name, k): u for o in self._outputs for k, u in o.units.items()}],
                           np.unpackbits(self._seen, count=self._grid.size) > 0, allow_incomplete)

    def _close_distributed(self, allow_incomplete):
        """Every rank sends its units in flight and its windows seen to rank 0, which combines
        them (rank order), writes them and the metadata; then every rank learns the outcome."""
        dist = self._dist
        partial = {(o.name, k): u for o in self._outputs for k, u in o.units.items()}
        gathered = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object((partial, self._seen), gathered, dst=0)
        error = None
        if self.rank == 0:
            seen = np.zeros(self._grid.size, dtype=np.int64)
            for _, bits in gathered:
                seen += np.unpackbits(bits, count=self._grid.size)
            try:
                if (seen > 1).any():
                    dup = int(np.flatnonzero(seen > 1)[0])
                    raise UsageError("window %d (at %s) was written by several ranks"
                                     % (dup, self._describe(self._grid.unravel(np.array([dup]))[0])))
                self._finalise([p for p, _ in gathered], seen > 0, allow_incomplete)
            except Exception as exc:  # reported on every rank
                error = exc
        self._agree(error)

    def _finalise(self, partials, seen, allow_incomplete):
        """Combines the units in flight of each process (in order), writes the complete ones
        and, unless windows are missing (allow_incomplete), commits the metadata."""
        incomplete = []
        for out in self._outputs:
            keys = sorted({k for p in partials for (name, k) in p if name == out.name})
            for index in keys:
                unit = None
                for p in partials:
                    part = p.get((out.name, index))
                    if part is None:
                        continue
                    if unit is None:
                        unit = part
                    elif self.blend == "last":
                        written = np.broadcast_to(part.weights > 0, part.values.shape)
                        unit.values = np.where(written, part.values, unit.values)
                        unit.weights = np.maximum(unit.weights, part.weights)
                        unit.got += part.got
                    else:
                        unit.values += part.values
                        unit.weights += part.weights
                        unit.got += part.got
                if unit.got == out.expected(index):
                    self._flush(out, index, unit)
                else:
                    incomplete.append("%s[%s]" % (out.name, ",".join(map(str, index))))
            out.units.clear()
        if incomplete:
            missing = np.flatnonzero(~np.asarray(seen, dtype=bool))
            examples = ", ".join("%d at %s" % (int(i), self._describe(p)) for i, p in
                                 zip(missing[:3], self._grid.unravel(missing[:3])))
            message = ("%d of %d windows were never written (%s%s); %d shard(s) are incomplete: "
                       "%s%s" % (len(missing), self._grid.size, examples,
                                 ", ..." if len(missing) > 3 else "", len(incomplete),
                                 ", ".join(incomplete[:8]), ", ..." if len(incomplete) > 8 else ""))
            if not allow_incomplete:
                raise UsageError(
                    "PredictionWriter.close(): " + message + ". Those shards were not written "
                    "and the metadata was not committed; close(allow_incomplete=True) commits the "
                    "store with them left as the fill value")
            warnings.warn("PredictionWriter: " + message + "; they are left as the fill value",
                          UserWarning, stacklevel=3)
        self._writer.commit()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._closed = True  # an error in the loop: nothing is committed

    def __repr__(self):
        return ("lazycube.PredictionWriter(%r, variables=%r, input_dims=%r, input_overlap=%r, "
                "blend=%r)" % (self.url, self.variables, self.input_dims, self.input_overlap,
                               self.blend))
