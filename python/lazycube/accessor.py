"""``ds.lazycube`` on xarray Datasets opened with ``engine="lazycube"``.

``ds.lazycube.batches(input_dims, ...)`` mirrors xbatcher's ``ds.batch.generator(...)``: it
returns a :class:`lazycube.BatchGenerator` over the Dataset (same arguments as the class, the
Dataset taking the place of its first argument).
"""

from __future__ import annotations

import xarray as xr

__all__ = ["LazycubeAccessor"]


@xr.register_dataset_accessor("lazycube")
class LazycubeAccessor:
    def __init__(self, xarray_obj: xr.Dataset):
        self._obj = xarray_obj

    def batches(self, *args, **kwargs):
        """``lazycube.BatchGenerator(ds, *args, **kwargs)`` for this Dataset."""
        from .batch import BatchGenerator
        return BatchGenerator(self._obj, *args, **kwargs)

    # xbatcher's accessor method name, for code moving over from ``ds.batch.generator``.
    generator = batches

    @property
    def core(self):
        """The ``lazycube._core.Dataset`` this Dataset reads from (TypeError when lazycube does
        not back it)."""
        from .xarray_backend import core_dataset_of
        return core_dataset_of(self._obj)[0]
