"""PyTorch adapters: batches and windows of a lazycube data cube as torch tensors.

``BatchDataset`` (an ``IterableDataset``) yields whole batches assembled in C++ by a lazycube
``BatchGenerator`` in stacked mode; ``WindowDataset`` (a map-style ``Dataset``) returns one
window per item, for ``DataLoader(batch_size=N, shuffle=True)``.

Tensors are created without copying the batch buffer: ``torch.from_numpy`` on the binding's
zero-copy NumPy view, whose base keeps the C++ batch alive for as long as the tensor (its
storage) lives.

Processes and sharding
----------------------
Neither dataset holds a C++ object that crosses a process boundary. They keep a
:class:`lazycube.pipeline.Pipeline` (the dataset's Source -- URL, storage options with their
credentials, open arguments, selection -- plus the generator arguments) and build a
per-process generator lazily, on first use in each process. Pickling (spawn / forkserver
workers) therefore sends only the pipeline; a forked worker ignores the parent's generator and
builds its own. Every construction form reduces to a pipeline: a URL, a lazycube Dataset, an
xarray Dataset opened with ``engine="lazycube"`` (narrowed or not) and a
``lazycube.BatchGenerator``. (A bare ``lazycube._core.BatchGenerator`` is read in-process only.)

``BatchDataset`` shards every epoch automatically: by ``torch.distributed`` (rank and world
size, when a process group is initialised; explicit ``rank=``/``world_size=`` arguments win;
spawned workers, which have no process group, take their parent's) and
by ``torch.utils.data.get_worker_info()`` (worker id and number of workers inside a
``DataLoader`` worker). Across all ranks and workers each epoch yields every window exactly
once (``drop_last=False``).

Epochs
------
``set_epoch(e)`` makes later iterations run epoch ``e`` (its order is a function of
``(seed, e)``). The epoch lives in a one-element shared-memory tensor created with the dataset
(``share_memory_()``); workers read it at the start of every ``__iter__``, so it reaches
``persistent_workers=True`` workers too (fork: the mapping is inherited; spawn/forkserver:
torch's multiprocessing pickler passes the shared memory itself to the worker). A plain
``pickle.dumps`` copies the value. Call ``set_epoch`` before iterating the loader for that
epoch. Iterating again without ``set_epoch`` repeats the same epoch (same order), like
``DistributedSampler``.

Resuming
--------
``state()`` / ``restore(state)`` pass through to this process's generator (single-process use:
``num_workers=0``, one state per distributed rank). ``state()`` counts the batches delivered
so far; after ``restore(state)`` the next iteration continues exactly after them, in the
state's epoch.

Dtype
-----
Both datasets give float32 tensors for floating data unless ``dtype=`` says otherwise: with
``dtype`` unset (or None) x and y each take their channels' common dtype, a float one as
float32 (torch's default dtype), cast in C++ while the batch is assembled -- so float64
variables and CF-packed integers decoded to float64 (ERA5's float64 ``scale_factor`` /
``add_offset``) arrive as float32, while integer and bool channels of one dtype keep it (an
int32 target stays int32). ``dtype=torch.float64`` (or ``numpy.float64``, ``"float64"``) keeps
float64; any other ``dtype`` casts x and y to it. The rule is lazycube.BatchGenerator's
(stacked mode, :mod:`lazycube.batch`); ``BatchDataset(generator)`` yields that generator's
dtype.

Window ids
----------
With ``return_window_ids=True`` every item gains a last element: an ``int64`` tensor with the
grid number of each window of the batch (row-major over the input dims, last dim fastest) --
``x, ids`` or ``x, y, ids``. Tests and bookkeeping use it to check coverage across workers.
"""

import math
import os
import warnings
from collections.abc import Mapping

import numpy
import torch
import torch.utils.data

from . import _core, _errors
from ._fetch_stats import FETCH_KEYS, fetch_stats_of, with_ratio
from .batch import generator_arguments
from .pipeline import OPEN_ARGS, MemorySource, MultiSource, Pipeline, keep_foreign, scrub
from .torch_forecast import ForecastDataset
from .torch_loader import CountingLoader, received_per_worker, warn_uncounted
from .sources import resolve_source
from .statistics import Stats, is_stats_argument, normalize_document

__all__ = ["BatchDataset", "WindowDataset", "ForecastDataset"]

_OPEN_KEYS = ("storage_options",) + OPEN_ARGS
_STATE_FORMAT = "lazycube-batch-state"
_FETCH_EVERY = 8  # batches between updates of a BatchDataset's shared fetch counters
# What a state_dict() may be loaded by: the generator's configuration less what a resumed job may
# change (its shard, batch size, drop_last, and the resume itself).
# (the epoch planner's blocks travel with the state: a job resuming it may set others for later epochs)
_RESUME_FREE = ("shard", "batch_size", "drop_last", "resume", "blocks")


def _resume_config(config):
    return {k: v for k, v in config.items() if k not in _RESUME_FREE}


def _pipeline_of(source, open_kwargs, kwargs, *, rank=None, world_size=None):
    """The Pipeline for a URL / lazycube Dataset / xarray Dataset and generator arguments
    (``target=`` as lazycube.BatchGenerator takes it, ``dtype`` a NumPy or torch dtype)."""
    kwargs = dict(kwargs)
    dtype = kwargs.get("dtype")
    if isinstance(dtype, torch.dtype):
        kwargs["dtype"] = str(torch.empty(0, dtype=dtype).numpy().dtype)
    kwargs = generator_arguments(kwargs)
    src, core, _xds = resolve_source(source, **open_kwargs)
    return Pipeline(src, kwargs, rank, world_size, local=core)


def _from_numpy(array):
    """torch.from_numpy without a copy; a read-only view is shared as is (torch warns that it
    cannot protect it: the batch buffer is the caller's to keep unmodified)."""
    if array.flags.writeable:
        return torch.from_numpy(array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)


# --------------------------------------------------------------------------------------------
# Per-channel unpack (CF scale/offset, fill -> NaN) and normalisation


def _normalize_arg(normalize, channel_vars):
    """{variable: (mean, std)} checked against the channel variables."""
    if normalize is None:
        return {}
    if not isinstance(normalize, dict):
        raise TypeError("normalize must be a dict {variable: (mean, std)}, got %s"
                        % type(normalize).__name__)
    out = {}
    for name, stats in normalize.items():
        if name not in channel_vars:
            raise ValueError("normalize: variable %r is not a channel of x or y (channels: %s)"
                             % (name, ", ".join(dict.fromkeys(channel_vars))))
        try:
            mean, std = (float(v) for v in stats)
        except (TypeError, ValueError):
            raise ValueError("normalize[%r] must be a pair (mean, std) of numbers, got %r"
                             % (name, stats)) from None
        if not (math.isfinite(mean) and math.isfinite(std) and std > 0):
            raise ValueError("normalize[%r]: mean must be finite and std a finite number > 0, got "
                             "(%r, %r)" % (name, mean, std))
        out[name] = (mean, std)
    return out


def _channel_stats(document, channel_vars):
    """{variable: its statistics} of a stats document for every channel variable (ValueError
    naming a channel variable the statistics lack)."""
    stats = Stats(document)
    missing = [v for v in dict.fromkeys(channel_vars) if v not in stats]
    if missing:
        raise ValueError("normalize: no statistics for channel variable(s) %s (the statistics hold: %s)"
                         % (", ".join(map(repr, missing)), ", ".join(stats) or "nothing"))
    return {v: stats[v] for v in dict.fromkeys(channel_vars)}


def _scalar(value):
    """A CF attribute that may be a one-element list."""
    if isinstance(value, (list, tuple)):
        return value[0] if len(value) == 1 else None
    return value


def _packing(var):
    """({scale, offset, fill, missing}, stored numpy dtype) of a CF-packed variable (integer
    storage, scale_factor and/or add_offset in its encoding), or (None, why not)."""
    stored = numpy.dtype(var.stored_dtype)
    enc = dict(var.encoding)
    if stored.kind not in "iu":
        return None, "is stored as %s, not as integers" % stored
    if stored.name not in _PACKED_TYPES:
        return None, "is stored as %s, which torch has no dtype for" % stored
    if "scale_factor" not in enc and "add_offset" not in enc:
        return None, "has no scale_factor/add_offset (not CF-packed)"
    if "_Unsigned" in enc:
        # The stored integers are another type's bytes (CF _Unsigned): unpack decoded values.
        return None, "is stored with _Unsigned=%r (its integers are reinterpreted before unpacking)" % enc["_Unsigned"]
    params = {}
    for key, attr, default in (("scale", "scale_factor", 1.0), ("offset", "add_offset", 0.0),
                               ("fill", "_FillValue", None), ("missing", "missing_value", None)):
        value = enc.get(attr, default)
        if isinstance(value, (list, tuple)) and len(value) > 1:
            return None, "has %d %s values (one is supported)" % (len(value), attr)
        value = _scalar(value)
        if isinstance(value, str):  # "NaN": no integer equals it
            value = None
        params[key] = None if value is None else float(value)
    return params, stored


def _exact_in(dtype, value):
    """`value` as a scalar of torch dtype `dtype` when it converts exactly, else None."""
    if value is None or not math.isfinite(value):
        return None
    if dtype.is_floating_point:
        return value if float(torch.tensor(value, dtype=dtype)) == value else None
    info = torch.iinfo(dtype)
    return int(value) if value == int(value) and info.min <= value <= info.max else None


def _transform_torch(t, transforms):
    """Unpack + normalise with torch ops (CPU, or a GPU without lazycube's kernel): float64 in,
    float64 out; other types in, float32 out (computed in float for <= 16-bit integers and
    float32, in double for wider integers, like the kernel)."""
    wide = t.dtype == torch.float64 or (not t.dtype.is_floating_point and t.element_size() > 2)
    ct = torch.float64 if wide else torch.float32
    view = (1, len(transforms)) + (1,) * (t.dim() - 2)
    a = torch.tensor([tr["scale"] / tr["std"] for tr in transforms], dtype=torch.float64)
    b = torch.tensor([(tr["offset"] - tr["mean"]) / tr["std"] for tr in transforms],
                     dtype=torch.float64)
    out = t.to(ct) * a.to(device=t.device, dtype=ct).view(view) + b.to(device=t.device, dtype=ct).view(view)
    mask = None
    for key in ("fill", "missing"):
        values = [_exact_in(t.dtype, tr.get(key)) for tr in transforms]
        if all(v is None for v in values):
            continue
        ref = torch.tensor([0 if v is None else v for v in values], dtype=t.dtype, device=t.device)
        on = torch.tensor([v is not None for v in values], device=t.device)
        hit = (t == ref.view(view)) & on.view(view)
        mask = hit if mask is None else mask | hit
    if mask is not None:
        out = out.masked_fill(mask, float("nan"))
    return out if t.dtype == torch.float64 else out.to(torch.float32)


def _transform_cuda(t, transforms, stream):
    """A CUDA tensor -> transformed tensor, enqueued on `stream` (the current stream): lazycube's
    kernel when it can run here, else torch ops."""
    if t.dtype == torch.float64 or _core.cuda_device_count() == 0:
        return _transform_torch(t, transforms)
    t = t.contiguous()
    out = torch.empty(t.shape, dtype=torch.float32, device=t.device)
    inner = 1
    for n in t.shape[2:]:
        inner *= int(n)
    with torch.cuda.device(t.device):
        _core.unpack_normalize_device(t.data_ptr(), _NUMPY_NAME[t.dtype], out.data_ptr(),
                                      int(t.shape[0]), int(t.shape[1]), inner, transforms,
                                      stream.cuda_stream)
    return out


_NUMPY_NAME = {torch.int8: "int8", torch.uint8: "uint8", torch.int16: "int16", torch.int32: "int32",
               torch.int64: "int64", torch.float32: "float32", torch.float64: "float64"}
# Stored dtypes a packed batch may have: those torch has a dtype for.
_PACKED_TYPES = ("int8", "uint8", "int16", "int32", "int64")


def _transform_numpy(a, transforms):
    """A NumPy batch array -> transformed tensor on the CPU: lazycube's C++ reference (float32
    out, computed in double, GIL released), except float64, which stays float64."""
    if a.dtype == numpy.float64:
        return _transform_torch(_from_numpy(a), transforms)
    return torch.from_numpy(_core.unpack_normalize_host(a, transforms))


def _channel_transforms(channel_vars, norm, packing):
    """One dict per channel for _core.unpack_normalize_*: the variable's CF packing (when the
    batch holds stored integers) and its normalisation (mean 0, std 1 when not given)."""
    out = []
    for name in channel_vars:
        t = {"scale": 1.0, "offset": 0.0, "fill": None, "missing": None, "mean": 0.0, "std": 1.0}
        if packing is not None:
            t.update(packing[name])
        if name in norm:
            t["mean"], t["std"] = norm[name]
        out.append(t)
    return out


# --------------------------------------------------------------------------------------------
# BatchDataset


class BatchDataset(torch.utils.data.IterableDataset):
    """Whole batches of a lazycube BatchGenerator (stacked mode) as tensors.

    ``BatchDataset(generator)`` wraps an existing generator (``lazycube.BatchGenerator`` or
    ``lazycube._core.BatchGenerator``); ``BatchDataset(ds_or_url, input_dims=..., batch_size=N,
    **generator_kwargs)`` builds one (``ds_or_url``: a URL, a lazycube Dataset, or an xarray
    Dataset opened with ``engine="lazycube"``; ``storage_options`` and the open arguments of
    :data:`lazycube.pipeline.OPEN_ARGS` (``decode_cf``, ..., ``group``, Icechunk's ``branch`` /
    ``tag`` / ``snapshot`` / ``virtual_chunk_containers``) may be given too). ``target=`` accepts a variable
    name, a list of names or ``{"variables": [...], "offset": {"time": 1}}``.

    Items: ``x`` with dims ``(sample, channel, window dims...)``, or ``(x, y)`` when a target
    is set, plus a last element of window ids with ``return_window_ids=True``. ``dtype``
    (a torch or NumPy dtype): unset or None, floating values are float32 (float64 ones too)
    and integer channels keep their dtype (module doc, "Dtype"); ``dtype=torch.float64`` keeps
    float64.

    ``device="cuda"``: batches are assembled in pinned host memory (lazycube's pooled
    page-locked buffers when its CUDA runtime sees the device; otherwise torch pins a copy)
    and copied on to the GPU with ``non_blocking=True`` on a side stream, one batch ahead of
    the consumer. Use it with
    ``num_workers=0`` (or iterate the dataset directly); without CUDA it raises RuntimeError.

    ``num_workers``: the number of DataLoader workers to expect, used only by ``len()`` (the
    sharding itself always follows ``get_worker_info()``).

    ``normalize={variable: (mean, std)}``: ``(v - mean) / std`` per channel of x, and of y by
    the target channels' variables (channels of other variables are left as they are). The
    result is float32 (float64 batches, ``dtype=torch.float64``, stay float64); with
    ``device="cuda"`` it is computed on the GPU
    after the transfer.

    ``normalize="stats.json"`` (a file of ``lazycube stats -o``, a ``lazycube.Stats`` or its
    document): every x and y channel's variable must have statistics (ValueError naming one that
    has none). Unpacked batches are normalised in C++ during assembly (the generator's
    ``normalize=``), broadcast over the statistics' kept dims (e.g. per level). Packed batches
    (statistics with no kept dims) are unpacked and normalised together, on the GPU with
    ``device="cuda"``; statistics kept along dims turn auto ``packed`` off (``packed=True``:
    ValueError).

    ``packed`` (None: auto, True, False): when every x (and y) channel variable is CF-packed
    (integers in the store with ``scale_factor``/``add_offset``, one stored dtype), the batches
    are assembled from the stored integers and unpacked (``v * scale + offset``, ``_FillValue``
    and ``missing_value`` -> NaN) together with the normalisation: on the GPU after the
    transfer with ``device="cuda"`` (packed int16 crosses PCIe at half the bytes of float32;
    lazycube's CUDA kernel when ``lazycube._core.cuda_device_count() > 0``, else torch ops), on
    the CPU otherwise. x (and y) are float32, equal within float rounding to the decoded values
    normalised. Auto mode uses it only when it applies (a URL or a dataset that can be
    reopened undecoded, ``dtype`` unset or float32, no NaN ``filter``); ``packed=True`` raises
    ValueError naming the variable or option that prevents it; ``packed=False`` reads decoded
    values. ``packed_dtype`` tells which stored dtype the batches carry (None: decoded).
    """

    def __init__(self, source, *, device=None, return_window_ids=False, num_workers=None,
                 normalize=None, packed=None, **kwargs):
        super().__init__()
        open_kwargs = {k: kwargs.pop(k) for k in _OPEN_KEYS if k in kwargs}
        if "worker" in kwargs:
            raise ValueError("BatchDataset sets `worker` itself (from get_worker_info())")
        is_generator = isinstance(source, _core.BatchGenerator) or isinstance(
            getattr(source, "_core", None), _core.BatchGenerator)
        if is_generator:
            if kwargs or open_kwargs:
                raise TypeError("BatchDataset(generator) takes no generator or open arguments (got %s)"
                                % ", ".join(sorted(list(kwargs) + list(open_kwargs))))
            self._wrapped = source if isinstance(source, _core.BatchGenerator) else source._core
            # lazycube.BatchGenerator: its pipeline (rank/world None unless given explicitly);
            # a bare _core.BatchGenerator has none: it is read in this process only.
            self._pipeline = getattr(source, "pipeline", None)
            if self._wrapped.mode != "stacked":
                raise ValueError("BatchDataset needs a generator in stacked mode (batch_size > 0)")
        else:
            if "input_dims" not in kwargs:
                raise TypeError("BatchDataset needs input_dims")
            if not kwargs.get("batch_size"):
                raise ValueError("BatchDataset needs a batch_size > 0 (stacked mode)")
            rank, world = kwargs.pop("rank", None), kwargs.pop("world_size", None)
            self._pipeline = _pipeline_of(source, open_kwargs, kwargs, rank=rank, world_size=world)
            self._wrapped = None
        if num_workers is not None and int(num_workers) < 1:
            raise ValueError("num_workers (the DataLoader workers to expect) must be >= 1")
        self._wrapped_pid = os.getpid()
        self.return_window_ids = bool(return_window_ids)
        self.len_workers = int(num_workers) if num_workers is not None else 1
        self.device = None
        if device is not None:
            self.device = torch.device(device)
            if self.device.type == "cuda" and not torch.cuda.is_available():
                raise RuntimeError("BatchDataset(device=%r): CUDA is not available to this torch "
                                   "build (%s); leave device unset to get CPU tensors"
                                   % (str(device), torch.__version__))
        # The epoch, shared with DataLoader workers (persistent ones included).
        self._epoch = torch.zeros((), dtype=torch.int64).share_memory_()
        self._pending_restore = None
        self._gens = {}  # (pid, shard) -> _core.BatchGenerator of this process
        self._lens = {}
        self._received = 0  # batches the training loop received this epoch (state_dict)
        self._received_workers = 1
        # batches DataLoader workers yielded this epoch: a plain DataLoader's, if nothing counted
        self._yielded_in_workers = torch.zeros(1, dtype=torch.int64).share_memory_()
        # what this rank's processes fetched (FETCH_KEYS), added up across its DataLoader workers
        self._fetched = torch.zeros(len(FETCH_KEYS), dtype=torch.int64).share_memory_()
        # Builds this process's generator now: bad arguments fail here, not in a worker.
        config = self._generator().state()["config"]
        x_vars = list(config["variables"])
        y_vars = list(config.get("target_variables") or [])
        self._has_target = bool(y_vars)
        stats = None
        if is_stats_argument(normalize):
            stats_document = normalize_document(normalize)
            stats = _channel_stats(stats_document, x_vars + y_vars)
            if is_generator:
                raise TypeError("BatchDataset(generator) cannot add normalize=STATS to the generator "
                                "it wraps: pass normalize= to that BatchGenerator")
            if packed and any(stats[v]["dims"] for v in stats):
                raise ValueError("packed=True: the statistics are kept along dims (%s); the packed "
                                 "path normalises with one mean and std per channel"
                                 % ", ".join(sorted({d for v in stats for d in stats[v]["dims"]})))
            if any(stats[v]["dims"] for v in stats):
                packed = False
            normalize = None
        norm = _normalize_arg(normalize, x_vars + y_vars)
        plan = self._packed_plan(packed, x_vars, y_vars, is_generator)
        packing = None
        self.packed_dtype = None
        if plan is not None:  # the generator delivers the stored integers from now on
            self._pipeline, packing, self.packed_dtype = plan
            self._gens = {}
            if stats is not None:  # unpacked and normalised together (on the GPU with device="cuda")
                norm = _normalize_arg({v: (float(stats[v]["mean"]), float(stats[v]["std"])) for v in stats},
                                      x_vars + y_vars)
        elif stats is not None:  # normalised in C++ during batch assembly
            gkw = dict(self._pipeline.generator, normalize=stats_document)
            self._pipeline = self._pipeline.replace(generator=gkw)
            self._gens = {}
        self._x_transforms = self._y_transforms = None
        if norm or packing is not None:
            self._x_transforms = _channel_transforms(x_vars, norm, packing)
            if y_vars:
                self._y_transforms = _channel_transforms(y_vars, norm, packing)
        self._generator()  # (the packed one): bad arguments fail here

    def _packed_plan(self, packed, x_vars, y_vars, is_generator):
        """(pipeline of a generator over the undecoded dataset, {variable: packing}, stored dtype)
        when the batches can travel packed, else None (ValueError with packed=True)."""
        if packed is not None and not isinstance(packed, bool):
            raise TypeError("packed must be None, True or False, got %r" % (packed,))
        if packed is False:
            return None

        def refuse(why):
            if packed:
                raise ValueError("packed=True: " + why)
            return None

        if is_generator:
            return refuse("BatchDataset(generator) yields that generator's batches as they are; "
                          "build the BatchDataset from a URL or Dataset instead")
        pipeline = self._pipeline
        gkw = pipeline.generator
        if pipeline.source is None:
            return refuse("the dataset's origin is unknown (a lazycube._core.Dataset), so it cannot "
                          "be reopened undecoded (build the BatchDataset from a URL)")
        if isinstance(pipeline.source, MemorySource):
            return refuse("in-memory data holds decoded values: there is nothing packed to send")
        if not pipeline.source.decode_cf:
            return refuse("needs decode_cf=True (the CF attributes say how to unpack)")
        dtype = gkw.get("dtype")
        if dtype is not None and numpy.dtype(dtype) != numpy.float32:
            return refuse("packed batches are float32, but dtype=%s was asked" % numpy.dtype(dtype))
        if gkw.get("filter") is not None:
            return refuse("the NaN filter needs decoded values (drop filter=)")
        ds = pipeline.dataset()
        packing, stored = {}, None
        for name in dict.fromkeys(x_vars + y_vars):
            params, info = _packing(ds[name])
            if params is None:
                return refuse("variable %r %s" % (name, info))
            if stored is not None and info != stored:
                return refuse("variable %r is stored as %s, the others as %s: packed channels need "
                              "one stored dtype" % (name, info, stored))
            packing[name], stored = params, info
        raw_gkw = {k: v for k, v in gkw.items() if k != "dtype"}
        raw_gkw["variables"] = list(x_vars)
        if y_vars:  # the resolved target variables, with the target's offset
            target = gkw.get("target")
            raw_gkw["target"] = {"variables": list(y_vars),
                                 "offset": target.get("offset") if isinstance(target, Mapping) else None}
        raw_source = pipeline.source.replace(decode_cf=False)
        if isinstance(raw_source, MultiSource):
            try:  # decoded, parts may differ where raw values cannot (per-file time units)
                raw_source.open()
            except _errors.MetadataError as exc:
                return refuse("the stores of this dataset do not combine undecoded (%s)" % exc)
        raw = pipeline.replace(source=raw_source, generator=raw_gkw)
        return raw, packing, stored

    # pickling for spawn/forkserver workers: the pipeline and the shared epoch, no C++ objects
    def __getstate__(self):
        if self._pipeline is None:
            raise TypeError("this BatchDataset cannot be sent to another process: it wraps a "
                            "lazycube._core.BatchGenerator, which does not know where its data "
                            "comes from (wrap lazycube.BatchGenerator(...) or pass a URL)")
        state = dict(self.__dict__)
        state["_wrapped"] = None
        state["_gens"] = {}
        state["_lens"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_epoch", "_fetched", "_yielded_in_workers"):
            t = getattr(self, name)
            if not t.is_shared():  # unpickled by value (plain pickle): share it again
                setattr(self, name, t.clone().share_memory_())

    # sharding
    def _shard(self):
        """(rank, world_size, worker, num_workers) of the calling process."""
        if self._pipeline is not None:
            rank, world = self._pipeline.shard()
        else:
            rank, world = self._wrapped.state()["config"]["shard"][:2]
        info = torch.utils.data.get_worker_info()
        if info is not None:
            return rank, world, info.id, info.num_workers
        return rank, world, 0, 1

    def _generator(self, shard=None):
        shard = shard or self._shard()
        key = (os.getpid(), shard)
        gen = self._gens.get(key)
        if gen is None:
            rank, world, worker, nworkers = shard
            w = self._wrapped
            if (w is not None and self._wrapped_pid == os.getpid() and nworkers == 1
                    and (rank, world) == tuple(w.state()["config"]["shard"][:2])):
                gen = w
            elif self._pipeline is None:
                raise TypeError("a BatchDataset over a lazycube._core.BatchGenerator is read in "
                                "the process that made it, unsharded (num_workers=0); wrap "
                                "lazycube.BatchGenerator(...) or pass a URL to use workers")
            else:
                extra = {}
                if self._assemble_pinned():
                    extra["pinned"] = True  # batches land in page-locked memory: no pin copy
                gen = self._pipeline.build(worker, nworkers, rank=rank, world_size=world, **extra)
            self._gens[key] = gen  # entries of a parent process stay (see pipeline._FOREIGN)
        return gen

    def _assemble_pinned(self):
        """device="cuda" with lazycube's CUDA runtime able to see a device: the generator
        assembles batches straight into pinned buffers (pooled); otherwise each batch is
        copied into pinned memory by torch before the transfer."""
        return (self.device is not None and self.device.type == "cuda"
                and torch.utils.data.get_worker_info() is None and _core.cuda_device_count() > 0)

    # epochs and state
    @property
    def epoch(self):
        return int(self._epoch.item())

    def set_epoch(self, epoch):
        """Later iterations (in this process and in DataLoader workers) run epoch `epoch`."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError("epoch must be >= 0")
        self._epoch.fill_(epoch)
        self._pending_restore = None
        self._received = 0
        self._yielded_in_workers.zero_()

    # ---- elastic resume (docs/torch.md "Resume") ----
    def _config(self):
        return self._generator().state()["config"]

    def _resumed(self, epoch):
        """The resume document of epoch `epoch` when this job resumed it, else None."""
        resume = (self._pipeline.generator.get("resume") if self._pipeline is not None else None) or {}
        return resume if resume and int(resume["epoch"]) == epoch else None

    def _remaining(self, epoch, total):
        """The stretches of epoch `epoch`'s order this job visits: a resumed epoch's, or all."""
        resume = self._resumed(epoch)
        if resume is not None:
            return [(int(a), int(b)) for a, b in resume["remaining"]]
        return [(0, total)]

    def _planned(self, epoch, world, nworkers):
        """([world_size, num_workers], [block_samples, active_blocks] or None): the shards epoch
        `epoch`'s order was planned for and the epoch planner's blocks (docs/batching.md "The
        epoch planner"; None: the windows keep the chunk groups), which a job resuming it plans
        with whatever its own size and cache."""
        resume = self._resumed(epoch)
        if resume is not None and resume.get("planned_for") is not None:
            blocks = resume.get("blocks")
            return [int(x) for x in resume["planned_for"]], ([int(x) for x in blocks] if blocks else None)
        blocks = self._generator().block_plan(world, nworkers)
        return [int(world), int(nworkers)], (list(blocks) if blocks is not None else None)

    def _blocks(self, epoch, world, nworkers):
        """[(begin, size)] of every shard (rank * nworkers + worker) in the concatenation of the
        epoch's remaining stretches (EpochOrder's contiguous blocks), and the stretches."""
        stretches = self._remaining(epoch, int(self._generator().total_windows))
        total = sum(b - a for a, b in stretches)
        count = world * nworkers
        base, extra = divmod(total, count)
        return [(i * base + min(i, extra), base + (1 if i < extra else 0)) for i in range(count)], stretches

    @staticmethod
    def _batches_of(size, config):
        bs = int(config["batch_size"])
        return size // bs if config["drop_last"] else -(-size // bs)

    def state_dict(self, received=None, num_workers=None) -> dict:
        """Where the job stands in the current epoch: the stretches of its order not yet
        delivered. `received`: batches this rank's training loop received this epoch (default:
        what the dataset, iterated here, or its :meth:`loader` yielded); `num_workers`: the
        DataLoader workers they came through (default: the counting loader's). In a DDP job every
        rank receives as many batches, so rank 0's state describes the whole job; a job of any
        world size and worker count continues it with :meth:`load_state_dict`."""
        if self._pipeline is None:
            raise TypeError("state_dict: this BatchDataset wraps a lazycube._core.BatchGenerator, "
                            "which cannot be rebuilt for another shard; use state()/restore()")
        config = self._config()
        if config.get("filter"):
            raise ValueError("state_dict: with filter= the windows a batch holds depend on the data, so "
                             "the epoch position of a batch count is not known; use state()/restore() "
                             "per process")
        rank, world, _, _ = self._shard()
        epoch = self.epoch
        if received is None:
            warn_uncounted(self)
        k = self._received if received is None else int(received)
        n = self._received_workers if num_workers is None else int(num_workers)
        if k < 0 or n < 1:
            raise ValueError("state_dict: received must be >= 0 and num_workers >= 1")
        bs = int(config["batch_size"])
        blocks, stretches = self._blocks(epoch, world, n)
        consumed = []  # (begin, end) in the concatenation of the stretches
        for r in range(world):
            mine = blocks[r * n:(r + 1) * n]
            got = received_per_worker(k, [self._batches_of(size, config) for _, size in mine])
            consumed += [(begin, begin + min(g * bs, size)) for (begin, size), g in zip(mine, got)]
        left, at = [], 0
        for a, b in sorted(consumed) + [(sum(e - s for s, e in stretches),) * 2]:
            if a > at:
                left.append((at, a))
            at = max(at, b)
        # back to positions of the epoch's whole order
        remaining, offset = [], 0
        for s, e in stretches:
            for a, b in left:
                lo, hi = max(a, offset), min(b, offset + e - s)
                if lo < hi:
                    remaining.append([s + lo - offset, s + hi - offset])
            offset += e - s
        planned, plan = self._planned(epoch, world, n)
        return {"format": _STATE_FORMAT, "epoch": epoch, "remaining": remaining,
                "planned_for": planned, "blocks": plan,
                "windows": int(self._generator().total_windows), "config": _resume_config(config)}

    def load_state_dict(self, state: Mapping):
        """Continues the epoch of `state` (from :meth:`state_dict`), delivering the windows it
        has not: in this job whatever its world size, worker count and batch size. Call it before
        the DataLoader starts its workers. ValueError for a state of another dataset, order or
        seed."""
        if self._pipeline is None:
            raise TypeError("load_state_dict: this BatchDataset wraps a lazycube._core.BatchGenerator, "
                            "which cannot be rebuilt; wrap lazycube.BatchGenerator(...) or pass a URL")
        if not isinstance(state, Mapping) or state.get("format") != _STATE_FORMAT:
            raise ValueError("not a BatchDataset state (format %r)"
                             % (state.get("format") if isinstance(state, Mapping) else state,))
        mine = _resume_config(self._config())
        if state.get("windows") != int(self._generator().total_windows) or state.get("config") != mine:
            theirs = state.get("config") or {}
            differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k)) or ["windows"]
            raise ValueError("the state belongs to another BatchDataset: it differs in %s" % ", ".join(differ))
        resume = {"epoch": int(state["epoch"]), "remaining": [[int(a), int(b)] for a, b in state["remaining"]]}
        if state.get("planned_for") is not None:  # (states of lazycube before the epoch planner have none)
            resume["planned_for"] = [int(x) for x in state["planned_for"]]
            if state.get("blocks") is not None:
                resume["blocks"] = [int(x) for x in state["blocks"]]
        self._pipeline = self._pipeline.replace(generator=dict(self._pipeline.generator, resume=resume))
        self._wrapped = None
        self._gens = {}
        self._lens = {}
        self._generator()  # checks the stretches now (UsageError naming resume)
        self._epoch.fill_(resume["epoch"])
        self._pending_restore = None
        self._received = 0

    def loader(self, **kwargs) -> torch.utils.data.DataLoader:
        """A DataLoader over this dataset (batch_size=None: items are whole batches) that counts
        the batches it yields to the training loop, for state_dict()."""
        kwargs.setdefault("batch_size", None)
        return CountingLoader(self, **kwargs)

    def state(self):
        """This process's position (see BatchGenerator.state()); single-process use."""
        if self._pending_restore is not None:
            return self._pending_restore
        gen = self._generator()
        if gen.epoch != self.epoch:
            gen.set_epoch(self.epoch)
        return gen.state()

    def restore(self, state):
        """The next iteration continues after the batches `state` counts (in its epoch)."""
        gen = self._generator()
        gen.restore(state)  # validates now: UsageError for another configuration
        self._epoch.fill_(int(state["epoch"]))
        self._pending_restore = state

    @property
    def generator(self):
        """This process's C++ generator (built on first use)."""
        return self._generator()

    def __repr__(self):
        # the pipeline (source, arguments, shard), never a secret (lazycube.pipeline.scrub)
        text = "lazycube.torch.BatchDataset(%r)" % (self._pipeline,)
        return scrub(text) if self._pipeline is None else self._pipeline.scrub(text)

    def __len__(self):
        """Batches per epoch of this rank (of the current epoch: a resumed one has fewer): of this
        worker's shard inside a DataLoader worker, otherwise the sum over `num_workers` (default
        1) worker shards. With filter= an upper bound."""
        rank, world, worker, nworkers = self._shard()
        if torch.utils.data.get_worker_info() is None:
            worker, nworkers = None, self.len_workers
        key = (rank, world, worker, nworkers, self.epoch)
        if key not in self._lens:
            blocks, _ = self._blocks(self.epoch, world, nworkers)
            mine = blocks[rank * nworkers:(rank + 1) * nworkers]
            if worker is not None:
                mine = [mine[worker]]
            config = self._config()
            self._lens[key] = sum(self._batches_of(size, config) for _, size in mine)
        return self._lens[key]

    # iteration
    def tensors(self, batch, transform=True):
        """The item for a lazycube Batch as iteration yields it on the CPU: tensors over its
        buffers (no copy), or unpacked/normalised float tensors with `normalize`/`packed`
        (transform=False: the batch's own values, e.g. stored integers)."""
        def one(array, transforms):
            a = array.numpy()
            if transform and transforms is not None:
                return _transform_numpy(a, transforms)
            return _from_numpy(a)

        out = [one(batch.arrays[0], self._x_transforms)]
        if batch.target is not None:
            out.append(one(batch.target, self._y_transforms))
        if self.return_window_ids:
            out.append(torch.tensor(list(batch.window_ids), dtype=torch.int64))
        return out[0] if len(out) == 1 else tuple(out)

    def _batches(self, transform=True):
        if self._pending_restore is not None and torch.utils.data.get_worker_info() is not None:
            raise RuntimeError("BatchDataset.restore() resumes single-process iteration; iterate "
                               "with num_workers=0 (one state per distributed rank)")
        gen = self._generator()
        if self._pending_restore is not None:
            gen.restore(self._pending_restore)
            self._pending_restore = None
        else:
            gen.set_epoch(self.epoch)
        seen = fetch_stats_of(gen.cache_stats())
        counted = 0

        def count():
            nonlocal seen
            now = fetch_stats_of(gen.cache_stats())
            self._fetched += torch.tensor([now[k] - seen[k] for k in FETCH_KEYS], dtype=torch.int64)
            seen = now

        counting = torch.utils.data.get_worker_info() is None  # the loop receives what this yields
        if counting:
            self._received_workers = 1
        try:
            for item in self._items(gen, transform):
                counted += 1
                if counted % _FETCH_EVERY == 0:
                    count()
                if counting:
                    self._received += 1
                else:
                    self._yielded_in_workers += 1
                yield item
        finally:
            count()

    def fetch_stats(self) -> dict:
        """What this rank fetched so far, its DataLoader workers included (counted every few
        batches and at the end of an iteration): ``requests`` (chunks fetched), ``bytes``
        (decoded), ``bytes_needed`` (of the distinct chunks each process read) and
        ``egress_ratio`` = bytes / bytes_needed (docs/forecast.md "What an epoch costs")."""
        return with_ratio(dict(zip(FETCH_KEYS, (int(x) for x in self._fetched.tolist()))))

    def _items(self, gen, transform):
        if self.return_window_ids or (transform and (self._x_transforms is not None
                                                     or self._y_transforms is not None)):
            while True:
                batch = gen.next()
                if batch is None:
                    return
                yield self.tensors(batch, transform)
        # Only the data: the arrays come without a Batch object (next_arrays), and this loop's
        # own cost is on the thread that shares the cores with the batch assembly, so it is
        # kept to the tensor views (the arrays are writable: from_numpy has nothing to warn).
        next_arrays, from_numpy = gen.next_arrays, torch.from_numpy
        while True:
            arrays = next_arrays()
            if arrays is None:
                return
            x, y = arrays
            yield from_numpy(x) if y is None else (from_numpy(x), from_numpy(y))

    def __iter__(self):
        if self.device is None or self.device.type != "cuda":
            return self._batches()
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError("BatchDataset(device='cuda') cannot run inside DataLoader workers; "
                               "use num_workers=0 (batches are assembled on lazycube's own threads)")
        return self._cuda_batches()

    def _cuda_batches(self):
        stream = torch.cuda.Stream(device=self.device)

        # x (and y) cross as the batch holds them (stored integers when packed) and are
        # unpacked/normalised on the GPU, on the side stream, after the copy.
        transforms = [self._x_transforms] + ([self._y_transforms] if self._has_target else [])

        def launch(item):
            parts = item if isinstance(item, tuple) else (item,)
            pinned = [p if p.is_pinned() else p.pin_memory() for p in parts]
            with torch.cuda.stream(stream):
                moved = [p.to(self.device, non_blocking=True) for p in pinned]
                for k, tr in enumerate(transforms):
                    if tr is not None:
                        moved[k] = _transform_cuda(moved[k], tr, stream)
                moved = tuple(moved)
                event = torch.cuda.Event()
                event.record(stream)
            return moved, pinned, event

        pending = None
        for item in self._batches(transform=False):
            nxt = launch(item)  # copies batch k+1 while the consumer works on batch k
            if pending is not None:
                yield self._finish(pending)
            pending = nxt
        if pending is not None:
            yield self._finish(pending)

    def _finish(self, pending):
        moved, _pinned, event = pending
        # The host buffers go back to their pool when `pending` is dropped (lazycube's pinned
        # pool reuses them at once, unlike torch's caching host allocator, which tracks
        # streams): wait for this batch's copy, launched one batch earlier, before that.
        event.synchronize()
        current = torch.cuda.current_stream(self.device)
        current.wait_event(event)
        for t in moved:
            t.record_stream(current)
        return moved[0] if len(moved) == 1 else moved


# --------------------------------------------------------------------------------------------
# WindowDataset


class WindowDataset(torch.utils.data.Dataset):
    """One window per item (map-style), for ``DataLoader(batch_size=N, shuffle=True)``.

    ``len()`` is the number of windows; item ``i`` is window ``i`` of the grid (row-major
    over ``input_dims``, last dim fastest) as a tensor ``(channel, window dims...)``, or
    ``(x, y)`` when a ``target`` is set; ``dtype`` as in ``BatchDataset`` (unset or None:
    float32 for floating values, integer channels keep their dtype; ``torch.float64`` keeps
    float64). Each process reads through its own generator
    (stacked mode, batch_size 1, no shuffling, random access with ``batch(i)``), built on
    first use; items share the C++ buffer of their one-window batch (no copy). With
    ``return_window_ids=True`` an item gains a last element, the window's grid number as a
    0-dim int64 tensor. Further keyword arguments go to the generator (e.g. ``decode_cf``,
    ``storage_options`` to the open). ``normalize={variable: (mean, std)}`` normalises the
    channels of x and y per variable on the CPU, as in ``BatchDataset`` (float32 items);
    ``normalize="stats.json"`` (a file of ``lazycube stats -o``, a ``lazycube.Stats`` or its
    document) applies ``(x - mean) / std`` during assembly in C++, broadcast over the
    statistics' kept dims (e.g. per level).
    """

    def __init__(self, source, input_dims, variables=None, target=None, input_overlap=None,
                 dtype=None, cache_bytes=None, *, return_window_ids=False, normalize=None,
                 **kwargs):
        self.return_window_ids = bool(return_window_ids)
        open_kwargs = {k: kwargs.pop(k) for k in _OPEN_KEYS if k in kwargs}
        gkw = {"input_dims": dict(input_dims), "batch_size": 1, "shuffle": "none", "prefetch": 0}
        if variables is not None:
            gkw["variables"] = [variables] if isinstance(variables, str) else list(variables)
        if input_overlap is not None:
            gkw["input_overlap"] = dict(input_overlap)
        if dtype is not None:
            gkw["dtype"] = dtype
        if cache_bytes is not None:
            gkw["cache_bytes"] = int(cache_bytes)
        gkw.update(kwargs)
        if target is not None:
            gkw["target"] = target
        if is_stats_argument(normalize):
            # statistics (a file of `lazycube stats -o`, a Stats, its document): applied in C++
            # during assembly, as BatchDataset does without packing
            # the document travels with the pipeline; the generator checks it covers every channel
            gkw["normalize"] = normalize_document(normalize)
            normalize = None
        # map-style: every process sees the whole grid (a DistributedSampler splits the items)
        rank, world = gkw.pop("rank", 0), gkw.pop("world_size", 1)
        self._pipeline = _pipeline_of(source, open_kwargs, gkw, rank=rank, world_size=world)
        self._gen = None
        self._gen_pid = None
        gen = self._generator()
        self._len = len(gen)
        config = gen.state()["config"]
        x_vars = list(config["variables"])
        y_vars = list(config.get("target_variables") or [])
        norm = _normalize_arg(normalize, x_vars + y_vars)
        self._x_transforms = _channel_transforms(x_vars, norm, None) if norm else None
        self._y_transforms = _channel_transforms(y_vars, norm, None) if norm and y_vars else None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_gen"] = state["_gen_pid"] = None
        return state

    def _generator(self):
        if self._gen is None or self._gen_pid != os.getpid():
            keep_foreign(self._gen)
            self._gen = self._pipeline.build()
            self._gen_pid = os.getpid()
        return self._gen

    def __repr__(self):
        # the pipeline (source, arguments, shard), never a secret (lazycube.pipeline.scrub)
        return self._pipeline.scrub("lazycube.torch.WindowDataset(%r, windows=%d)" % (self._pipeline, self._len))

    def __len__(self):
        return self._len

    def __getitem__(self, i):
        i = int(i)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("window %d out of range (%d windows)" % (i, self._len))
        return self.tensors(self._generator().batch(i))

    @property
    def generator(self):
        """This process's C++ generator (built on first use)."""
        return self._generator()

    def tensors(self, batch):
        """The item for a one-window lazycube Batch: views of its buffers (no copy), or
        normalised copies with `normalize`."""
        def one(array, transforms):
            a = array.numpy()
            return (_from_numpy(a) if transforms is None else _transform_numpy(a, transforms))[0]

        out = [one(batch.arrays[0], self._x_transforms)]
        if batch.target is not None:
            out.append(one(batch.target, self._y_transforms))
        if self.return_window_ids:
            out.append(torch.tensor(batch.window_ids[0], dtype=torch.int64))
        return out[0] if len(out) == 1 else tuple(out)
