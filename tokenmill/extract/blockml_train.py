"""Training blockml (tokenmill.extract.blockml): real pages, each of their text blocks labelled by
whether a reference text holds it, and a forest fitted on the blocks' features.

References: trafilatura's text of the page (distillation, on unlabelled pages), or a gold article
body where a page has one. Inputs are read in sorted order and nothing is sampled, so a rerun on
the same inputs writes the same model bytes; the manifest records every input's sha256, the
settings and the model's sha256 (the value `extract.blockml.sha256` pins).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import tarfile
from importlib import metadata
from dataclasses import dataclass
from pathlib import Path

import justext
import numpy as np
from selectolax.lexbor import LexborHTMLParser

from tokenmill.extract import gbdt
from tokenmill.extract.blockml import FEATURES, MODEL_FORMAT, Model, extract_blockml, page_blocks
from tokenmill.extract.html import decode_html, extract_main_text
from tokenmill.extract.records import FileStats, warc_candidates
from tokenmill.hashing import sha256_bytes, sha256_file
from tokenmill.io import atomic_output, zst_reader

# jusText's stop-word lists of the languages most present on the web (ordered, so the model's
# list is the same on every run)
STOPWORD_LANGUAGES = ("Arabic", "Czech", "Danish", "Dutch", "English", "Finnish", "French", "German", "Greek",
                      "Hungarian", "Indonesian", "Italian", "Korean", "Norwegian_Bokmal", "Persian", "Polish",
                      "Portuguese", "Romanian", "Russian", "Slovak", "Spanish", "Swedish", "Turkish", "Ukrainian",
                      "Vietnamese")
DEFAULT_SETTINGS = {"trees": 150, "depth": 7, "learning_rate": 0.1, "bins": 32, "l2": 1.0, "min_child_weight": 5.0,
                    "relative_threshold": 0.5, "gold_weight": 8.0, "seed": 0, "folds": 5}
MAX_HTML_BYTES = 5_000_000
_WORD = re.compile(r"\w+")


REPOSITORY = Path(__file__).resolve().parent.parent.parent
# the sample WARCs but the gold articles' (distillation), the Readability, goose3 and htmldate test pages
# (data/train/extractor/SOURCES.md), and the gold articles; the trafilatura evaluation pages
# (data/bench/html-trafilatura-eval) are the test set and never read here
DISTILLATION_INPUTS = ("data/sample/warc/*/*.warc*", "data/train/extractor/*.tar.zst")
GOLD = "data/sample/gold/aeb-ground-truth.json.gz"
# the urls of trafilatura's 990-page evaluation (its tests/evaldata.json): 92 of its pages are
# blockml's test set and the other 898 what its maintainers hold out, so an input's copy of any of
# them (a sample WARC holds one, a test-page archive another) is never trained on
EVALUATION_URLS = "data/train/extractor/evaluation-urls.txt"
_ARCHIVED = re.compile(r"https?://web\.archive\.org/web/[^/]*/(.+)", re.I)


def default_inputs(root: Path = REPOSITORY) -> tuple[list[Path], Path]:
    """The repository's training inputs (sorted) and its gold file."""
    inputs = {path for pattern in DISTILLATION_INPUTS for path in root.glob(pattern)}
    return sorted(inputs), root / GOLD


@dataclass(frozen=True)
class TrainingPage:
    name: str  # input file, and the page's path or url within it
    url: str | None
    html: str
    reference: str | None  # gold text; None: trafilatura's text is the reference


def stopwords() -> list[str]:
    words = set()
    for language in STOPWORD_LANGUAGES:
        words |= {word.lower() for word in justext.get_stoplist(language)}
    return sorted(words)


def _archive_pages(path: Path) -> list[TrainingPage]:
    """The HTML pages of a .tar.zst of test fixtures (mozilla/readability's source.html, goose3's *.html)."""
    pages = []
    with open(path, "rb") as handle:
        data = zst_reader(handle, closefd=False).read()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in sorted(archive.getmembers(), key=lambda member: member.name):
            name = member.name
            if not member.isfile() or not name.endswith(".html") or name.endswith("expected.html"):
                continue
            payload = archive.extractfile(member).read()
            if len(payload) <= MAX_HTML_BYTES:
                pages.append(TrainingPage(f"{path.name}:{name}", None, decode_html(payload, None).text, None))
    return pages


def _warc_pages(path: Path, gold: dict[str, str]) -> list[TrainingPage]:
    pages = []
    for candidate in warc_candidates(str(path), MAX_HTML_BYTES, FileStats()):
        html = decode_html(candidate.payload, candidate.header_charset).text
        pages.append(TrainingPage(f"{path.name}:{candidate.url}", candidate.url, html, gold.get(candidate.url)))
    return pages


def read_gold(path: Path) -> dict[str, str]:
    """url -> gold article body (scrapinghub's article-extraction-benchmark ground truth, .json.gz)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return {entry["url"]: entry["articleBody"] for entry in json.load(handle).values()}


def unarchived(url: str) -> str:
    """The url an archived copy's url (web.archive.org/web/<time>/<url>) holds; any other url as it is."""
    found = _ARCHIVED.match(url)
    return found.group(1) if found else url


def url_key(url: str) -> str:
    """A url as the same page's other urls write it: unarchived, no scheme, www. or trailing slash."""
    return unarchived(url.strip()).partition("://")[2].lower().removeprefix("www.").rstrip("/")


def read_urls(path: Path) -> list[str]:
    """The urls of a list of them, one a line (EVALUATION_URLS)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def page_urls(page: TrainingPage) -> list[str]:
    """The page's url where its input has one, and the urls its markup gives itself (canonical
    link, og:url): a saved test page's only record of where it came from."""
    head = LexborHTMLParser(page.html).head
    declared = [] if head is None else \
        [node.attributes.get("href") or node.attributes.get("content") or ""
         for node in head.css('link[rel="canonical"], meta[property="og:url"]')]
    return [url for url in [page.url, *declared] if url and "://" in url]


def read_pages(inputs: list[Path], gold_path: Path | None) -> list[TrainingPage]:
    """Every page of the inputs (WARCs, and .tar.zst archives of HTML pages), in sorted input
    order; a WARC page whose url has a gold text gets it as its reference."""
    gold = read_gold(gold_path) if gold_path else {}
    pages = []
    for path in sorted(inputs):
        pages += _archive_pages(path) if path.name.endswith(".tar.zst") else _warc_pages(path, gold)
    return pages


def split_evaluation_pages(pages: list[TrainingPage], evaluation_path: Path | None
                           ) -> tuple[list[TrainingPage], list[TrainingPage]]:
    """(the pages to train on, the pages that are copies of an evaluation page: a url of theirs
    is one of `evaluation_path`'s)."""
    if evaluation_path is None:
        return list(pages), []
    excluded = frozenset(url_key(url) for url in read_urls(evaluation_path))
    kept, dropped = [], []
    for page in pages:
        (dropped if any(url_key(url) in excluded for url in page_urls(page)) else kept).append(page)
    return kept, dropped


def training_pages(inputs: list[Path], gold_path: Path | None,
                   evaluation_path: Path | None = REPOSITORY / EVALUATION_URLS) -> list[TrainingPage]:
    """The pages of the inputs that blockml trains on: all but the evaluation's (split_evaluation_pages)."""
    return split_evaluation_pages(read_pages(inputs, gold_path), evaluation_path)[0]


def _normalized(line: str) -> str:
    return " ".join(line.lstrip("-*• ").split()).lower()


def line_labels(texts: list[str], reference: str) -> np.ndarray:
    """1 for a line the reference holds: the same line, or (four words or more) inside its text,
    or most of the line's word trigrams in it; else 0."""
    reference_lines = {_normalized(line) for line in reference.split("\n")}
    reference_text = " ".join(reference.split()).lower()
    words = _WORD.findall(reference_text)
    trigrams = {tuple(words[i:i + 3]) for i in range(len(words) - 2)}
    labels = np.zeros(len(texts))
    for index, text in enumerate(texts):
        line = _normalized(text)
        line_words = _WORD.findall(line)
        if line in reference_lines:
            labels[index] = 1
        elif len(line_words) >= 4:
            grams = [tuple(line_words[i:i + 3]) for i in range(len(line_words) - 2)]
            labels[index] = line in reference_text or sum(gram in trigrams for gram in grams) >= 0.5 * len(grams)
    return labels


@dataclass
class LabelledLines:
    matrix: np.ndarray  # features of every line of every page
    labels: np.ndarray
    weights: np.ndarray
    page_of_line: np.ndarray  # index into the pages
    gold_page: np.ndarray  # per page: whether its reference is gold


def label_pages(pages: list[TrainingPage], words: frozenset[str], settings: dict, extract_settings: dict
                ) -> LabelledLines:
    """Every page's blocks (as lines), features and labels; a block weighs by its words (a long
    paragraph missed costs more than a menu item), a gold page's blocks `gold_weight` times more."""
    matrices, labels, weights, owners, gold = [], [], [], [], []
    traf_settings = {**extract_settings, "engine": "trafilatura"}
    for index, page in enumerate(pages):
        blocks = page_blocks(page.html, words)
        reference = page.reference if page.reference is not None else \
            extract_main_text(page.html, page.url, traf_settings).text
        gold.append(page.reference is not None)
        if not blocks.texts:
            continue
        matrices.append(blocks.matrix)
        labels.append(line_labels(blocks.texts, reference))
        block_weights = gbdt.libm(math.log1p, blocks.matrix[:, FEATURES.index("words")]) + 1
        weights.append(block_weights * (settings["gold_weight"] if page.reference is not None else 1.0))
        owners.append(np.full(len(blocks.texts), index))
    return LabelledLines(np.vstack(matrices), np.concatenate(labels), np.concatenate(weights),
                         np.concatenate(owners), np.array(gold, dtype=bool))


def fit_forest(lines: LabelledLines, settings: dict, mask: np.ndarray | None = None) -> gbdt.Forest:
    keep = np.ones(len(lines.labels), dtype=bool) if mask is None else mask
    return gbdt.fit(lines.matrix[keep], lines.labels[keep], lines.weights[keep], trees=settings["trees"],
                    depth=settings["depth"], learning_rate=settings["learning_rate"], bins=settings["bins"],
                    l2=settings["l2"], min_child_weight=settings["min_child_weight"])


def fold_of(page: TrainingPage, settings: dict) -> int:
    """A gold page's cross-validation fold: a seeded hash of its name."""
    return int(sha256_bytes(f"{settings['seed']}:{page.name}".encode())[:8], 16) % settings["folds"]


def out_of_fold_texts(pages: list[TrainingPage], lines: LabelledLines, settings: dict, words: frozenset[str]
                      ) -> dict[str, str]:
    """Each gold page's text by a model trained on every page but the gold pages of its fold
    (fold_of): the honest estimate of the shipped model on pages like the gold ones."""
    settings = {**DEFAULT_SETTINGS, **settings}
    folds = {index: fold_of(page, settings) for index, page in enumerate(pages) if page.reference is not None}
    line_folds = np.array([folds.get(int(owner), -1) for owner in lines.page_of_line])
    texts = {}
    for fold in range(settings["folds"]):
        forest = fit_forest(lines, settings, line_folds != fold)
        model = Model(forest, settings["relative_threshold"], words, "out-of-fold")
        for index in sorted(index for index, page_fold in folds.items() if page_fold == fold):
            texts[pages[index].name] = extract_blockml(pages[index].html, model)[0]
    return texts


def model_json(forest: gbdt.Forest, words: list[str], settings: dict) -> str:
    return json.dumps({"format": MODEL_FORMAT, "features": list(FEATURES),
                       "relative_threshold": settings["relative_threshold"], "stopwords": words,
                       "forest": forest.to_json()}, sort_keys=True, separators=(",", ":"))


def train(inputs: list[Path], gold_path: Path | None, out_dir: Path, extract_settings: dict,
          settings: dict | None = None, evaluation_path: Path | None = REPOSITORY / EVALUATION_URLS) -> dict:
    """Fit blockml on every page of `inputs` but the evaluation's (split_evaluation_pages) and write
    out_dir/model.json and out_dir/manifest.json (atomically); returns the manifest."""
    settings = {**DEFAULT_SETTINGS, **(settings or {})}
    words = stopwords()
    pages, evaluation_pages = split_evaluation_pages(read_pages(inputs, gold_path), evaluation_path)
    lines = label_pages(pages, frozenset(words), settings, extract_settings)
    forest = fit_forest(lines, settings)
    out_dir.mkdir(parents=True, exist_ok=True)
    model_path = out_dir / "model.json"
    with atomic_output(model_path) as temporary:
        temporary.write_text(model_json(forest, words, settings), encoding="utf-8")
    manifest = {
        "model": model_path.name, "model_sha256": sha256_file(model_path), "settings": settings,
        "extract_settings": {key: extract_settings[key] for key in ("fast", "favor_precision", "include_tables")},
        "inputs": [{"path": _shown(path), "sha256": sha256_file(path)} for path in sorted(inputs)]
        + ([{"path": _shown(gold_path), "sha256": sha256_file(gold_path), "role": "gold"}] if gold_path else [])
        + ([{"path": _shown(evaluation_path), "sha256": sha256_file(evaluation_path), "role": "excluded"}]
           if evaluation_path else []),
        "excluded_pages": [page.name for page in evaluation_pages], "pages": len(pages),
        "gold_pages": int(lines.gold_page.sum()), "lines": int(len(lines.labels)),
        "positive_lines": int(lines.labels.sum()), "features": list(FEATURES),
        "stopword_languages": list(STOPWORD_LANGUAGES), "justext": metadata.version("jusText")}
    with atomic_output(out_dir / "manifest.json") as temporary:
        temporary.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def _shown(path: Path) -> str:
    """A path relative to the repository where it is inside it (the manifest is committed)."""
    try:
        return str(path.resolve().relative_to(REPOSITORY))
    except ValueError:
        return str(path)
