"""lazycube: streams training windows out of Zarr v2/v3 data cubes (local, HTTP, S3, GCS).

    import lazycube
    ds = lazycube.open_dataset("data/era5_sample_v2.zarr")
    t2m = ds["t2m"].isel(time=slice(0, 24)).values

Submodules: ``lazycube.xarray_backend`` (``xr.open_dataset(url, engine="lazycube")``),
``lazycube.torch`` (PyTorch datasets; imports torch, so it is only loaded on demand).
"""

from . import _errors
from ._errors import (
    AuthError,
    CodecError,
    Error,
    MetadataError,
    MissingDataError,
    NotFoundError,
    SelectionError,
    StoreError,
    UsageError,
)
from . import _core
from .dataset import Dataset, Variable, merge, open_dataset, open_mfdataset
from .writing import convert, to_zarr
from .prediction import PredictionWriter
from .statistics import Stats, stats
from .forecast import ForecastSamples
from . import pipeline as _pipeline, sources as _sources

# resolve_source moved from lazycube.pipeline up to lazycube.sources (python/lazycube/_layers.py:
# the picklable description imports nothing above it); the old spelling keeps working, as the
# package always runs before any of its modules is imported.
_pipeline.resolve_source = _sources.resolve_source

__version__ = _core.__version__


def _missing_module(exc, name):
    return isinstance(exc, ModuleNotFoundError) and exc.name == name


try:  # the Python BatchGenerator (lazycube/batch.py) when present, else the core one
    from .batch import BatchGenerator
except ModuleNotFoundError as exc:
    if not _missing_module(exc, __name__ + ".batch"):
        raise
    BatchGenerator = _core.BatchGenerator

try:  # registers the `ds.lazycube` accessor when xarray is installed
    import importlib as _importlib

    _importlib.import_module(".accessor", __name__)
except ModuleNotFoundError as exc:
    if not (_missing_module(exc, __name__ + ".accessor") or _missing_module(exc, "xarray")):
        raise


def __getattr__(name):
    # `lazycube.torch` / `lazycube.xarray_backend` without an explicit import; torch is only
    # imported here, on first use.
    if name in ("torch", "xarray_backend", "xarray_view", "batch", "accessor"):
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "open_dataset",
    "open_mfdataset",
    "merge",
    "convert",
    "to_zarr",
    "PredictionWriter",
    "Stats",
    "stats",
    "Dataset",
    "Variable",
    "BatchGenerator",
    "ForecastSamples",
    *_errors.__all__,
    "__version__",
]
