"""No secret in a repr, a str, a warning or an error (issue 32, "Secrets").

A distinct secret is planted in each credential form -- a URL's userinfo password, its query
(token=, sig=, X-Amz-Signature=, a whole SAS), and the storage options (S3 secret key and session
token, Azure account key, SAS token and connection string, a GCS bearer token, HTTP headers with a
bearer token, a password in endpoint_url) -- and every repr/str of Source, MultiSource, Pipeline,
lazycube.Dataset / Variable, BatchGenerator and the torch BatchDataset / WindowDataset is searched
for each of them; so are the errors of opening unreachable URLs (port 9 of 127.0.0.1: refused at
once) that carry them. The objects that are opened read a local Zarr store the test writes (local
paths ignore storage options, so they carry every option secret); URL forms that need a server are
given as a Source directly (lazycube.Dataset(core, source)), which is never opened in this process.
"""

import base64
import pickle
import traceback
import warnings

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")
from lazycube import pipeline as lp  # noqa: E402

# One distinct secret per credential form (none is a substring of another, nor of any other text).
SECRETS = {
    "userinfo password": "PwUserinfo7q",
    "query token=": "TokQuery8r",
    "query sig= (Azure SAS)": "SigQuery9s",
    "query X-Amz-Signature=": "AmzSig0t",
    "s3 secret key": "S3SecretKey1u",
    "s3 session token": "S3SessTok2v",
    "azure account key": base64.b64encode(b"azure account key 3w secret").decode(),
    "azure sas token": "AzSasSig4x",
    "azure connection string": base64.b64encode(b"azure connection key 5y").decode(),
    "gcs bearer token": "GcsBearer6z",
    "http bearer header": "HttpBearer7a",
    "http headers": "HttpHdrCookie8b",
    "endpoint_url password": "EndpointPw9c",
    "virtual container secret": "VccSecret0d",
}

STORAGE_OPTIONS = {
    "key": "AKIAEXAMPLEID",
    "secret": SECRETS["s3 secret key"],
    "token": SECRETS["s3 session token"],
    "account_name": "acct",
    "account_key": SECRETS["azure account key"],
    "sas_token": "sv=2021-08-06&ss=b&srt=sco&sp=rl&se=2030-01-01&sig=" + SECRETS["azure sas token"],
    "connection_string": "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=%s;"
                         "BlobEndpoint=http://127.0.0.1:9/acct;" % SECRETS["azure connection string"],
    "gcs_token": SECRETS["gcs bearer token"],
    "bearer_token": SECRETS["http bearer header"],
    "headers": {"Authorization": "Bearer " + SECRETS["http bearer header"],
                "Cookie": "session=" + SECRETS["http headers"]},
    "endpoint_url": "http://minio:%s@127.0.0.1:9" % SECRETS["endpoint_url password"],
    "region_name": "us-east-1",
}

SECRET_URL = ("http://alice:%s@127.0.0.1:9/data/cube.zarr?token=%s&sig=%s&X-Amz-Signature=%s&se=2030"
              % (SECRETS["userinfo password"], SECRETS["query token="], SECRETS["query sig= (Azure SAS)"],
                 SECRETS["query X-Amz-Signature="]))

VIRTUAL = {"s3://bucket/": {"key": "AKIAVCC", "secret": SECRETS["virtual container secret"]}}


def assert_clean(text, what):
    for form, secret in SECRETS.items():
        assert secret not in text, "%s shows the %s: %s" % (what, form, text)
        bare = secret.rstrip("=")
        assert bare not in text, "%s shows the %s: %s" % (what, form, text)


def texts_of(obj):
    return {"repr": repr(obj), "str": str(obj), "format": "{}".format(obj)}


def assert_all_clean(obj, what):
    for how, text in texts_of(obj).items():
        assert_clean(text, "%s of %s" % (how, what))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("secrets") / "cube.zarr"
    rng = np.random.default_rng(3)
    xr.Dataset(
        {"t2m": (("time", "y", "x"), rng.standard_normal((8, 6, 4)).astype("f4")),
         "u": (("time", "y", "x"), rng.standard_normal((8, 6, 4)).astype("f4"))},
        coords={"time": np.arange(8), "y": np.arange(6.0), "x": np.arange(4.0)},
        attrs={"title": "secrets"},
    ).to_zarr(path, consolidated=True)
    return str(path)


# ---- the one scrub ----------------------------------------------------------------------------

def test_scrub_masks_each_url_form_and_keeps_the_rest():
    text = lp.scrub("GET %s failed" % SECRET_URL)
    assert_clean(text, "scrub")
    assert "alice:***@127.0.0.1:9/data/cube.zarr" in text and "se=2030" in text
    source = lp.Source(SECRET_URL)
    # the source's own scrub also masks the whole query (what the C++ side drops from messages)
    assert source.scrub(SECRET_URL) == "http://alice:***@127.0.0.1:9/data/cube.zarr?***"
    # a token used as the user name (no ':') is masked whole; percent-encoded secrets too
    assert lp.scrub("https://ghp_TOKENabc@host/x") == "https://***@host/x"
    assert "p@ss" not in lp.Source("http://u:p%40ss@h/x").scrub("decoded: p@ss")
    # plain text and non-secret query fields are left alone
    assert lp.scrub("s3://bucket/cube.zarr?versionId=3 and x=1") == "s3://bucket/cube.zarr?versionId=3 and x=1"


def test_storage_options_mask_every_secret_form():
    options = lp.StorageOptions(STORAGE_OPTIONS)
    assert_all_clean(options, "StorageOptions")
    # the non-secret ones stay readable
    assert "'region_name': 'us-east-1'" in repr(options) and "'account_name': 'acct'" in repr(options)
    # secrets embedded inside other values are masked in messages as well
    for value in (SECRETS["azure sas token"], SECRETS["azure connection string"],
                  SECRETS["endpoint_url password"], SECRETS["http bearer header"]):
        assert options.scrub("... %s ..." % value) == "... *** ..."


# ---- sources and pipelines, built directly (URL forms need no server) --------------------------

def url_sources():
    plain = lp.Source(SECRET_URL, STORAGE_OPTIONS)
    yield "Source(url, storage_options)", plain
    yield "Source with virtual containers", lp.Source(
        "s3://bucket/repo?X-Amz-Signature=%s" % SECRETS["query X-Amz-Signature="], STORAGE_OPTIONS,
        engine="icechunk", virtual_chunk_containers=VIRTUAL)
    yield "Source narrowed", plain.isel({"time": slice(0, 4)}).keep(["t2m"])
    yield "Source allowed_prefixes", lp.Source(
        "reference:///refs.json", {"allowed_prefixes": ["http://bob:%s@127.0.0.1:9/" % SECRETS["userinfo password"]]})
    multi = lp.MultiSource("concat", [plain, lp.Source(SECRET_URL.replace("cube", "cube2"), STORAGE_OPTIONS)],
                           dim="time")
    yield "MultiSource concat", multi
    yield "MultiSource merge", lp.MultiSource("merge", [multi, plain])


@pytest.mark.parametrize("name", [n for n, _ in url_sources()])
def test_sources_and_pipelines_built_directly(name):
    source = dict(url_sources())[name]
    assert_all_clean(source, name)
    assert_all_clean(source.storage_options, name + " .storage_options")
    pipeline = lp.Pipeline(source, {"input_dims": {"time": 2}, "batch_size": 2}, rank=0, world_size=1)
    assert_all_clean(pipeline, "Pipeline of " + name)
    assert_all_clean(pipeline.replace(state={"epoch": 1}), "Pipeline.replace of " + name)
    # the secrets still travel (a worker needs them): masked only where shown
    clone = pickle.loads(pickle.dumps(source))
    assert clone == source
    assert_all_clean(clone, "unpickled " + name)


# ---- opened objects over a local store ---------------------------------------------------------

def opened_objects(store):
    """(what, object) for every user-facing object over `store`, carrying every option secret;
    the URL forms through a lazycube.Dataset whose Source names a secret URL."""
    ds = lazycube.open_dataset(store, storage_options=STORAGE_OPTIONS)
    yield "lazycube.Dataset", ds
    yield "lazycube.Dataset.source", ds.source
    yield "lazycube.Variable", ds["t2m"]
    yield "lazycube.Variable.source", ds["t2m"].source
    narrowed = ds.isel(time=slice(0, 6))
    yield "lazycube.Dataset.isel", narrowed
    mf = lazycube.open_mfdataset([store, store], concat_dim="x", storage_options=STORAGE_OPTIONS) \
        if _has_open_mfdataset() else None
    if mf is not None:
        yield "open_mfdataset", mf
        yield "open_mfdataset.source", mf.source
    url_ds = lazycube.Dataset(ds._core, lp.Source(SECRET_URL, STORAGE_OPTIONS,
                                                  virtual_chunk_containers=VIRTUAL))
    for label, base in (("options", ds), ("secret URL", url_ds)):
        gen = lazycube.BatchGenerator(base, input_dims={"time": 2}, batch_size=2)
        yield "BatchGenerator (%s)" % label, gen
        yield "BatchGenerator.pipeline (%s)" % label, gen.pipeline
        yield "Batch (%s)" % label, next(iter(gen))
        xgen = lazycube.BatchGenerator(base, input_dims={"time": 2})
        yield "BatchGenerator xbatcher mode (%s)" % label, xgen
    url_gen = lazycube.BatchGenerator(url_ds, input_dims={"time": 2}, batch_size=2)
    yield "BatchGenerator from URL", lazycube.BatchGenerator(store, input_dims={"time": 2}, batch_size=2,
                                                             storage_options=STORAGE_OPTIONS)
    try:
        from lazycube import torch as lt
    except ImportError:
        return
    for label, base in (("options", ds), ("secret URL", url_ds)):
        bd = lt.BatchDataset(base, input_dims={"time": 2}, batch_size=2)
        yield "BatchDataset (%s)" % label, bd
        yield "BatchDataset pipeline (%s)" % label, bd._pipeline
        wd = lt.WindowDataset(base, input_dims={"time": 2})
        yield "WindowDataset (%s)" % label, wd
        yield "WindowDataset pipeline (%s)" % label, wd._pipeline
    yield "BatchDataset of a generator", lt.BatchDataset(url_gen)
    yield "BatchDataset from URL", lt.BatchDataset(store, input_dims={"time": 2}, batch_size=2,
                                                   storage_options=STORAGE_OPTIONS)


def _has_open_mfdataset():
    return hasattr(lazycube, "open_mfdataset")


def test_every_opened_object(store):
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for what, obj in opened_objects(store):
            assert_all_clean(obj, what)
            seen.append(what)
    for w in caught:
        assert_clean(str(w.message), "warning %r" % (w.category,))
    assert "lazycube.Dataset.source" in seen and "BatchGenerator (secret URL)" in seen
    # the sources really hold the secrets (they would be shown if not masked)
    ds = lazycube.open_dataset(store, storage_options=STORAGE_OPTIONS)
    assert ds.source.storage_options["secret"] == SECRETS["s3 secret key"]


def test_reprs_show_the_masked_forms(store):
    ds = lazycube.open_dataset(store, storage_options=STORAGE_OPTIONS)
    url_ds = lazycube.Dataset(ds._core, lp.Source(SECRET_URL, STORAGE_OPTIONS))
    text = repr(lazycube.BatchGenerator(url_ds, input_dims={"time": 2}, batch_size=2).pipeline)
    assert "http://alice:***@127.0.0.1:9/data/cube.zarr?***" in text
    assert "'secret': '***'" in text and "'headers': '***'" in text
    assert "minio:***@127.0.0.1:9" in text


# ---- errors of unreachable URLs -----------------------------------------------------------------

FAST = {"retries": "0", "connect_timeout": "2", "deadline": "5"}


def error_cases():
    pw, tok = SECRETS["userinfo password"], SECRETS["query token="]
    yield "http userinfo + query", SECRET_URL, dict(FAST)
    yield "http userinfo, .zarr dir", "http://alice:%s@127.0.0.1:9/cube.zarr" % pw, dict(FAST)
    yield "http query only", "http://127.0.0.1:9/cube.nc?token=%s&sig=%s" % (tok, SECRETS["query sig= (Azure SAS)"]), dict(FAST)
    yield "http refs", "reference://http://alice:%s@127.0.0.1:9/refs.json" % pw, dict(FAST)
    yield "s3 keys", "s3://bucket/cube.zarr", dict(
        FAST, key="AKIAEXAMPLEID", secret=SECRETS["s3 secret key"], token=SECRETS["s3 session token"],
        endpoint_url=STORAGE_OPTIONS["endpoint_url"], region_name="us-east-1")
    yield "gs bearer", "gs://bucket/cube.zarr", dict(
        FAST, token=SECRETS["gcs bearer token"], endpoint_url="http://127.0.0.1:9")
    endpoint = "BlobEndpoint=http://127.0.0.1:9/acct;AccountName=acct;"
    yield "az key", "az://container/cube.zarr", dict(
        FAST, account_name="acct", account_key=SECRETS["azure account key"], connection_string=endpoint)
    yield "az sas", "az://container/cube.zarr", dict(
        FAST, connection_string=endpoint + "SharedAccessSignature=" + STORAGE_OPTIONS["sas_token"])
    yield "az connection string", "az://container/cube.zarr", dict(
        FAST, connection_string=STORAGE_OPTIONS["connection_string"])
    yield "az bad key", "az://container/cube.zarr", dict(
        FAST, account_name="acct", account_key="!" + SECRETS["azure account key"], connection_string=endpoint)
    yield "unknown options on http", SECRET_URL, dict(FAST, secret=SECRETS["s3 secret key"],
                                                      headers=STORAGE_OPTIONS["headers"])


def error_texts(exc):
    out = [str(exc), repr(exc), "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))]
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        out.append(repr(cause))
        cause = cause.__cause__ or cause.__context__
    return out


@pytest.mark.parametrize("name", [n for n, _, _ in error_cases()])
def test_errors_of_unreachable_urls(name):
    _, url, options = next(c for c in error_cases() if c[0] == name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for opener in (lambda: lazycube.open_dataset(url, storage_options=options),
                       lambda: lp.Source(url, options).open(),
                       lambda: lazycube.BatchGenerator(url, input_dims={"time": 2}, batch_size=2,
                                                       storage_options=options)):
            with pytest.raises(Exception) as info:  # noqa: B017 -- any error, as long as it is clean
                opener()
            for text in error_texts(info.value):
                assert_clean(text, "error of %s (%s)" % (name, type(info.value).__name__))
    for w in caught:
        assert_clean(str(w.message), "warning of %s" % name)
