"""Lazy datasets: ``lazycube.open_dataset`` and the ``Dataset`` / ``Variable`` wrappers over the
compiled core (``lazycube._core``). Opening reads metadata only; values are read by
``Variable.read()`` / ``.values`` (with the GIL released, straight into a NumPy array that owns
the C++ buffer)."""

from collections.abc import Mapping

import numpy as np

from . import _core
from .pipeline import MultiSource, OPEN_ARGS, Source

__all__ = ["open_dataset", "open_mfdataset", "merge", "Dataset", "Variable"]


def _merge_indexers(indexers, kwargs, what):
    if indexers is None:
        return dict(kwargs)
    if not isinstance(indexers, Mapping):
        raise TypeError("%s: indexers must be a dict of dim -> indexer, not %s"
                        % (what, type(indexers).__name__))
    if kwargs:
        both = set(indexers) & set(kwargs)
        if both:
            raise ValueError("%s: dims given twice: %s" % (what, ", ".join(sorted(both))))
    out = dict(indexers)
    out.update(kwargs)
    return out


class Variable:
    """A named, dimensioned, lazily selected view of one array (like ``xarray.Variable``)."""

    __slots__ = ("_core", "_source")

    def __init__(self, core, source=None):
        if not isinstance(core, _core.Variable):
            raise TypeError("Variable wraps a lazycube._core.Variable, not %s" % type(core).__name__)
        self._core = core
        self._source = source  # the Source of its dataset, narrowed like the variable

    @property
    def source(self):
        """The Source of the dataset this variable is read from (with the variable's
        selection), or None; ``ds[name]`` of ``source.open()`` is this variable again."""
        return self._source

    def __reduce__(self):
        if self._source is None:
            raise TypeError("this lazycube.Variable cannot be pickled: it wraps a "
                            "lazycube._core.Variable of unknown origin (use lazycube.open_dataset)")
        return (_reopen_variable, (self._source, self.name))

    def _narrowed(self, positions):
        source = None if self._source is None else self._source.isel(positions)
        return Variable(self._core.isel(positions), source)

    @property
    def name(self):
        return self._core.name

    @property
    def dims(self):
        return self._core.dims

    @property
    def shape(self):
        return self._core.shape

    @property
    def sizes(self):
        return dict(zip(self._core.dims, self._core.shape))

    @property
    def ndim(self):
        return len(self._core.dims)

    @property
    def size(self):
        return int(np.prod(self._core.shape, dtype=np.int64))

    @property
    def dtype(self):
        return self._core.dtype

    @property
    def stored_dtype(self):
        return self._core.stored_dtype

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def attrs(self):
        return self._core.attrs

    @property
    def encoding(self):
        return self._core.encoding

    @property
    def chunks(self):
        return self._core.chunks

    def isel(self, indexers=None, **indexers_kwargs):
        """Positional selection (ints drop the dim, slices keep it); reads nothing."""
        return self._narrowed(_merge_indexers(indexers, indexers_kwargs, "isel"))

    def sel(self, indexers=None, method=None, tolerance=None, **indexers_kwargs):
        """Label selection through the index coordinates (numbers, ISO date-time strings,
        numpy.datetime64, or slices of them, inclusive like xarray)."""
        labels = _merge_indexers(indexers, indexers_kwargs, "sel")
        return self._narrowed(self._core.sel_positions(labels, method=method, tolerance=tolerance))

    def read(self):
        """The selected values, CF-decoded, as a NumPy array (no copy of the C++ buffer)."""
        return self._core.read()

    def read_raw(self):
        """The selected values as stored (no masking, scaling or time decoding)."""
        return self._core.read_raw()

    @property
    def values(self):
        return self._core.read()

    def __array__(self, dtype=None):
        arr = self._core.read()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __len__(self):
        if not self._core.shape:
            raise TypeError("len() of a 0-d variable")
        return self._core.shape[0]

    def __repr__(self):
        dims = ", ".join("%s: %d" % (d, n) for d, n in zip(self.dims, self.shape))
        return "<lazycube.Variable %r (%s) %s>" % (self.name, dims, self.dtype)


class _Variables(Mapping):
    """Read-only mapping name -> Variable over some of a dataset's variables."""

    __slots__ = ("_ds", "_names", "_source")

    def __init__(self, ds, names, source=None):
        self._ds = ds
        self._names = list(names)
        self._source = source

    def __getitem__(self, name):
        if name not in self._names:
            raise KeyError(name)
        return Variable(self._ds[name], self._source)

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __contains__(self, name):
        return name in self._names

    def __repr__(self):
        return "{%s}" % ", ".join(repr(n) for n in self._names)


class Dataset:
    """Variables sharing dims, with coordinates and attributes (like ``xarray.Dataset``).
    ``ds._core`` is the ``lazycube._core.Dataset`` underneath; ``ds.source`` the
    :class:`lazycube.pipeline.Source` it can be reopened from in another process (None when
    built around a ``_core.Dataset`` of unknown origin). Picklable when the source is known."""

    __slots__ = ("_core", "_source")

    def __init__(self, core, source=None):
        if isinstance(core, Dataset):
            core, source = core._core, source or core._source
        if not isinstance(core, _core.Dataset):
            raise TypeError("Dataset wraps a lazycube._core.Dataset, not %s" % type(core).__name__)
        if source is not None and not isinstance(source, (Source, MultiSource)):
            raise TypeError("Dataset(source=...) takes a lazycube.pipeline.Source, not %s"
                            % type(source).__name__)
        self._core = core
        self._source = source

    @property
    def source(self):
        """Where this dataset comes from (URL, options, selection), or None."""
        return self._source

    def __reduce__(self):
        if self._source is None:
            raise TypeError("this lazycube.Dataset cannot be pickled: it wraps a "
                            "lazycube._core.Dataset of unknown origin (use lazycube.open_dataset)")
        return (_reopen, (self._source,))

    @property
    def dims(self):
        """dim name -> size, in order of first appearance."""
        return dict(self._core.dims)

    @property
    def sizes(self):
        return dict(self._core.dims)

    @property
    def attrs(self):
        return self._core.attrs

    @property
    def variables(self):
        return _Variables(self._core, self._core.variable_names(), self._source)

    @property
    def coords(self):
        return _Variables(self._core, self._core.coord_names(), self._source)

    @property
    def data_vars(self):
        return _Variables(self._core, self._core.data_var_names(), self._source)

    def __getitem__(self, name):
        return Variable(self._core[name], self._source)

    def __contains__(self, name):
        return name in self._core

    def __iter__(self):  # like xarray: the data variables
        return iter(self._core.data_var_names())

    def __len__(self):
        return len(self._core.data_var_names())

    def isel(self, indexers=None, **indexers_kwargs):
        return self._narrowed(_merge_indexers(indexers, indexers_kwargs, "isel"))

    def sel(self, indexers=None, method=None, tolerance=None, **indexers_kwargs):
        # recorded by position, so that the source replays it exactly (even undecoded)
        labels = _merge_indexers(indexers, indexers_kwargs, "sel")
        return self._narrowed(self._core.sel_positions(labels, method=method, tolerance=tolerance))

    def _narrowed(self, positions):
        source = None if self._source is None else self._source.isel(positions)
        return Dataset(self._core.isel(positions), source)

    def to_xarray(self):
        """An ``xarray.Dataset`` whose variables stay lazy (backed by lazycube)."""
        from .xarray_view import to_xarray  # imports xarray

        return to_xarray(self)

    def __repr__(self):
        dims = ", ".join("%s: %d" % (d, n) for d, n in self._core.dims)
        lines = ["<lazycube.Dataset>", "Dimensions:  (%s)" % dims]
        for title, names in (("Coordinates:", self._core.coord_names()),
                             ("Data variables:", self._core.data_var_names())):
            lines.append(title)
            for n in names:
                v = self._core[n]
                lines.append("    %-10s (%s) %s" % (n, ", ".join(v.dims), v.dtype))
        return "\n".join(lines)


def open_dataset(url, storage_options=None, decode_cf=True, consolidated=None, engine=None,
                 mask_valid_range=False, group=None, branch=None, tag=None, snapshot=None,
                 virtual_chunk_containers=None, cache_dir=None, missing_chunks=None, struct_fields=False,
                 drop_variables=None):
    """Opens a Zarr v2/v3 store, a kerchunk reference set or a NetCDF/HDF5/GRIB file (local
    path, file://, http(s)://, s3://, gs:// or gcs://, az:// (abfs[s]://), reference://) lazily:
    only metadata is read.
    ``storage_options`` are fsspec-style options for the cloud stores (credentials,
    endpoint_url, ...; ``allowed_prefixes`` for reference sets). ``engine``: None (the format
    registry recognises the format: "gdal" for .nc/.nc4/.cdf/.h5/.hdf5/.he5/.grib/.grib2/.grb/.grb2
    or a local file with such a signature, "kerchunk" for reference sets, "icechunk" for
    repositories, else "zarr"; docs/formats.md) or one of those names. ``mask_valid_range=True`` masks stored values
    outside a variable's ``valid_range`` / ``valid_min`` / ``valid_max`` to NaN (before
    scale/offset, as netCDF4-python does; xarray never does) and moves those attributes to the
    encoding.

    ``group``: the node opened instead of the root, a path inside the hierarchy ("group1",
    "a/b"; xarray's spelling), for Zarr stores and Icechunk repositories.

    Icechunk repositories (recognised at the URL by their layout) open at branch ``main``, or at
    ``branch=``, ``tag=`` or ``snapshot=`` (at most one); an unknown or deleted ref is a
    ``NotFoundError`` ("ref not found") naming it. ``virtual_chunk_containers={"s3://bucket/":
    {...storage options...}}`` authorises reading virtual chunks under those URL prefixes, with
    those options (endpoint_url, region_name, key, secret, anon, ...); a virtual chunk of any other
    container is an error naming it. All of these are an error for a store that is not a
    repository.

    ``cache_dir``: keep the bytes read from network stores in this local directory, shared by
    processes (the storage option ``cache_dir``; default: ``LAZYCUBE_CACHE_DIR``;
    docs/disk_cache.md). It travels in the storage options, so pickled copies (DataLoader
    workers) read through the same directory.

    ``missing_chunks``: what a Zarr chunk (or shard) absent from the store reads as: ``"fill"``
    (the default, the Zarr spec's fill value) or ``"error"`` (a ``MissingDataError`` naming the
    chunk and the array when a read touches it, as zarr-python's ``read_missing_chunks=False``),
    for Zarr stores, Icechunk repositories and kerchunk references; ``"error"`` is a
    ``UsageError`` for other formats.

    ``struct_fields``: arrays of records (the Zarr v3 ``struct`` data type) read, by default, as
    one variable of NumPy structured dtype (field names, offsets and itemsize of the records), as
    xarray's zarr engine shows a structured array; ``struct_fields=True`` replaces each by one
    variable per field named ``"<array>.<field>"`` (``"rec.point.x"`` for a nested struct), with
    the array's dims and attributes, which batches and torch datasets can take.

    ``drop_variables``: a name or list of names left out, as xarray's ``drop_variables``. An
    array of the store that lazycube cannot read (an unknown codec or data type, malformed
    metadata) fails the open with its own error (``CodecError``, ``MetadataError``) naming it,
    its reason and the ``drop_variables`` that opens the other variables without it."""
    if cache_dir is not None:
        storage_options = dict(storage_options or {}, cache_dir=str(cache_dir))
    source = Source(url, storage_options, decode_cf=decode_cf, consolidated=consolidated,
                    engine=engine, mask_valid_range=mask_valid_range, group=group, branch=branch,
                    tag=tag, snapshot=snapshot, virtual_chunk_containers=virtual_chunk_containers,
                    missing_chunks=missing_chunks, struct_fields=struct_fields,
                    drop_variables=drop_variables)
    return Dataset(source.open(), source)


def _paths(paths):
    """The list of paths/URLs: a list as given, or a glob pattern of local paths (sorted, as
    xarray's open_mfdataset expands one)."""
    import glob
    import os

    if isinstance(paths, (str, os.PathLike)):
        pattern = os.fspath(paths)
        if "://" in pattern and not pattern.startswith("file://"):
            raise ValueError("open_mfdataset expands glob patterns of local paths only; give a "
                             "list of URLs for %r" % (pattern,))
        found = sorted(glob.glob(pattern[len("file://"):] if pattern.startswith("file://") else pattern))
        if not found:
            raise FileNotFoundError("open_mfdataset: no files match %r" % (pattern,))
        return found
    paths = [os.fspath(p) if isinstance(p, os.PathLike) else p for p in paths]
    if not paths:
        raise ValueError("open_mfdataset needs at least one path")
    for p in paths:
        if not isinstance(p, (str, Dataset)):
            raise TypeError("open_mfdataset takes paths or URLs (str) or lazycube.Dataset objects, "
                            "not %s" % type(p).__name__)
    return paths


def _part_source(part, storage_options, open_args):
    """The Source of one open_mfdataset part: a path/URL opened with the shared arguments, or a
    lazycube.Dataset opened with its own (an Icechunk snapshot next to Zarr stores, ...)."""
    if isinstance(part, Dataset):
        if part.source is None:
            raise TypeError("open_mfdataset: this lazycube.Dataset wraps a _core.Dataset of unknown "
                            "origin (open it with lazycube.open_dataset)")
        return part.source
    return Source(part, storage_options, **{k: v for k, v in open_args.items() if v is not None})


def open_mfdataset(paths, concat_dim="time", storage_options=None, **open_args):
    """Opens several stores as one dataset, joined along ``concat_dim`` in the order given
    (xarray's ``open_mfdataset(paths, combine="nested", concat_dim=...)``), lazily. ``paths``: a
    list of paths/URLs (any mix of formats: Zarr, NetCDF/HDF5/GRIB, kerchunk references, Icechunk
    repositories) or a glob pattern of local paths (sorted). ``storage_options`` and
    ``open_args`` (those of :func:`open_dataset`) apply to every path; a list entry may also be
    a ``lazycube.Dataset`` opened with its own arguments (an Icechunk snapshot or group, other
    credentials).

    Rules (lazycube/dataset/combine.hpp): every part has the same variables; variables along
    ``concat_dim`` share dims, stored dtype and CF encoding (an error names the variable, the
    encoding key and both files otherwise) and are read from each part's own store; the
    ``concat_dim`` coordinate is decoded per part (per-file time units are fine); every other
    variable (latitude, longitude, static fields) must be equal in every part (an error names it
    and both files); attributes are the first part's. The result is a :class:`Dataset` whose
    windows (``BatchGenerator``, torch datasets) read across the file boundaries, and which
    pickles into worker processes like one opened with :func:`open_dataset`."""
    unknown = sorted(set(open_args) - set(OPEN_ARGS))
    if unknown:
        raise TypeError("open_mfdataset got unexpected arguments: %s (open arguments: %s)"
                        % (", ".join(unknown), ", ".join(OPEN_ARGS)))
    parts = [_part_source(p, storage_options, open_args) for p in _paths(paths)]
    source = MultiSource("concat", parts, dim=concat_dim)
    return Dataset(source.open(), source)


def merge(datasets):
    """The variables of several ``lazycube.Dataset`` objects in one (xarray's ``merge`` with
    every shared variable equal: a variable present in several datasets -- index coordinates
    included -- must have the same dims and values, otherwise an error names it and both
    datasets; dims must agree in size). Lazy; attributes are the first dataset's. Datasets
    opened from URLs (``open_dataset``, ``open_mfdataset``, ``merge``) give a result that pickles
    into worker processes."""
    datasets = list(datasets)
    if not datasets:
        raise ValueError("merge needs at least one dataset")
    for d in datasets:
        if not isinstance(d, Dataset):
            raise TypeError("lazycube.merge takes lazycube.Dataset objects, not %s (open them "
                            "with lazycube.open_dataset / open_mfdataset)" % type(d).__name__)
    sources = [d.source for d in datasets]
    if all(s is not None for s in sources):
        source = MultiSource("merge", sources)
        return Dataset(source.open(), source)
    return Dataset(_core.merge([d._core for d in datasets]))


def _reopen(source):
    return Dataset(source.open(), source)


def _reopen_variable(source, name):
    return Variable(source.open()[name], source)
