"""xarray backend: ``xr.open_dataset(url, engine="lazycube", storage_options=...)``.

The engine opens the URL as a :class:`lazycube.pipeline.Source` and hands xarray the lazy view
of the dataset (:func:`lazycube.xarray_view.to_xarray`: every variable a
:class:`LazycubeBackendArray` that reads only what is indexed, CF conventions decoded by
lazycube as xarray's zarr engine decodes them). ``source_of(xds)`` (:mod:`lazycube.sources`)
finds the lazycube dataset behind an xarray Dataset opened this way, narrowed to its
selection, and its Source, which other processes reopen.

An adapter: no module of the package imports it (python/lazycube/_layers.py; the package loads it
on first use of ``lazycube.xarray_backend``). The names that lived here before the view and the
source resolution moved down stay importable from here (older pickles name
``_reopen_backend_array`` and ``_SourceCloser`` by this module). The ``ds.lazycube`` accessor
is registered by ``import lazycube``, which runs before this module.
"""

from __future__ import annotations

import os
import warnings

from xarray.backends import BackendEntrypoint

from . import _core
from .dataset import Dataset
from .pipeline import _REOPENED, Source  # noqa: F401 -- _REOPENED: its old home
from .pipeline import open_once as _open_once  # noqa: F401 -- its old name
from .sources import (_SourceCloser, _backend_of, core_dataset_of, foreign_source,  # noqa: F401
                      multi_file_source, source_of)
from .xarray_view import (_SOURCE_KEY, LazycubeBackendArray, _reopen_backend_array,  # noqa: F401
                          to_xarray)

__all__ = [
    "LazycubeBackendArray",
    "LazycubeBackendEntrypoint",
    "to_xarray",
    "source_of",
    "core_dataset_of",
]

# xarray's zarr engine's words (xarray/backends/zarr.py, ZarrStore.open_group) when a store
# opened with consolidated=None has no consolidated metadata.
_UNCONSOLIDATED_WARNING = (
    "Failed to open Zarr store with consolidated metadata, but successfully read with "
    "non-consolidated metadata. This is typically much slower for opening a dataset. To silence "
    "this warning, consider:\n1. Consolidating metadata in this existing store with "
    "zarr.consolidate_metadata().\n2. Explicitly setting consolidated=False, to avoid trying to "
    "read consolidate metadata, or\n3. Explicitly setting consolidated=True, to raise an error "
    "in this case instead of falling back to try reading non-consolidated metadata.")


def _open_for_engine(source, stacklevel=4):
    """``source.open()`` for the engine, warning as xarray's zarr engine does when it fell back
    from absent consolidated metadata (consolidated=None, a Zarr v2 group without .zmetadata:
    the core counts those opens, ``_core.unconsolidated_fallbacks()``). `stacklevel` 4 points at
    the caller of ``xr.open_dataset``, as xarray's warning does."""
    before = _core.unconsolidated_fallbacks()
    core = source.open()
    if source.consolidated is None and _core.unconsolidated_fallbacks() > before:
        warnings.warn(_UNCONSOLIDATED_WARNING, RuntimeWarning, stacklevel=stacklevel)
    return core


def _scale_dtype_rule():
    """The unpacked type rule of the running xarray's CFScaleOffsetCoder: "stored" before
    2024.02 (``_choose_float_dtype(dtype, has_offset)``: the stored type alone), "attributes"
    since (``_choose_float_dtype(dtype, mapping)``: the type of scale_factor/add_offset). Read
    from the function itself: distributions patch the version number (Debian's 2023.01 says
    999)."""
    import inspect

    from xarray.coding import variables
    try:
        params = inspect.signature(variables._choose_float_dtype).parameters
    except (AttributeError, TypeError, ValueError):
        return "attributes"
    return "stored" if "has_offset" in params else "attributes"


# xarray's name for a variable named None in a store (xarray/backends/common.py NONE_VAR_NAME):
# its engines read it back as None.
_NONE_VAR_NAME = "__values__"


def _as_xarray_names(ds):
    """`ds` with the variable xarray stored for a None name named None again."""
    if _NONE_VAR_NAME in ds.variables:
        ds = ds.rename({_NONE_VAR_NAME: None})
    return ds


def _warn_as_xarray(core, stacklevel):
    """The UserWarnings xarray's decode_cf_variables gives under decode_coords="all", in its
    words (the core finds them while decoding: lazycube/dataset/dataset.hpp cf_warnings): an
    attribute of CF_RELATED_DATA (bounds, grid_mapping, ...) naming variables the dataset lacks
    ("Variable(s) referenced in bounds not in variables: ['x_bnds']"), and a "role: name" list
    with an odd number of words ("Attribute cell_measures malformed")."""
    for message in core.cf_warnings:
        warnings.warn(message, UserWarning, stacklevel=stacklevel)


def _strip_url(url: str) -> str:
    return url[:-1] if url.endswith("/") and len(url) > 1 else url


class LazycubeBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(url, engine="lazycube")``: Zarr v2/v3 cubes and Icechunk repositories on
    local disk, HTTP(S), S3, GCS and Azure, read lazily by lazycube (only the chunks an indexing
    operation touches). ``group=`` opens a node below the root; ``branch=`` / ``tag=`` /
    ``snapshot=`` and ``virtual_chunk_containers=`` choose an Icechunk repository's version and
    authorise its virtual chunk containers (see ``lazycube.open_dataset``). As xarray's zarr
    engine: ``drop_variables=`` (arrays lazycube cannot read included: any other fails the open,
    naming it), ``chunk_store=`` (the URL or path of a store holding the chunks), and packed
    variables decode to the type the running xarray's CF rule gives (it changed in 2024.02)."""

    description = ("Open Zarr v2/v3 data cubes (local, HTTP, S3, GCS) lazily with lazycube's "
                   "C++ reader")
    url = "https://github.com/lazycube/lazycube"
    open_dataset_parameters = (
        "filename_or_obj", "drop_variables", "storage_options", "decode_cf", "consolidated",
        "group", "mask_and_scale", "decode_times", "decode_timedelta", "use_cftime",
        "concat_characters", "decode_coords", "mask_valid_range", "branch", "tag", "snapshot",
        "virtual_chunk_containers", "missing_chunks", "struct_fields", "chunk_store",
    )

    def open_dataset(self, filename_or_obj, *, drop_variables=None, storage_options=None,
                     decode_cf=None, consolidated=None, group=None, mask_and_scale=None,
                     decode_times=None, decode_timedelta=None, use_cftime=None,
                     concat_characters=None, decode_coords=None, mask_valid_range=False,
                     branch=None, tag=None, snapshot=None, virtual_chunk_containers=None,
                     missing_chunks=None, struct_fields=False, chunk_store=None):
        if isinstance(filename_or_obj, os.PathLike):
            filename_or_obj = os.fspath(filename_or_obj)
        if not isinstance(filename_or_obj, str):
            raise TypeError("engine='lazycube' opens a URL or a path, not %s"
                            % type(filename_or_obj).__name__)
        url = _strip_url(filename_or_obj)
        if isinstance(drop_variables, str):
            drop_variables = [drop_variables]

        # xarray turns decode_cf=False into every decoder flag False; lazycube decodes
        # all-or-nothing (mask/scale and times together).
        decode = decode_cf is not False
        if decode and mask_and_scale is False and decode_times is False:
            decode = False
        elif decode and (mask_and_scale is False or decode_times is False):
            raise ValueError(
                "engine='lazycube' decodes CF conventions all-or-nothing: pass decode_cf=False "
                "(or both mask_and_scale=False and decode_times=False) for raw values")
        if decode_coords is None:
            decode_coords = True
        source = Source(url, storage_options, decode_cf=decode, consolidated=consolidated,
                        mask_valid_range=mask_valid_range, group=group, branch=branch, tag=tag,
                        snapshot=snapshot, virtual_chunk_containers=virtual_chunk_containers,
                        concat_characters=concat_characters is not False,
                        decode_coords=decode_coords if decode else False,
                        missing_chunks=missing_chunks, struct_fields=struct_fields,
                        drop_variables=drop_variables, scale_dtype_rule=_scale_dtype_rule(),
                        chunk_store=chunk_store)
        core = _open_for_engine(source)
        _warn_as_xarray(core, stacklevel=4)
        ds = to_xarray(Dataset(core, source), drop_variables=drop_variables,
                       decode_coords=decode_coords is not False and decode, decode=decode,
                       use_cftime=use_cftime)
        ds = _as_xarray_names(ds)
        ds.encoding["source"] = filename_or_obj
        ds.set_close(_SourceCloser(source))
        return ds

    def guess_can_open(self, filename_or_obj) -> bool:
        # Never claimed by guessing: xarray 2023.01 tries engines alphabetically, so a True
        # here for *.zarr would silently take over plain xr.open_dataset("x.zarr") calls
        # from xarray's own zarr engine. lazycube is chosen explicitly with engine="lazycube".
        return False

