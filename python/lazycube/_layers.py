"""The layers of the Python package, bottom to top (docs/layers.md, "Python package").

A module imports -- at module level or inside a function -- only modules of the layers below
its own, never one of its own layer or above (tests/python/test_import_layers.py reads every
import statement of the package and fails on one that points up, and on a module missing from
this list). So the package has no import cycle, hidden or not. A new module takes the lowest
layer above everything it imports.

What a lower module needs from a higher one moves down: the lazy xarray view of a dataset lives
in ``xarray_view`` (``Dataset.to_xarray``, the batch layer and the engine share it); resolving
what the user hands in (paths, lazycube Datasets, xarray Datasets) into a pipeline description
lives in ``sources``, below the core API and the adapters that take such arguments.

Nothing imports this module; it is data for the test and the documentation.
"""

LAYERS = (
    # helpers that import nothing of the package
    ("_layers", "_errors", "_options", "_fetch_stats"),
    # the compiled module (src/python); it raises the classes of _errors
    ("_core",),
    # the picklable description: StorageOptions, Source, MultiSource, MemorySource, Pipeline,
    # shards, scrubbing of secrets
    ("pipeline",),
    # a lazycube dataset as a lazy xarray.Dataset: the backend array and to_xarray (imports
    # xarray; the modules below the adapters import it inside functions only)
    ("xarray_view",),
    # what the user hands in (URL, lazycube or xarray Dataset) -> Source + core dataset
    ("sources",),
    # the core Python API
    ("dataset", "statistics", "xbatcher_compat"),
    ("writing", "prediction", "batch", "forecast"),
    # the DataLoader the torch datasets' resume counts batches with
    ("torch_loader",),
    # the torch adapter of forecast samples (lazycube.torch re-exports it)
    ("torch_forecast",),
    # adapters: xarray's engine (xr.open_dataset(engine="lazycube")), the ds.lazycube
    # accessor, PyTorch datasets
    ("xarray_backend", "accessor", "torch"),
    # the package itself (lazycube/__init__.py): the public names
    ("lazycube",),
)
