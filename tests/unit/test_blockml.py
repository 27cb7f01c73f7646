"""blockml: the trees, the line features, the committed model on real pages, reproducible training,
and the errors of a missing or altered model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import sample
from tests.unit.helpers import EXTRACT_SETTINGS
from tokenmill.config import ConfigError, validate
from tests.sample_data import demo_config
from tokenmill.extract import gbdt
from tokenmill.extract.blockml import FEATURES, ModelError, extract_blockml, load_model, page_blocks
from tokenmill.extract.blockml_train import line_labels, stopwords, train
from tokenmill.extract.html import extract_main_text
from tokenmill.hashing import sha256_file

BLOCKML = {**EXTRACT_SETTINGS, "engine": "blockml"}


def committed_model():
    return load_model(BLOCKML["blockml"]["model"], BLOCKML["blockml"]["sha256"])


def test_trees_learn_a_threshold_and_survive_json():
    rows = np.array([[value, (value * 7) % 1] for value in np.linspace(0, 1, 400)])
    labels = (rows[:, 0] > 0.6).astype(float)
    forest = gbdt.fit(rows, labels, trees=20, depth=2, min_child_weight=1.0)
    assert ((forest.log_odds(rows) > 0) == labels.astype(bool)).mean() > 0.99
    again = gbdt.Forest.from_json(json.loads(json.dumps(forest.to_json())))
    assert np.array_equal(again.log_odds(rows), forest.log_odds(rows))
    assert len(forest.log_odds(rows[:0])) == 0


def test_the_committed_forest_scores_a_page_as_walking_each_tree_does():
    """log_odds evaluates every tree at once; on a real page it gives what following each tree
    from its root, one line at a time, gives."""
    model = committed_model()
    matrix = page_blocks(aeb_page(PAGE_URL)[1], model.stopwords).matrix
    forest = model.forest
    walked = []
    for row in matrix:
        total = forest.base
        for features, thresholds, leaves in zip(forest.features, forest.thresholds, forest.leaves):
            node = 0
            while node < len(features):
                node = 2 * node + 1 + int(row[features[node]] > thresholds[node])
            total += leaves[node - len(features)]
        walked.append(total)
    assert len(matrix) > 10 and np.allclose(forest.log_odds(matrix), walked, rtol=0, atol=1e-9)


def test_blocks_carry_their_links_and_the_boilerplate_words_around_them():
    """A menu's items are blocks inside a nav whose text is all link; a <br> ends a block; hidden
    elements, scripts and form controls are no text."""
    html = ("<html><body><div id=site-menu><ul><li><a href=/>Home</a></li><li><a href=/news>News</a></li></ul></div>"
            "<div class=entry-content><p>The minister said <a href=/plan>the plan</a> would cost more.<br>"
            "Then he left.</p><p style='display: none'>Hidden text</p><p hidden>Also hidden</p>"
            "<script>var x = 1;</script><select><option>Pick one</option></select></div></body></html>")
    page = page_blocks(html, frozenset(stopwords()))
    assert page.texts == ["Home", "News", "The minister said the plan would cost more.", "Then he left."]
    column = {name: FEATURES.index(name) for name in
              ("link_share", "in_li", "ancestor_class_nav", "ancestor_class_content", "container1_link_share")}
    menu, prose = page.matrix[0], page.matrix[2]
    assert menu[column["link_share"]] == 1 and menu[column["in_li"]] == 1 and menu[column["ancestor_class_nav"]] == 1
    assert menu[column["container1_link_share"]] == 1 and menu[column["ancestor_class_content"]] == 0
    assert prose[column["link_share"]] == len("the plan") / len(page.texts[2])
    assert prose[column["ancestor_class_nav"]] == 0 and prose[column["ancestor_class_content"]] == 1


def test_list_items_and_table_rows_read_as_trafilatura_writes_them():
    """A list item's links stay in its text; a table row is one line, its cells as the trafilatura engine
    writes them (a snippet of the page is found in blockml's text)."""
    html = ("<html><body><div><ul><li>My ancestor is <a href=https://en.wikipedia.org/wiki/Poisson>Poisson</a>. "
            "Find the rest <a href=/lineage>on this page</a>.</li></ul><table><tr><th>Name</th><th>Files</th>"
            "<th>Latest</th></tr><tr><td>Lambeth</td><td></td><td>2010</td></tr></table></div></body></html>")
    page = page_blocks(html, frozenset(stopwords()))
    assert page.texts == ["My ancestor is Poisson. Find the rest on this page.", "| Name | Files | Latest |",
                          "| Lambeth |  | 2010 |"]
    assert page.matrix[0][FEATURES.index("link_share")] > 0 and page.matrix[2][FEATURES.index("cells")] == 2


def test_labels_hold_lines_the_reference_has():
    reference = "A headline\nThe first paragraph of the article says something long enough here."
    texts = ["A headline", "Home", "The first paragraph of the article says something long enough",
             "Subscribe to our newsletter for more news every day"]
    assert line_labels(texts, reference).tolist() == [1, 0, 1, 0]


# a real news page of the sample (data/sample/warc/aeb-articles): resiliparse keeps its teaser links and
# forum prompt among the paragraphs
PAGE_URL = "space.com/jupiter-moon-europa-water-vapor-confirmed"
BOILERPLATE_LINES = ("Related: Possible Water Plumes on Europa: The Discovery in Images",
                     "Join our Space Forums to keep talking space on the latest missions")
ARTICLE_LINES = ("NASA's Hubble Space Telescope has spotted indirect evidence of such plumes",
                 '"Essential chemical elements (carbon, hydrogen, oxygen, nitrogen, phosphorus')


def aeb_page(url_part: str) -> tuple[str, str]:
    from tokenmill.extract.html import decode_html
    from tokenmill.extract.records import FileStats, warc_candidates
    import glob
    for path in sorted(glob.glob(sample("warc", "aeb-articles", "*.warc.gz"))):
        for candidate in warc_candidates(path, 10_000_000, FileStats()):
            if url_part in candidate.url:
                return candidate.url, decode_html(candidate.payload, candidate.header_charset).text
    raise AssertionError(url_part)


def test_committed_model_drops_teasers_and_keeps_the_article():
    """A real news page: its teaser link and forum prompt are blocks among the paragraphs; blockml keeps the paragraphs only."""
    url, html = aeb_page(PAGE_URL)
    model = committed_model()
    page = page_blocks(html, model.stopwords)
    text, _ = extract_blockml(html, model)
    kept = text.split("\n")
    for start in BOILERPLATE_LINES:
        assert any(line.startswith(start) for line in page.texts)
        assert not any(line.startswith(start) for line in kept)
    for start in ARTICLE_LINES:
        assert any(line.startswith(start) and len(line) > 200 for line in kept)
    result = extract_main_text(html, url, BLOCKML)
    assert result.text == text and result.engine == f"blockml-{model.sha256[:12]}"


def test_training_reruns_to_the_same_bytes(tmp_path):
    inputs = [sample("warc", "dolma", "sample-0001.warc.gz")]
    settings = {"trees": 4, "depth": 3}
    first = train([Path(path) for path in inputs], None, tmp_path / "a", EXTRACT_SETTINGS,
                  settings)
    second = train([Path(path) for path in inputs], None, tmp_path / "b", EXTRACT_SETTINGS,
                   settings)
    assert first["model_sha256"] == second["model_sha256"] == sha256_file(tmp_path / "a" / "model.json")
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()
    assert first["pages"] == 15 and first["lines"] > 100 and first["inputs"][0]["sha256"]
    trained = load_model(str(tmp_path / "a" / "model.json"), first["model_sha256"])
    assert trained.forest.features.shape == (4, 7)


def test_missing_altered_or_malformed_model_is_an_error_naming_the_key(tmp_path):
    with pytest.raises(ModelError, match="extract.blockml.model: no model at"):
        load_model(str(tmp_path / "absent.json"), None)
    copy = tmp_path / "model.json"
    shutil.copy(committed_model_path(), copy)
    with copy.open("a") as handle:
        handle.write(" ")
    with pytest.raises(ModelError, match="extract.blockml.sha256 pins"):
        load_model(str(copy), BLOCKML["blockml"]["sha256"])
    copy.write_text('{"format": 1, "features": ["other"]}')
    with pytest.raises(ModelError, match="not a blockml model"):
        load_model(str(copy), None)
    copy.write_text("{not json")
    with pytest.raises(ModelError, match="does not read as a blockml model"):
        load_model(str(copy), None)
    with pytest.raises(ModelError, match="extract.blockml.model"):
        extract_main_text("<p>x</p>", None, {**BLOCKML, "blockml": {"model": str(tmp_path / "no.json"),
                                                                      "sha256": None}})


def committed_model_path():
    from tokenmill.extract.blockml import resolve_model_path
    return resolve_model_path(BLOCKML["blockml"]["model"])


def test_blockml_is_an_engine_a_source_can_choose():
    config = demo_config()
    source = next(iter(config["sources"]))
    config["sources"][source]["engine"] = "blockml"
    assert validate(config)["sources"][source]["engine"] == "blockml"
    config["extract"] = {"blockml": {"sha256": "not-a-hash"}}
    with pytest.raises(ConfigError, match="extract.blockml.sha256"):
        validate(config)
