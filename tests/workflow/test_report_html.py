"""The demo run's report as a person sees it: index.html rendered by headless Chromium, the alerts,
the history, the dataset card and Snakemake's own --report."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import numpy as np
import pyarrow.parquet as pq
import yaml
import pytest
from PIL import Image, ImageStat

from tests.conftest import run_snakemake
from tests.sample_data import recipe_for
from tokenmill.config import validate
from tokenmill.io import read_json
from tokenmill.plan import text_from
from tokenmill.report.dataset_card import recipe_mixture, write_card

REPORT = "results/report/demo-v0"
PLOTS = 10  # retention vs bands, retention heatmap, 7 distributions, the rule graph (a first run: no history plot)


def chromium(*args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing (.ci/run installs the Debian package)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120, check=True)


def test_report_renders_in_chromium_with_every_plot(reference_run, tmp_path):
    page = reference_run / REPORT / "index.html"
    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert "tokenmill report: demo-v0" in dom
    assert dom.count("<svg") == PLOTS
    for title in ("Retention per snapshot and stage", "Tokens by source and language", "Document length",
                  "Near-duplicate cluster sizes", "Top 20 hosts by surviving tokens", "New-host rate"):
        assert title in dom, f"plot {title!r} is missing from the rendered page"
    assert ">select<" in dom and ">write_shards<" in dom  # the rule graph's boxes

    screenshot = tmp_path / "report.png"
    chromium(f"--screenshot={screenshot}", "--window-size=1280,2400", page.as_uri())
    image = Image.open(screenshot).convert("L")
    assert image.size == (1280, 2400)
    stat = ImageStat.Stat(image)
    assert stat.stddev[0] > 20, "the screenshot is blank"
    # the alerts box is drawn (red border on pale red) near the top of the page
    top = np.asarray(Image.open(screenshot).convert("RGB").crop((0, 0, 1280, 600))).astype(int)
    red = (top[..., 0] > 180) & (top[..., 1] < 80) & (top[..., 2] < 80)
    assert red.sum() > 1000, "no red alert box in the first screen"


def test_alerts_are_printed_listed_and_marked(reference_run):
    alerts = read_json(reference_run / REPORT / "alerts.json")
    # the sample is tiny and mixed: its crawl sources keep far more than a general crawl would
    assert alerts["alerts"] and alerts["fail"] is False
    assert alerts["summary"][0] == f"{len(alerts['alerts'])} alert(s):"
    # a first run has no history; the demo generator's text is too identifiable
    assert {alert["kind"] for alert in alerts["alerts"]} == {"band", "distinguisher"}
    html = (reference_run / REPORT / "index.html").read_text()
    assert html.count('class="alert"') >= len(alerts["alerts"])
    for alert in alerts["alerts"]:
        assert alert["docs_in"] >= 100 and alert["source"] != "ALL"


def test_end_of_run_prints_the_report_path_and_alert_summary(reference_run):
    closing = (reference_run / "run.stdout").read_text().split("is complete")[-1]
    assert f"report:   {REPORT}/index.html" in closing
    count = len(read_json(reference_run / REPORT / "alerts.json")["alerts"])
    assert f"{count} alert(s):" in closing


def test_yield_per_snapshot_adds_up_to_the_yield_per_source(reference_run):
    table = pq.read_table(reference_run / REPORT / "yield.parquet").to_pylist()
    per_snapshot, per_source = {}, {}
    for row in table:
        if row["source"] == "ALL":
            continue
        target = per_source if row["snapshot"] == "" else per_snapshot
        key = (row["source"], row["stage"])
        target[key] = target.get(key, 0) + row["docs_out"]
    assert per_snapshot == per_source
    history = pq.read_table(reference_run / "results/report/history.parquet")
    assert set(history.column("version").to_pylist()) == {"demo-v0"} and history.num_rows == len(table)


def test_dataset_card_names_every_source_licence_and_pin(reference_run):
    manifest = read_json(reference_run / "results/shards/demo-v0/manifest.json")
    card = (reference_run / REPORT / "DATASET_CARD.md").read_text()
    config = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    for name, source in config["sources"].items():
        assert f"| {name} | {source['tier']} | {source['license_id']} |" in card
    for pin in (manifest["tokenizer"]["sha256"], manifest["config_sha256"], manifest["code_version"]):
        assert pin in card
    # config/recipe.yaml pins the manifest of `make demo` as built on the development machine
    pin = yaml.safe_load((reference_run / "config" / "recipe.yaml").read_text())["manifest_sha256"]
    pinned = pin == hashlib.sha256((reference_run / "results/shards/demo-v0/manifest.json").read_bytes()).hexdigest()
    mixture = card.split("## Mixture")[1]
    assert "config/recipe.yaml" in mixture
    assert ("replayed over this manifest" if pinned else "no replay (re-pin the recipe to this manifest)") in mixture


def test_a_recipe_pinned_to_the_manifest_is_replayed_into_the_card(reference_run, tmp_path):
    manifest = reference_run / "results/shards/demo-v0/manifest.json"
    recipe = recipe_for(manifest)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    mixture = recipe_mixture(str(path), str(manifest))
    assert mixture["status"] == "replayed"
    first = recipe["phases"][0]
    rows = [row for row in mixture["phases"] if row["phase"] == first["name"]]
    assert {row["stream"].split("[")[0] for row in rows} == set(first["weights"])  # "source[bucket]" streams
    assert abs(sum(row["weight"] for row in rows) - 1) < 1e-9
    for row in rows:
        assert abs(row["realized"] - row["planned"]) < 1e-4
    config = validate(yaml.safe_load((reference_run / "config" / "config.yaml").read_text()))
    sources = {name: {**source, "text_from": text_from(config, name)} for name, source in config["sources"].items()}
    write_card(str(tmp_path), str(manifest), sources,
               read_json(reference_run / REPORT / "contamination.json"), str(path))
    card = (tmp_path / "DATASET_CARD.md").read_text().split("## Mixture")[1]
    assert f"Recipe `{recipe['recipe_id']}` ({path}), replayed over this manifest:" in card
    assert card.count(f"| {first['name']} | ") == len(rows)


def test_snakemake_report_includes_the_marked_outputs(reference_run, tmp_path):
    report = tmp_path / "report.html"
    run_snakemake(reference_run, "--report", str(report))
    text = report.read_text()
    for name in ("index.html", "yield.tsv", "alerts.json", "DATASET_CARD.md", "rulegraph.svg"):
        assert name in text
