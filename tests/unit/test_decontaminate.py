"""Benchmark decontamination: real GSM8K, HumanEval and MMLU items planted into real pages."""

from __future__ import annotations

import collections
import csv
import gzip
import random
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, demo_config, gold_articles, lingua_records
from tests.unit.helpers import decontaminate_part
from tokenmill.config import validate
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, Index, Words, build_index, read_items
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


def words_of(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def mmlu_rows() -> list[list[str]]:
    """The MMLU rows (question, options A to D, answer letter) read straight from the CSV files,
    numbered as the index numbers them: files by name, rows in order."""
    mmlu = next(b for b in BENCHMARKS if b.name == "mmlu")
    rows = []
    for path in sorted(Path(mmlu.path).iterdir()):
        with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
            rows += [row for row in csv.reader(handle) if row]
    return rows


ROMAN_NUMERAL_OPTION = re.compile(r"(?:\b(?:I|II|III|IV|and|only|both|all|none|neither|of|the|above)\b|[\s,&.;()])*")


def mmlu_shape(question: str, options: list[str]) -> str:
    """How an MMLU item is built, judged by the look of its question and options."""
    option_words = [len(words_of(option)) for option in options]
    question_words = len(words_of(question))
    if re.search(r"(Statement|Scenario) 1 ?\|", question):
        return "paired statements"  # "Statement 1 | ... Statement 2 | ...", options "True, False" ...
    if re.search(r"\bII\b", question) and all(ROMAN_NUMERAL_OPTION.fullmatch(option.strip()) for option in options):
        return "roman numerals"  # "I. ... II. ... III. ...", options "I only", "II and III" ...
    if all(re.search(r"\d", option) and words <= 3 for option, words in zip(options, option_words)):
        return "numeric options"
    if "_" in question or re.search(r"\w\s*$", question):
        return "fill in the blank"
    if question_words <= 15 and sum(option_words) >= 24:
        return "short question, long options"
    if question_words >= 20 and max(option_words) <= 5:
        return "long question, short options"
    return "other"


MMLU_SHAPES = ["fill in the blank", "long question, short options", "numeric options", "other", "paired statements",
               "roman numerals", "short question, long options"]
LETTERS = "ABCD"
QUIZ_LAYOUTS = {  # (question, options, seed) -> the item printed as a quiz
    "(a) inline": lambda question, options, seed:
        " ".join([question] + [f"({letter.lower()}) {option}" for letter, option in zip(LETTERS, options)]),
    "A. one per line": lambda question, options, seed:
        "\n".join([question] + [f"{letter}. {option}" for letter, option in zip(LETTERS, options)]),
    "1) one per line": lambda question, options, seed:
        "\n".join([question] + [f"{number}) {option}" for number, option in enumerate(options, 1)]),
    "[A] shuffled, semicolons": lambda question, options, seed:
        question + "\n" + "; ".join(f"[{letter}] {option}" for letter, option
                                    in zip(LETTERS, random.Random(seed).sample(options, len(options)))),
    "(1) options, then the question": lambda question, options, seed:
        "\n".join([f"({number}) {option}" for number, option in enumerate(options, 1)] + [question]),
    "A: with | separators": lambda question, options, seed:
        " | ".join([question] + [f"{letter}: {option}" for letter, option in zip(LETTERS, options)]),
    "i. with commas": lambda question, options, seed:
        question + " " + ", ".join(f"{roman}. {option}" for roman, option in zip(("i", "ii", "iii", "iv"), options)),
    "numbered question, a) lines, answer": lambda question, options, seed:
        "\n".join([f"Question {seed % 50 + 1}: {question}"]
                  + [f"{letter.lower()}) {option}" for letter, option in zip(LETTERS, options)]
                  + [f"Answer: {LETTERS[seed % 4]}"]),
}


def test_quiz_formatted_mmlu_items_are_flagged(index, items, pages):
    """Real MMLU items of every shape, printed as quizzes in eight layouts and planted into real
    pages, are found: option labels, numbering, separators, option order and the question's
    place do not hide an item, and the span covers the whole quiz."""
    rows = mmlu_rows()
    assert [" ".join(row[:5]) for row in rows] == items["mmlu"]
    by_shape: dict[str, list[int]] = {}
    for local, row in enumerate(rows):
        if len(words_of(" ".join(row[:5]))) >= SETTINGS.min_item_tokens:  # shorter items are not indexed
            by_shape.setdefault(mmlu_shape(row[0], row[1:5]), []).append(local)
    assert sorted(by_shape) == MMLU_SHAPES and min(len(locals_) for locals_ in by_shape.values()) >= 50
    rng = random.Random(14)
    plants = []
    for shape in MMLU_SHAPES:
        for local in rng.sample(by_shape[shape], 6):
            question, *options = rows[local][:5]
            for layout, print_quiz in QUIZ_LAYOUTS.items():
                doc, start, end = plant(pages[len(plants) % len(pages)], print_quiz(question, options, local))
                plants.append((shape, layout, local, doc, start, end))
    found, partial_spans, others = collections.defaultdict(list), [], []
    for (shape, layout, local, doc, start, end), (hits, _) in zip(plants, index.scan([p[3] for p in plants])):
        item = item_number(index, "mmlu", local)
        hit = [h for h in hits if h["item"] == item]
        others += [(h, doc) for h in hits if h["item"] != item]
        found[shape].append(bool(hit))
        found[layout].append(bool(hit))
        if hit:
            assert start <= hit[0]["start"] < hit[0]["end"] <= end
            span = " ".join(words_of(doc[hit[0]["start"]:hit[0]["end"]]))
            if not all(" ".join(words_of(field)) in span for field in rows[local][:5]):
                partial_spans.append((layout, local))
    recall = {key: round(sum(hits) / len(hits), 3) for key, hits in found.items()}
    assert min(recall.values()) >= 0.95, recall
    assert partial_spans == []
    # another item is flagged only where its own words are there in its order (MMLU items that
    # share a reading passage)
    mmlu_words = [" ".join(words_of(text)) for text in items["mmlu"]]
    assert [h for h, doc in others if " ".join(words_of(doc[h["start"]:h["end"]]))
            not in mmlu_words[h["item"] - item_number(index, "mmlu", 0)]] == []


def test_options_labels_and_single_fields_alone_are_not_flagged(index, pages):
    """Part of an item is not the item: short options without their question (labelled or
    not), option-label boilerplate, or one field alone (a question, one option; too short to
    hold a run of `min_run` n-grams on its own) planted into clean pages flags nothing."""
    rows = mmlu_rows()
    rng = random.Random(15)
    run_words = SETTINGS.ngram + SETTINGS.min_run - 1  # a field this long is a whole-item match on its own
    indexed = [local for local, row in enumerate(rows) if len(words_of(" ".join(row[:5]))) >= SETTINGS.min_item_tokens]
    short_options = [local for local in indexed if max(len(words_of(option)) for option in rows[local][1:5]) <= 5]
    short_questions = [local for local in indexed if 8 <= len(words_of(rows[local][0])) < run_words]
    texts = []
    for local in rng.sample(short_options, 40):
        options = rows[local][1:5]
        texts += [QUIZ_LAYOUTS["(a) inline"]("", options, local).strip(), "\n".join(options)]
    for local in rng.sample(short_questions, 40):
        options = [option for option in rows[local][1:5] if len(words_of(option)) < run_words]
        texts += [rows[local][0], max(options, key=len)]
    texts += [
        "(a) All of the above (b) None of the above (c) Both (a) and (b) (d) Neither (a) nor (b)",
        "A. I only B. II only C. I and II only D. I, II, and III",
        "1) True, True 2) False, False 3) True, False 4) False, True",
        "(A) Wrong, Wrong (B) Wrong, Not wrong (C) Not wrong, Wrong (D) Not wrong, Not wrong",
        "A. 2 B. 4 C. 8 D. 16",
        "Which of the following is true? (a) 1 (b) 2 (c) 3 (d) 4 Answer: (b)",
    ]
    docs = [plant(pages[number % len(pages)], text)[0] for number, text in enumerate(texts)]
    flagged = [(text, hits) for text, (hits, _) in zip(texts, index.scan(docs)) if hits]
    assert flagged == [], "\n".join(f"{text!r}: {hits}" for text, hits in flagged)


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


def test_index_is_deterministic_and_names_a_bad_benchmark(tmp_path):
    """Two builds give the same bytes. GSM8K and HumanEval, not MMLU's 14,042 items: two benchmarks
    of two formats are what the item numbering and the files' order depend on."""
    small = [benchmark for benchmark in BENCHMARKS if benchmark.name != "mmlu"]
    assert [benchmark.name for benchmark in small] == ["gsm8k", "humaneval"]
    for build in ("first", "second"):
        build_index(small, SETTINGS, str(tmp_path / build))
    first = sorted((tmp_path / "first").iterdir())
    assert first and [path.name for path in first] == sorted(path.name for path in (tmp_path / "second").iterdir())
    for path in first:
        assert (tmp_path / "second" / path.name).read_bytes() == path.read_bytes(), path.name
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
