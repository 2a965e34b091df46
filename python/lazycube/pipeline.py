"""The one picklable description of a lazycube pipeline, and everything written against it.

* :class:`StorageOptions` -- the storage options as the core takes them (strings), with the
  secrets (keys, tokens, passwords, ...) masked in ``repr``/``str``. They travel in a pickle
  (a worker process needs them) but are never shown.
* :class:`Source` -- where the data is: URL, storage options, open arguments (``decode_cf``,
  ``mask_valid_range``, ``consolidated``, ``engine``, ``group``, Icechunk's ``branch`` / ``tag``
  / ``snapshot`` and ``virtual_chunk_containers``: :data:`OPEN_ARGS`), the positional selection the user applied (``isel``, and
  ``sel`` recorded by position) and the data variables kept. ``Source.open()`` gives the same
  ``_core.Dataset`` in any process. ``lazycube.Dataset``, xarray Datasets opened with
  ``engine="lazycube"``, ``BatchGenerator`` and the torch datasets all carry one.
* :class:`MultiSource` -- several Sources combined (``lazycube.open_mfdataset``: joined along a
  dim; ``lazycube.merge``), each part with its own options; opens like a Source.
* :class:`Pipeline` -- a Source plus the generator's document (BatchOptions::from_json), the shard
  (``rank``/``world_size``: None means torch.distributed's when a process group is initialised,
  else 0/1 -- see :func:`resolve_shard`) and the sampler position (``state``).
  ``Pipeline.build()`` makes this process's ``_core.BatchGenerator``.

Processes: the process that made a Pipeline may read through the dataset object it was given;
a spawned/forkserver child unpickles the Pipeline and opens its Source; a forked child opens its
Source too (its own core objects), reads through a private chunk cache (the inherited
process-wide cache may hold chunks a parent thread was loading at fork time, which the child
would wait for forever), and never destroys C++ objects inherited from the parent (their
threads live in the parent): they are kept in ``_FOREIGN`` until the child exits.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import threading
from collections.abc import Mapping
from urllib.parse import unquote

from . import _core, _errors
from ._options import normalize_storage_options

__all__ = ["StorageOptions", "Source", "MultiSource", "MemorySource", "OPEN_ARGS", "Pipeline", "resolve_shard",
           "scrub"]

# What is secret, defined once for every repr, str and message of this package (the C++ side,
# http_util's redact_url and the stores' secret lists, drops the same from its own messages):
# * a storage option, a URL query parameter or a connection-string field whose name contains one
#   of these words (or is "sig", an Azure SAS signature) holds a secret value;
# * a URL's userinfo password (the whole userinfo when it has no ':': a token used as user name);
# * a source URL's whole query string (a signed URL -- S3 presigned X-Amz-Signature, Azure SAS
#   sig=, GCS X-Goog-Signature, token= -- carries its signature there).
_SECRET_WORDS = ("secret", "key", "token", "password", "passwd", "credential", "sas", "signature",
                 "session", "private", "auth", "connection_string", "header", "cookie", "bearer")
_SECRET_NAMES = ("sig",)
_MASK = "***"

# userinfo of a URL anywhere in a text: SCHEME://USERINFO@
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#@\s\"'\[\],]+)@")
# NAME=VALUE fields of a query string or connection string anywhere in a text
_FIELD = re.compile(r"(?:^|(?<=[?&;\s\"']))([A-Za-z][A-Za-z0-9_.-]*)=([^&;\s\"'#]+)")


def _is_secret(key: str) -> bool:
    k = str(key).lower()
    return k in _SECRET_NAMES or any(w in k for w in _SECRET_WORDS)


def _is_key_file(key: str, value: str) -> bool:
    return key == "token" and (value.endswith(".json") or os.path.isfile(value))


def _embedded_secrets(text: str):
    """The secrets written inside `text` (a URL, a list of URLs, a query or connection string,
    a message): userinfo passwords and the values of secret-named fields, as written and
    percent-decoded."""
    found = []
    for m in _USERINFO.finditer(text):
        userinfo = m.group(1)
        found.append(userinfo.partition(":")[2] if ":" in userinfo else userinfo)
    for m in _FIELD.finditer(text):
        if _is_secret(m.group(1)):
            found.append(m.group(2))
    out = []
    for value in found:
        for form in (value, unquote(value)):
            if len(form) >= 3 and form not in out:
                out.append(form)
    return out


def _url_secrets(url: str):
    """The secrets of a source URL: its query string (whole) and what _embedded_secrets finds."""
    query = url.partition("?")[2]
    return ([query] if query else []) + _embedded_secrets(url)


def scrub(text: str, secrets=()) -> str:
    """`text` with every one of `secrets` (longest first) and every secret written in it
    (userinfo passwords, secret-named query and connection-string fields) replaced by ***: the
    one scrubbing of every repr, str and error message of sources, pipelines, datasets and
    generators."""
    text = str(text)
    for value in sorted({v for v in secrets if v}, key=len, reverse=True):
        text = text.replace(value, _MASK)
    for value in sorted(_embedded_secrets(text), key=len, reverse=True):
        if value != _MASK:
            text = text.replace(value, _MASK)
    return text


class StorageOptions(Mapping):
    """Storage options, normalised once (``_options.normalize_storage_options``): an immutable
    mapping of strings whose secret values ``repr``/``str`` mask."""

    __slots__ = ("_items",)

    def __init__(self, options=None):
        if isinstance(options, StorageOptions):
            items = dict(options._items)
        else:
            items = normalize_storage_options(options) or {}
        self._items = items

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def core(self):
        """The dict the compiled core takes (None when empty)."""
        return dict(self._items) or None

    def secrets(self):
        """The secret values (to keep them out of messages): those of secret options, with the
        secret fields inside them (a SAS token's sig, a connection string's AccountKey), and the
        secrets written in other values (a password in endpoint_url or allowed_prefixes). A
        gs:// ``token`` naming a service-account key file is a path, not a secret: messages
        about the file name it."""
        out = []
        for k, v in self._items.items():
            if _is_secret(k) and v and not _is_key_file(k, v):
                out.append(v)
            out.extend(_embedded_secrets(v))
        return out

    def scrub(self, text: str) -> str:
        """`text` with every secret value replaced by *** (:func:`scrub`)."""
        return scrub(text, self.secrets())

    def __repr__(self):
        return self.scrub("StorageOptions({%s})" % ", ".join(
            "%r: %r" % (k, _MASK if _is_secret(k) else v) for k, v in self._items.items()))

    __str__ = __repr__

    def __reduce__(self):
        return (StorageOptions, (dict(self._items),))


def _indexer_value(v):
    """An isel indexer as a plain picklable value (int or slice)."""
    if isinstance(v, slice):
        return slice(*(None if x is None else int(x) for x in (v.start, v.stop, v.step)))
    return int(v)


def _virtual_chunk_containers(containers):
    """``{prefix: StorageOptions}`` of the Icechunk virtual chunk containers the user authorises
    (None when none): each container's storage options normalised and masked like the store's."""
    if containers is None:
        return None
    if not isinstance(containers, Mapping):
        raise TypeError("virtual_chunk_containers takes a dict of URL prefix -> storage options "
                        "(e.g. {'s3://bucket/': {'region_name': 'us-east-1'}}), not %s"
                        % type(containers).__name__)
    out = {}
    for prefix, options in containers.items():
        if not isinstance(prefix, str) or not prefix:
            raise TypeError("virtual_chunk_containers: a container is named by its URL prefix "
                            "(a non-empty str), not %r" % (prefix,))
        if options is not None and not isinstance(options, Mapping):
            raise TypeError("virtual_chunk_containers[%r]: storage options are a dict, not %s"
                            % (prefix, type(options).__name__))
        out[prefix] = StorageOptions(options)
    return out


# The open arguments a Source carries besides the URL and storage options: the one list every
# entry point taking a URL (torch datasets, ...) passes through to Source.
OPEN_ARGS = ("decode_cf", "mask_valid_range", "consolidated", "engine", "group", "branch", "tag",
             "snapshot", "virtual_chunk_containers", "concat_characters", "decode_coords", "missing_chunks",
             "struct_fields", "drop_variables", "chunk_store")

# Open arguments that name something (group path, Icechunk version): None or a str.
_NAME_ARGS = ("group", "branch", "tag", "snapshot")

# The open arguments that are formats' own options: they cross into C++ as one document (the
# format registry hands each format its keys, docs/formats.md).
FORMAT_ARGS = ("consolidated", "branch", "tag", "snapshot", "virtual_chunk_containers", "missing_chunks",
               "chunk_store")


class _Recipe:
    """What Source and MultiSource share: fields as a dict, positional selection and data
    variables kept (applied after opening), equality, and errors scrubbed of secrets."""

    __slots__ = ()

    def _fields(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def isel(self, indexers):
        """This source narrowed by a positional selection (relative to its current one)."""
        return self.replace(selection=self.selection + (dict(indexers),)) if indexers else self

    def keep(self, variables):
        """This source restricted to some data variables."""
        return self.replace(variables=None if variables is None else list(variables))

    def _opened(self, open_core, readable=False):
        """``open_core()`` with the selection applied; errors never show a secret (the scrubbed
        error is raised outside the handler, so not even its ``__context__`` holds the
        original). `readable`: an array lazycube cannot read fails it, naming the array, its
        reason and the drop_variables that skips it (as xarray fails on a variable it cannot
        decode)."""
        try:
            core = open_core()
            if readable and core.unreadable:
                names = [name for name, _ in core.unreadable]
                core.require_readable("; open_dataset(..., drop_variables=%r) opens the other variables "
                                      "without %s" % (names, "it" if len(names) == 1 else "them"))
            for step in self.selection:
                core = core.isel(step)
            return core
        except _errors.Error as exc:
            message = str(exc)
            scrubbed = self.scrub(message)
            if scrubbed == message:
                raise
            clean = type(exc)(scrubbed)
        raise clean

    def __eq__(self, other):
        return type(other) is type(self) and self._fields() == other._fields()

    __hash__ = None


class Source(_Recipe):
    """Where a dataset comes from, enough to open it again in any process (see module doc).

    ``selection`` is a tuple of positional selections (``{dim: int | slice}``) applied in turn
    after opening; ``variables`` the data variables kept (None: all)."""

    __slots__ = ("url", "storage_options", "decode_cf", "mask_valid_range", "consolidated", "engine",
                 "group", "branch", "tag", "snapshot", "virtual_chunk_containers", "concat_characters",
                 "decode_coords", "missing_chunks", "struct_fields", "drop_variables", "scale_dtype_rule",
                 "chunk_store",
                 "selection", "variables")

    def __init__(self, url, storage_options=None, decode_cf=True, mask_valid_range=False,
                 consolidated=None, engine=None, group=None, branch=None, tag=None, snapshot=None,
                 virtual_chunk_containers=None, concat_characters=True, decode_coords=True,
                 missing_chunks=None, struct_fields=False, drop_variables=None, scale_dtype_rule="attributes",
                 chunk_store=None,
                 selection=(), variables=None):
        self.url = os.fspath(url) if isinstance(url, os.PathLike) else str(url)
        self.storage_options = StorageOptions(storage_options)
        # group: a node path inside the hierarchy; branch/tag/snapshot: an Icechunk version.
        for key, value in (("group", group), ("branch", branch), ("tag", tag), ("snapshot", snapshot)):
            if value is not None and not isinstance(value, str):
                raise TypeError("%s takes a str, not %s" % (key, type(value).__name__))
            if value == "" and key != "group":  # group="" is the root, as in xarray
                raise ValueError("%s='' names no %s" % (key, key))
            setattr(self, key, value or None)
        self.virtual_chunk_containers = _virtual_chunk_containers(virtual_chunk_containers)
        self.decode_cf = bool(decode_cf)
        # CF valid_range / valid_min / valid_max masking (opt-in, netCDF4-python's rule).
        self.mask_valid_range = bool(mask_valid_range)
        self.consolidated = None if consolidated is None else bool(consolidated)
        # As xarray's open_dataset (with decode_cf): 'S1' character arrays joined into strings,
        # and which CF attributes make coordinates (True/"coordinates", "all", False).
        self.concat_characters = bool(concat_characters)
        if decode_coords not in (True, False, "coordinates", "all"):
            raise ValueError("decode_coords takes True, False, 'coordinates' or 'all', not %r" % (decode_coords,))
        self.decode_coords = True if decode_coords == "coordinates" else decode_coords
        self.engine = engine
        # Zarr chunks absent from the store: "fill" (the default: the fill value) or "error"
        # (MissingDataError naming the chunk); checked, like every format option, by the format
        # registry. None: not given.
        self.missing_chunks = missing_chunks
        # Arrays of records (Zarr v3 struct): one variable of records (False) or one variable
        # per field, "<array>.<field>" (True).
        self.struct_fields = bool(struct_fields)
        # Variables left out by name (xarray's drop_variables: a str or an iterable of str),
        # arrays lazycube cannot read included; any other unreadable array fails open().
        if isinstance(drop_variables, str):
            drop_variables = (drop_variables,)
        self.drop_variables = None if drop_variables is None else tuple(str(v) for v in drop_variables)
        # The unpacked type of packed variables: "attributes" (xarray >= 2024.02) or "stored"
        # (the xarray engine under an older xarray).
        if scale_dtype_rule not in ("attributes", "stored"):
            raise ValueError("scale_dtype_rule takes 'attributes' or 'stored', not %r" % (scale_dtype_rule,))
        self.scale_dtype_rule = scale_dtype_rule
        # Zarr's chunk_store: the URL or path of the store holding the chunks (a format option).
        if isinstance(chunk_store, os.PathLike):
            chunk_store = os.fspath(chunk_store)
        if chunk_store is not None and not isinstance(chunk_store, str):
            raise TypeError("chunk_store takes the URL or path of a store, not %s (lazycube reads "
                            "stores by URL)" % type(chunk_store).__name__)
        self.chunk_store = chunk_store
        self.selection = tuple({str(d): _indexer_value(v) for d, v in step.items()}
                               for step in selection if step)
        self.variables = None if variables is None else tuple(variables)

    def replace(self, **changes) -> "Source":
        fields = self._fields()
        fields.update(changes)
        return Source(**fields)

    def secrets(self):
        """Every secret this source holds: its storage options' and its virtual chunk
        containers' (StorageOptions.secrets), its URL's (query string, userinfo password, secret
        query fields) and those written in the container prefixes."""
        out = list(self.storage_options.secrets()) + _url_secrets(self.url)
        for prefix, options in (self.virtual_chunk_containers or {}).items():
            out += list(options.secrets()) + _url_secrets(prefix)
        return out

    def scrub(self, text: str) -> str:
        """`text` without the secrets (:meth:`secrets`, :func:`scrub`)."""
        return scrub(text, self.secrets())

    def open(self):
        """The ``_core.Dataset`` (with the selection applied). Errors never show a secret."""
        document = {key: getattr(self, key) for key in FORMAT_ARGS if getattr(self, key) is not None}
        if self.virtual_chunk_containers is not None:
            document["virtual_chunk_containers"] = {
                p: o.core() or {} for p, o in self.virtual_chunk_containers.items()}
        return self._opened(lambda: _core.open(
            self.url, self.storage_options.core(), decode_cf=self.decode_cf, engine=self.engine,
            mask_valid_range=self.mask_valid_range, group=self.group,
            concat_characters=self.concat_characters, decode_coords=self.decode_coords,
            format_options=document, struct_fields=self.struct_fields,
            drop_variables=list(self.drop_variables or ()), scale_dtype_rule=self.scale_dtype_rule),
            readable=True)

    def __reduce__(self):
        return (_source_from_fields, (self._fields(),))

    def __repr__(self):
        parts = [repr(self.scrub(self.url))]
        if self.storage_options:
            parts.append("storage_options=%r" % (self.storage_options,))
        if not self.decode_cf:
            parts.append("decode_cf=False")
        if self.mask_valid_range:
            parts.append("mask_valid_range=True")
        if not self.concat_characters:
            parts.append("concat_characters=False")
        if self.decode_coords is not True:
            parts.append("decode_coords=%r" % (self.decode_coords,))
        if self.struct_fields:
            parts.append("struct_fields=True")
        if self.drop_variables:
            parts.append("drop_variables=%r" % (list(self.drop_variables),))
        if self.scale_dtype_rule != "attributes":
            parts.append("scale_dtype_rule=%r" % (self.scale_dtype_rule,))
        for key in ("consolidated", "engine") + _NAME_ARGS + ("virtual_chunk_containers", "missing_chunks",
                                                               "chunk_store"):
            if getattr(self, key) is not None:
                parts.append("%s=%r" % (key, getattr(self, key)))
        if self.selection:
            parts.append("selection=%r" % (self.selection,))
        if self.variables is not None:
            parts.append("variables=%r" % (self.variables,))
        return self.scrub("lazycube.pipeline.Source(%s)" % ", ".join(parts))

    __str__ = __repr__


def _source_from_fields(fields):
    return Source(**fields)


class MultiSource(_Recipe):
    """Several sources combined into one dataset, enough to combine them again in any process:
    ``kind`` "concat" (``lazycube.open_mfdataset``: the parts joined along ``dim``) or "merge"
    (``lazycube.merge``); ``parts`` are Sources or MultiSources (each with its own storage options
    and open arguments). ``selection`` / ``variables`` as in :class:`Source`, applied after
    combining. ``open()`` gives the ``_core.Dataset`` (lazycube/dataset/combine.hpp)."""

    __slots__ = ("kind", "parts", "dim", "selection", "variables")

    def __init__(self, kind, parts, dim=None, selection=(), variables=None):
        if kind not in ("concat", "merge"):
            raise ValueError("MultiSource kind is 'concat' or 'merge', not %r" % (kind,))
        if kind == "concat" and not isinstance(dim, str):
            raise TypeError("concat_dim takes a dim name (str), not %s" % type(dim).__name__)
        parts = tuple(parts)
        if not parts:
            raise ValueError("%s needs at least one dataset" % kind)
        for part in parts:
            if not isinstance(part, (Source, MultiSource)):
                raise TypeError("a MultiSource combines Sources, not %s" % type(part).__name__)
        self.kind = kind
        self.parts = parts
        self.dim = dim
        self.selection = tuple({str(d): _indexer_value(v) for d, v in step.items()}
                               for step in selection if step)
        self.variables = None if variables is None else tuple(variables)

    @property
    def url(self):
        """The parts' URLs, for messages."""
        return "[%s]" % ", ".join(p.url for p in self.parts)

    @property
    def storage_options(self):
        return StorageOptions()  # each part carries its own

    @property
    def decode_cf(self):
        return all(p.decode_cf for p in self.parts)

    def replace(self, **changes) -> "MultiSource":
        """A copy with fields changed; an open argument (``decode_cf``, ...) changes every part."""
        fields = self._fields()
        opening = {k: changes.pop(k) for k in list(changes) if k not in fields}
        fields.update(changes)
        if opening:
            fields["parts"] = tuple(p.replace(**opening) for p in fields["parts"])
        return MultiSource(**fields)

    def secrets(self):
        return [v for part in self.parts for v in part.secrets()]

    def scrub(self, text: str) -> str:
        """`text` without any part's secrets (:func:`scrub`)."""
        return scrub(text, self.secrets())

    def open(self):
        """The combined ``_core.Dataset`` (with the selection applied); errors name the parts by
        their URLs (secrets scrubbed)."""
        cores = []
        for part in self.parts:
            core = part.open()
            if part.variables is not None:
                core = core.subset(list(part.variables))
            cores.append(core)
        labels = [self.scrub(p.url) for p in self.parts]
        if self.kind == "concat":
            return self._opened(lambda: _core.concat(cores, self.dim, labels))
        return self._opened(lambda: _core.merge(cores, labels))

    def __reduce__(self):
        return (_multi_source_from_fields, (self._fields(),))

    def __repr__(self):
        parts = [repr(self.kind), repr(list(self.parts))]
        if self.dim is not None:
            parts.append("dim=%r" % (self.dim,))
        if self.selection:
            parts.append("selection=%r" % (self.selection,))
        if self.variables is not None:
            parts.append("variables=%r" % (self.variables,))
        return self.scrub("lazycube.pipeline.MultiSource(%s)" % ", ".join(parts))

    __str__ = __repr__


def _multi_source_from_fields(fields):
    return MultiSource(**fields)


class MemorySource:
    """An xarray Dataset in memory (NumPy) as a source: its data variables and index
    coordinates are read in place by lazycube's core (``_core.memory_dataset``: no whole-array
    copy), so in-memory data goes through the same window engine as stored data. Pickled by
    value: the Dataset (and its arrays) travel to spawned workers; a forked worker reads the
    parent's memory. ``variables`` / ``selection`` are those of the Dataset itself."""

    __slots__ = ("obj",)
    storage_options = StorageOptions()
    selection = ()
    variables = None

    def __init__(self, obj):
        self.obj = obj

    @property
    def url(self):
        return "<in-memory xarray.Dataset>"

    def secrets(self):
        return []

    def scrub(self, text: str) -> str:
        return scrub(text)

    def open(self):
        return memory_dataset(self.obj)

    def __reduce__(self):
        return (MemorySource, (self.obj,))

    def __eq__(self, other):
        return isinstance(other, MemorySource) and other.obj is self.obj

    __hash__ = None

    def __repr__(self):
        return "lazycube.pipeline.MemorySource(<xarray.Dataset %s>)" % (
            ", ".join("%s: %d" % (d, n) for d, n in self.obj.sizes.items()))


def in_memory(xds) -> bool:
    """Whether every data variable of an xarray Dataset holds a NumPy array (not dask, not a
    lazily loaded backend array)."""
    import numpy as np
    return all(isinstance(v.variable._data, np.ndarray) for v in xds.data_vars.values())


def memory_dataset(xds):
    """The ``_core.Dataset`` over an in-memory xarray Dataset: its data variables and 1-D index
    coordinates of fixed-size dtypes, read in place. TypeError naming a data variable the core
    cannot read (strings, objects, non-native byte order); such coordinates are left out."""
    import numpy as np

    def attrs_of(attrs):
        try:
            _core.memory_dataset([], dict(attrs))  # JSON-representable?
            return dict(attrs)
        except Exception:  # noqa: BLE001 -- attributes are not needed to read
            return None

    def readable(arr):
        return arr.dtype.kind in "biufcmM" and arr.dtype.isnative

    entries = []
    for name in xds.indexes:
        var = xds.variables[name]
        if var.dims != (name,):
            continue
        values = np.asarray(var.values)
        if readable(values):
            entries.append((str(name), [str(name)], values, attrs_of(var.attrs)))
    for name, var in xds.data_vars.items():
        data = var.variable._data
        if not isinstance(data, np.ndarray) or not readable(data):
            raise TypeError("variable %r of this in-memory Dataset (dtype %s) is not read in place by "
                            "lazycube's core (numbers, booleans and datetimes in native byte order)"
                            % (name, getattr(data, "dtype", type(data).__name__)))
        entries.append((str(name), [str(d) for d in var.dims], data, attrs_of(var.attrs)))
    return _core.memory_dataset(entries, attrs_of(xds.attrs))


# ---- opened sources ------------------------------------------------------------------------

# Source -> the _core.Dataset opened for it (metadata only; datasets on the same URL share the
# chunk cache), so that repeated look-ups (lazycube.sources, unpickled xarray variables) do not
# reopen.
_REOPENED: list = []
_REOPEN_LOCK = threading.Lock()


def open_once(source):
    """The _core.Dataset of `source`, opened once per process."""
    with _REOPEN_LOCK:
        core = next((c for s, c in _REOPENED if s == source), None)
    if core is None:
        core = source.open()
        with _REOPEN_LOCK:
            _REOPENED.append((source, core))
    return core


# ---- shards --------------------------------------------------------------------------------

def _distributed_shard():
    """(rank, world_size) of torch.distributed's process group, or None (not initialised, or
    torch not imported: then there is no process group either)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


def resolve_shard(rank=None, world_size=None, inherited=None):
    """The (rank, world_size) a pipeline reads: the explicit ones when given (a missing one of
    the two defaults to 0 / 1), else torch.distributed's when a process group is initialised,
    else `inherited` (a spawned DataLoader worker has no process group: it takes the rank of
    the process that pickled it), else (0, 1)."""
    if rank is not None or world_size is not None:
        return int(rank or 0), int(1 if world_size is None else world_size)
    return _distributed_shard() or inherited or (0, 1)


# ---- C++ objects of other processes ----------------------------------------------------------

# C++ objects a forked child inherited from its parent. They must not be destroyed in the
# child (their threads live in the parent), so the child keeps them until it exits.
_FOREIGN = []


def keep_foreign(obj):
    if obj is not None:
        _FOREIGN.append(obj)


# The same holds for the parent's garbage: unreachable lazycube objects (a generator left in a
# reference cycle, its producer thread still running) that the collector finds in a forked child
# -- threading's after-fork hook runs it first thing -- would be destroyed there, stopping threads
# the child does not have (a DataLoader worker died of SIGSEGV so, forked after the process
# matrix's tests). Collect it in the parent, before every fork, where destroying it is safe.
os.register_at_fork(before=gc.collect)


class Pipeline:
    """Source + generator arguments + shard + sampler position; picklable (see module doc).

    ``generator`` is the generator's one document (a JSON-able dict with the fields of the core's
    BatchOptions::from_json, docs/batching.md "One document"; ``pinned`` too) except the shard; ``rank``/``world_size`` None: see :func:`resolve_shard`; ``state``: a generator
    ``state()`` to continue from (epoch and position; the seed is a generator argument)."""

    __slots__ = ("source", "generator", "rank", "world_size", "state", "inherited_shard",
                 "_local", "_home_pid", "_opened", "_fork_cache_bytes")

    def __init__(self, source, generator, rank=None, world_size=None, state=None,
                 inherited_shard=None, local=None):
        if source is None and local is None:
            raise TypeError("a Pipeline needs a Source or a dataset")
        self.source = source
        self.generator = dict(generator)
        self.rank = None if rank is None else int(rank)
        self.world_size = None if world_size is None else int(world_size)
        self.state = state
        self.inherited_shard = None if inherited_shard is None else tuple(inherited_shard)
        self._local = local  # the caller's _core.Dataset, for the process that made this
        self._home_pid = os.getpid()
        self._opened = None  # (pid, _core.Dataset) opened from the source in this process
        self._fork_cache_bytes = None

    def replace(self, **changes) -> "Pipeline":
        """A new Pipeline with some fields changed (the caller's dataset stays when the source
        does)."""
        fields = {"source": self.source, "generator": self.generator, "rank": self.rank,
                  "world_size": self.world_size, "state": self.state,
                  "inherited_shard": self.inherited_shard}
        fields.update(changes)
        same_source = fields["source"] is self.source
        out = Pipeline(local=self._local if same_source else None, **fields)
        out._home_pid = self._home_pid
        if same_source:
            out._opened, out._fork_cache_bytes = self._opened, self._fork_cache_bytes
        return out

    @property
    def explicit_shard(self) -> bool:
        return self.rank is not None or self.world_size is not None

    def shard(self):
        """(rank, world_size) of the calling process (resolve_shard)."""
        return resolve_shard(self.rank, self.world_size, self.inherited_shard)

    def forked(self) -> bool:
        """True in a forked child of the process that made (or unpickled) this pipeline."""
        return os.getpid() != self._home_pid

    def dataset(self):
        """This process's ``_core.Dataset``: the caller's in the making process, else opened
        from the source (once per process)."""
        pid = os.getpid()
        if self._local is not None and (pid == self._home_pid or self.source is None):
            return self._local  # in a forked child only when there is no source to reopen
        if self._opened is None or self._opened[0] != pid:
            if self.source is None:
                raise TypeError(
                    "this lazycube pipeline was built from a lazycube._core.Dataset, which does "
                    "not know where its data comes from: build it from a URL, "
                    "lazycube.open_dataset(url) or xr.open_dataset(url, engine='lazycube')")
            if self._opened is not None:
                keep_foreign(self._opened[1])
            self._opened = (pid, self.source.open())
        return self._opened[1]

    def build(self, worker=0, num_workers=1, **overrides):
        """This process's ``_core.BatchGenerator`` for shard (rank, world) x (worker of
        num_workers), continued from ``state`` when set."""
        kwargs = dict(self.generator)
        kwargs.update(overrides)
        if "rank" not in overrides and "world_size" not in overrides:
            kwargs["rank"], kwargs["world_size"] = self.shard()
        kwargs["worker"], kwargs["num_workers"] = int(worker), int(num_workers)
        if kwargs.get("variables") is None and self.source is not None and self.source.variables:
            kwargs["variables"] = list(self.source.variables)
        forked = self.forked()
        if forked and kwargs.get("cache_bytes") is None and self._fork_cache_bytes is not None:
            kwargs["cache_bytes"] = self._fork_cache_bytes  # a private cache (see module doc)
        input_dims = kwargs.pop("input_dims")
        gen = _core.BatchGenerator(self.dataset(), input_dims, **kwargs)
        if not forked and self._fork_cache_bytes is None:
            self._fork_cache_bytes = int(gen.cache_stats()["budget_bytes"])
        if self.state is not None:
            gen.restore(self.state)
        return gen

    # pickling: the description only, never a C++ object; the shard of a distributed
    # process travels along for its spawned workers (which have no process group).
    def __reduce__(self):
        if self.source is None:
            raise TypeError(
                "this lazycube pipeline cannot be sent to another process: it was built from a "
                "lazycube._core object, which does not know where its data comes from (build it "
                "from a URL, lazycube.open_dataset(url) or xr.open_dataset(url, engine='lazycube'))")
        inherited = self.inherited_shard
        if not self.explicit_shard:
            inherited = _distributed_shard() or inherited
        return (_pipeline_from_fields, (self.source, self.generator, self.rank, self.world_size,
                                        self.state, inherited, self._fork_cache_bytes))

    def scrub(self, text: str) -> str:
        """`text` without the secrets of this pipeline's source (:func:`scrub`)."""
        return scrub(text) if self.source is None else self.source.scrub(text)

    def __repr__(self):
        shard = "" if not self.explicit_shard else ", rank=%r, world_size=%r" % (self.rank, self.world_size)
        return self.scrub("lazycube.pipeline.Pipeline(%r, %r%s)" % (self.source, self.generator, shard))

    __str__ = __repr__


def _pipeline_from_fields(source, generator, rank, world_size, state, inherited, fork_cache_bytes):
    p = Pipeline(source, generator, rank, world_size, state, inherited)
    p._fork_cache_bytes = fork_cache_bytes
    return p
