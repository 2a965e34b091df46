"""Normalisation statistics: ``lazycube.stats(ds)`` and the stats JSON that ``normalize=`` reads.

``stats(ds, variables=None, dims=None, keep=None)`` computes, in one parallel streaming pass in
C++, per variable: ``count`` (non-NaN values), ``nan_count``, ``mean``, ``std`` (population,
ddof=0, numpy's default), ``min`` and ``max``, reduced over ``dims`` (default: all dims) -- or,
the other way round, over every dim except ``keep`` (``--keep`` of ``lazycube stats``). NaNs are
skipped (xarray's ``skipna=True``). Partials are computed in float64 per chunk and merged with
Chan's formula, so results equal numpy on the fully loaded float64 array within rounding.

The result is a :class:`Stats`: a mapping ``{variable: {"dims", "count", "nan_count", "mean",
"std", "min", "max"}}`` of NumPy arrays (0-d when nothing is kept), with ``to_json(path)``,
``to_xarray()`` and ``to_zarr(url)``. ``Stats.from_json(path)`` reads a file written by
``lazycube stats -o`` or ``to_json``.
"""

import json
import os
from collections.abc import Mapping

import numpy as np

from . import _core
from .sources import resolve_source

__all__ = ["Stats", "stats"]

_KEYS = ("count", "nan_count", "mean", "std", "min", "max")


class Stats(Mapping):
    """Statistics per variable (see the module docstring). ``document`` is the stats JSON as a
    dict; ``stats[name]`` gives that variable's dims and NumPy arrays."""

    def __init__(self, document):
        _core.check_stats_json(json.dumps(document))  # UsageError naming what is wrong
        self.document = document

    @classmethod
    def _computed(cls, document):
        """A document _core.compute_stats wrote: already in the schema, not checked again (for
        per-pixel statistics the check cost several times the pass itself)."""
        self = cls.__new__(cls)
        self.document = document
        return self

    @classmethod
    def from_json(cls, path):
        """Reads a stats JSON file (``lazycube stats -o``, :meth:`to_json`)."""
        with open(os.fspath(path)) as f:
            try:
                document = json.load(f)
            except ValueError as exc:
                raise ValueError("stats file %r is not JSON: %s" % (os.fspath(path), exc)) from None
        return cls(document)

    def __getitem__(self, name):
        v = self.document["variables"][name]
        out = {"dims": tuple(v["dims"])}
        for key in _KEYS:
            dtype = np.uint64 if key.endswith("count") else np.float64
            values = v[key]
            if dtype is np.float64:  # null -> NaN
                values = np.array(values, dtype=object)
                values = np.where(values == None, np.nan, values).astype(np.float64)  # noqa: E711
            out[key] = np.asarray(values, dtype=dtype).reshape(v["shape"])
        return out

    def __iter__(self):
        return iter(self.document["variables"])

    def __len__(self):
        return len(self.document["variables"])

    def __repr__(self):
        parts = ["%s(%s)" % (n, ", ".join(v["dims"])) for n, v in self.document["variables"].items()]
        return "<lazycube.Stats ddof=0 %s>" % ", ".join(parts)

    def to_json(self, path=None):
        """The stats JSON as text; written to `path` too when given."""
        text = json.dumps(self.document, indent=1)
        if path is not None:
            with open(os.fspath(path), "w") as f:
                f.write(text + "\n")
        return text

    def to_xarray(self):
        """An ``xarray.Dataset`` with ``V_count``, ``V_nan_count``, ``V_mean``, ``V_std``,
        ``V_min``, ``V_max`` per variable V over its kept dims."""
        import xarray as xr

        data = {}
        for name in self:
            s = self[name]
            for key in _KEYS:
                data["%s_%s" % (name, key)] = (s["dims"], s[key])
        return xr.Dataset(data, attrs={"title": "lazycube stats", "ddof": 0})

    def to_zarr(self, url, storage_options=None):
        """Writes the arrays of :meth:`to_xarray` as a Zarr v2 store at `url` (replaced if it
        exists), through lazycube's Zarr writer (``lazycube stats --zarr``)."""
        ds = _core.stats_dataset(json.dumps(self.document))
        _core.ZarrOutput(ds, os.fspath(url), zarr_format=2, storage_options=dict(storage_options or {}),
                         overwrite=True).run()


def stats(ds, variables=None, dims=None, keep=None, **open_args):
    """Statistics of `ds` (a URL, a lazycube Dataset, an xarray Dataset opened with
    ``engine="lazycube"`` or in memory) -- see the module docstring. `variables`: names
    (default: every numeric data variable); `dims`: the dims reduced (default: all); `keep`:
    the dims kept (the complement; give one of the two). ``storage_options`` and the open
    arguments apply to a URL."""
    if isinstance(variables, str):
        variables = [variables]
    if isinstance(dims, str):
        dims = [dims]
    if isinstance(keep, str):
        keep = [keep]
    if dims is not None and keep is not None:
        raise ValueError("stats: give dims (the dims reduced) or keep (the dims kept), not both")
    source, core, _xds = resolve_source(ds, **open_args)
    if core is None:
        core = source.open()
    text = _core.compute_stats(core, None if variables is None else list(variables),
                               None if keep is None else list(keep),
                               None if dims is None else list(dims))
    return Stats._computed(json.loads(text))


def is_stats_argument(normalize):
    """Whether ``normalize=`` names statistics (a stats JSON path, a :class:`Stats` or a stats
    document) rather than a ``{variable: (mean, std)}`` dict; None is neither."""
    return normalize is not None and not (isinstance(normalize, dict) and "format" not in normalize)


def normalize_document(normalize):
    """The stats document (a JSON-able dict) that ``normalize=`` means: a path to a stats JSON
    file, a :class:`Stats`, or a stats document (dict). The one place generators and datasets
    read it; the core checks it (BatchOptions::from_json's ``normalize``)."""
    if isinstance(normalize, Stats):
        return normalize.document
    if isinstance(normalize, (str, os.PathLike)):
        return Stats.from_json(normalize).document
    if isinstance(normalize, Mapping) and "format" in normalize:
        return Stats(dict(normalize)).document
    raise TypeError("normalize must be a path to a stats JSON file (lazycube stats -o), a "
                    "lazycube.Stats or a stats document, got %s" % type(normalize).__name__)
