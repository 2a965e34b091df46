"""xbatcher 0.4.0's batch objects: how a batch is built from its patch selectors, and its cache.

One place for xbatcher's construction rules (``../shared/docs/XBATCHER.md`` §1, "Building the
batch object"): ``isel`` per patch; in concat mode each input dim renamed ``<dim>_input`` (an
index coordinate re-attached as a plain coordinate -- on Datasets only: for a DataArray
xbatcher's ``newdim in out`` tests the *values*, so the coordinate stays an index and
``xr.concat`` aligns the patches on it, outer join), patches concatenated along
``input_batch``; then >= 2 non-input dims stacked into ``sample`` and transposed to
``(sample, *input_dims)``. :func:`build_batch` applies them either to the data itself (data the
core does not read: in memory or dask-backed, see :class:`XarrayWindows`) or to a zero-byte
placeholder template whose values are then replaced by the core's arrays (lazycube.batch).

The patches themselves come from ``_core.XbatcherSchema`` (the C++ arithmetic the core
generator uses too). The cache keeps xbatcher's layout: batch ``i`` is the Zarr group ``"i"``
of the mapping (hit: the key ``"i/.zgroup"``), ``cache_preprocess`` applied before storing.
"""

from __future__ import annotations

import operator

import numpy as np

from . import _core

__all__ = ["build_batch", "relayout", "placeholder", "XarrayWindows", "cached_batch",
           "cache_batch"]


def stack_levels(obj, input_dims):
    return [d for d in obj.sizes if d not in input_dims]


def maybe_stack(obj, input_dims):
    """(batch, sample levels, their sizes): >= 2 non-input dims stacked (in .sizes order) into
    `sample`, then transposed to (sample, *input_dims); otherwise the batch as it is."""
    levels = stack_levels(obj, input_dims)
    if len(levels) < 2:
        return obj, [], {}
    sizes = {d: int(obj.sizes[d]) for d in levels}
    return obj.stack(sample=levels).transpose("sample", *input_dims), levels, sizes


def rename_inputs(patch, input_dims, suffix="_input"):
    """Concat preparation: each input dim becomes <dim>_input; on a Dataset an index
    coordinate on it is re-attached under its own name as a plain coordinate."""
    import xarray as xr
    out = patch.copy()
    for dim in input_dims:
        new = "%s%s" % (dim, suffix)
        out = out.rename({dim: new})
        if isinstance(out, xr.Dataset) and new in out.variables:
            out = out.drop_vars(new)
            out.coords[dim] = (new, patch[dim].data, patch[dim].attrs)
    return out


def build_batch(obj, sels, input_dims, concat, preload=False):
    """(batch, sample levels, level sizes): xbatcher's batch of `obj` for the patch selectors
    `sels`. ``preload`` loads a non-concat batch before stacking (as xbatcher; in concat mode
    xbatcher's load of the enclosing region does not reach the patches, which stay lazy)."""
    import xarray as xr
    input_dims = list(input_dims)
    if concat:
        patches = [rename_inputs(obj.isel(sel), input_dims) for sel in sels]
        joined = xr.concat(patches, dim="input_batch")
        return maybe_stack(joined, ["%s_input" % d for d in input_dims])
    batch = obj.isel(sels[0])
    if preload:
        batch = batch.load()
    return maybe_stack(batch, input_dims)


def relayout(arr, src_dims, src_levels, dst_dims, dst_levels, level_sizes):
    """arr (dims src_dims, `sample` = row-major stack of src_levels) re-laid out as dst_dims
    with `sample` stacking dst_levels. A view when the layouts agree (the normal case)."""
    if list(src_dims) == list(dst_dims) and list(src_levels) == list(dst_levels):
        return arr
    if sorted(src_levels) != sorted(dst_levels) or sorted(src_dims) != sorted(dst_dims):
        raise RuntimeError("lazycube: batch layout %r/%r does not match xarray's %r/%r"
                           % (src_dims, src_levels, dst_dims, dst_levels))
    # `sample` is the stacked dim only when there are levels (a data dim may be called sample)
    src_names, expanded = [], []
    for axis, d in enumerate(src_dims):
        if d == "sample" and src_levels:
            src_names += list(src_levels)
            expanded += [level_sizes[l] for l in src_levels]
        else:
            src_names.append(d)
            expanded.append(arr.shape[axis])
    dst_names = []
    for d in dst_dims:
        dst_names += list(dst_levels) if d == "sample" and dst_levels else [d]
    moved = arr.reshape(expanded).transpose([src_names.index(n) for n in dst_names])
    shape = []
    for d in dst_dims:
        if d == "sample" and dst_levels:
            shape.append(int(np.prod([level_sizes[l] for l in dst_levels])))
        else:
            shape.append(moved.shape[dst_names.index(d)])
    return moved.reshape(shape)



# ---- xbatcher's cache ------------------------------------------------------------------------

def cached_batch(cache, index, preload):
    """The batch stored in `cache` for `index`, or None (xbatcher: a falsy cache never hits)."""
    if not cache or "%d/.zgroup" % index not in cache:
        return None
    import xarray as xr
    out = xr.open_zarr(cache, group=str(index))
    return out.load() if preload else out


def cache_batch(cache, index, batch, preprocess):
    """`batch` after `preprocess`, written to `cache` as the group str(index)."""
    if preprocess is not None:
        batch = preprocess(batch)
    batch.to_zarr(cache, group=str(index), mode="a")
    return batch


# ---- data the core does not read -------------------------------------------------------------

class XarrayWindows:
    """xbatcher mode over an xarray object lazycube cannot read itself (NumPy in memory, or
    dask-backed without a source lazycube opens): the same patches as the core's, cut from the
    object with xarray (NumPy views in memory; dask stays lazy unless ``preload``)."""

    def __init__(self, obj, input_dims, input_overlap, batch_dims, concat_input_dims, preload):
        self.obj = obj
        self.input_dims = dict(input_dims)
        self.input_overlap = dict(input_overlap or {})
        self.batch_dims = dict(batch_dims or {})
        self.concat = bool(concat_input_dims)
        self.preload = bool(preload)
        sizes = {str(d): int(n) for d, n in obj.sizes.items()}
        self.schema = _core.XbatcherSchema(sizes, self.input_dims, self.input_overlap or None,
                                           self.batch_dims or None, self.concat)

        self.size = len(self.schema)
        self._views = None
        if not self.concat and len(stack_levels(obj, self.input_dims)) < 2:
            self._views = NumpyViews.of(obj)

    @property
    def warnings(self):
        return list(self.schema.warnings)

    def __len__(self):
        return self.size

    def batch(self, index):
        sels = self.schema.patches(index)  # [{dim: slice}]
        views = self._views
        if views is not None and views.stale(self.obj):  # variables replaced since: look again
            views = self._views = NumpyViews.of(self.obj)
        if views is not None:  # one patch, nothing to stack: obj.isel(sels[0])
            return views.isel(sels[0])
        out, _levels, _sizes = build_batch(self.obj, sels, self.input_dims, self.concat,
                                           self.preload)
        return out


class NumpyViews:
    """``obj.isel(slices)`` for a NumPy-backed Dataset or DataArray, built directly: the data
    variables are NumPy views of the window, the sliced index coordinates (variable and index)
    are made once per window position and shared by the batches that use it, and the result
    is assembled without xarray's generic indexing machinery -- several times faster for small
    windows, and ``identical`` to ``isel`` (tests/python/test_xbatcher_dropin.py)."""

    __slots__ = ("_ds", "_dataarray", "_array_key", "_plan", "_coord_cache", "_indexes",
                 "_sizes", "_whole", "_variable", "_construct", "_seen")

    @classmethod
    def of(cls, obj):
        """A NumpyViews for `obj`, or None when its data is not all NumPy in memory (lazy,
        dask) or xarray lacks the constructor used (then xarray's isel does the work)."""
        import xarray as xr
        dataarray = isinstance(obj, xr.DataArray)
        ds = obj._to_temp_dataset() if dataarray else obj
        if not hasattr(xr.Dataset, "_construct_direct"):
            return None
        for name, var in ds.variables.items():
            if name not in ds.xindexes and not isinstance(var._data, np.ndarray):
                return None
        return cls(ds, obj if dataarray else None)

    def __init__(self, ds, dataarray):
        import xarray as xr
        self._seen = _structure(dataarray if dataarray is not None else ds)
        self._variable = xr.Variable
        self._construct = xr.Dataset._construct_direct
        self._ds = ds
        self._dataarray = dataarray
        # a DataArray's variable in its temporary Dataset (xarray's private key)
        self._array_key = next(iter(ds.data_vars)) if dataarray is not None else None
        self._indexes = dict(ds.xindexes)
        self._sizes = dict(ds.sizes)
        self._whole = {d: slice(None) for d in self._sizes}
        self._coord_cache = {}
        # (name, variable, dims, kind): "index" (a 1-d index coordinate), "cut" (sliced when a
        # dim of it is), in ds.variables order (the order isel keeps)
        self._plan = [(name, var, var.dims,
                       "index" if name in self._indexes and var.dims == (name,) else "cut",
                       _key_getter(var.dims))
                      for name, var in ds.variables.items()]

    def stale(self, obj) -> bool:
        """True when `obj`'s variables were replaced (ds[name] = ..., assign_coords in place)
        after this was made: its plan no longer describes the object."""
        return any(a is not b for a, b in zip(_structure(obj), self._seen))

    def _coordinate(self, name, sel):
        key = (name, sel.start, sel.stop, sel.step)
        hit = self._coord_cache.get(key)
        if hit is None:  # as Dataset.isel does it: the index sliced, its variable made from it
            index = self._indexes[name].isel({name: sel})
            if index is None:
                hit = (self._ds.variables[name][sel], None)
            else:
                hit = (index.create_variables({name: self._ds.variables[name]})[name], index)
            self._coord_cache[key] = hit
        return hit

    def isel(self, sel, data=None):
        """``obj.isel(sel)`` for `sel` {dim: slice(start, stop)} (step 1, within the dims, as
        the schema's patches are); ``data`` ({name: array of the window's shape}) replaces the
        values of those variables (the core's arrays on a placeholder template)."""
        if data and self._dataarray is not None:
            data = {self._array_key: data[self._dataarray.name]}
        variables, indexes = {}, {}
        make = self._variable
        sizes_of = lambda sel, d: (sel[d].stop - sel[d].start) if d in sel else self._sizes[d]  # noqa: E731
        every = dict(self._whole)
        every.update(sel)
        for name, var, dims, kind, key_of in self._plan:
            if kind == "index":
                if name in sel:
                    variables[name], index = self._coordinate(name, sel[name])
                else:
                    variables[name], index = var, self._indexes[name]
                if index is not None:
                    indexes[name] = index
            elif data is not None and name in data:
                values = data[name]
                want = tuple(sizes_of(sel, d) for d in dims)
                if values.shape != want:  # the core's array must be the window isel would cut
                    raise RuntimeError("lazycube: batch variable %r has shape %s, xarray expects "
                                       "%s for dims %s" % (name, values.shape, want, dims))
                variables[name] = make(dims, values, var._attrs, var._encoding, fastpath=True)
            else:
                variables[name] = make(dims, var._data[key_of(every)], var._attrs,
                                       var._encoding, fastpath=True)
        sizes = dict(self._sizes)
        for d, s in sel.items():
            sizes[d] = s.stop - s.start
        ds = self._ds
        out = self._construct(variables, set(ds._coord_names), sizes, ds._attrs, indexes,
                              ds._encoding)
        if self._dataarray is not None:
            return self._dataarray._from_temp_dataset(out)
        return out


def _structure(obj):
    """The containers xarray replaces when variables are added or replaced. Kept themselves,
    not their id(): a replaced container nobody else holds is freed, and a new one may get
    its id."""
    if hasattr(obj, "data_vars"):
        return (obj._variables, obj._coord_names)
    return (obj._variable, obj._coords)


def _key_getter(dims):
    """{dim: slice} -> the tuple of slices for `dims` (operator.itemgetter, always a tuple)."""
    if len(dims) == 1:
        dim = dims[0]
        return lambda sel: (sel[dim],)
    return operator.itemgetter(*dims) if dims else (lambda sel: ())


def placeholder(obj):
    """`obj` with every data variable replaced by a zero-byte broadcast placeholder of its
    shape and the coordinates loaded (the template xbatcher's construction is replayed on)."""
    import xarray as xr
    if isinstance(obj, xr.DataArray):
        out = obj.copy(deep=False, data=np.broadcast_to(np.zeros((), dtype=bool), obj.shape))
    else:
        out = obj.copy(deep=False, data={name: np.broadcast_to(np.zeros((), dtype=bool), v.shape)
                                         for name, v in obj.data_vars.items()})
    for name in out.coords:
        out.coords[name].variable.load()
    return out
