"""``ds.lazycube`` / ``da.lazycube`` on xarray objects.

``obj.lazycube.batches(input_dims, ...)`` mirrors xbatcher's ``obj.batch.generator(...)``: it
returns a :class:`lazycube.BatchGenerator` over the Dataset or DataArray (same arguments as the
class, the object taking the place of its first argument), with the reader the class chooses
for it (lazycube's core for data it reads, xarray for in-memory or dask-backed data).
"""

from __future__ import annotations

import xarray as xr

from .batch import BatchGenerator
from .sources import core_dataset_of

__all__ = ["LazycubeAccessor"]


@xr.register_dataarray_accessor("lazycube")
@xr.register_dataset_accessor("lazycube")
class LazycubeAccessor:
    def __init__(self, xarray_obj):
        self._obj = xarray_obj

    def batches(self, *args, **kwargs):
        """``lazycube.BatchGenerator(obj, *args, **kwargs)`` for this Dataset or DataArray."""
        return BatchGenerator(self._obj, *args, **kwargs)

    # xbatcher's accessor method name, for code moving over from ``ds.batch.generator``.
    generator = batches

    @property
    def core(self):
        """The ``lazycube._core.Dataset`` this Dataset reads from (TypeError when lazycube does
        not back it)."""
        obj = self._obj if isinstance(self._obj, xr.Dataset) else self._obj.to_dataset()
        return core_dataset_of(obj)[0]
