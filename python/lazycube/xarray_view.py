"""A lazycube dataset as a lazy ``xarray.Dataset``: :func:`to_xarray` and the backend array.

Every variable is a :class:`LazycubeBackendArray` wrapped in xarray's ``LazilyIndexedArray``:
nothing is read until values are asked for, and then only the selection (lazycube reads the
chunks the selection touches, with the GIL released). lazycube decodes CF conventions itself
(mask and scale, times) exactly as xarray's zarr engine does, so the variables handed to xarray
are already decoded: the CF attributes live in ``encoding`` (as xarray keeps them after its own
decoding), never in ``attrs``, and xarray has nothing left to decode.

``to_xarray(ds)`` turns a lazycube Dataset (``lazycube.open_dataset``) into that lazy
``xarray.Dataset``; ``Dataset.to_xarray()``, the batch layer and xarray's engine
(``lazycube.xarray_backend``) all use it. Every variable's ``encoding["lazycube_source"]``
holds the :class:`lazycube.pipeline.Source` of the whole dataset it was opened from (which
``lazycube.sources.source_of`` finds again). This module imports xarray: the modules below the
adapters import it inside functions only (python/lazycube/_layers.py).
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from . import _core
from .pipeline import open_once

__all__ = ["LazycubeBackendArray", "to_xarray"]

# Keys of a variable's encoding that hold CF decoding parameters: lazycube has applied them,
# so they must never reach xarray as attributes (xarray would decode a second time).
_CF_KEYS = ("scale_factor", "add_offset", "_FillValue", "missing_value", "units", "calendar",
            "dtype", "_Unsigned")


class LazycubeBackendArray(BackendArray):
    """One lazycube variable (whole array) as an xarray backend array.

    ``__getitem__`` takes xarray's explicit indexers; integers and slices are handed to
    lazycube (``Variable.isel`` then ``read``), any array indexer is turned by xarray into the
    enclosing slice plus a NumPy index on the (small) result.

    ``reads`` counts the reads and ``elements_read`` the elements they returned (a
    lazycube-side counter for tests and diagnostics).
    """

    __slots__ = ("variable", "dataset", "source", "shape", "dtype", "dims", "reads", "elements_read",
                 "_lock", "_as_bool")

    def __init__(self, variable, dataset=None, as_bool=False, source=None):
        self.variable = variable      # _core.Variable over the whole array
        self.dataset = dataset        # the _core.Dataset it belongs to (kept alive)
        self.source = source          # the Source of that dataset, or None
        self.shape = tuple(int(n) for n in variable.shape)
        # as_bool: xarray's boolean encoding (int8 stored with attribute dtype="bool").
        self._as_bool = bool(as_bool)
        self.dtype = np.dtype(bool) if as_bool else np.dtype(variable.dtype)
        self.dims = tuple(variable.dims)
        self.reads = 0
        self.elements_read = 0
        self._lock = threading.Lock()

    def __reduce__(self):
        # Pickled by its source description (URL, storage options, open arguments, selection)
        # and the variable's name: the other process reopens the source, once per process
        # (open_once), and reads the same variable. The C++ objects never travel.
        if self.source is None:
            raise TypeError(
                "cannot pickle the lazycube backend array of variable %r: it reads a "
                "lazycube._core.Dataset of unknown origin (built in memory or opened without a "
                "source), which another process cannot reopen. Open the data with "
                "xr.open_dataset(url, engine='lazycube') or lazycube.open_dataset(url)"
                % (self.variable.name,))
        return (_reopen_backend_array,
                (self.source, self.variable.name, self._as_bool, self.shape, self.dtype))

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._raw_getitem)

    def _raw_getitem(self, key: tuple):
        selection: dict[str, Any] = {}
        out_shape: list[int] = []
        for dim, k, n in zip(self.dims, key, self.shape):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                count = len(range(start, stop, step))
                out_shape.append(count)
                if (start, stop, step) != (0, n, 1) or count == 0:
                    selection[dim] = slice(start, stop, step)
            else:
                i = int(k)
                if i < 0:
                    i += n
                if not 0 <= i < n:
                    raise IndexError("index %d is out of bounds for dim %r of size %d"
                                     % (int(k), dim, n))
                selection[dim] = i
        if any(c == 0 for c in out_shape):
            return np.empty(tuple(out_shape), dtype=self.dtype)
        var = self.variable.isel(selection) if selection else self.variable
        values = np.asarray(var.read())
        if self._as_bool:
            values = values.astype(bool)
        with self._lock:
            self.reads += 1
            self.elements_read += int(values.size)
        return values



def _reopen_backend_array(source, name, as_bool, shape, dtype):
    """Unpickles a LazycubeBackendArray: variable `name` of `source`, opened once per process."""
    core = open_once(source)
    if name not in core:
        raise KeyError("variable %r is no longer in %r (reopened to unpickle it)" % (name, source))
    backend = LazycubeBackendArray(core[name], core, as_bool=as_bool, source=source)
    if backend.shape != tuple(shape) or backend.dtype != np.dtype(dtype):
        raise ValueError("variable %r of %r changed since it was pickled: shape %s dtype %s, "
                         "was shape %s dtype %s" % (name, source, backend.shape, backend.dtype,
                                                    tuple(shape), np.dtype(dtype)))
    return backend


def _json_value(v):
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


def _stored_scalar(value, dtype):
    """A fill value as the core's JSON spells it ("NaN", numbers, bytes) as a NumPy scalar of the
    stored dtype, as zarr gives ``fill_value`` (the encoding xarray's zarr engine keeps)."""
    if isinstance(value, list):
        return [_stored_scalar(v, dtype) for v in value]
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))  # zarr decodes these to Python floats
    try:
        dtype = np.dtype(dtype)
        if dtype.kind == "S" and isinstance(value, bytes):
            return np.bytes_(value)
        if dtype.kind == "U" and isinstance(value, str):
            return np.str_(value)
        if dtype.kind in "SUO" or isinstance(value, (bytes, str)):
            return value
        return np.array(value).astype(dtype)[()]
    except (TypeError, ValueError, OverflowError):
        return value


def _codec_encoding(var):
    """``compressor`` / ``filters`` as xarray's zarr engine sets them (numcodecs objects) for a
    Zarr v2 array; {} for other formats."""
    codecs = var.codecs
    if not isinstance(codecs, dict) or "compressor" not in codecs:
        return {}
    import numcodecs

    compressor = codecs.get("compressor")
    filters = codecs.get("filters")
    return {"compressor": None if compressor is None else numcodecs.get_codec(dict(compressor)),
            "filters": None if not filters else [numcodecs.get_codec(dict(f)) for f in filters]}


def _split_attrs_encoding(var, decode_coords: bool):
    """xarray-style (attrs, encoding) for a lazycube variable: the encoding xarray's zarr engine
    gives (chunks, preferred_chunks, compressor, filters, dtype as stored, the CF parameters
    with _FillValue a scalar of the stored type)."""
    attrs = {k: _json_value(v) for k, v in dict(var.attrs).items()}
    encoding = {k: _json_value(v) for k, v in dict(var.encoding).items()}
    stored = np.dtype(var.stored_dtype)
    if decode_coords is None:  # undecoded: the attributes as stored (zarr's fill_value as _FillValue)
        if "_FillValue" in attrs:
            attrs["_FillValue"] = _stored_scalar(attrs["_FillValue"], stored)
        encoding["dtype"] = stored
        _add_storage_encoding(var, encoding)
        return attrs, encoding
    if "char_dim_name" in encoding:
        stored = np.dtype("S1")  # the character array as stored
    encoding["dtype"] = stored
    # _Unsigned: the fill value is one of the reinterpreted type (xarray's UnsignedIntegerCoder).
    fill_type = stored
    if encoding.get("_Unsigned") in ("true", "false") and stored.kind in "iu":
        fill_type = np.dtype("%s%d" % ("u" if encoding["_Unsigned"] == "true" else "i", stored.itemsize))
    # (missing_value stays as the attribute spelled it, as xarray keeps attributes.)
    if "_FillValue" in encoding:
        encoding["_FillValue"] = _stored_scalar(encoding["_FillValue"], fill_type)
    # Decoded values never carry the CF parameters as attributes.
    for key in ("scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned"):
        if key in attrs and key in encoding:
            attrs.pop(key)
    if np.dtype(var.dtype).kind in "mM":
        for key in ("units", "calendar"):
            if key in attrs:
                encoding.setdefault(key, attrs.pop(key))
    if decode_coords is not None and attrs.get("dtype") == "bool" and \
            np.dtype(var.dtype).kind in "iu":
        # xarray's BooleanCoder (applied whenever it decodes): int8 + dtype="bool" -> bool.
        attrs.pop("dtype")
    _add_storage_encoding(var, encoding)
    return attrs, encoding


def _add_storage_encoding(var, encoding):
    """``chunks``, ``preferred_chunks``, ``compressor`` and ``filters`` as xarray's zarr engine
    sets them, decoded or not."""
    chunks = tuple(int(c) for c in var.chunks)
    stored = dict(var.encoding).get("chunks")
    if isinstance(stored, (list, tuple)) and any(isinstance(c, (list, tuple)) for c in stored) \
            and len(stored) == len(chunks) and tuple(var.shape) == tuple(int(sum(c)) if isinstance(c, (list, tuple))
                                                                         else n for c, n in zip(stored, var.shape)):
        # A rectilinear chunk grid: its chunk lengths per rectilinear dim (a tuple, as dask's
        # chunks and xarray's preferred_chunks take them).
        chunks = tuple(tuple(int(x) for x in c) if isinstance(c, (list, tuple)) else int(c) for c in stored)
    dims = tuple(var.dims)
    char_chunk = encoding.pop("char_dim_chunk", None)
    if "char_dim_name" in encoding and char_chunk is not None:
        # A character array: its chunks as stored, the string dim included (as xarray's).
        chunks, dims = chunks + (int(char_chunk),), dims + (encoding["char_dim_name"],)
    if len(chunks) == len(dims):
        encoding["chunks"] = chunks
        encoding["preferred_chunks"] = dict(zip(dims, chunks))
    encoding.update(_codec_encoding(var))


def _times_for_xarray(var, attrs, use_cftime) -> bool:
    """A CF time that xarray's own CFDatetimeCoder must decode: numbers with "<unit> since
    <date>" and a calendar datetime64 cannot represent (noleap, 360_day, julian, ...; the core
    decodes the standard calendars itself, src/dataset/cf.cpp); times the core decoded to a
    coarser datetime64 unit because datetime64[ns] cannot hold them (xarray gives cftime
    objects there); and with use_cftime=True every decoded time."""
    kind = np.dtype(var.dtype).kind
    if kind == "M":
        return bool(use_cftime) or np.datetime_data(np.dtype(var.dtype))[0] != "ns"
    units, calendar = attrs.get("units"), attrs.get("calendar")
    return (kind in "iuf" and isinstance(units, str) and " since " in units
            and isinstance(calendar, str))


def _xarray_decoded_times(core, source, name, decoded_encoding, use_cftime):
    """Variable `name` decoded by xarray's own decode_cf_variable from the stored numbers (read
    lazily by lazycube, undecoded), so that engine="lazycube" gives the cftime objects or
    errors engine="zarr" gives."""
    from xarray import conventions

    if source is None:  # no way to reopen undecoded: xarray decodes the core's numbers
        from xarray.coding.times import CFDatetimeCoder

        var = core[name]
        attrs = {k: _json_value(v) for k, v in dict(var.attrs).items()}
        backend = LazycubeBackendArray(var, core)
        variable = xr.Variable(tuple(var.dims), indexing.LazilyIndexedArray(backend), attrs=attrs)
        return CFDatetimeCoder(use_cftime=use_cftime).decode(variable, name=name)
    raw_source = source.replace(decode_cf=False)
    raw_core = open_once(raw_source)
    raw = raw_core[name]
    attrs = {k: _json_value(v) for k, v in dict(raw.attrs).items()}
    attrs.pop("_ARRAY_DIMENSIONS", None)
    for key in ("_FillValue", "units", "calendar"):
        if key in decoded_encoding and key not in attrs:
            attrs[key] = decoded_encoding[key]
    backend = LazycubeBackendArray(raw, raw_core, source=raw_source)
    variable = xr.Variable(tuple(raw.dims), indexing.LazilyIndexedArray(backend), attrs=attrs)
    return conventions.decode_cf_variable(name, variable, use_cftime=use_cftime)


def _core_and_source(ds):
    """(_core.Dataset, Source or None) of a lazycube Dataset wrapper or a raw _core.Dataset."""
    if isinstance(ds, _core.Dataset):
        return ds, None
    core = getattr(ds, "_core", None)
    if isinstance(core, _core.Dataset):
        return core, getattr(ds, "source", None)
    raise TypeError("expected a lazycube Dataset (lazycube.open_dataset), got %s"
                    % type(ds).__name__)


# Each variable's encoding names the Source of the dataset it was opened from, so that
# source_of() can reopen it when xarray has replaced a variable's lazy wrapper by loaded values
# (e.g. after `.values` with xarray's default cache=True). to_zarr/to_netcdf drop the key.
_SOURCE_KEY = "lazycube_source"


def to_xarray(ds, *, drop_variables: Iterable[str] | None = None,
              decode_coords: bool = True, decode: bool = True, use_cftime=None) -> xr.Dataset:
    """A lazy ``xarray.Dataset`` over a lazycube Dataset: the variables are lazycube-backed
    and read only what is indexed; index coordinates are loaded (xarray builds its indexes from
    them), as with ``xr.open_dataset(..., engine="zarr")``."""
    core, source = _core_and_source(ds)
    drop = set(drop_variables or ())
    variables: dict[str, xr.Variable] = {}
    for name in core.variable_names():
        if name in drop:
            continue
        var = core[name]
        as_bool = decode and dict(var.attrs).get("dtype") == "bool" and \
            np.dtype(var.dtype).kind in "iu"
        attrs, encoding = _split_attrs_encoding(var, decode_coords if decode else None)
        if decode and _times_for_xarray(var, attrs, use_cftime):
            variable = _xarray_decoded_times(core, source, name, encoding, use_cftime)
            for key in ("chunks", "preferred_chunks", "compressor", "filters"):
                if key in encoding:
                    variable.encoding[key] = encoding[key]
        else:
            data = indexing.LazilyIndexedArray(LazycubeBackendArray(var, core, as_bool=as_bool,
                                                                    source=source))
            if np.dtype(var.dtype).kind == "U":
                # Text decoded from bytes (_Encoding): xarray holds it as str objects.
                data = indexing.LazilyIndexedArray(_ObjectArray(data))
            variable = xr.Variable(tuple(var.dims), data, attrs=attrs, encoding=encoding)
        if source is not None:
            variable.encoding[_SOURCE_KEY] = source
        variables[name] = variable

    # The core decided the coordinates (CF `coordinates`, and with decode_coords="all" bounds,
    # grid_mapping, ...: src/dataset/cf_coordinates.cpp); its dimension coordinates always.
    coord_names = set(core.coord_names())
    out = xr.Dataset(variables, attrs={k: _json_value(v) for k, v in dict(core.attrs).items()})
    out = out.set_coords([n for n in variables if n in coord_names and n not in out.coords])
    return out


class _ObjectArray(indexing.ExplicitlyIndexedNDArrayMixin):
    """Fixed-width text ('U') read lazily and handed to xarray as an object array of str, as
    xarray's EncodedStringCoder gives decoded bytes."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    @property
    def dtype(self):
        return np.dtype(object)

    def __getitem__(self, key):
        return np.asarray(self.array[key]).astype(object)
