"""`astrid report`: the HTML report of a grouping and of a release.

The page is rendered in headless Chromium with every host unresolvable (offline); the
DOM must hold the grouping table and every figure decoded, and the screenshots are
saved under ``test-artifacts/``. A 36-attribute report (kr-vs-kp's width) is checked
for overlapping labels twice, on one report written once: in the matplotlib figures it
drew (text bounding boxes after layout) and in the browser (a measuring script added to
a copy of the page).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import (
    DataError,
    GroupingArtefact,
    ParameterError,
    StoreError,
    astrid,
    make_surrogate,
    make_synthetic,
)
from astrid_airflow.cli import main
from astrid_airflow.engine._grouping import Grouping, letters
from astrid_airflow.gate._datadocs import external_resources
from astrid_airflow.report._checks import distribution_checks
from astrid_airflow.report._report import report_dir_for, write_report

pytest.importorskip("matplotlib")

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
UCI = REPO.parent / "shared" / "datasets" / "uci"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
needs_chromium = pytest.mark.usefixtures("chromium_binary")  # conftest: fails under CI


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def synthetic():
    """A real, small ASTRID run on the paper's synthetic data, and one release of it."""
    table = make_synthetic(random_state=0)
    result = astrid(table, target="class", n_search=5, n_test=10, random_state=0)
    artefact = GroupingArtefact.from_result(result, table)
    surrogate = make_surrogate(table, artefact, random_state=1)
    metrics = {  # the keys of `astrid shuffle --json`
        "out": "release.parquet", "rows": len(table), "intact_row_proportion": 0.0,
        "expected_intact_row_proportion": 1e-8, "largest_group_unique_share": 1.0,
        "accuracy_original": 0.93, "accuracy_surrogate": 0.75, "groups": artefact.grouping.k,
        "largest_group": list(artefact.grouping.groups[0]), "protects_nothing": False}
    return table, result, artefact, surrogate, metrics


def wide_artefact(d: int = 36, n: int = 240, seed: int = 0
                  ) -> tuple[pd.DataFrame, GroupingArtefact]:
    """A ``d``-attribute artefact with long attribute names, built without a search.

    The per-k table is made up (nested groupings from random cut positions, accuracy
    falling and p shrinking with k) because a real search over 36 attributes takes
    minutes; the slow test below renders a real kr-vs-kp run instead.
    """
    rng = np.random.default_rng(seed)
    names = [f"attribute_{i:02d}_{w}" for i, w in
             zip(range(d), ["position", "distance", "colour_code", "count"] * d)]
    y = rng.integers(0, 3, n)
    cols = {}
    for i, name in enumerate(names):
        cols[name] = (pd.Categorical(rng.choice(["low", "mid", "high"], n)) if i % 3 == 0
                      else rng.normal(y * (i % 5 == 0), 1.0))
    table = pd.DataFrame(cols)
    table["class"] = np.array(["alpha", "beta", "gamma"])[y]
    cut_order = rng.permutation(np.arange(1, d))
    rows = []
    for k in range(1, d + 1):
        g = Grouping.from_cuts(names, cut_order[:k - 1])
        ave = 0.9 - 0.3 * (k - 1) / (d - 1)
        p = None if k == 1 else float(max(1 / 251, 1.0 - (k - 1) / 20))
        rows.append({"k": k, "acc_ave": ave, "acc_min": None if k == 1 else ave - 0.03,
                     "acc_max": None if k == 1 else ave + 0.02,
                     "sd": None if k == 1 else 0.01, "p": p,
                     "acc_search": None if k == 1 else ave + 0.01,
                     "grouping": g.to_list(), "letters": letters(g, names)})
    chosen = max(r["k"] for r in rows if r["p"] is None or r["p"] >= 0.05)
    result = {"grouping": rows[chosen - 1]["grouping"], "k": chosen, "table": rows,
              "baseline_accuracy": 0.9, "p_og": 1 / 251, "n_fits": 1000, "seconds": 12.0,
              "order": names, "target": "class", "classes": ["alpha", "beta", "gamma"],
              "columns": names, "classifier": {"preset": "rf"}, "scoring": "accuracy",
              "alpha": 0.05, "n_search": 100, "n_test": 250, "random_state": 0,
              "split": {"train": 120, "search": 60, "test": 60}}
    return table, GroupingArtefact.from_result(result, table)


@pytest.fixture(scope="module")
def wide():
    return wide_artefact()


@pytest.fixture(scope="module")
def wide_report(wide, tmp_path_factory):
    """The wide artefact's release report, written once, and the matplotlib figures it
    drew (``{file name: Figure}``, as ``report_figures`` made them for the page)."""
    from astrid_airflow.report import _report

    table, artefact = wide
    real, drawn = _report.report_figures, {}

    def keep(*args, **kwargs):
        figs = real(*args, **kwargs)
        drawn.update({name: fig for name, (fig, _alt, _caption) in figs.items()})
        return figs

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_report, "report_figures", keep)
        written = write_report(artefact, tmp_path_factory.mktemp("wide") / "r",
                               original=table,
                               surrogate=make_surrogate(table, artefact, random_state=0))
    return written, drawn


# ------------------------------------------------------------------------------ helpers

def _chromium(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--host-resolver-rules=MAP * ~NOTFOUND", *args]
        return subprocess.run(cmd, check=True, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "HOME": profile})


def _dom(page: Path, *flags: str) -> str:
    return _chromium([*flags, "--dump-dom", page.as_uri()]).stdout


def _screenshot(page: Path, name: str, width: int, height: int, dom: bool = False
                ) -> np.ndarray | tuple[np.ndarray, str]:
    """The page's screenshot (saved as ``name``); with ``dom``, also its DOM after load,
    from the same Chromium (the page's figures are not lazy: the window's size does not
    change what its script counts)."""
    from matplotlib.image import imread

    ARTIFACTS.mkdir(exist_ok=True)
    png = ARTIFACTS / name
    png.unlink(missing_ok=True)
    done = _chromium(["--hide-scrollbars", f"--window-size={width},{height}",
                      f"--screenshot={png}", *(["--dump-dom"] if dom else []),
                      page.as_uri()])
    img = imread(png)
    assert img.shape[:2] == (height, width)
    return (img, done.stdout) if dom else img


def _colours(img: np.ndarray) -> int:
    """How many distinct RGB colours the image has (as 8-bit channels)."""
    rgb = (img[..., :3] * 255).astype(np.int64).reshape(-1, 3)
    return int(np.count_nonzero(np.bincount(rgb @ np.array([1 << 16, 1 << 8, 1]),
                                            minlength=1 << 24)))


def _text_overlaps(fig) -> tuple[list[tuple[str, str]], list[str]]:
    """Pairs of visible texts whose boxes overlap, and texts outside the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    hidden = set()  # labels of ticks outside the view are kept but not drawn
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo):
                    hidden.update((id(tick.label1), id(tick.label2)))
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and id(t) not in hidden and (t.axes is None or t.axes.get_visible())]
    # shrink a little: glyph boxes include line spacing that touches harmlessly
    boxes = np.array([t.get_window_extent(renderer).shrunk(0.98, 0.85).extents
                      for t in texts]).reshape(-1, 4)
    x0, y0, x1, y1 = (boxes[:, i] for i in range(4))
    hit = ((x0[:, None] < x1[None, :]) & (x0[None, :] < x1[:, None])
           & (y0[:, None] < y1[None, :]) & (y0[None, :] < y1[:, None]))
    i, j = np.nonzero(np.triu(hit, 1))
    overlaps = [(texts[a].get_text(), texts[b].get_text()) for a, b in zip(i, j)]
    fb = fig.bbox
    outside = [t.get_text() for t, (a, b, c, d) in zip(texts, boxes)
               if a < fb.x0 - 1 or b < fb.y0 - 1 or c > fb.x1 + 1 or d > fb.y1 + 1]
    return overlaps, outside


# ------------------------------------------------------------------- synthetic report

@needs_chromium
def test_synthetic_report_renders_offline_in_chromium(synthetic, tmp_path):
    table, result, artefact, surrogate, metrics = synthetic
    written = write_report(artefact, tmp_path / "report", surrogate_metrics=metrics,
                           original=table, surrogate=surrogate)
    page = Path(written.index)
    img, dom = _screenshot(page, "report-synthetic.png", 1280, 3600, dom=True)
    # every figure decoded (the page's own script counts them after load): the four
    # of the learn and release plus the per-group disclosure figure (issue 16)
    assert 'data-figures-rendered="5"' in dom
    for fig in ("accuracy", "grouping-matrix", "release", "distributions"):
        assert f'id="fig-{fig}"' in dom
    # the grouping table: one row per k, attributes in detach order, chosen row marked
    grid = re.search(r'<table id="grouping-table">(.*?)</table>', dom, re.S).group(1)
    assert re.findall(r'<th class="attr" title="([^"]+)"', grid) == list(result.order)
    assert re.findall(r'data-k="(\d+)"', grid) == [str(r.k) for r in result.table]
    assert re.findall(r'<tr class="chosen" data-k="(\d+)"', grid) == [str(result.k)]
    chosen = re.search(r'<tr class="chosen"[^>]*>(.*?)</tr>', grid, re.S).group(1)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", chosen)
    row = result.row(result.k)
    assert cells[:6] == [str(row.k), *(f"{v:.3f}" for v in (row.acc_ave, row.acc_min,
                                                            row.acc_max, row.sd, row.p))]
    assert cells[6:] == row.letters.split(" ")
    assert "All 8 per-class distribution checks passed" in dom
    assert 'id="protects-nothing"' not in dom
    assert _colours(img) > 200
    chosen_bg = np.all(np.abs(img[..., :3] * 255 - (0xFF, 0xF3, 0xC4)) <= 3, axis=2)
    assert chosen_bg.sum() > 500, "the chosen row is not highlighted"


def test_report_is_self_contained_and_complete(synthetic, tmp_path):
    table, result, artefact, surrogate, metrics = synthetic
    written = write_report(artefact, tmp_path / "r", surrogate_metrics=metrics,
                           original=table, surrogate=surrogate, data_docs="../x.html")
    out = Path(written.directory)
    assert sorted(p.name for p in out.iterdir()) == sorted(written.files) == [
        "accuracy.png", "disclosure.png", "distributions.png", "grouping-matrix.png",
        "index.html", "release.png", "report.json"]
    page = (out / "index.html").read_text()
    assert external_resources(page) == []  # no CDN, no relative image files
    assert 'href="../x.html"' in page
    for name in ("accuracy.png", "grouping-matrix.png", "release.png", "distributions.png",
                 "disclosure.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "report.json").read_text())
    assert summary["kind"] == "astrid-report" and summary["k"] == result.k
    assert summary["distributions_passed"] is True and written.distributions_passed
    checks = summary["distribution_checks"]
    assert [c["column"] for c in checks] == list(result.order)
    assert all(cc["identical"] and cc["max_difference"] == 0 for c in checks
               for cc in c["classes"])
    assert summary["metrics"]["accuracy_surrogate"] == 0.75
    # risk per group beside the grouping (issue 16): exact values, so every group fails
    d = summary["disclosure"]
    assert [g["columns"] for g in d["groups"]] == result.grouping.to_list()
    assert d["linked_pairs"] == [] and d["policy"]["disclosure_k"] == 5
    assert 'id="disclosure"' in page and 'id="disclosure-groups"' in page
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_artefact_only_report_has_no_release_section(synthetic, tmp_path):
    written = write_report(synthetic[2], tmp_path / "r")
    assert written.files == ("accuracy.png", "grouping-matrix.png", "index.html",
                             "report.json")
    assert written.distributions_passed is None
    assert 'id="release"' not in Path(written.index).read_text()


# ------------------------------------------------------------------ distribution checks

def test_distribution_checks_pass_for_goldeneye_and_catch_a_cross_class_shuffle(synthetic):
    table, result, _artefact, surrogate, _ = synthetic
    assert all(c.passed for c in distribution_checks(table, surrogate, "class", result.order))
    bad = surrogate.copy()
    rng = np.random.default_rng(0)
    bad["a3"] = rng.permutation(bad["a3"].to_numpy())  # ignores the class
    checks = {c.column: c for c in distribution_checks(table, bad, "class", result.order)}
    assert not checks["a3"].passed and checks["a3"].kind == "quantiles"
    assert all(checks[c].passed for c in ("a1", "a2", "a4"))
    assert max(cc.max_difference for cc in checks["a3"].classes) > 0.05


def test_a_single_changed_value_fails_the_check_and_the_page_says_so(synthetic, tmp_path):
    table, _result, artefact, surrogate, _metrics = synthetic
    bad = surrogate.copy()
    bad.loc[7, "a4"] = 0.123456  # one cell: quantiles barely move, the multiset does
    written = write_report(artefact, tmp_path / "r", original=table, surrogate=bad)
    assert written.distributions_passed is False
    page = Path(written.index).read_text()
    assert "Distribution check FAILED for 1 of 4 attributes (a4)" in page
    assert '<tr data-passed="false"><th>a4</th>' in page


def test_categorical_columns_and_missing_values_are_counted():
    t = pd.DataFrame({"c": pd.Categorical(["x", "y", None, "x", "y", "y"]),
                      "n": [1.0, np.nan, 2.0, 2.0, 3.0, np.nan],
                      "class": [0, 0, 0, 1, 1, 1]})
    same = t.iloc[[2, 0, 1, 5, 3, 4]].reset_index(drop=True)
    checks = distribution_checks(t, same, "class", ["c", "n"])
    assert all(c.passed for c in checks) and {c.kind for c in checks} == {"counts"}
    swapped = same.copy()
    swapped.loc[0, "c"], swapped.loc[3, "c"] = "y", "x"  # ok per column overall, not per class
    c = distribution_checks(t, swapped, "class", ["c"])[0]
    assert not c.passed and [cc.identical for cc in c.classes] == [False, False]
    assert "<missing>" in c.classes[0].categories


# ---------------------------------------------------------------------- release inputs

def test_metrics_from_tables_when_none_given(synthetic, tmp_path):
    table, _result, artefact, surrogate, _ = synthetic
    written = write_report(artefact, tmp_path / "r", original=table, surrogate=surrogate)
    m = json.loads((Path(written.directory) / "report.json").read_text())["metrics"]
    assert m["rows"] == len(table) and m["accuracy_original"] is None
    assert 0 <= m["intact_row_proportion"] <= 0.01
    assert "utility not computed" in Path(written.index).read_text()


def test_one_group_artefact_is_flagged_as_protecting_nothing(synthetic, tmp_path):
    table, result, *_ = synthetic
    d = result.to_dict()
    d["grouping"], d["k"] = d["table"][0]["grouping"], 1
    one = GroupingArtefact.from_result(d, table)
    with pytest.warns(UserWarning, match="protects nothing"):
        surrogate = make_surrogate(table, one, random_state=0)
    written = write_report(one, tmp_path / "r", original=table, surrogate=surrogate)
    page = Path(written.index).read_text()
    assert 'id="protects-nothing"' in page and "PROTECTS NOTHING" in page
    summary = json.loads((Path(written.directory) / "report.json").read_text())
    assert summary["metrics"]["intact_row_proportion"] == 1.0


@pytest.mark.parametrize("change, message", [
    ({"intact_row_proportion": 1.5}, "Invalid surrogate metric intact_row_proportion"),
    ({"accuracy_original": "high"}, "Invalid surrogate metric accuracy_original"),
    ({"groups": 99}, "grouping of 99 groups"),
])
def test_bad_metrics_are_rejected(synthetic, tmp_path, change, message):
    with pytest.raises(DataError, match=message):
        write_report(synthetic[2], tmp_path / "r", surrogate_metrics={**synthetic[4],
                                                                       **change})
    assert not (tmp_path / "r").exists()


def test_bad_inputs_name_the_problem(synthetic, tmp_path):
    table, _result, artefact, surrogate, metrics = synthetic
    with pytest.raises(DataError, match=r"lack key\(s\) \['accuracy_surrogate'\]"):
        write_report(artefact, tmp_path / "r", surrogate_metrics={
            k: v for k, v in metrics.items() if k != "accuracy_surrogate"})
    with pytest.raises(ParameterError, match="Pass both original and surrogate"):
        write_report(artefact, tmp_path / "r", original=table)
    with pytest.raises(DataError, match="no such file"):
        write_report(artefact, tmp_path / "r", surrogate_metrics=tmp_path / "none.json")
    with pytest.raises(DataError, match="surrogate has 999 rows"):
        write_report(artefact, tmp_path / "r", original=table, surrogate=surrogate[:999])
    with pytest.raises(ParameterError, match="Cannot report on int"):
        write_report(3, tmp_path / "r")
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------- atomicity

def test_written_atomically_and_never_over_a_foreign_directory(synthetic, tmp_path,
                                                               monkeypatch):
    import astrid_airflow.report._plots as plots

    artefact = synthetic[2]
    dest = tmp_path / "r"
    write_report(artefact, dest)
    first = (dest / "index.html").read_text()
    with pytest.raises(StoreError, match="Refusing to overwrite"):
        write_report(artefact, dest)
    calls = []

    def failing(fig):
        calls.append(fig)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return b"\x89PNG"

    monkeypatch.setattr(plots, "png_bytes", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        write_report(artefact, dest, overwrite=True)
    assert (dest / "index.html").read_text() == first  # the old report is intact
    monkeypatch.undo()
    inode = (dest / "index.html").stat().st_ino
    write_report(artefact, dest, overwrite=True)
    # replaced by a new, complete page (the text may equal the old one within a second)
    assert (dest / "index.html").stat().st_ino != inode
    assert (dest / "index.html").read_text().rstrip().endswith("</html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temp/old dirs left
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(StoreError, match="not an astrid report directory"):
        write_report(artefact, foreign, overwrite=True)
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_report_dir_for_sits_beside_the_surrogate():
    assert report_dir_for("/data/out.parquet") == "/data/out.report"
    assert report_dir_for("s3://b/rel/2024.csv") == "s3://b/rel/2024.report"


# --------------------------------------------------------------------------------- CLI

def test_cli_reports_a_stored_artefact_with_shuffle_metrics(synthetic, tmp_path, capsys):
    from astrid_airflow import ArtefactStore

    table, _result, artefact, surrogate, metrics = synthetic
    ArtefactStore(tmp_path / "store").save("syn", artefact)
    table.to_csv(tmp_path / "orig.csv", index=False)
    surrogate.to_parquet(tmp_path / "release.parquet")
    (tmp_path / "m.json").write_text(json.dumps(
        {**metrics, "out": str(tmp_path / "release.parquet")}))
    code = main(["report", f"{tmp_path / 'store'}/syn@latest", "--surrogate-metrics",
                 str(tmp_path / "m.json"), "--original", str(tmp_path / "orig.csv"),
                 "--out", str(tmp_path / "rep"), "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["out"] == str(tmp_path / "rep") and out["distributions_passed"] is True
    assert out["index"] == str(tmp_path / "rep" / "index.html")
    assert "syn/v0001/artefact.json" in Path(out["index"]).read_text()
    # bad input: one line on stderr, exit 2, nothing written
    (tmp_path / "bad.json").write_text("{not json")
    code = main(["report", f"{tmp_path / 'store'}/syn", "--surrogate-metrics",
                 str(tmp_path / "bad.json"), "--out", str(tmp_path / "rep2")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "are not JSON" in err
    assert not (tmp_path / "rep2").exists()
    code = main(["report", f"{tmp_path / 'store'}/syn", "--out", str(tmp_path / "rep")])
    assert code == 2 and "Refusing to overwrite" in capsys.readouterr().err


# --------------------------------------------------------------- 36 attributes readable

def test_wide_figures_have_no_overlapping_labels(wide_report):
    # the report's own figures: its per-k table (alpha 0.05, a0 0.9, R = 250) and the
    # per-class checks of its surrogate
    _written, drawn = wide_report
    matrix, acc, dist = (drawn[f"{name}.png"] for name in
                         ("grouping-matrix", "accuracy", "distributions"))
    for name, fig in (("grouping-matrix", matrix), ("accuracy", acc), ("distributions", dist)):
        overlaps, outside = _text_overlaps(fig)
        assert overlaps == [] and outside == [], (name, overlaps, outside)
    ax = matrix.axes[0]
    labels = ax.get_xticklabels()
    assert len(labels) == 36 and all(t.get_rotation() == 90 for t in labels)
    texts = [t.get_text() for t in labels]
    assert all(len(t) <= 30 for t in texts) and len(set(texts)) == 36  # short, distinct
    w, h = matrix.get_size_inches()
    assert 36 * 0.3 <= w <= 26 and h <= 18  # cells at least 0.3 in wide, bounded figure
    assert len(dist.axes) == 36  # 6 x 6 panels


def test_overlap_detector_can_fail():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2))
    ax = fig.subplots()
    ax.set_xticks(range(36), [f"attribute_{i:02d}_position" for i in range(36)])
    assert _text_overlaps(fig)[0]


@needs_chromium
def test_wide_report_is_readable_in_chromium(wide_report):
    written, _drawn = wide_report
    page = Path(written.index)
    probe = page.with_name("probe.html")  # beside the page (its copy, measuring)
    probe.write_text(page.read_text().replace("</body>", _MEASURE + "</body>"))
    dom = _dom(probe, "--window-size=1400,1000")
    found = re.search(r'data-layout="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    layout = json.loads(found.group(1).replace("&quot;", '"'))
    assert layout["headers"] == layout["vertical"] == 36  # rotated attribute names
    assert layout["header_overlaps"] == 0 and layout["clipped_letters"] == 0
    assert layout["table_fits"], "the 36-attribute table needs horizontal scrolling"
    assert layout["figures"] == 5  # with the per-group disclosure figure
    _screenshot(page, "report-36-attributes.png", 1400, 6200)


# Added to a copy of the page: counts rotated and overlapping attribute headers, letter
# cells whose text does not fit, and whether the table fits the page width (1400 px
# window), once the figures have loaded.
_MEASURE = """<script>
window.addEventListener('load', function () {
  var hs = Array.from(document.querySelectorAll('th.attr div')).map(function (e) {
    return e.getBoundingClientRect(); });
  var over = 0;
  for (var i = 0; i + 1 < hs.length; i++) { if (hs[i].right > hs[i + 1].left + 0.5) over++; }
  var clipped = Array.from(document.querySelectorAll('td.l')).filter(function (td) {
    return td.scrollWidth > td.clientWidth + 1; }).length;
  var figs = Array.from(document.querySelectorAll('figure img')).filter(function (im) {
    return im.naturalWidth > 0; }).length;
  var vertical = hs.filter(function (r) { return r.height > 2 * r.width; }).length;
  var table = document.getElementById('grouping-table').getBoundingClientRect().width;
  var page = document.querySelector('main').clientWidth;
  document.body.setAttribute('data-layout', JSON.stringify({headers: hs.length,
    vertical: vertical, header_overlaps: over, clipped_letters: clipped, figures: figs,
    table_fits: table <= page}));
});
</script>"""


@pytest.mark.slow
@needs_chromium
@pytest.mark.skipif(not (UCI / "kr-vs-kp.arff").exists(), reason="UCI datasets not present")
def test_kr_vs_kp_report_from_a_real_run(tmp_path):
    from astrid_airflow import read_table
    from astrid_airflow.release._surrogate_metrics import surrogate_metrics

    table = read_table(UCI / "kr-vs-kp.arff")
    result = astrid(table, target="class", classifier="nb", n_search=1, n_test=5,
                    random_state=0)
    artefact = GroupingArtefact.from_result(result, table)
    surrogate = make_surrogate(table, artefact, random_state=1)
    metrics = surrogate_metrics(table, surrogate, artefact, random_state=0)
    written = write_report(artefact, tmp_path / "r", surrogate_metrics=metrics,
                           original=table, surrogate=surrogate)
    assert written.distributions_passed is True
    _img, dom = _screenshot(Path(written.index), "report-kr-vs-kp.png", 1400, 7000, dom=True)
    assert 'data-figures-rendered="5"' in dom  # + disclosure
