"""Side-by-side: benchmark decontamination against a plain Python set of n-gram tuples.

On the same documents, one core (the process pinned to one CPU):
- tokenmill: `Index.scan(texts)` on batches of 256 documents (as the `score` job does), the Bloom probe, the exact 64-bit hash set and the
  run-of-consecutive-grams rule per benchmark item (what the `score` job runs);
- baseline: a Python `set` of every normalized 13-gram of the benchmarks as a tuple of words;
  a document is flagged when ten consecutive 13-grams are in the set (no per-item check, no
  short-item rule, no template or common-English filter: less work than tokenmill does).

Documents: every document extracted from the bundled sample, repeated (--repeat), plus the
181 gold article pages with one GSM8K, HumanEval or MMLU item planted in each. Memory: what
tracemalloc sees retained after building each index. Also the recall on short items: every
MMLU item with fewer 13-grams than the run rule needs, planted into a gold page.

usage: python bench/bench_decontam.py [--repeat N] [--tiny]
(--tiny: the JSONL sample documents once instead of every sample document --repeat times)
"""

from __future__ import annotations

import argparse
import platform
import re
import tempfile
import tracemalloc
from pathlib import Path

from common import add_tiny_option, pin_to_one_cpu, sample_texts, timed  # puts the repository on the import path
from tests.sample_data import demo_config, gold_articles
from tokenmill.config import validate
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, Index, build_index, read_items


def normalized_words(text: str) -> list[str]:
    """The same tokens as tokenmill's (runs of \\w in the lower-cased text), the plain Python way."""
    return re.findall(r"\w+", text.lower())


def set_index(benchmarks: list[Benchmark], n: int) -> set:
    grams = set()
    for benchmark in benchmarks:
        for text in read_items(benchmark):
            words = normalized_words(text)
            grams.update(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return grams


def set_flags(grams: set, text: str, n: int, min_run: int) -> bool:
    words = normalized_words(text)
    run = 0
    for i in range(len(words) - n + 1):
        run = run + 1 if tuple(words[i:i + n]) in grams else 0
        if run >= min_run:
            return True
    return False


def retained(build):
    tracemalloc.start()
    value = build()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return value, size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=4)
    add_tiny_option(parser)
    args = parser.parse_args()
    repeat = 1 if args.tiny else args.repeat
    pin_to_one_cpu()
    config = validate(demo_config())["decontamination"]
    settings = DecontaminationSettings(**{k: v for k, v in config.items() if k != "benchmarks"})
    benchmarks = [Benchmark(b["name"], b["path"], b["format"], b["fields"]) for b in config["benchmarks"]]
    items = {b.name: read_items(b) for b in benchmarks}
    pages = [entry["articleBody"] for _, entry in sorted(gold_articles().items())]
    with tempfile.TemporaryDirectory() as tmp:
        texts = sample_texts(Path(tmp), repeat, tiny=args.tiny)
        planted = []
        for number, page in enumerate(pages):
            name = ("gsm8k", "humaneval", "mmlu")[number % 3]
            item = items[name][(number * 37) % len(items[name])]
            planted.append(page[:len(page) // 2] + "\n\n" + item + "\n\n" + page[len(page) // 2:])
        docs = texts + planted

        build_seconds = timed(lambda: build_index(benchmarks, settings, f"{tmp}/index"))
        index, index_bytes = retained(lambda: Index(f"{tmp}/index"))
        tokenmill_flags = []
        tokenmill_seconds = timed(lambda: tokenmill_flags.extend(
            bool(hits) for start in range(0, len(docs), 256) for hits, _ in index.scan(docs[start:start + 256])))

        set_build_seconds = timed(lambda: set_index(benchmarks, settings.ngram))
        grams, set_bytes = retained(lambda: set_index(benchmarks, settings.ngram))
        set_flagged = []
        set_seconds = timed(lambda: set_flagged.extend(set_flags(grams, t, settings.ngram, settings.min_run)
                                                       for t in docs))

    offset = index.meta["item_boundaries"][index.meta["benchmarks"].index("mmlu")]
    short = [i for i, text in enumerate(items["mmlu"])
             if len(normalized_words(text)) - settings.ngram + 1 < settings.min_run]
    found = set_found = 0
    for k, local in enumerate(short):
        page = pages[k % len(pages)]
        doc = page[:len(page) // 2] + "\n\n" + items["mmlu"][local] + "\n\n" + page[len(page) // 2:]
        found += any(hit["item"] == offset + local for hit in index.matches(doc)[0])
        set_found += set_flags(grams, doc, settings.ngram, settings.min_run)

    words = sum(len(normalized_words(t)) for t in docs)
    print(f"decontamination, {platform.python_implementation()} {platform.python_version()}, one core")
    print(f"documents: {len(texts)} sample documents ({repeat}x) + {len(planted)} gold pages with a planted "
          f"item; {words} words")
    print(f"benchmarks: {', '.join(f'{k} {len(v)} items' for k, v in items.items())}")
    print(f"{'method':<44}{'build s':>9}{'index MB':>10}{'docs/s':>9}{'flagged':>9}{'planted found':>15}")
    for name, build, size, seconds, flags in (
            ("tokenmill Bloom + hash set + item runs", build_seconds, index_bytes, tokenmill_seconds, tokenmill_flags),
            ("Python set of 13-gram tuples, 10 in a row", set_build_seconds, set_bytes, set_seconds, set_flagged)):
        print(f"{name:<44}{build:>9.1f}{size / 2**20:>10.1f}{len(docs) / seconds:>9.0f}{sum(flags):>9}"
              f"{sum(flags[len(texts):]):>11}/{len(planted)}")
    print(f"speed: tokenmill / set = {set_seconds / tokenmill_seconds:.2f}x; "
          f"memory: set / tokenmill = {set_bytes / index_bytes:.1f}x")
    print(f"false positives on the sample documents: tokenmill {sum(tokenmill_flags[:len(texts)])}, "
          f"set {sum(set_flagged[:len(texts)])}")
    print(f"short MMLU items (fewer than {settings.min_run} {settings.ngram}-grams): {len(short)}; "
          f"recall when planted whole: tokenmill {found / len(short):.4f} ({found}), set {set_found / len(short):.4f}")


if __name__ == "__main__":
    main()
