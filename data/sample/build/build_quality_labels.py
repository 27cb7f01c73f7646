"""Labelled documents for the quality classifiers, built from the 181 real article pages of
scrapinghub/article-extraction-benchmark.

Labels, honestly: `hq` is a page's gold article body (human-annotated main text); `lq` is
the rest of the same page's visible text (navigation, teasers of other articles, footers,
cookie and subscription notices): the page's block-level text lines minus every line that
occurs in the gold body, kept when at least 20 words remain. So the classifier learns
"article body vs page boilerplate" on news-like pages, not general web quality.
Split: a page is held out for testing when blake2b(url) % 5 == 0 (both of its documents).

usage: python build_quality_labels.py SHARED_DATA_DIR OUT_FILE.jsonl.gz
"""

import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

import lxml.html

BLOCK_TAGS = {"p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th", "table", "section",
              "article", "header", "footer", "nav", "aside", "br", "blockquote", "pre", "form", "figure", "figcaption",
              "dd", "dt", "main", "option", "button", "label", "title"}
MIN_NEGATIVE_WORDS = 20


def normalized(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip().lower()


def page_lines(html: str) -> list[str]:
    root = lxml.html.fromstring(html)
    for element in root.xpath("//script|//style|//noscript|//template|//svg"):
        element.drop_tree()
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.lower() in BLOCK_TAGS:
            element.tail = "\n" + (element.tail or "")
            element.text = "\n" + (element.text or "")
    text = lxml.html.tostring(root, method="text", encoding="unicode")
    return [line.strip() for line in text.split("\n") if normalized(line)]


def main(shared: str, out_file: str) -> None:
    root = Path(shared) / "html-scrapinghub-aeb"
    truth = json.loads((root / "ground-truth.json").read_text())
    records = []
    for key in sorted(truth):
        url, body = truth[key]["url"], truth[key]["articleBody"]
        split = "test" if int(hashlib.blake2b(url.encode(), digest_size=8).hexdigest(), 16) % 5 == 0 else "train"
        records.append({"label": "hq", "split": split, "url": url, "text": body})
        html = gzip.decompress((root / "html" / f"{key}.html.gz").read_bytes()).decode("utf-8", "replace")
        gold = normalized(body)
        rest = [line for line in page_lines(html) if normalized(line) not in gold]
        negative = "\n".join(rest)
        if len(negative.split()) >= MIN_NEGATIVE_WORDS:
            records.append({"label": "lq", "split": split, "url": url, "text": negative})
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")
    Path(out_file).write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
