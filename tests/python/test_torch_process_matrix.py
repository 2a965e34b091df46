"""Every construction form of the torch datasets in DataLoader workers of every start method,
over a local store, HTTP (nginx), S3 (moto with SigV4 checking on, the credentials only in
``storage_options``, no ``AWS_*`` variable set) and Azure (Azurite, SharedKey from a
``connection_string`` in ``storage_options``).

Forms: BatchDataset(url), BatchDataset(lazycube.open_dataset(url)),
BatchDataset(lazycube.BatchGenerator(lazycube.open_dataset(url), ...)),
BatchDataset(xr.open_dataset(url, engine=lazycube)), WindowDataset(lazycube.open_dataset(url)),
WindowDataset(url); and ForecastDataset(url), ForecastDataset(lazycube.open_dataset(url)),
ForecastDataset(xr.open_dataset(url, engine=lazycube)) and ForecastDataset of a two-stream
ForecastSamples (a lazycube and an xarray Dataset). One DataLoader per start method runs all of them over every store
(tagged_datasets.Tagged), with 2 persistent workers, for 2 epochs: each epoch yields every
window (or forecast sample) of every (store, form) exactly once with the values xarray reads
from the local store, and set_epoch reshuffles. A store whose server cannot run here is left out with a visible skip
(test_store_available).
"""

import multiprocessing
import sys

import numpy as np
import pytest

from conftest import REPO, import_lazycube

torch = pytest.importorskip("torch")  # before lazycube
xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "servers"))
import azurite  # noqa: E402
import moto_server  # noqa: E402
import nginx  # noqa: E402
from tagged_datasets import Tagged  # noqa: E402

VARS = ["a", "b"]
DIMS = {"time": 2, "y": 8, "x": 8}
GRID = (4, 2, 2)  # windows along time, y, x of the 8 x 16 x 16 cube
WINDOWS = 16
BUCKET = "lazycube-matrix"
METHODS = ["fork", "forkserver", "spawn"]

# Workers started from a server that has torch loaded start in a fraction of the time.
multiprocessing.set_forkserver_preload(["torch", "tagged_datasets"])


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    """The tiny cube (8 x 16 x 16 float32, two variables, 4 x 8 x 8 chunks) in a folder that
    nginx serves and moto is loaded from."""
    root = tmp_path_factory.mktemp("www")
    # hourly datetimes: the forecast forms match their offsets against them by value
    t = np.datetime64("2020-01-01T00", "ns") + np.arange(8) * np.timedelta64(1, "h")
    y, x = np.arange(16) * 0.5, np.arange(16) * 0.25
    values = np.arange(8 * 16 * 16, dtype=np.float32).reshape(8, 16, 16)
    ds = xr.Dataset({"a": (("time", "y", "x"), values), "b": (("time", "y", "x"), -2 * values)},
                    coords={"time": t, "y": y, "x": x})
    ds.to_zarr(str(root / "cube.zarr"), encoding={v: {"chunks": (4, 8, 8)} for v in VARS},
               consolidated=True)
    return root


@pytest.fixture(scope="module")
def reference(www):
    """(variable, time, y, x) as xarray's zarr engine reads the local store."""
    with xr.open_zarr(str(www / "cube.zarr")) as ds:
        return np.stack([ds[v].transpose("time", "y", "x").values for v in VARS])


@pytest.fixture(scope="module")
def http_store(www, tmp_path_factory):
    reason = nginx.unavailable_reason()
    if reason:
        yield None, reason
        return
    with nginx.NginxServer(tmp_path_factory.mktemp("nginx"), www) as server:
        yield (server.url + "/cube.zarr", None), None


@pytest.fixture(scope="module")
def s3_store(www, no_aws_environment):
    reason = moto_server.unavailable_reason()
    if reason:
        yield None, reason
        return
    with moto_server.MotoServer(BUCKET, {www / "cube.zarr": "cube.zarr"}) as s3:
        s3.set_auth(True)
        options = {"key": s3.key_id, "secret": s3.secret, "endpoint_url": s3.endpoint}
        yield ("s3://%s/cube.zarr" % BUCKET, options), None


@pytest.fixture(scope="module")
def az_store(www, tmp_path_factory):
    reason = azurite.unavailable_reason()
    if reason:
        yield None, reason
        return
    with azurite.AzuriteServer(tmp_path_factory.mktemp("azurite")) as server:
        server.client().create_container(BUCKET)
        server.upload_tree(BUCKET, www / "cube.zarr", "cube.zarr")
        yield ("az://%s/cube.zarr" % BUCKET, {"connection_string": server.connection_string}), None


@pytest.fixture(scope="module")
def stores(www, http_store, s3_store, az_store, no_aws_environment):
    """{name: (url, storage_options)} for the stores that can run here; {name: reason} else."""
    out, skipped = {"local": (str(www / "cube.zarr"), None)}, {}
    for name, (store, reason) in (("http", http_store), ("s3", s3_store), ("az", az_store)):
        if store is None:
            skipped[name] = reason
        else:
            out[name] = store
    return out, skipped


@pytest.mark.parametrize("name", ["http", "s3", "az"])
def test_store_available(stores, name):
    """Says (as a skip) when the matrix runs without a store."""
    available, skipped = stores
    if name in skipped:
        pytest.skip("%s store left out of the process matrix: %s" % (name, skipped[name]))
    assert name in available


def test_s3_needs_the_storage_options_credentials(stores):
    available, _ = stores
    if "s3" not in available:
        pytest.skip("no moto server")
    url, options = available["s3"]
    # without them (anonymous: moto answers 500 while checking signatures) or with a wrong
    # secret (403) the store refuses
    with pytest.raises(lazycube.StoreError):
        lazycube.open_dataset(url, storage_options={"endpoint_url": options["endpoint_url"],
                                                    "retries": "0"})
    with pytest.raises(lazycube.AuthError):
        lazycube.open_dataset(url, storage_options=dict(options, secret="W" * 40, retries="0"))
    assert lazycube.open_dataset(url, storage_options=options)["a"].shape == (8, 16, 16)


def _forms(url, options):
    """{form: dataset} of the six construction forms over one store."""
    so = {"storage_options": options} if options else {}
    batch = dict(input_dims=DIMS, batch_size=3, variables=VARS, shuffle="random", seed=5,
                 drop_last=False, return_window_ids=True)
    return {
        "BatchDataset(url)": lctorch.BatchDataset(url, **batch, **so),
        "BatchDataset(lazycube.open_dataset)": lctorch.BatchDataset(
            lazycube.open_dataset(url, **so), **batch),
        "BatchDataset(BatchGenerator)": lctorch.BatchDataset(
            lazycube.BatchGenerator(lazycube.open_dataset(url, **so), DIMS, batch_size=3,
                                    variables=VARS, shuffle=True, seed=5, drop_last=False),
            return_window_ids=True),
        "BatchDataset(xr.open_dataset)": lctorch.BatchDataset(
            xr.open_dataset(url, engine="lazycube", **so), **batch),
        "WindowDataset(lazycube.open_dataset)": lctorch.WindowDataset(
            lazycube.open_dataset(url, **so), DIMS, variables=VARS, return_window_ids=True),
        "WindowDataset(url)": lctorch.WindowDataset(url, DIMS, variables=VARS,
                                                    return_window_ids=True, **so),
    }


def _window(reference, wid):
    t, rest = divmod(wid, GRID[1] * GRID[2])
    yi, xi = divmod(rest, GRID[2])
    return reference[:, 2 * t:2 * t + 2, 8 * yi:8 * yi + 8, 8 * xi:8 * xi + 8]


def _epoch(loader, reference):
    """{tag: [window ids in the order they came]} of one pass, checking every value."""
    seen = {}
    for tag, (x, ids) in loader:
        if ids.dim() == 0:  # a WindowDataset item: one window
            x, ids = x[None], ids[None]
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), _window(reference, wid),
                                          err_msg="%s: window %d" % (tag, wid))
            seen.setdefault(tag, []).append(wid)
    return seen


def _two_epochs(method, members, one_epoch):
    """(tags, [{tag: items in order} per epoch]) of two epochs of the tagged members through one
    DataLoader of 2 persistent workers started by `method`, set_epoch between them."""
    data = Tagged(members)
    loader = DataLoader(data, batch_size=None, num_workers=2, multiprocessing_context=method,
                        persistent_workers=True)
    epochs = []
    for epoch in range(2):
        data.set_epoch(epoch)
        epochs.append(one_epoch(loader))
    del loader
    return [tag for tag, _ in members], epochs


@pytest.mark.parametrize("method", METHODS)
def test_every_form_every_store_in_workers(method, stores, reference, no_aws_environment):
    available, _ = stores
    tags, epochs = _two_epochs(method, [("%s %s" % (store, form), ds)
                                        for store, (url, options) in available.items()
                                        for form, ds in _forms(url, options).items()],
                               lambda loader: _epoch(loader, reference))
    for e, seen in enumerate(epochs):
        assert sorted(seen) == sorted(tags), "epoch %d: forms without windows" % e
        for tag in tags:
            assert sorted(seen[tag]) == list(range(WINDOWS)), "epoch %d, %s: %r" % (e, tag, seen[tag])
    for tag in tags:
        assert epochs[0][tag] != epochs[1][tag], "%s: set_epoch did not reshuffle" % tag


# Forecast samples of the cube: inputs a at the anchor and an hour before, targets b one and two
# hours ahead; anchors 01:00 .. 05:00 (those whose four times all exist).
FORECAST = dict(input_offsets=["-1h", "0h"], target_offsets=["1h", "2h"])
ANCHORS = 5


def _forecast_forms(url, options, index_dir):
    so = {"storage_options": options} if options else {}
    spec = dict(FORECAST, inputs=["a"], targets=["b"], index_dir=index_dir)
    batch = dict(batch_size=2, shuffle="random", seed=7)
    streams = lazycube.ForecastSamples(
        {"one": lazycube.open_dataset(url, **so), "two": xr.open_dataset(url, engine="lazycube", **so)},
        inputs={"one": ["a"], "two": ["b"]}, targets={"one": ["b"], "two": ["a"]}, **FORECAST,
        index_dir=index_dir)
    return {
        "ForecastDataset(url)": lctorch.ForecastDataset(url, **batch, **spec, **so),
        "ForecastDataset(lazycube.open_dataset)": lctorch.ForecastDataset(
            lazycube.open_dataset(url, **so), **batch, **spec),
        "ForecastDataset(xr.open_dataset)": lctorch.ForecastDataset(
            xr.open_dataset(url, engine="lazycube", **so), **batch, **spec),
        "ForecastDataset(two streams)": lctorch.ForecastDataset(streams, **batch),
    }


def _forecast_epoch(loader, reference):
    """{tag: [sample ids in the order they came]} of one pass, each sample's arrays checked
    against the reference: sample i is the anchor at hour i + 1."""
    a, b = reference
    seen = {}
    for tag, batch in loader:
        parts = [(batch["one"], a, b), (batch["two"], b, a)] if "one" in batch else [(batch, a, b)]
        for k, sid in enumerate(batch["samples"].tolist()):
            t = sid + 1
            for part, src, dst in parts:
                np.testing.assert_array_equal(part["inputs"][k].numpy(), src[t - 1:t + 1, None],
                                              err_msg="%s: sample %d inputs" % (tag, sid))
                np.testing.assert_array_equal(part["targets"][k].numpy(), dst[t + 1:t + 3, None],
                                              err_msg="%s: sample %d targets" % (tag, sid))
            seen.setdefault(tag, []).append(sid)
    return seen


@pytest.mark.parametrize("method", METHODS)
def test_forecast_every_form_every_store_in_workers(method, stores, reference, no_aws_environment,
                                                    tmp_path):
    """ForecastDataset in each construction form over every store, credentials only in
    storage_options: spawned and forkserver workers reopen the sources from what pickled."""
    available, _ = stores
    tags, epochs = _two_epochs(method, [("%s %s" % (store, form), ds)
                                        for store, (url, options) in available.items()
                                        for form, ds in _forecast_forms(url, options, str(tmp_path / store)).items()],
                               lambda loader: _forecast_epoch(loader, reference))
    for e, seen in enumerate(epochs):
        assert sorted(seen) == sorted(tags), "epoch %d: forms without samples" % e
        for tag in tags:
            assert sorted(seen[tag]) == list(range(ANCHORS)), "epoch %d, %s: %r" % (e, tag, seen[tag])
    assert any(epochs[0][tag] != epochs[1][tag] for tag in tags), "set_epoch did not reshuffle"


def test_secrets_never_shown(stores):
    """Credentials travel inside the pipeline (a worker needs them) but no repr/str of an object
    holding them, and no error message of a failed open, contains them."""
    import pickle

    available, _ = stores
    if "s3" not in available:
        pytest.skip("no moto server")
    url, options = available["s3"]
    secret, key = options["secret"], options["key"]
    so = {"storage_options": options}
    ds = lazycube.open_dataset(url, **so)
    gen = lazycube.BatchGenerator(ds, DIMS, batch_size=3, variables=VARS)
    xds = xr.open_dataset(url, engine="lazycube", **so)
    bds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=3, variables=VARS, **so)
    wds = lctorch.WindowDataset(ds, DIMS, variables=VARS)
    shown = [ds, ds.source, ds.source.storage_options, ds.isel(time=slice(2, 6)).source, gen,
             gen.pipeline, xds, xds["a"], xds["a"].encoding, bds, bds._pipeline, wds,
             wds._pipeline, lazycube.BatchGenerator(xds, DIMS, batch_size=3).pipeline]
    for obj in shown:
        for text in (repr(obj), str(obj)):
            assert secret not in text and key not in text, text
    assert "***" in repr(gen.pipeline)
    # they do travel: a worker reads with them
    assert secret.encode() in pickle.dumps(gen.pipeline)
    assert pickle.loads(pickle.dumps(ds))["a"].isel(time=0).values.shape == (16, 16)

    errors = []
    for bad in (dict(options, secret=secret[::-1], retries="0"),  # 403 from moto
                dict(options, retries=secret),                    # an option that echoes its value
                dict(options, endpoint_url=options["endpoint_url"] + "/" + secret + "/",
                     retries="0")):
        for open_ in (lambda: lazycube.open_dataset(url, storage_options=bad),
                      lambda: lctorch.BatchDataset(url, input_dims=DIMS, batch_size=3,
                                                   storage_options=bad),
                      lambda: xr.open_dataset(url, engine="lazycube",
                                              storage_options=bad)):
            with pytest.raises(lazycube.Error) as info:
                open_()
            errors.append(str(info.value))
    for message in errors:
        for value in (secret, secret[::-1]):
            assert value not in message, message
