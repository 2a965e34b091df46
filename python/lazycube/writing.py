"""Writing Zarr: ``lazycube.convert`` (any source lazycube reads -> Zarr v3/v2, optionally
split over Dask distributed workers) and ``lazycube.to_zarr`` (a lazycube or xarray Dataset).

Both go through the core's ``ZarrOutput`` (include/lazycube/dataset/zarr_output.hpp), the same
engine as ``lazycube convert``: values are copied as stored, the output is cut into shard-sized
regions in an order fixed by the dataset and the options, and the metadata is written last.
With a Dask client the coordinator plans and prepares the destination, each task opens the
source again and writes its own regions (a retried task rewrites the same keys with the same
bytes: each key is replaced whole), and the coordinator writes the metadata once every task has
succeeded."""

from . import _core, _errors
from ._errors import UsageError
from .dataset import Dataset
from .pipeline import Source, StorageOptions
from .xarray_view import _SOURCE_KEY

__all__ = ["convert", "to_zarr"]

# Regions per Dask task: several, so a task amortises opening the source; many tasks, so a lost
# worker costs little and both workers stay busy.
_TASKS_PER_WORKER = 8


def _dim_map(value, what):
    """{dim: length} and {dim: [edge lengths]} (a Zarr v3 rectilinear grid) of a chunks/shards
    argument that takes either per dim."""
    if value is None:
        return {}, {}
    if not hasattr(value, "items"):
        raise TypeError("%s takes a dict {dim: length or [edge lengths]}, not %s" % (what, type(value).__name__))
    lengths, edges = {}, {}
    for dim, n in value.items():
        if isinstance(n, (list, tuple)):
            if not n or any(isinstance(e, bool) or not isinstance(e, int) for e in n):
                raise TypeError("%s[%r] must be an int or a non-empty list of ints, not %r" % (what, dim, n))
            edges[str(dim)] = [int(e) for e in n]
        elif isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("%s[%r] must be an int or a list of edge lengths, not %s" % (what, dim, type(n).__name__))
        else:
            lengths[str(dim)] = n
    return lengths, edges


def _output_options(chunks, shards, codec, format, resume, overwrite, storage_options):
    if format not in (2, 3):
        raise ValueError("format must be 2 or 3, not %r" % (format,))
    if resume and overwrite:
        raise ValueError("resume and overwrite exclude each other")
    chunk_lengths, chunk_edges = _dim_map(chunks, "chunks")
    shard_lengths, shard_edges = _dim_map(shards, "shards")
    return dict(zarr_format=int(format), chunks=chunk_lengths, chunk_edges=chunk_edges,
                shards=shard_lengths, shard_edges=shard_edges, codec=codec or "",
                storage_options=StorageOptions(storage_options).core() or {},
                overwrite=bool(overwrite), resume=bool(resume))


def _open_output(source, dst, options):
    """The core ZarrOutput of `source` (a pipeline.Source) at `dst`. Opened decoded: the output
    copies values as stored, and the decoding tells which fill value acts as _FillValue."""
    core = source.replace(decode_cf=True).open()
    if source.variables is not None:
        core = core.subset(list(source.variables))
    return _core.ZarrOutput(core, dst, **options)


def _write_regions(source, dst, options, regions):
    """One Dask task: the regions `regions` of the plan (the same plan in every process)."""
    return _open_output(source, dst, options).write_regions(list(regions))


def _progress_printer(enabled):
    if not enabled:
        return None
    import sys

    def show(done, total):
        pct = 100.0 * done / total if total else 100.0
        sys.stderr.write("\rlazycube convert: %5.1f %% (%d / %d MB)" % (pct, done // 10**6, total // 10**6))
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return show


def convert(src, dst, *, chunks=None, shards=None, codec=None, variables=None, isel=None, format=3,
            resume=False, overwrite=False, storage_options=None, dst_storage_options=None,
            client=None, progress=False, **open_args):
    """Copies `src` (any URL or path lazycube opens: Zarr v2/v3, Icechunk at ``branch=``/``tag=``/
    ``snapshot=``, NetCDF/HDF5/GRIB, kerchunk references) into a new Zarr store at `dst`.

    ``chunks={dim: n}`` / ``shards={dim: n}`` (Zarr v3; multiples of the chunks) set the output
    layout (dims not named keep the source's chunking / hold one chunk per shard); ``codec`` is
    the compressor as text ("zstd:3", "blosc:lz4:5:shuffle", "gzip:6", "none"); ``variables``
    the data variables copied (with their coordinates); ``isel={dim: int | slice}`` a positional
    selection; ``format`` 3 (default) or 2. ``resume=True`` keeps the regions a previous,
    interrupted run wrote and verified; ``overwrite=True`` replaces an existing store.
    ``storage_options`` are the source's, ``dst_storage_options`` the destination's.

    ``client``: a ``dask.distributed.Client``: the regions run as tasks on its workers (each
    writes its own shards with the same engine), the metadata is written here once all of them
    succeeded. Returns the number of regions written (not skipped by ``resume``)."""
    unknown = set(open_args) - {"decode_cf", "mask_valid_range", "consolidated", "engine", "group",
                                "branch", "tag", "snapshot", "virtual_chunk_containers"}
    if unknown:
        raise TypeError("convert() got unexpected keyword argument(s): %s" % ", ".join(sorted(unknown)))
    open_args.pop("decode_cf", None)  # values are copied as stored whatever it says
    if isinstance(variables, str):
        variables = [variables]
    source = Source(src, storage_options, selection=(dict(isel),) if isel else (),
                    variables=None if variables is None else list(variables), **open_args)
    options = _output_options(chunks, shards, codec, format, resume, overwrite, dst_storage_options)
    output = _open_output(source, str(dst), options)
    show = _progress_printer(progress)
    if client is None:
        output.prepare()
        written = output.write_regions(list(range(output.region_count())), show)
        output.commit()
        return written
    output.prepare()
    n = output.region_count()
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    per_task = max(1, -(-n // (workers * _TASKS_PER_WORKER)))
    groups = [list(range(i, min(n, i + per_task))) for i in range(0, n, per_task)]
    futures = client.map(_write_regions, [source] * len(groups), [str(dst)] * len(groups),
                         [options] * len(groups), groups, retries=3, pure=False)
    written = 0
    total = sum(output.region_bytes(r) for r in range(n))
    done_bytes = 0
    from dask.distributed import as_completed

    group_of = {future.key: group for future, group in zip(futures, groups)}
    for future in as_completed(futures):
        written += future.result()  # raises the task's error (after Dask's retries)
        group = group_of[future.key]
        if show:
            done_bytes = min(total, done_bytes + sum(output.region_bytes(r) for r in group))
            show(done_bytes, total)
    output.commit()
    return written


def to_zarr(ds, url, chunks=None, shards=None, codec=None, storage_options=None, *, format=3,
            overwrite=False, resume=False, progress=False):
    """Writes a dataset as a Zarr store at `url` (a path, or any URL lazycube writes: s3://,
    gs://, az://, ...): a ``lazycube.Dataset`` (values copied as stored, with their CF
    attributes) or an ``xarray.Dataset`` (CF-encoded the way xarray's ``to_zarr`` encodes it:
    ``_FillValue``, ``scale_factor``/``add_offset``, time units and calendar from each variable's
    ``encoding``). Times may be datetime64 or cftime dates of any CF calendar (standard/gregorian,
    proleptic_gregorian, julian, noleap/365_day, all_leap/366_day, 360_day; years such as 1 or
    5000 included): the same numbers, dtype, ``units`` and ``calendar`` as xarray writes, units
    inferred as xarray infers them when the encoding has none. Dates that cannot be stored raise
    :class:`UsageError` naming the variable and the calendar: several calendars in one variable
    (or an encoding ``calendar`` other than the dates'), a value that is not a date, units cftime
    cannot count in, or an integer ``dtype`` that cannot hold the numbers exactly (xarray rounds
    those silently). ``chunks``/``shards``/``codec``/``format``/``overwrite``/``resume`` as in
    :func:`convert`; ``storage_options`` are the destination's."""
    options = _output_options(chunks, shards, codec, format, resume, overwrite, storage_options)
    if isinstance(ds, Dataset):
        core = ds._core
    else:
        core = _xarray_as_stored(ds)
    output = _core.ZarrOutput(core, str(url), **options)
    output.run(_progress_printer(progress))


def _xarray_as_stored(xds):
    """A ``_core.Dataset`` over the CF-encoded values of an xarray Dataset (coordinates first)."""
    try:
        import xarray as xr
    except ModuleNotFoundError:  # pragma: no cover - xarray is a dependency of this path
        raise TypeError("to_zarr takes a lazycube.Dataset or an xarray.Dataset")
    if isinstance(xds, xr.DataArray):
        xds = xds.to_dataset(name=xds.name or "__xarray_dataarray_variable__")
    if not isinstance(xds, xr.Dataset):
        raise TypeError("to_zarr takes a lazycube.Dataset or an xarray.Dataset, not %s" % type(xds).__name__)
    import numpy as np
    from xarray import conventions

    # Which coordinates each variable names in its `coordinates` attribute (and the dataset's,
    # for coordinates of no variable): xarray's own rule, so xarray reopens the coordinates as
    # coordinates. The values and CF attributes are encoded by lazycube's CfEncoding.
    variables, attrs = conventions.encode_dataset_coordinates(xds)
    entries = []
    for name in list(xds.coords) + list(xds.data_vars):
        var = variables[name]
        encoding = {k: v for k, v in var.encoding.items() if k not in _ARRAY_WRITER_KEYS}
        values, attrs_in = np.array(var.values, order="C"), dict(var.attrs)
        cftime_encoded = _encode_cftime(str(name), values, attrs_in, encoding)
        if cftime_encoded is not None:
            values, attrs_in, encoding = cftime_encoded
        values, var_attrs = _core.cf_encode(values, attrs_in, encoding, str(name))
        entries.append((str(name), [str(d) for d in var.dims], values, var_attrs))
    return _core.memory_dataset(entries, dict(attrs))


# Keys of an xarray encoding that are the array writer's, not CF (xarray's zarr engine sets them
# on open): lazycube.to_zarr takes chunks and codec as its own arguments, and the CF encoder
# could not take a numcodecs compressor object (it takes JSON).
_ARRAY_WRITER_KEYS = ("chunks", "preferred_chunks", "compressor", "filters", "source", "original_shape",
                      "write_empty_chunks",
                      # where the lazycube engine read the variable from (xarray_view): not CF
                      _SOURCE_KEY)

# CF calendar names that name the same calendar, by the name cftime gives its dates.
_CALENDAR_ALIASES = {"gregorian": "standard", "365_day": "noleap", "366_day": "all_leap"}


def _same_calendar(name):
    name = str(name).lower()
    return _CALENDAR_ALIASES.get(name, name)


def _encode_cftime(name, values, attrs, encoding):
    """The first step of xarray's CFDatetimeCoder for an object array of cftime dates: (numbers,
    attributes with ``units``/``calendar``, the encoding without them), or None when `values`
    holds no cftime date (the C++ encoder takes every other array).

    Why here and not in the C++ CfEncoding: cftime dates are Python objects whose calendar
    arithmetic (the mixed Julian/Gregorian ``standard`` calendar, years 1 or 5000, the reference
    date's text) is cftime's, and xarray's ``to_zarr`` calls ``cftime.date2num`` through
    ``xarray.coding.times.encode_cf_datetime``; calling that same function is how the stored
    numbers, the inferred units and the calendar attribute come out exactly as xarray's. The
    numbers then go through the one C++ encoder like any other variable's (encoding dtype,
    _FillValue, the default NaN fill of floats), so the CF policy after the dates is still in one
    place. Checks that xarray does not make, each a UsageError naming the variable and the
    calendar: one calendar per variable (the encoding's too), dates only (None is a missing
    value), and an integer dtype holding the numbers exactly (xarray rounds them)."""
    import numpy as np

    if values.dtype != object or values.size == 0:
        return None
    try:
        import cftime
    except ModuleNotFoundError:  # pragma: no cover - xarray's cftime dates need cftime
        return None

    flat = values.ravel()
    dates = [v for v in flat if isinstance(v, cftime.datetime)]
    if not dates:
        return None
    calendars = sorted({_same_calendar(d.calendar) for d in dates})
    prefix = "CF encoding of variable '%s'" % name
    if len(calendars) > 1:
        raise UsageError("%s: its cftime dates mix the calendars %s; one variable holds dates of one calendar "
                         "(convert them with .convert_calendar first)"
                         % (prefix, " and ".join("'%s'" % c for c in calendars)))
    calendar = dates[0].calendar
    for v in flat:
        if v is not None and not isinstance(v, cftime.datetime):
            raise UsageError("%s: its values are cftime dates of calendar '%s' and also %r (%s), which is not a cftime date"
                             % (prefix, calendar, v, type(v).__name__))
    units = encoding.get("units")
    enc_calendar = encoding.get("calendar")
    if enc_calendar is not None and _same_calendar(enc_calendar) != calendars[0]:
        raise UsageError("%s: the encoding's calendar '%s' is not the calendar '%s' of its cftime dates; drop it "
                         "from the encoding or convert the dates (.convert_calendar)" % (prefix, enc_calendar, calendar))
    for key in ("units", "calendar"):
        if key in attrs:  # xarray's safe_setitem, in the C++ encoder's words
            raise UsageError("%s: attribute %s is set both in the attributes and by the encoding of its cftime "
                             "dates (calendar '%s'); remove it from one" % (prefix, key, calendar))
    if units is None and len(dates) != flat.size:
        raise UsageError("%s: its cftime dates (calendar '%s') have missing values (None), so their units cannot be "
                         "inferred; give units such as 'days since 2000-01-01' in the encoding" % (prefix, calendar))
    from xarray.coding.times import encode_cf_datetime

    try:
        with np.errstate(invalid="ignore"):  # xarray's cast_to_int_if_safe of NaN (a missing date)
            num, units, calendar = encode_cf_datetime(values, units, enc_calendar)
    except Exception as exc:  # cftime's ValueError for units it cannot count in, and the like
        raise UsageError("%s: cannot encode its cftime dates of calendar '%s'%s: %s"
                         % (prefix, calendar, " in '%s'" % units if units else "", exc)) from exc
    num = np.ascontiguousarray(num)
    try:
        dtype = None if encoding.get("dtype") is None else np.dtype(encoding["dtype"])
    except TypeError:  # not a numpy type: the C++ encoder's message names it
        dtype = None
    if dtype is not None and dtype.kind in "iu":
        where = "%s: its cftime dates of calendar '%s' in '%s'" % (prefix, calendar, units)
        finite = num[np.isfinite(num)] if num.dtype.kind == "f" else num
        if finite.size != num.size and encoding.get("_FillValue") is None and encoding.get("missing_value") is None:
            raise UsageError("%s have missing values and %s has no NaN: give a _FillValue in the encoding"
                             % (where, dtype.name))
        if num.dtype.kind == "f" and not np.all(finite == np.trunc(finite)):
            bad = finite[finite != np.trunc(finite)][0]
            raise UsageError("%s are not all whole numbers (%r), so %s cannot hold them exactly; give finer units "
                             "or a float dtype" % (where, float(bad), dtype.name))
        info = np.iinfo(dtype)
        if finite.size and (finite.min() < info.min or finite.max() > info.max):
            raise UsageError("%s run from %s to %s, beyond what %s holds; give coarser units or a wider dtype"
                             % (where, finite.min(), finite.max(), dtype.name))
    encoding = {k: v for k, v in encoding.items() if k not in ("units", "calendar")}
    attrs = dict(attrs, units=units, calendar=calendar)
    return num, attrs, encoding


def _main(argv):
    """``python -m lazycube.writing REQUEST``: `lazycube convert --dask`'s conversion, REQUEST
    being the JSON of the flags the CLI parsed (src/cli/convert_command.cpp). Exit status 1 with
    ``lazycube: MESSAGE`` on stderr for an error, as the CLI prints them."""
    import json
    import sys

    # Run as `-m`, this file is __main__: its functions would reach the workers as
    # __main__._write_regions, which they cannot import. The package's module is used instead.
    from lazycube import writing

    if len(argv) != 1:
        sys.stderr.write("usage: python -m lazycube.writing REQUEST_JSON (from lazycube convert --dask)\n")
        return 2
    req = json.loads(argv[0])
    isel = {dim: (slice(*v) if isinstance(v, list) else v) for dim, v in req["isel"].items()}
    try:
        from dask.distributed import Client
    except ModuleNotFoundError:
        sys.stderr.write("lazycube: --dask needs Dask distributed (Debian: python3-distributed)\n")
        return 1
    try:
        with Client(req["scheduler"], timeout="30s") as client:
            writing.convert(req["src"], req["dst"], chunks=req["chunks"], shards=req["shards"], codec=req["codec"],
                    variables=req["variables"], isel=isel or None, format=req["format"], resume=req["resume"],
                    overwrite=req["overwrite"], storage_options=req["storage_options"],
                    dst_storage_options=req["dst_storage_options"], client=client, progress=req["progress"],
                    engine=req["engine"], mask_valid_range=req["mask_valid_range"], branch=req["branch"],
                    tag=req["tag"], snapshot=req["snapshot"],
                    virtual_chunk_containers=req["virtual_chunk_containers"])
    except (_errors.Error, OSError, TimeoutError, ValueError, TypeError) as exc:
        sys.stderr.write("lazycube: %s\n" % (exc,))
        return 1
    return 0


if __name__ == "__main__":
    import sys as _sys

    _sys.exit(_main(_sys.argv[1:]))
