"""Benchmark decontamination: real GSM8K, HumanEval and MMLU items planted into real pages."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, demo_config, gold_articles, lingua_records
from tokenmill.config import validate
from tokenmill.decontam import (Benchmark, DecontaminationSettings, Index, Words, build_index, decontaminate_part,
                                read_items)
from tokenmill.io import JsonlZstWriter, read_parquet

SETTINGS = DecontaminationSettings(**{k: v for k, v in validate(demo_config())["decontamination"].items()
                                      if k != "benchmarks"})
BENCHMARKS = [Benchmark(b["name"], b["path"], b["format"], b["fields"])
              for b in validate(demo_config())["decontamination"]["benchmarks"]]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("decontam") / "index"
    build_index(BENCHMARKS, SETTINGS, str(out))
    return str(out)


@pytest.fixture(scope="module")
def index(index_dir) -> Index:
    return Index(index_dir)


@pytest.fixture(scope="module")
def items() -> dict[str, list[str]]:
    return {b.name: read_items(b) for b in BENCHMARKS}


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return [entry["articleBody"] for _, entry in sorted(gold_articles().items())]


def item_number(index: Index, benchmark: str, local: int) -> int:
    return index.meta["item_boundaries"][index.meta["benchmarks"].index(benchmark)] + local


def plant(page: str, text: str) -> tuple[str, int, int]:
    """The page with `text` inserted at a paragraph break near its middle, and where it went."""
    cut = page.find("\n", len(page) // 2)
    cut = len(page) // 2 if cut < 0 else cut
    start = cut + 2
    return page[:cut] + "\n\n" + text + "\n\n" + page[cut:], start, start + len(text)


def rewrapped(text: str) -> str:
    words = text.split()
    return "\n".join(" ".join(words[i:i + 7]) for i in range(0, len(words), 7))


def recased_and_repunctuated(text: str) -> str:
    """Upper case, punctuation swapped or removed, whitespace doubled."""
    return re.sub(r"[.,;:?!]", lambda m: {".": " ;", ",": " ", "?": " !"}.get(m.group(), " -"), text.upper()).replace(" ", "  ")


def first_half(text: str) -> str:
    words = text.split(" ")
    return " ".join(words[:len(words) // 2])


VARIANTS = {"verbatim": lambda t: t, "rewrapped": rewrapped, "recased": recased_and_repunctuated, "half": first_half}
PLANTED = [("gsm8k", 7), ("humaneval", 12), ("mmlu", 9013)]  # 91 words: its half still fills the run rule


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("benchmark, local", PLANTED)
def test_planted_benchmark_items_are_flagged(index, items, pages, benchmark, local, variant):
    text = VARIANTS[variant](items[benchmark][local])
    doc, start, end = plant(pages[local % len(pages)], text)
    hits, _ = index.matches(doc)
    assert [(h["benchmark"], h["item"]) for h in hits] == [(benchmark, item_number(index, benchmark, local))]
    assert hits[0]["run"] >= SETTINGS.min_run
    assert start <= hits[0]["start"] < hits[0]["end"] <= end  # the span lies inside what was planted


def test_short_items_are_flagged_when_whole(index, items, pages):
    """MMLU items too short for ten consecutive 13-grams: all their n-grams in order is enough."""
    offset = item_number(index, "mmlu", 0)
    short = [i for i, text in enumerate(items["mmlu"]) if 0 < index.needed_run[offset + i] < SETTINGS.min_run]
    assert len(short) > 1000
    sample = random.Random(5).sample(short, 150)
    found = 0
    for k, local in enumerate(sample):
        doc, _, _ = plant(pages[k % len(pages)], recased_and_repunctuated(items["mmlu"][local]))
        found += any(h["item"] == offset + local for h in index.matches(doc)[0])
    assert found == len(sample)
    # one word short of the whole item is not enough
    local = sample[0]
    words = items["mmlu"][local].split(" ")
    doc, _, _ = plant(pages[0], " ".join(words[:-1]) if len(words[-1]) > 2 else " ".join(words[:-2]))
    assert not any(h["item"] == offset + local for h in index.matches(doc)[0])


def test_untouched_pages_and_shared_phrases_are_not_flagged(index, items, pages):
    assert [i for i, page in enumerate(pages) if index.matches(page)[0]] == []
    question = items["gsm8k"][7].split(" ")
    phrases = [
        " ".join(question[:20]),  # eight 13-grams of a real item: fewer than the run rule needs
        "Which of the following is the best answer in the context of the following passage?",
        "def has_close_elements(numbers: List[float], threshold: float) -> bool:",
        "All of the above. None of the above. Both A and B. Neither A nor B.",
    ]
    for phrase in phrases:
        assert index.matches(plant(pages[3], phrase)[0])[0] == [], phrase


def test_template_ngrams_shared_by_many_items_are_dropped(index):
    assert index.meta["template_grams_dropped"] > 0
    assert index.meta["items"]["mmlu"]["too_short"] > 0


def test_decontaminate_part_flags_only_planted_documents(tmp_path, index, index_dir, items, pages):
    docs_path = tmp_path / "docs.jsonl.zst"
    planted, texts = {}, {}
    with JsonlZstWriter(docs_path) as writer:
        for number, page in enumerate(pages[:40]):
            text = page
            if number % 10 == 3:
                benchmark, local = PLANTED[(number // 10) % len(PLANTED)]
                text = plant(page, items[benchmark][local])[0]
                planted[f"{number:032x}"] = benchmark
            texts[f"{number:032x}"] = text
            writer.write({"doc_id": f"{number:032x}", "url": f"https://example.org/{number}", "text": text,
                          "derived_from": "a-parent-doc" if number == 13 else None})  # synthetic docs too
    out = tmp_path / "decontaminate.parquet"
    assert decontaminate_part(str(docs_path), index_dir, str(out)) == {"documents": 40, "flagged": len(planted)}
    table = read_parquet(out).to_pylist()
    assert {row["doc_id"]: row["contaminated_by"] for row in table if row["contaminated_by"]} == \
        {doc_id: [benchmark] for doc_id, benchmark in planted.items()}
    # scanned together or one by one, the documents get the same answer
    assert index.scan(list(texts.values())) == [index.matches(text) for text in texts.values()]
    for row in table:
        assert (row["longest_run"] >= SETTINGS.min_run) == bool(row["contaminated_by"])
        assert row["words"] == len(re.findall(r"\w+", texts[row["doc_id"]]))


def test_index_is_deterministic_and_names_a_bad_benchmark(tmp_path, index_dir):
    build_index(BENCHMARKS, SETTINGS, str(tmp_path / "again"))
    for path in sorted(Path(index_dir).iterdir()):
        assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), path.name
    broken = Benchmark("gsm8k", str(REPO / "data/evalsets/gsm8k/test.jsonl.gz"), "jsonl", ["question", "solution"])
    with pytest.raises(ValueError, match="benchmark gsm8k has no field 'solution'"):
        build_index([broken], SETTINGS, str(tmp_path / "broken"))


def test_words_are_the_regex_words_of_the_lowercased_text(pages):
    """The array tokenizer finds exactly what re.findall(r"\\w+", text.lower()) finds, in pages and
    sentences of several scripts, and maps each word back to its place in the original text."""
    texts = pages[:30] + [r["text"] for lang in ("ar", "hi", "ja", "ru", "tr") for r in lingua_records(lang)[:40]]
    texts += ["İSTANBUL’da snake_case x2 \ud800 — ǅemal", "", "   "]
    words = Words.of(texts)
    first = 0
    for number, text in enumerate(texts):
        expected = re.findall(r"\w+", text.lower())
        assert words.words(number) == expected
        for offset, word in enumerate(expected):
            start, end = words.span(number, text, first + offset, first + offset)
            assert word in text[start:end].lower()
        first += len(expected)
    assert words.hashes.dtype == "uint64" and len(set(words.hashes.tolist())) > 1000
