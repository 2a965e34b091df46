"""Icechunk repositories (issue 18) through the CLI and Python, over the local path, HTTP (nginx)
and S3 (moto, SigV4 checked on every request): the history of every ref, the values at every
snapshot, refs with spaces and punctuation, the deleted tag refused, the virtual chunk (served by
moto) read with authorisation and refused without, and the open arguments (version, containers,
group) carried by pickling to spawned processes and by BatchGenerator. Plus group selection on
a Zarr store with groups.

The expected facts are those of the fixture README (../shared/data/icechunk-fixtures).
"""

import json
import multiprocessing
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, import_lazycube, run_cli

xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

sys.path.insert(0, str(REPO / "tests" / "servers"))
import moto_server  # noqa: E402
import nginx  # noqa: E402

REPOS = ["test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"]
MAIN = ["set virtual chunk", "fill data", "empty structure", "Repository initialized"]
MY_BRANCH = ["some more structure", "delete a chunk"] + MAIN
# (flag, ref) -> messages of its history, newest first
HISTORY = {
    ("--branch", "main"): MAIN,
    ("--branch", "my-branch"): MY_BRANCH,
    ("--tag", "it also works!"): MY_BRANCH,
    ("--tag", "it works!"): ["delete a chunk"] + MAIN,
}
# snapshot message -> group1/small_chunks (inline chunks)
SMALL = {"empty structure": [8] * 5, "fill data": [84] * 5, "set virtual chunk": [84] * 5,
         "delete a chunk": [84, 84, 84, 84, 8], "some more structure": [84, 84, 84, 84, 8]}
# snapshots whose group1/big_chunks holds the virtual chunk c/0/0
WITH_VIRTUAL = {"set virtual chunk", "delete a chunk", "some more structure"}
VIRTUAL_URL = "s3://testbucket/can_read_old/chunk-1"
BUCKET = "lazycube-icechunk"
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


# ---- the fixtures and the servers ---------------------------------------------------------

@pytest.fixture(scope="module")
def fixtures(shared_data):
    path = shared_data / "icechunk-fixtures"
    if not all((path / r).is_dir() for r in REPOS):
        pytest.skip("Icechunk fixtures not found at %s" % path)
    return path


@pytest.fixture(scope="module")
def s3(fixtures, tmp_path_factory, no_aws_environment):
    """moto with the fixtures under s3://BUCKET/repos/ and the virtual chunk's object (the 19 bytes
    of any native chunk) at VIRTUAL_URL; SigV4 checked from then on."""
    reason = moto_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    virtual = tmp_path_factory.mktemp("virtual")
    chunk = next((fixtures / "test-repo-v1" / "chunks").iterdir()).read_bytes()
    assert len(chunk) == 19
    (virtual / "chunk-1").write_bytes(chunk)
    with moto_server.MotoServer(BUCKET, {fixtures: "repos"}) as server:
        server.create_bucket("testbucket")
        server.upload("testbucket", {virtual: "can_read_old"})
        server.set_auth(True)
        yield server


@pytest.fixture(scope="module")
def http(fixtures, tmp_path_factory):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with nginx.NginxServer(tmp_path_factory.mktemp("nginx"), fixtures) as server:
        yield server


@pytest.fixture(scope="module")
def s3_anonymous(fixtures, no_aws_environment):
    """moto with the spec 1 fixture and SigV4 checking off. Spec 1 keeps refs as objects named
    like refs/tag.it works!/ref.json: moto checks signatures of keys holding '!' wrongly (boto3's
    own requests fail there as well; libcurl signs them as boto3 does), so that repository is read
    anonymously over S3 (docs/icechunk.md)."""
    reason = moto_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with moto_server.MotoServer(BUCKET, {fixtures / "test-repo-v1": "repos/test-repo-v1"}) as server:
        yield server


class Repo:
    """One fixture repository on one store: URL and storage options."""

    def __init__(self, store, name, root, options=None):
        self.store, self.name, self.url, self.options = store, name, root + "/" + name, options or {}

    def cli_options(self):
        return [a for k, v in self.options.items() for a in ("--option", "%s=%s" % (k, v))]

    @property
    def lists_refs(self):
        """False for spec 1 over HTTP: refs are objects, which HTTP cannot list."""
        return not (self.name == "test-repo-v1" and self.store == "http")


@pytest.fixture(scope="module", params=[(s, r) for s in ("local", "http", "s3") for r in REPOS],
                ids=lambda p: "%s-%s" % p)
def repo(request, fixtures):
    store, name = request.param
    if store == "local":
        return Repo(store, name, str(fixtures))
    if store == "http":
        return Repo(store, name, request.getfixturevalue("http").url)
    if name == "test-repo-v1":
        server = request.getfixturevalue("s3_anonymous")
        return Repo(store, name, "s3://%s/repos" % BUCKET, {"endpoint_url": server.endpoint, "anon": "true"})
    server = request.getfixturevalue("s3")
    return Repo(store, name, "s3://%s/repos" % BUCKET,
                {"endpoint_url": server.endpoint, "key": server.key_id, "secret": server.secret})


@pytest.fixture(scope="module")
def container(s3):
    """The virtual chunk container as the user authorises it: moto's endpoint and credentials."""
    return {"s3://testbucket/": {"endpoint_url": s3.endpoint, "region_name": "us-east-1",
                                 "key": s3.key_id, "secret": s3.secret}}


def container_flags(containers):
    out = []
    for prefix, options in containers.items():
        out += ["--virtual", prefix]
        for k, v in options.items():
            out += ["--virtual-option", "%s:%s=%s" % (prefix, k, v)]
    return out


def cli(exe, *args, check=True):
    if check:
        return run_cli(exe, *args)
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def cli_read(exe, tmp_path, url, node, *flags):
    out = tmp_path / "out.npy"
    cli(exe, "read", url, node, *flags, "-o", out)
    return np.load(out)


def log(exe, repo, *flags):
    return json.loads(cli(exe, "log", repo.url, *flags, "--json", *repo.cli_options()).stdout)


# ---- history, refs and values ---------------------------------------------------------------

def test_history_of_every_ref(lazycube_cli, repo):
    main = log(lazycube_cli, repo)  # default: branch main
    for (flag, ref), messages in HISTORY.items():
        entries = log(lazycube_cli, repo, flag, ref)
        assert [e["message"] for e in entries] == messages, (flag, ref)
        assert all(set(e) == {"id", "written_at", "message", "amends", "detached"} for e in entries)
        # these repositories were never amended and hold no anonymous snapshot
        assert all(e["amends"] is None and e["detached"] is False for e in entries)
        assert all(re.match(r"^[0-9A-Z]{20}$", e["id"]) for e in entries)
        assert all(ISO_UTC.match(e["written_at"]) for e in entries)
        times = [e["written_at"] for e in entries]
        assert times == sorted(times, reverse=True)  # newest first
        assert entries[-len(MAIN):] == main  # every ref descends from main's history
    # text form: one line per snapshot, "ID  TIME  MESSAGE"
    text = cli(lazycube_cli, "log", repo.url, "--tag", "it works!", *repo.cli_options()).stdout
    lines = text.splitlines()
    assert [line.split("  ", 2)[2] for line in lines] == HISTORY[("--tag", "it works!")]
    # a snapshot's own history starts at it
    tail = log(lazycube_cli, repo, "--snapshot", main[1]["id"])
    assert tail == main[1:]


def snapshots(exe, repo):
    """message -> snapshot id, over every ref's history."""
    out = {}
    for flag, ref in HISTORY:
        for e in log(exe, repo, flag, ref):
            assert out.setdefault(e["message"], e["id"]) == e["id"]
    return out


def test_values_at_every_snapshot(lazycube_cli, repo, container, tmp_path):
    url = repo.url
    so = repo.cli_options()
    ids = snapshots(lazycube_cli, repo)
    assert set(ids) == set(MY_BRANCH)
    for message, sid in ids.items():
        if message == "Repository initialized":  # no node yet, not even the root group
            with pytest.raises(lazycube.NotFoundError, match="no Zarr group or array"):
                lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid)
            continue
        small = lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid,
                                      group="group1/small_chunks")["small_chunks"].values
        np.testing.assert_array_equal(small, np.array(SMALL[message], dtype=np.int8), err_msg=message)
        np.testing.assert_array_equal(
            cli_read(lazycube_cli, tmp_path, url, "group1/small_chunks", "--snapshot", sid, *so), small)
        if message == "some more structure":  # the commit that made group2/.../inner
            inner = lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid,
                                          group="group2/group3/group4/group5")["inner"]
            assert inner.shape == (10, 10) and np.isnan(inner.values).all()
        else:
            with pytest.raises(lazycube.NotFoundError, match="group2/group3/group4/group5"):
                lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid,
                                      group="group2/group3/group4/group5")
        big = lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid,
                                    virtual_chunk_containers=container, group="group1/big_chunks")
        want = np.full((10, 10), np.nan if message == "empty structure" else 42.0, dtype=np.float32)
        np.testing.assert_array_equal(big["big_chunks"].values, want, err_msg=message)
        np.testing.assert_array_equal(
            cli_read(lazycube_cli, tmp_path, url, "group1/big_chunks", "--snapshot", sid, *so,
                     *container_flags(container)), want)
        if message in WITH_VIRTUAL:
            # not authorised: an error naming the chunk's container URL, never fill values
            with pytest.raises(lazycube.StoreError, match="not authorised") as err:
                lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid,
                                      group="group1/big_chunks")["big_chunks"].values
            assert VIRTUAL_URL in str(err.value)
            r = cli(lazycube_cli, "read", url, "group1/big_chunks", "--snapshot", sid, *so,
                    "-o", tmp_path / "no.npy", check=False)
            assert r.returncode == 1 and VIRTUAL_URL in r.stderr and "not authorised" in r.stderr
            assert not (tmp_path / "no.npy").exists()
            # the unauthorised chunk alone fails: the native chunks of the array still read
            part = lazycube.open_dataset(url, storage_options=repo.options, snapshot=sid,
                                         group="group1/big_chunks")["big_chunks"]
            np.testing.assert_array_equal(part.isel(dim_0=slice(5, 10)).values, want[5:])


def test_refs_by_name_and_refused_refs(lazycube_cli, repo, tmp_path):
    url = repo.url
    so = repo.cli_options()
    deleted = [84, 84, 84, 84, 8]
    for kwargs, want in (({}, [84] * 5), ({"branch": "main"}, [84] * 5), ({"branch": "my-branch"}, deleted),
                         ({"tag": "it works!"}, deleted), ({"tag": "it also works!"}, deleted)):
        flags = [a for k, v in kwargs.items() for a in ("--" + k, v)]
        np.testing.assert_array_equal(
            cli_read(lazycube_cli, tmp_path, url, "group1/small_chunks", *flags, *so), want, err_msg=str(kwargs))
        ds = lazycube.open_dataset(url, storage_options=repo.options, group="group1/small_chunks",
                                   **kwargs)
        np.testing.assert_array_equal(ds["small_chunks"].values, want)
        xds = xr.open_dataset(url, engine="lazycube", storage_options=repo.options,
                              group="group1/small_chunks", **kwargs)
        np.testing.assert_array_equal(xds["small_chunks"].values, want)
        assert xds["small_chunks"].attrs["this"] == "is a nice array"
    for flag, name, why in (("--tag", "deleted", "ref not found: tag 'deleted' (the tag was deleted)"),
                            ("--branch", "no such branch", "ref not found: branch 'no such branch'"),
                            ("--tag", "it works", "ref not found: tag 'it works'"),
                            ("--snapshot", "0" * 20, "ref not found: snapshot '%s'" % ("0" * 20))):
        commands = [["read", url, "group1/small_chunks", "-o", tmp_path / "x.npy"]]
        if name == "deleted":  # every command refuses it alike
            commands += [["info", url], ["log", url], ["bench", url, "--variables", "small_chunks", "--input-dims",
                                                       "dim_0=1"]]
        for command in commands:
            r = cli(lazycube_cli, *command, flag, name, *so, check=False)
            assert r.returncode == 1 and why in r.stderr, (command, r.stderr)
        with pytest.raises(lazycube.NotFoundError, match=re.escape(why)):
            lazycube.open_dataset(url, storage_options=repo.options, **{flag[2:]: name})
        with pytest.raises(lazycube.NotFoundError, match=re.escape(why)):
            xr.open_dataset(url, engine="lazycube", storage_options=repo.options, **{flag[2:]: name})


def test_info_shows_the_repository(lazycube_cli, repo):
    url = repo.url
    so = repo.cli_options()
    for flags, ref in (([], ("--branch", "main")), (["--tag", "it works!"], ("--tag", "it works!"))):
        info = json.loads(cli(lazycube_cli, "info", url, "--json", *flags, *so).stdout)
        ice = info["icechunk"]
        assert ice["spec_version"] == (1 if repo.name == "test-repo-v1" else 2)
        if not repo.lists_refs:  # found by name only
            assert ice["branches"] is None and ice["tags"] is None
        else:
            assert ice["branches"] == ["main", "my-branch"]
            assert ice["tags"] == ["it also works!", "it works!"]
        assert ice["snapshot"] == log(lazycube_cli, repo, *ref)[0]
        # the repository's availability and the feature flags set (none in these fixtures)
        assert ice["status"]["availability"] == "online" and ice["status"]["reason"] is None
        assert ice["feature_flags"] == {"enabled": [], "disabled": []}
    text = cli(lazycube_cli, "info", url, "--branch", "my-branch", *so).stdout
    assert "status:   online" in text
    assert "Icechunk repository (spec version" in text
    assert "some more structure" in text
    assert ("it also works!, it works!" in text) == repo.lists_refs


def test_bench_reads_the_chosen_version(lazycube_cli, repo, container):
    def bench(*flags):
        return json.loads(cli(lazycube_cli, "bench", repo.url, "--input-dims", "dim_0=5,dim_1=5", "--batch-size",
                              "1", "--json", "--no-progress", *flags, *repo.cli_options()).stdout)

    # my-branch's big_chunks: a virtual chunk, read from the authorised container
    out = bench("--variables", "group1/big_chunks", "--branch", "my-branch", *container_flags(container))
    assert out["windows"] == 4 and out["variables"] == ["big_chunks"] and out["bytes_delivered"] == 400
    r = cli(lazycube_cli, "bench", repo.url, "--variables", "group1/big_chunks", "--input-dims", "dim_0=5",
            "--no-progress", *repo.cli_options(), check=False)
    assert r.returncode == 1 and VIRTUAL_URL in r.stderr and "not authorised" in r.stderr
    # several variables share their group; paths in different groups are a usage mistake
    r = cli(lazycube_cli, "bench", repo.url, "--variables", "group1/big_chunks,group2/x", "--input-dims", "dim_0=5",
            *repo.cli_options(), check=False)
    assert r.returncode == 2 and "share one group" in r.stderr


# ---- through everything built on a dataset ---------------------------------------------------

def _values_in_child(source):
    return source.open()["big_chunks"].read()


@pytest.mark.parametrize("store", ["local", "s3"])
def test_open_arguments_travel_to_spawned_processes(request, fixtures, store, container):
    if store == "local":
        repo = Repo(store, "test-repo-v2-migrated", str(fixtures))
    else:
        s3 = request.getfixturevalue("s3")
        repo = Repo(store, "test-repo-v2-migrated", "s3://%s/repos" % BUCKET,
                    {"endpoint_url": s3.endpoint, "key": s3.key_id, "secret": s3.secret})
    url = repo.url
    ds = lazycube.open_dataset(url, storage_options=repo.options, tag="it works!",
                               group="group1/big_chunks", virtual_chunk_containers=container)
    source = pickle.loads(pickle.dumps(ds)).source
    assert source == ds.source and source.tag == "it works!" and source.group == "group1/big_chunks"
    # the container's secret is masked, like the store's
    secret = container["s3://testbucket/"]["secret"]
    assert secret not in repr(ds.source) and "***" in repr(ds.source)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        values = pool.apply(_values_in_child, (ds.source,))
    np.testing.assert_array_equal(values, np.full((10, 10), 42.0, dtype=np.float32))
    # the xarray engine's source carries them too
    xds = xr.open_dataset(url, engine="lazycube", storage_options=repo.options, tag="it works!",
                          group="group1/big_chunks", virtual_chunk_containers=container)
    gen = lazycube.BatchGenerator(xds, {"dim_0": 5, "dim_1": 5}, batch_size=2)
    again = pickle.loads(pickle.dumps(gen))
    for g in (gen, again):
        batches = [b.numpy() for b in g]
        assert sum(b.shape[0] for b in batches) == 4
        assert all((b == 42.0).all() for b in batches)
    # and BatchGenerator(url, ...) with the open arguments
    gen = lazycube.BatchGenerator(url, {"dim_0": 5}, batch_size=1, storage_options=repo.options,
                                  branch="my-branch", group="group1/small_chunks")
    np.testing.assert_array_equal(np.concatenate([b.numpy().ravel() for b in gen]), [84, 84, 84, 84, 8])


def test_wrong_container_secret_is_refused_without_showing_it(fixtures, container):
    prefix, options = next(iter(container.items()))
    bad = {prefix: dict(options, secret="S3cr3tThatIsWrong", retries="0")}
    ds = lazycube.open_dataset(str(fixtures / "test-repo-v2"), virtual_chunk_containers=bad,
                               group="group1/big_chunks")
    with pytest.raises(lazycube.AuthError) as err:
        ds["big_chunks"].values
    assert "S3cr3tThatIsWrong" not in str(err.value)
    assert "S3cr3tThatIsWrong" not in repr(ds.source)


# ---- mistakes ----------------------------------------------------------------------------------

def test_version_and_container_flags_need_a_repository(lazycube_cli, fixtures, tmp_path):
    zarr_store = REPO / "data" / "era5_sample_v3.zarr"
    for flags, what in ((["--branch", "main"], "format option 'branch' = \"main\""),
                        (["--tag", "x"], "format option 'tag' = \"x\""),
                        (["--virtual", "s3://b/"], "format option 'virtual_chunk_containers'")):
        r = cli(lazycube_cli, "info", zarr_store, *flags, check=False)
        assert r.returncode == 1 and what + " applies to Icechunk repositories only" in r.stderr, r.stderr
    with pytest.raises(lazycube.UsageError, match="applies to Icechunk repositories only"):
        lazycube.open_dataset(str(zarr_store), snapshot="0" * 20)
    repo = fixtures / "test-repo-v2"
    r = cli(lazycube_cli, "info", repo, "--branch", "main", "--tag", "it works!", check=False)
    assert r.returncode == 2 and "excludes" in r.stderr
    with pytest.raises(lazycube.UsageError, match="at most one of branch, tag and snapshot"):
        lazycube.open_dataset(str(repo), branch="main", tag="it works!")
    r = cli(lazycube_cli, "info", repo, "--tag", "", check=False)
    assert r.returncode == 2 and "--tag" in r.stderr and "needs a name" in r.stderr
    with pytest.raises(ValueError, match="tag='' names no tag"):
        lazycube.open_dataset(str(repo), tag="")
    r = cli(lazycube_cli, "info", repo, "--virtual-option", "s3://b/:anon=true", check=False)
    assert r.returncode == 2 and "--virtual-option 's3://b/:anon=true'" in r.stderr and "--virtual" in r.stderr
    r = cli(lazycube_cli, "info", repo, "--virtual", "s3://b/", "--virtual-option", "s3://b/:anon", check=False)
    assert r.returncode == 2 and "PREFIX:KEY=VALUE" in r.stderr
    r = cli(lazycube_cli, "log", REPO / "data" / "era5_sample_v3.zarr", check=False)
    assert r.returncode == 1 and "no Icechunk repository" in r.stderr
    with pytest.raises(TypeError, match="virtual_chunk_containers"):
        lazycube.open_dataset(str(repo), virtual_chunk_containers=["s3://b/"])


# ---- groups of a Zarr store ----------------------------------------------------------------

@pytest.fixture(scope="module")
def grouped_zarr(tmp_path_factory):
    """A Zarr v2 store with groups g1 (time x y) and g2/inner (z), written by xarray."""
    path = tmp_path_factory.mktemp("groups") / "grouped.zarr"
    t, y = np.arange(6), np.arange(4) * 0.5
    g1 = xr.Dataset({"a": (("time", "y"), np.arange(24, dtype=np.float32).reshape(6, 4)),
                     "b": (("time", "y"), -np.arange(24, dtype=np.float64).reshape(6, 4))},
                    coords={"time": t, "y": y}, attrs={"name": "g1"})
    g2 = xr.Dataset({"c": (("z",), np.arange(3, dtype=np.int16))}, attrs={"name": "g2/inner"})
    xr.Dataset(attrs={"name": "root"}).to_zarr(str(path), mode="w")
    g1.to_zarr(str(path), group="g1", mode="a")
    g2.to_zarr(str(path), group="g2/inner", mode="a")
    return path


def test_zarr_group_selection(lazycube_cli, grouped_zarr, tmp_path):
    path = str(grouped_zarr)
    for group in ("g1", "/g1/"):
        ds = lazycube.open_dataset(path, group=group)
        assert ds.attrs["name"] == "g1" and sorted(ds.data_vars) == ["a", "b"]
    with xr.open_zarr(path, group="g1") as want:
        xr.testing.assert_identical(xr.open_dataset(path, engine="lazycube", group="g1").load(), want.load())
        np.testing.assert_array_equal(cli_read(lazycube_cli, tmp_path, path, "g1/a"), want["a"].values)
    inner = lazycube.open_dataset(path, group="g2/inner")
    np.testing.assert_array_equal(inner["c"].values, np.arange(3, dtype=np.int16))
    np.testing.assert_array_equal(cli_read(lazycube_cli, tmp_path, path, "g2/inner/c"), np.arange(3))
    # the group travels with the dataset (pickling) and into BatchGenerator
    again = pickle.loads(pickle.dumps(lazycube.open_dataset(path, group="g1").isel(time=slice(2, 4))))
    np.testing.assert_array_equal(again["a"].values, np.arange(24, dtype=np.float32).reshape(6, 4)[2:4])
    gen = lazycube.BatchGenerator(path, {"time": 2}, batch_size=3, group="g1", variables=["a"])
    assert sum(b.numpy().shape[0] for b in gen) == 3
    # a group that is not there, and a group with the gdal engine
    with pytest.raises(lazycube.NotFoundError, match="nope"):
        lazycube.open_dataset(path, group="g1/nope")
    r = cli(lazycube_cli, "read", path, "g1/nope", "-o", tmp_path / "x.npy", check=False)
    assert r.returncode == 1 and "g1/nope" in r.stderr
    with pytest.raises(lazycube.UsageError, match="'..' is not a node name"):
        lazycube.open_dataset(path, group="g1/..")


# ---- integrity: files checked against the ids they are read as (issue 32) -------------------

def _small_chunks(path, engine=None, **version):
    if engine == "xarray":
        return xr.open_dataset(str(path), engine="lazycube", group="group1/small_chunks", **version)["small_chunks"].values
    return lazycube.open_dataset(str(path), group="group1/small_chunks", **version)["small_chunks"].read()


@pytest.mark.parametrize("engine", ["lazycube", "xarray"])
@pytest.mark.parametrize("name", ["test-repo-v1", "test-repo-v2"])
def test_replaced_files_are_refused(fixtures, tmp_path, name, engine):
    """A copy of a fixture with its manifests swapped, snapshots swapped and a manifest under a
    snapshot's name: a MetadataError naming the file and both ids (or, for a manifest longer than
    its recorded size, a StoreError naming it), never other values; the unmodified copy reads the
    same values."""
    import shutil

    repo = tmp_path / name
    shutil.copytree(fixtures / name, repo)
    for p in repo.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    main = [84] * 5
    np.testing.assert_array_equal(_small_chunks(repo, engine), main)

    def swap(a, b):
        tmp = a.with_name("swapping")
        a.rename(tmp)
        b.rename(a)
        tmp.rename(b)

    # (1) every pair of manifests swapped: main reads the same, or is refused naming one of them
    manifests = sorted((repo / "manifests").iterdir())
    refused = 0
    for i, a in enumerate(manifests):
        for b in manifests[i + 1:]:
            swap(a, b)
            try:
                np.testing.assert_array_equal(_small_chunks(repo, engine), main)
            except lazycube.MetadataError as e:
                msg = str(e)
                assert any(str(x) + ": the Icechunk manifest file carries id %s, not the id %s it was read as"
                           % (y.name, x.name) in msg for x, y in ((a, b), (b, a))), msg
                refused += 1
            except lazycube.StoreError as e:
                # longer than the size the snapshot records for it: refused before its id is read
                msg = str(e)
                assert any(str(x) + ": " in msg and "bytes the object may hold" in msg for x in (a, b)), msg
                refused += 1
            swap(a, b)
    assert refused >= 1
    np.testing.assert_array_equal(_small_chunks(repo, engine), main)

    # (2) main's snapshot swapped with another snapshot
    if name == "test-repo-v1":
        tip = json.loads((repo / "refs" / "branch.main" / "ref.json").read_text())["snapshot"]
    else:  # spec 2: main is in the repo file; the error names it
        with pytest.raises(lazycube.NotFoundError, match=r"snapshots/([0-9A-Z]{20})") as info:
            shutil.move(str(repo / "snapshots"), str(repo / "gone"))
            try:
                _small_chunks(repo, engine)
            finally:
                shutil.move(str(repo / "gone"), str(repo / "snapshots"))
        tip = re.search(r"snapshots/([0-9A-Z]{20})", str(info.value)).group(1)
    snap = repo / "snapshots" / tip
    other = next(p for p in sorted((repo / "snapshots").iterdir()) if p.name != tip)
    swap(snap, other)
    with pytest.raises(lazycube.MetadataError) as info:
        _small_chunks(repo, engine)
    assert ("%s: the Icechunk snapshot file carries id %s, not the id %s it was read as"
            % (snap, other.name, tip)) in str(info.value)
    swap(snap, other)

    # (3) a manifest under the snapshot's name: the header's file type is checked first
    original = snap.read_bytes()
    snap.write_bytes(manifests[0].read_bytes())
    with pytest.raises(lazycube.MetadataError) as info:
        _small_chunks(repo, engine)
    assert ("%s: an Icechunk manifest file (id %s) where the snapshot file %s was expected"
            % (snap, manifests[0].name, tip)) in str(info.value)
    snap.write_bytes(original)

    # the unmodified copy again: the same values, at main and at another snapshot
    np.testing.assert_array_equal(_small_chunks(repo, engine), main)
    np.testing.assert_array_equal(_small_chunks(repo, engine, branch="my-branch"), [84, 84, 84, 84, 8])
