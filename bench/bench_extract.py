"""Side-by-side: the extraction engines (trafilatura, resiliparse, two_pass, blockml) against each
other and against the bare libraries, for text quality, speed and math.

One core (the process and the extract job's sandbox workers pinned to one CPU):
- quality and CPU per page, each engine through `extract_main_text` (charset decoding done once,
  before timing): bag-of-words F1 against the gold article bodies of the 181 real pages of the
  sample (data/sample/warc/aeb-articles, gold in data/sample/gold), and trafilatura's own
  precision/recall/F1 over its "with"/"without" snippets on its 92 evaluation pages
  (data/bench/html-trafilatura-eval); two_pass's share of pages that got the second pass;
- blockml, which the shipped model learnt from the aeb pages too: its aeb F1 out of fold (each gold
  page's text by a model trained without the gold pages of its fold, tokenmill.extract.blockml_train),
  and issue 35's targets against the trafilatura engine (F1 - 0.005 on both sets, 0.15x its CPU);
- inside our rule (measured first, while this process is as small as a job's, each engine warmed
  on a few other pages): the extract part job (`extract_part`, sandboxed, one worker) on the aeb
  WARCs with each engine, pages per CPU-second of the job and its workers, the median of JOB_RUNS
  runs taken in turn;
- the bare libraries on the same decoded pages: `trafilatura.extract` and resiliparse's
  `extract_plain_text(main_content=True)`;
- math: distinct formulas found verbatim (whitespace-insensitive) per form over
  data/bench/math-html/expected_math.jsonl (a Wikipedia formula counts once, found in any of its
  three copies), for bare trafilatura and each engine; formulas written more than once; TeX of
  the StackExchange page's MathJax scaffolding that reached the text.

usage: python bench/bench_extract.py [--tiny]
(--tiny: 12 pages of each set, three math pages, out-of-fold forests of TINY_TREES trees; its figures
mean nothing)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import io
import json
import resource
import tempfile
import time
from pathlib import Path

from common import REPO, EXTRACT_SETTINGS, add_tiny_option, pin_to_one_cpu  # puts the repository on the import path

import trafilatura  # noqa: E402
from resiliparse.extract.html2text import extract_plain_text  # noqa: E402

from tests.sample_data import (bag_of_words_f1, expected_formulas, formulas_found, gold_articles,  # noqa: E402
                               math_page)
from tokenmill.extract import blockml_train  # noqa: E402
from tokenmill.extract.html import ENGINES, decode_html, extract_main_text  # noqa: E402
from tokenmill.extract.part import extract_part  # noqa: E402
from tokenmill.extract.records import FileStats, PartInfo, warc_candidates  # noqa: E402
from tokenmill.io import read_json, read_jsonl_zst  # noqa: E402

AEB = REPO / "data" / "sample" / "warc" / "aeb-articles"
TRAFILATURA_EVAL = REPO / "data" / "bench" / "html-trafilatura-eval"
SCAFFOLDING_PAGE = "magic-html/3bea25afda1671509d82cee7e6529ae362a60b7c1f5817d4627a455cc9b23ab3.html"
TWO_PASS_CPU_TARGET = 0.35  # of trafilatura's CPU (issue 17)
BLOCKML_CPU_TARGET, BLOCKML_F1_MARGIN = 0.15, 0.005  # issue 35
JOB_RUNS, WARM_PAGES = 3, 5
TINY_MATH = ("readability/wikipedia-3.source.html", "mathjax-demos/v2-support_v2-script-tags.html", SCAFFOLDING_PAGE)
TINY_TREES = 10  # --tiny: the out-of-fold forests only have to run


def snippet_scores(pages: list[tuple[dict, str]], texts: list[str]) -> tuple[float, float, float]:
    """trafilatura's evaluation: a "with" snippet found is a true positive, missed a false
    negative; a "without" snippet found is a false positive."""
    tp = fn = fp = 0
    for (entry, _), text in zip(pages, texts):
        tp += sum(snippet in text for snippet in entry["with"])
        fn += sum(snippet not in text for snippet in entry["with"])
        fp += sum(snippet in text for snippet in entry["without"])
    precision, recall = tp / max(1, tp + fp), tp / max(1, tp + fn)
    return precision, recall, 2 * precision * recall / max(1e-9, precision + recall)


def aeb_pages(limit: int | None) -> list[tuple[str, str]]:
    gold = {entry["url"] for entry in gold_articles().values()}
    pages = []
    for path in sorted(AEB.glob("*.warc.gz")):
        for candidate in warc_candidates(str(path), EXTRACT_SETTINGS["max_bytes"], FileStats()):
            if candidate.url in gold:
                pages.append((candidate.url, decode_html(candidate.payload, candidate.header_charset).text))
    return pages[:limit]


def trafilatura_eval_pages(limit: int | None) -> list[tuple[dict, str]]:
    entries = json.loads((TRAFILATURA_EVAL / "evaldata.json").read_text(encoding="utf-8"))
    pages = []
    for url, entry in sorted(entries.items()):
        with gzip.open(TRAFILATURA_EVAL / "html" / f"{entry['file']}.gz", "rb") as handle:
            pages.append(({**entry, "url": url}, decode_html(handle.read(), None).text))
    return pages[:limit]


def cpu_seconds(function) -> tuple[float, object]:
    start = time.process_time()
    result = function()
    return time.process_time() - start, result


def engine_settings(engine: str) -> dict:
    return {**EXTRACT_SETTINGS, "engine": engine}


def routing_bound(page_f1: dict[str, list[float]], seconds: dict[str, float], cpu_share: float) -> None:
    """What any two-pass decision could reach at `cpu_share` of trafilatura's CPU: the share of
    pages that can afford the second pass after resiliparse ran on all, sent by an oracle that
    knows which pages trafilatura improves most (from the gold)."""
    affordable = max(0.0, (cpu_share * seconds["trafilatura"] - seconds["resiliparse"]) / seconds["trafilatura"])
    gains = sorted((t - r for t, r in zip(page_f1["trafilatura"], page_f1["resiliparse"])), reverse=True)
    pages = len(gains)
    best = (sum(page_f1["resiliparse"]) + sum(gain for gain in gains[:int(affordable * pages)] if gain > 0)) / pages
    print(f"  routing bound at {cpu_share:.2f}x trafilatura's CPU: {affordable:.2f} of the pages can get the second "
          f"pass; an oracle sending the best of them reaches F1 {best:.4f} "
          f"({best - sum(page_f1['trafilatura']) / pages:+.4f} against trafilatura)")


def quality_and_speed(aeb: list[tuple[str, str]], evaluation: list[tuple[dict, str]]
                      ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Per engine: (aeb F1, evaluation F1, CPU seconds on the aeb pages)."""
    gold = {entry["url"]: entry["articleBody"] for entry in gold_articles().values()}
    print(f"{'':34s} {'aeb F1':>8s} {'ms/page':>8s} {'eval P':>7s} {'eval R':>7s} {'eval F1':>8s} {'2nd pass':>9s}")
    page_f1, seconds, eval_f1s = {}, {}, {}
    for engine in ENGINES:
        seconds[engine], results = cpu_seconds(lambda: [extract_main_text(html, url, engine_settings(engine))
                                                         for url, html in aeb])
        evaluated = [extract_main_text(html, entry["url"], engine_settings(engine)) for entry, html in evaluation]
        page_f1[engine] = [bag_of_words_f1(gold[url], result.text) for (url, _), result in zip(aeb, results)]
        f1 = sum(page_f1[engine]) / len(aeb)
        precision, recall, eval_f1 = snippet_scores(evaluation, [result.text for result in evaluated])
        eval_f1s[engine] = eval_f1
        second = sum(result.engine.startswith("trafilatura") for result in results + evaluated)
        share = f"{second / (len(results) + len(evaluated)):.2f}" if engine == "two_pass" else ""
        print(f"tokenmill {engine:24s} {f1:8.4f} {1000 * seconds[engine] / len(aeb):8.2f} {precision:7.3f} "
              f"{recall:7.3f} {eval_f1:8.4f} {share:>9s}")
        if engine != "trafilatura":
            baseline = sum(page_f1["trafilatura"]) / len(aeb)
            print(f"  {engine} vs trafilatura: F1 {f1 - baseline:+.4f}, CPU {seconds[engine] / seconds['trafilatura']:.2f}x")
    print("  (blockml's aeb F1 above is in sample: its shipped model learnt from these pages; out of fold below)")
    routing_bound(page_f1, seconds, TWO_PASS_CPU_TARGET)
    bare = {
        "bare trafilatura.extract": lambda html, url: trafilatura.extract(
            html, url=url, favor_precision=True, include_tables=True, include_comments=False, deduplicate=False) or "",
        "bare resiliparse main content": lambda html, url: extract_plain_text(
            html, preserve_formatting=True, main_content=True, alt_texts=False, comments=False),
    }
    for name, function in bare.items():
        bare_seconds, texts = cpu_seconds(lambda: [function(html, url) for url, html in aeb])
        f1 = sum(bag_of_words_f1(gold[url], text) for (url, _), text in zip(aeb, texts)) / len(aeb)
        print(f"{name:34s} {f1:8.4f} {1000 * bare_seconds / len(aeb):8.2f}")
    return {engine: sum(scores) / len(aeb) for engine, scores in page_f1.items()}, eval_f1s, seconds


def blockml_targets(aeb_f1: dict[str, float], eval_f1: dict[str, float], seconds: dict[str, float],
                    tiny: bool) -> None:
    """blockml's aeb F1 out of fold (the training pages of the shipped model, each fold's gold
    pages left out of its model) and issue 35's targets against the trafilatura engine."""
    inputs, gold = blockml_train.default_inputs()
    if tiny:
        inputs = [path for path in inputs if "aeb-articles-0000" in path.name or "warcio" in str(path)]
    pages = blockml_train.training_pages(inputs, gold)
    settings = {**blockml_train.DEFAULT_SETTINGS,
                **read_json(REPO / "data" / "models" / "blockml" / "manifest.json")["settings"],
                **({"trees": TINY_TREES} if tiny else {})}
    words = frozenset(blockml_train.stopwords())
    lines = blockml_train.label_pages(pages, words, settings, engine_settings("trafilatura"))
    texts = blockml_train.out_of_fold_texts(pages, lines, settings, words)
    gold_pages = [page for page in pages if page.reference is not None]
    oof = sum(bag_of_words_f1(page.reference, texts[page.name]) for page in gold_pages) / len(gold_pages)
    cpu = seconds["blockml"] / seconds["trafilatura"]
    checks = {f"aeb F1 out of fold {oof:.4f} (trafilatura {aeb_f1['trafilatura']:.4f})":
              oof >= aeb_f1["trafilatura"] - BLOCKML_F1_MARGIN,
              f"eval F1 {eval_f1['blockml']:.4f} (trafilatura {eval_f1['trafilatura']:.4f})":
              eval_f1["blockml"] >= eval_f1["trafilatura"] - BLOCKML_F1_MARGIN,
              f"CPU {cpu:.3f}x trafilatura's": cpu <= BLOCKML_CPU_TARGET}
    print(f"blockml, {len(gold_pages)} gold pages out of {settings['folds']} folds, {len(pages)} training pages:")
    for check, met in checks.items():
        print(f"  {check}: {'target met' if met else 'target missed'}")


def inside_the_rule(tiny: bool) -> None:
    """Pages per CPU-second of the extract part job (sandboxed workers included) per engine, and
    the job's own process alone: it reads every record and writes every document for all its
    workers, so its pages per CPU-second bound a part job whatever the number of workers. Each
    engine's job runs JOB_RUNS times, the engines in turn, and its median run counts: one run of the
    181 pages is half a second of blockml's CPU, where a busy neighbour moves a single figure by 10 %.
    The engines are warmed in this process first, on WARM_PAGES pages of other sites, so that the
    figures are a long part's, not a part of 181 pages paying each engine's one-time costs."""
    inputs = sorted(AEB.glob("*.warc.gz"))[:1 if tiny else None]
    # what an engine does once (imports, tables, caches) done here, on other sites' pages, as a
    # job's worker has done it a few pages into a part of thousands: the workers fork from here
    for engine in ENGINES:
        for _, html in trafilatura_eval_pages(WARM_PAGES):
            extract_main_text(html, None, engine_settings(engine))
    runs = {engine: [] for engine in ENGINES}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(1 if tiny else JOB_RUNS):
            for engine in ENGINES:
                before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
                out = Path(tmp) / f"{engine}-{run}"
                with contextlib.redirect_stdout(io.StringIO()):  # the job's lines, JOB_RUNS times over
                    extract_part([str(path) for path in inputs], "warc", PartInfo("aeb", "s", engine, "crawl", "MIT"),
                                 engine_settings(engine), str(out / "docs.jsonl.zst"), str(out / "q.jsonl.zst"),
                                 str(out / "stats.json"), workers=1)
                after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
                own, workers = (a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, before))
                pages = sum(1 for _ in read_jsonl_zst(out / "docs.jsonl.zst"))
                runs[engine].append((pages / (own + workers), pages / own, pages))
    rates = {}
    for engine in ENGINES:
        rate, own_rate, pages = sorted(runs[engine])[len(runs[engine]) // 2]
        rates[engine] = rate
        print(f"extract job, {engine:12s} {pages} pages, {rate:7.1f} pages per CPU-second (runs: "
              f"{', '.join(f'{run[0]:.1f}' for run in runs[engine])}); the job's own process {own_rate:7.1f}")
    print(f"extract job: resiliparse/trafilatura pages per CPU-second {rates['resiliparse'] / rates['trafilatura']:.1f}x, "
          f"two_pass/trafilatura {rates['two_pass'] / rates['trafilatura']:.1f}x, "
          f"blockml/trafilatura {rates['blockml'] / rates['trafilatura']:.1f}x "
          f"(CPU per page {rates['trafilatura'] / rates['blockml']:.3f}x, target {BLOCKML_CPU_TARGET}x)")


def math_recall(tiny: bool) -> None:
    expected = {file: entries for file, entries in expected_formulas().items()
                if not file.endswith(".txt") and (not tiny or file in TINY_MATH)}
    runs = {"bare trafilatura.extract": lambda html: trafilatura.extract(
        html, favor_precision=True, include_tables=True, deduplicate=False) or ""}
    runs.update({f"tokenmill {engine}": (lambda html, e=engine: extract_main_text(html, None, engine_settings(e)).text)
                 for engine in ENGINES})
    for name, run in runs.items():
        found, total = collections.Counter(), collections.Counter()
        repeated = scaffolding = 0
        for file, entries in sorted(expected.items()):
            text = run(math_page(file))
            if file == SCAFFOLDING_PAGE:
                scaffolding += text.count("\\begingroup") + text.count("\\endgroup")
                continue
            page_found, page_total, page_repeated = formulas_found(file, entries, text)
            found.update(page_found)
            total.update(page_total)
            repeated += page_repeated
        shares = "  ".join(f"{form} {found[form]}/{total[form]}" for form in sorted(total))
        print(f"math, {name}: {shares}; written more than once {repeated}; scaffolding in the text {scaffolding}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tiny_option(parser)
    args = parser.parse_args()
    pin_to_one_cpu()
    # first, while this process is as small as a job's: a fork of it after the pages, the timings
    # and the out-of-fold training costs the job's workers what a real job's never pays
    inside_the_rule(args.tiny)
    limit = 12 if args.tiny else None
    aeb, evaluation = aeb_pages(limit), trafilatura_eval_pages(limit)
    print(f"{len(aeb)} aeb pages, {len(evaluation)} trafilatura evaluation pages, one core")
    aeb_f1, eval_f1, seconds = quality_and_speed(aeb, evaluation)
    blockml_targets(aeb_f1, eval_f1, seconds, args.tiny)
    math_recall(args.tiny)


if __name__ == "__main__":
    main()
