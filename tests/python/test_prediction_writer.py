"""lazycube.PredictionWriter: model outputs for a BatchGenerator's / torch dataset's windows
written back as a Zarr store, overlaps blended ("mean", "hann", "last"), shards flushed as soon
as their windows are complete, from DataLoader workers and from 2 DDP ranks (torchrun, gloo)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import import_lazycube, torchrun
from prediction_model import BATCH, INPUT_DIMS, INPUT_OVERLAP, OUTPUTS, SEED, VARIABLES, model

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")

HERE = Path(__file__).resolve().parent
NLAT, NLON = 23, 30  # windows: lat starts 0, 5, 10, 15 (all covered), lon 0, 4, ..., 20 (28, 29 not)


def _template():
    rng = np.random.default_rng(5)
    return xr.Dataset(
        {"a": (("lat", "lon"), rng.random((NLAT, NLON), dtype=np.float32)),
         "b": (("lat", "lon"), rng.random((NLAT, NLON), dtype=np.float32) - 0.5)},
        coords={"lat": np.linspace(-10.0, 12.0, NLAT), "lon": np.arange(NLON) * 1.5,
                "time": np.datetime64("2020-01-02T00:00", "ns")},
        attrs={"title": "template"})


@pytest.fixture(scope="module")
def template():
    return _template()


@pytest.fixture(scope="module")
def template_url(tmp_path_factory, template):
    url = str(tmp_path_factory.mktemp("template") / "template.zarr")
    template.chunk({"lat": 10, "lon": 10}).to_zarr(url)
    return url


# ---- an independent reference ------------------------------------------------------------------

def _starts(n, length, overlap):
    """xbatcher's window starts along one dim (docs: start + length <= n, stride = length - overlap)."""
    stride = length - overlap
    return [s for s in range(0, n, stride) if s + length <= n]


def _windows():
    """Every window as (lat start, lon start), row-major (lon fastest), as xbatcher numbers them."""
    return [(i, j) for i in _starts(NLAT, INPUT_DIMS["lat"], INPUT_OVERLAP["lat"])
            for j in _starts(NLON, INPUT_DIMS["lon"], INPUT_OVERLAP["lon"])]


def _hann(length):
    k = np.arange(length)
    return 0.5 - 0.5 * np.cos(2 * np.pi * (k + 0.5) / length)


def _reference(predictions, order, blend):
    """The blended field of one channel: predictions[w] for window w, in `order` for "last"."""
    windows = _windows()
    num = np.zeros((NLAT, NLON))
    den = np.zeros((NLAT, NLON))
    out = np.full((NLAT, NLON), np.nan)
    ly, lx = INPUT_DIMS["lat"], INPUT_DIMS["lon"]
    w2 = np.outer(_hann(ly), _hann(lx)) if blend == "hann" else np.ones((ly, lx))
    for w in order:
        i, j = windows[w]
        if blend == "last":
            out[i:i + ly, j:j + lx] = predictions[w]
        else:
            num[i:i + ly, j:j + lx] += w2 * predictions[w]
            den[i:i + ly, j:j + lx] += w2
    if blend != "last":
        with np.errstate(invalid="ignore"):
            out = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return out


def _read(url, name):
    return lazycube.open_dataset(url)[name].read()


def _writer(url, template, blend="mean", **kw):
    return lazycube.PredictionWriter(template, url, variables=kw.pop("variables", OUTPUTS),
                                     input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                                     blend=blend, **kw)


def _generator(template, **kw):
    kw = {"batch_size": BATCH, "shuffle": True, "seed": SEED, "drop_last": False,
          "variables": VARIABLES, **kw}
    return lazycube.BatchGenerator(template, INPUT_DIMS, INPUT_OVERLAP, **kw)


# ---- identity model ---------------------------------------------------------------------------

@pytest.mark.parametrize("blend", ["mean", "hann", "last"])
def test_identity_model_with_overlap_reproduces_the_input(tmp_path, template, blend):
    url = str(tmp_path / "pred.zarr")
    gen = _generator(template)
    writer = _writer(url, template, blend, chunks={"lat": 6, "lon": 7})
    order = []
    for batch in gen.batches():
        writer.write(batch, batch.x)
        order += list(batch.window_ids)
    assert sorted(order) != order  # shuffled
    writer.close()
    covered = np.zeros((NLAT, NLON), bool)
    for i, j in _windows():
        covered[i:i + INPUT_DIMS["lat"], j:j + INPUT_DIMS["lon"]] = True
    assert not covered.all()  # the lon remainder (28, 29) is no window's
    for src, out in (("a", "pa"), ("b", "pb")):
        values = _read(url, out)
        assert values.dtype == np.float32
        np.testing.assert_array_equal(values[covered], template[src].values[covered])
        assert np.isnan(values[~covered]).all()
    out = lazycube.open_dataset(url)
    np.testing.assert_array_equal(out["lat"].read(), template["lat"].values)
    np.testing.assert_array_equal(out["lon"].read(), template["lon"].values)


def test_zarr_v2_output_opens_in_xarray_with_the_template_coordinates(tmp_path, template):
    """Index, 2-D and scalar coordinates of the template come back as coordinates."""
    template = template.assign_coords(area=(("lat", "lon"), np.cos(np.deg2rad(template.lat.values))[:, None]
                                            * np.ones((1, NLON))))
    url = str(tmp_path / "pred.zarr")
    writer = _writer(url, template, "hann", format=2, variables={"pa": ("lat", "lon")},
                     attrs={"pa": {"units": "K"}})
    gen = _generator(template, variables=["a"])
    for batch in gen.batches():
        xb = batch.to_xarray()  # stacked batches as xarray carry <dim>_start per window
        writer.write(xb, xb["x"].values if "x" in xb else xb["x_data"].values)
    writer.close()
    got = xr.open_zarr(url)
    assert got["pa"].attrs["units"] == "K"
    for name in ("lat", "lon", "area", "time"):
        assert name in got.coords
        np.testing.assert_array_equal(got[name].values, template[name].values)
    np.testing.assert_array_equal(got["pa"].values[:, :28], template["a"].values[:, :28])
    assert np.isnan(got["pa"].values[:, 28:]).all()


# ---- blending against the reference ------------------------------------------------------------

@pytest.mark.parametrize("blend", ["mean", "hann", "last"])
def test_blending_equals_a_numpy_reference(tmp_path, template, blend):
    windows = _windows()
    rng = np.random.default_rng(1)
    preds = rng.normal(size=(len(windows), 2, INPUT_DIMS["lat"], INPUT_DIMS["lon"]))
    order = rng.permutation(len(windows))
    url = str(tmp_path / "pred.zarr")
    writer = _writer(url, template, blend, dtype="float64", chunks={"lat": 5, "lon": 9})
    for k in range(0, len(order), 4):  # window ids, 4 per call, shuffled
        ids = order[k:k + 4]
        writer.write(ids, preds[ids])
    writer.close()
    for c, name in enumerate(OUTPUTS):
        want = _reference(preds[:, c], order, blend)
        got = _read(url, name)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_hann_weights_never_vanish_and_are_symmetric():
    for n in (1, 2, 7, 8):
        w = lazycube.prediction.blend_weights("hann", n)
        assert (w > 0).all() and np.allclose(w, w[::-1]) and w.max() <= 1
        np.testing.assert_allclose(w, _hann(n))


def test_window_starts_and_other_dims(tmp_path, template):
    """Windows given as starts; an output variable with a dim the windows do not slide over
    (written whole from each window) and dims in another order than the tensor's."""
    t3 = template.expand_dims(level=3).transpose("lat", "level", "lon")
    url = str(tmp_path / "pred.zarr")
    writer = lazycube.PredictionWriter(t3, url, variables={"p": ("level", "lon", "lat")},
                                       input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                                       blend="mean")
    full = np.random.default_rng(2).random((3, NLAT, NLON)).astype(np.float32)  # level, lat, lon
    windows = _windows()
    for k in range(0, len(windows), 5):
        ws = windows[k:k + 5]
        starts = {"lat": [w[0] for w in ws], "lon": [w[1] for w in ws]}
        # (sample, lat, lon, level): window dims first, then the other dims
        x = np.stack([full[:, i:i + 8, j:j + 8].transpose(1, 2, 0) for i, j in ws])
        writer.write(starts, x)
    writer.close()
    got = _read(url, "p")  # (level, lon, lat)
    np.testing.assert_array_equal(got[:, :28, :], full.transpose(0, 2, 1)[:, :28, :])


def test_xbatcher_mode_batches_carry_their_window(tmp_path, template_url, template):
    gen = lazycube.BatchGenerator(lazycube.open_dataset(template_url), INPUT_DIMS, INPUT_OVERLAP)
    assert gen.mode == "xbatcher" and len(gen) == len(_windows())
    url = str(tmp_path / "pred.zarr")
    writer = _writer(url, template_url, "hann")
    for i in range(len(gen)):
        batch = gen.batch(i)  # one patch: (lat, lon) per variable
        writer.write(batch, np.stack([batch.numpy()[v] for v in VARIABLES])[None])
    writer.close()
    np.testing.assert_array_equal(_read(url, "pa")[:, :28], template["a"].values[:, :28])


# ---- memory: shards leave as soon as they are complete ------------------------------------------

def test_shards_are_written_before_close_when_their_windows_are_complete(tmp_path, template):
    url = tmp_path / "pred.zarr"
    writer = _writer(str(url), template, "mean", variables={"pa": ("lat", "lon")},
                     chunks={"lat": 5, "lon": 6}, shards={"lat": 5, "lon": 12})
    array = writer._outputs[0].array
    windows = _windows()
    per_row = len(_starts(NLON, 8, 4))
    peak = 0
    for k, (i, j) in enumerate(windows):
        writer.write([k], template["a"].values[None, i:i + 8, j:j + 8])
        peak = max(peak, writer.pending_units)
        if k == 2 * per_row - 1:  # two rows of windows: lat 0..12 done, so shard row 0 (lat 0..4)
            assert writer.units_written > 0
            for c in range(array.grid_shape[1]):
                assert (url / array.unit_key([0, c])).is_file()
            assert not (url / "zarr.json").exists()  # no metadata before close()
    # at most the shards of two rows of windows are ever in memory (3 shard columns, 3 rows)
    assert peak <= 2 * array.grid_shape[1] < array.grid_shape[0] * array.grid_shape[1]
    assert writer.pending_units == 0
    writer.close()
    assert (url / "zarr.json").is_file()
    np.testing.assert_array_equal(_read(str(url), "pa")[:, :28], template["a"].values[:, :28])


# ---- torch: DataLoader workers, DDP -------------------------------------------------------------

def test_dataloader_workers_outputs_written_in_the_main_process(tmp_path, template_url, template):
    torch = pytest.importorskip("torch")
    import lazycube.torch as lctorch
    ds = lctorch.BatchDataset(template_url, input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                              variables=VARIABLES, batch_size=BATCH, shuffle=True, seed=SEED,
                              drop_last=False, return_window_ids=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    url = str(tmp_path / "pred.zarr")
    writer = _writer(url, template_url, "hann")
    n = 0
    for x, ids in loader:
        writer.write(ids, model(x))
        n += len(ids)
    writer.close()
    assert n == len(_windows())
    for src, out in (("a", "pa"), ("b", "pb")):
        want = model(torch.from_numpy(template[src].values)).numpy()
        np.testing.assert_array_equal(_read(url, out)[:, :28], want[:, :28])


def test_window_dataset_items_and_torch_tensors_on_any_device(tmp_path, template_url, template):
    """Map-style WindowDataset through DataLoader(batch_size=N, shuffle=True): the collated
    window ids travel with x; predictions as torch tensors needing grad, and on the GPU when
    one is there."""
    torch = pytest.importorskip("torch")
    import lazycube.torch as lctorch
    ds = lctorch.WindowDataset(template_url, INPUT_DIMS, variables=VARIABLES,
                               input_overlap=INPUT_OVERLAP, return_window_ids=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=5, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    url = str(tmp_path / "pred.zarr")
    writer = _writer(url, template_url, "mean")
    weight = torch.ones((), device=device, requires_grad=True)
    for k, item in enumerate(loader):  # [x, ids]: the item itself carries its windows
        pred = model(item[0].to(device)) * weight
        if k == 0:  # an autocast-style bfloat16 output (8-bit mantissa: compared loosely below)
            writer.write(item, pred.to(torch.bfloat16))
            bf16_ids = item[1]
            continue
        writer.write(item, pred)
    with pytest.raises(lazycube.UsageError, match="return_window_ids=True"):
        writer.write(item[:1] + [item[0]], item[0])
    writer.close()
    touched_by_bf16 = np.zeros((NLAT, NLON), bool)
    windows = _windows()
    for c, (src, out) in enumerate((("a", "pa"), ("b", "pb"))):
        want = model(torch.from_numpy(template[src].values)).numpy()
        got = _read(url, out)
        np.testing.assert_allclose(got[:, :28], want[:, :28], rtol=2 ** -8)
        # windows written in bfloat16 round to 8 bits; cells no such window touches are exact
        for w in bf16_ids.tolist():
            i, j = windows[w]
            touched_by_bf16[i:i + 8, j:j + 8] = True
        exact = ~touched_by_bf16
        exact[:, 28:] = False
        np.testing.assert_array_equal(got[exact], want[exact])


def _store_files(root):
    root = Path(root)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def ddp(tmp_path_factory, template_url):
    """One torchrun launch of 2 ranks (gloo) for every distributed job: {job: [rank results]}
    and the job's output store."""
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    tmp = tmp_path_factory.mktemp("ddp")
    existing = tmp / "existing.zarr"
    existing.mkdir()
    (existing / "zarr.json").write_text("{}")
    jobs = [{"name": "mean", "blend": "mean"}, {"name": "hann", "blend": "hann"},
            {"name": "missing", "blend": "mean", "skip_last": True},
            {"name": "existing", "blend": "mean"}]
    for job in jobs:
        job["out"] = str(tmp / ("%s.zarr" % job["name"]))
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    torchrun(HERE / "prediction_worker.py", 2, "--url", template_url, "--jobs", tmp / "jobs.json",
             "--result", tmp / "result", timeout=180, pythonpath=[HERE])
    ranks = [json.loads((tmp / ("result.rank%d.json" % r)).read_text()) for r in range(2)]
    return {job["name"]: ([r[job["name"]] for r in ranks], Path(job["out"])) for job in jobs}


@pytest.mark.parametrize("blend", ["mean", "hann"])
def test_ddp_two_ranks_give_the_same_store_as_one_process(tmp_path, template_url, ddp, blend):
    ranks, out = ddp[blend]
    assert sorted(ranks[0]["ids"] + ranks[1]["ids"]) == list(range(len(_windows())))
    assert all(r["ids"] for r in ranks) and not any(r["error"] for r in ranks)
    assert any(r["flushed_before_close"] for r in ranks)  # a rank stores the shards it completes

    # one process, the same model on the same windows (in another order)
    import lazycube.torch as lctorch
    ds = lctorch.BatchDataset(template_url, input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                              variables=VARIABLES, batch_size=BATCH, shuffle=True, seed=SEED + 1,
                              drop_last=False, return_window_ids=True, rank=0, world_size=1)
    single = tmp_path / "single.zarr"
    writer = lazycube.PredictionWriter(template_url, str(single), variables=OUTPUTS,
                                       input_dims=INPUT_DIMS, input_overlap=INPUT_OVERLAP,
                                       blend=blend, chunks={"lat": 6, "lon": 7})
    for x, ids in ds:
        writer.write(ids, model(x))
    writer.close()
    a, b = _store_files(out), _store_files(single)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []


def test_ddp_an_existing_destination_fails_on_every_rank(ddp):
    ranks, out = ddp["existing"]
    assert "existing.zarr" in ranks[0]["open_error"]
    assert ranks[1]["open_error"] == "rank 0: " + ranks[0]["open_error"]
    assert (out / "zarr.json").read_text() == "{}"


def test_ddp_missing_windows_fail_on_every_rank(ddp):
    ranks, out = ddp["missing"]
    missing = len(_windows()) - len(ranks[0]["ids"]) - len(ranks[1]["ids"])
    assert 0 < missing <= BATCH
    for r in ranks:
        assert "%d of %d windows were never written" % (missing, len(_windows())) in r["error"]
    assert ranks[1]["error"].startswith("rank 0: PredictionWriter.close()")
    assert not (out / "zarr.json").exists()


# ---- bad input ----------------------------------------------------------------------------------

def test_bad_input_is_named(tmp_path, template):
    url = str(tmp_path / "pred.zarr")
    with pytest.raises(ValueError, match="blend must be one of 'mean', 'hann', 'last', not 'gauss'"):
        _writer(url, template, "gauss")
    with pytest.raises(lazycube.UsageError, match="template has no dim 'depth'"):
        _writer(url, template, variables={"p": ("depth", "lat", "lon")})
    with pytest.raises(lazycube.UsageError, match="lacks the window dim"):
        _writer(url, template, variables={"p": ("lat",)})
    with pytest.raises(ValueError, match="fill_value is needed for the int16 variable 'pa'"):
        _writer(url, template, dtype="int16")
    with pytest.raises(lazycube.Error, match="lat"):
        lazycube.PredictionWriter(template, url, variables=OUTPUTS, input_dims={"lat": 40})
    with pytest.raises(lazycube.CodecError, match="nope"):
        _writer(url, template, codec="nope")
    assert not list((tmp_path / "pred.zarr").rglob("*"))  # specs are checked before writing

    w = _writer(url, template, variables={"pa": ("lat", "lon")})
    x = np.zeros((1, 8, 8), np.float32)
    with pytest.raises(lazycube.UsageError, match=r"the window starting at \{lat: 3, lon: 0\} is "
                                                  r"not a window of the grid: along 'lat'"):
        w.write({"lat": [3], "lon": [0]}, x)
    with pytest.raises(lazycube.UsageError, match="window id 999 is not in the grid"):
        w.write([999], x)
    with pytest.raises(lazycube.UsageError, match=r"the predictions have shape \(1, 8, 7\); 1 window"):
        w.write([0], x[:, :, :7])
    with pytest.raises(lazycube.UsageError, match=r"window starts: every dim needs one start"):
        w.write({"lat": [0, 5], "lon": [0]}, x)
    w.write([0], x)
    with pytest.raises(lazycube.UsageError, match=r"window 0 \(at \{lat: 0, lon: 0\}\) was already "
                                                  r"written.*weigh twice"):
        w.write([0], x)
    with pytest.raises(lazycube.UsageError, match="window 1 .* was already written"):
        w.write([1, 1], np.zeros((2, 8, 8)))

    # close() with windows missing: nothing wrong is written, the error names what is missing
    with pytest.raises(lazycube.UsageError, match=r"windows were never written \(1 at \{lat: 0, "
                                                  r"lon: 4\}.*shard\(s\) are incomplete: pa\[0,0\]"):
        w.close()
    assert not (tmp_path / "pred.zarr" / "zarr.json").exists()
    with pytest.raises(lazycube.UsageError, match="after close"):
        w.write([1], x)


def test_predictions_to_s3_with_storage_options(template, no_aws_environment):
    """A destination URL with its storage options (moto): shards stored as they complete,
    metadata at close(), read back through S3. (Signature checking stays off: moto rejects the
    signed listings the create-mode emptiness check sends, ENVIRONMENT.md.)"""
    sys.path.insert(0, str(HERE.parent / "servers"))
    import moto_server
    reason = moto_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with moto_server.MotoServer("preds", {}) as s3:
        options = {"key": s3.key_id, "secret": s3.secret, "endpoint_url": s3.endpoint}
        url = "s3://preds/run1/pred.zarr"
        writer = _writer(url, template, "hann", storage_options=options, chunks={"lat": 12, "lon": 15})
        for batch in _generator(template).batches():
            writer.write(batch, batch.x)
        assert writer.units_written == 2 * 2 * 2 and writer.pending_units == 0
        writer.close()
        got = lazycube.open_dataset(url, storage_options=options)
        np.testing.assert_array_equal(got["pb"].read()[:, :28], template["b"].values[:, :28])
        np.testing.assert_array_equal(got["lon"].read(), template["lon"].values)


def test_existing_destination_is_refused_unless_overwrite(tmp_path, template):
    url = tmp_path / "pred.zarr"
    url.mkdir()
    (url / "something").write_text("kept")
    with pytest.raises(lazycube.Error, match="pred.zarr"):
        _writer(str(url), template)
    assert (url / "something").read_text() == "kept"
    w = _writer(str(url), template, overwrite=True, variables={"pa": ("lat", "lon")})
    for k, (i, j) in enumerate(_windows()):
        w.write([k], template["a"].values[None, i:i + 8, j:j + 8])
    w.close()
    assert not (url / "something").exists()
    np.testing.assert_array_equal(_read(str(url), "pa")[:, :28], template["a"].values[:, :28])


def test_close_allow_incomplete_commits_and_warns(tmp_path, template):
    url = str(tmp_path / "pred.zarr")
    w = _writer(url, template, "last", variables={"pa": ("lat", "lon")}, chunks={"lat": 23, "lon": 30})
    w.write([0], np.ones((1, 1, 8, 8)))
    with pytest.raises(lazycube.UsageError, match=r"window 0 .* replace the first"):
        w.write([0], np.ones((1, 8, 8)))
    with pytest.warns(UserWarning, match="incomplete: pa\\[0,0\\]; they are left as the fill value"):
        w.close(allow_incomplete=True)
    assert np.isnan(_read(url, "pa")).all()


def test_core_bindings_name_bad_input(tmp_path):
    """_core.WindowGrid (the batch layer's grid) and _core.ZarrWriter, as PredictionWriter uses them."""
    grid = lazycube._core.WindowGrid([("lat", NLAT), ("lon", NLON)], list(INPUT_DIMS.items()),
                                     INPUT_OVERLAP)
    assert grid.size == len(_windows())
    per_dim = grid.unravel(np.arange(grid.size))
    strides = [d["stride"] for d in grid.dims]
    assert [tuple(int(w) * s for w, s in zip(p, strides)) for p in per_dim] == _windows()
    np.testing.assert_array_equal(grid.ravel(per_dim), np.arange(grid.size))
    with pytest.raises(lazycube.UsageError, match="window 24 is not in the grid"):
        grid.unravel(np.array([24]))
    with pytest.raises(lazycube.UsageError, match="along 'lon' is not in the grid"):
        grid.ravel(np.array([[0, 6]]))
    writer = lazycube._core.ZarrWriter(str(tmp_path / "w.zarr"))
    with pytest.raises(lazycube.UsageError, match="write mode must be"):
        lazycube._core.ZarrWriter(str(tmp_path / "v.zarr"), mode="append")
    a = writer.create_array("v", "float32", [4, 6], [4, 3], fill_value="NaN", dimension_names=["y", "x"])
    assert a.grid_shape == (1, 2) and a.unit_key([0, 1]) == "v/c/0/1"
    with pytest.raises(lazycube.UsageError, match="stores <f4, the data is <f8"):
        a.write_unit([0, 0], np.zeros((4, 3)))
    assert a.write_unit([0, 1], np.ones((4, 3), np.float32))
    writer.commit()
    got = lazycube.open_dataset(str(tmp_path / "w.zarr"))["v"].read()
    assert np.isnan(got[:, :3]).all() and (got[:, 3:] == 1).all()
