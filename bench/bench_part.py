"""A part job against the bare library calls it makes, against itself on more cores, and its
own process against its workers.

One part of real WARCs: every sample WARC, copied REPEATS times under new names, so the part
is many files of at least 4,000 documents, as a part of a real snapshot is many files. The
extract part job (scripts/extract.py, as the rule runs it, with the demo's settings and
holdout) runs on it with each HTML engine (trafilatura, resiliparse, blockml), with 1 worker
pinned to 1 core and with 2 workers pinned to 2 cores (taskset); their outputs must be the
same bytes. The job says the CPU seconds of its own process and of its workers: their ratio
per page is how many workers one job's own process can keep fed. Then, in this process on one
core, the bare library calls the job makes on the same records: warcio reading them, the
engine on the same pages (decoded as the job decodes them) and ftfy.fix_encoding on its text.
Targets: the 2-worker job at least 1.9x the 1-worker job, the 1-worker job's documents per
second within 15 % of the bare calls', and its own process able to feed at least 64 workers.

The score part job then runs on the documents the trafilatura job wrote, with 1 and 2 workers
in the same way, against the bare calls it makes on them (common.score_bare_seconds: fastText
lid.176 and quality predict, MinHash, heuristics, PII, toxicity, the decontamination scan),
with a fastText quality model trained on the bundled labels and the index of the demo's
benchmarks (--tiny: GSM8K alone). Each job is a table of the same shape (`print_table`).

The score job's CPU per document is then taken apart signal by signal on the documents of the
blockml job (the default engine): the job with 1 worker on one core, on every document less on the
first one alone (its start-up), and in this process its own code, tokenmill.score.Scorers.rows taken
apart (score_signal_seconds: langid, the words of the unicode segmenter, MinHash, the heuristics'
rest, PII, toxicity, fastText quality, naturalness, the decontamination scan, reading and writing;
the per-language segmenters, jieba, SudachiPy, Kiwi, ..., apart, wherever they run), whose files must
be the job's bytes; side by side with datatrove's implementation of the same signals on the same
texts (LanguageFilter, spaCy's word tokenizer, MinhashDedupSignature, the Gopher, C4 and FineWeb
filters, PIIFormatter, FastTextClassifierFilter; --datatrove-python, its own virtualenv), and against
the blockml extract job's CPU per document (target: score's at most extract's, the per-language
segmenters aside). --score-only runs the blockml extract job (1 worker) and this section alone.

The OCR part job (scripts/ocr.py, Tesseract, the demo's settings) runs on a part of the
repository's PDFs (data/bench/pdf, data/sample/pdf) copied OCR_REPEATS times, with 1 and 2
workers in the same way: its outputs must be the same bytes, and its own process (which reads
each PDF and hands it to a sandbox) against its workers (which route it and run Tesseract) says
how many workers one job can feed.

usage: python bench/bench_part.py [WORKDIR] [--tiny] [--score-only] [--datatrove-python PATH]
(--tiny: the three smallest sample WARCs and one scanned PDF once; its figures mean nothing)
"""

from __future__ import annotations

import collections
import filecmp
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

# common puts the repository on the import path
from common import (DATATROVE_SKIPPED, DATATROVE_VENV, REPO, pin_to_one_cpu, run_checked, run_in_workdir,  # noqa: E402
                    run_peer, score_arguments, score_bare_seconds, score_settings, skipped, timed)

import ftfy  # noqa: E402
import trafilatura  # noqa: E402
from resiliparse.extract.html2text import extract_plain_text  # noqa: E402
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from tests.sample_data import demo_config  # noqa: E402
from tokenmill.config import validate  # noqa: E402
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, build_index  # noqa: E402
from tokenmill.extract.blockml import extract_blockml, load_model  # noqa: E402
from tokenmill.extract.records import FileStats, warc_candidates  # noqa: E402
from tokenmill.extract.settings import ocr_settings  # noqa: E402
from tokenmill.extract.html import decode_html  # noqa: E402
from tokenmill.holdout import HoldoutRules  # noqa: E402
from tokenmill.decontaminate import decontamination_rows  # noqa: E402
from tokenmill.dedup import minhash as minhash_module  # noqa: E402
from tokenmill.dedup.minhash import signature_rows  # noqa: E402
from tokenmill.io import JsonlZstWriter, read_jsonl_zst, write_parquet  # noqa: E402
from tokenmill.langid import bundled_model_path, langid_rows  # noqa: E402
from tokenmill.quality import naturalness as naturalness_module, toxicity as toxicity_module  # noqa: E402
from tokenmill.quality.fasttext import (MAX_CHARS as QUALITY_MAX_CHARS, FastTextSettings, quality_rows,  # noqa: E402
                                        train_fasttext)
from tokenmill.quality.heuristics import ReadDocument, ReadDocuments, heuristics_rows, heuristics_text  # noqa: E402
from tokenmill.quality.naturalness import naturalness_rows  # noqa: E402
from tokenmill.quality.pii import pii_rows  # noqa: E402
from tokenmill.quality.toxicity import toxicity_rows, toxicity_score  # noqa: E402
from tokenmill.score import SIGNALS, Scorers  # noqa: E402
from tokenmill.sidecar import DOCUMENTS_PER_BATCH, joined, numbered_batches, parse_document  # noqa: E402
from tokenmill.words import UNICODE, segmented, segmenter_of, words  # noqa: E402

REPEATS = 15  # the sample's 16 WARCs hold 279 pages to parse (with the demo's web holdout): 15 copies make 4,185
TINY_WARCS = ("warcio/example.warc.gz", "common-crawl/whirlwind.warc.gz", "common-crawl/warcfile.warc.gz")
OCR_REPEATS = 3  # the repository's 37 PDFs, 3 times over
TINY_PDF = "data/bench/pdf/edgar_image.pdf"  # one scanned page
WORKERS = (1, 2)
ENGINES = ("trafilatura", "resiliparse", "blockml")
JOB_CPU = re.compile(r"CPU seconds: the job's own process ([\d.]+) \(([\d.]+) of them starting\), its workers ([\d.]+)")


def part_files(workdir: Path, tiny: bool) -> list[str]:
    """The part's input files: copies of the sample WARCs, in planning's (sorted) order."""
    sample = REPO / "data" / "sample" / "warc"
    originals = [sample / name for name in TINY_WARCS] if tiny else sorted(sample.glob("*/*.warc*"))
    inputs = workdir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    for copy in range(1 if tiny else REPEATS):
        for original in originals:
            shutil.copyfile(original, inputs / f"copy{copy}-{original.parent.name}-{original.name}")
    return sorted(str(path) for path in inputs.iterdir())


def extract_settings() -> dict:
    """The demo's extract settings and holdout, as the workflow hands them to a crawl source's job
    (gov.uk's: the web holdout; the time-forward slice would hold out every article page)."""
    config = validate(demo_config())
    holdout = HoldoutRules.from_config(config["holdout"], "govuk")
    return {**config["extract"], "fields": {}, "holdout": vars(holdout)}


def run_job(workdir: Path, inputs: list[str], workers: int, cpus: list[int], settings: dict
            ) -> tuple[float, Path, tuple[float, float, float]]:
    """Wall seconds of the extract script on the part, pinned to `cpus`; its output folder; the
    CPU seconds of its own process, of its start-up (imports, which the forked workers share) and
    of its workers."""
    out = workdir / f"{settings['engine']}-{workers}-workers"
    shutil.rmtree(out, ignore_errors=True)
    command = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-P", str(REPO / "scripts" / "extract.py"),
               "--inputs", *inputs, "--workers", str(workers), "--kind", "warc", "--source", "common_crawl",
               "--snapshot", "bench", "--part", "part", "--tier", "crawl", "--license-id", "CC-TOU",
               "--settings", json.dumps(settings), "--holdout-dir", str(out / "holdout"),
               "--carve-receipt", str(out / "carve.json"), "--docs", str(out / "docs.jsonl.zst"),
               "--quarantine", str(out / "quarantine.jsonl.zst"), "--stats", str(out / "stats.json")]
    start = time.perf_counter()
    result = run_checked(f"extract with {settings['engine']} and {workers} worker(s)", command)
    wall = time.perf_counter() - start
    return wall, out, tuple(map(float, JOB_CPU.search(result.stdout).groups()))


def pdf_part_files(workdir: Path, tiny: bool) -> list[str]:
    """The OCR part's input files: copies of the repository's PDFs, in planning's (sorted) order."""
    originals = sorted([*(REPO / "data" / "bench" / "pdf").rglob("*.pdf"), *(REPO / "data" / "sample" / "pdf").rglob("*.pdf")])
    inputs = workdir / "pdf-inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    for copy in range(1 if tiny else OCR_REPEATS):
        for original in originals:
            if not tiny or original == REPO / TINY_PDF:
                shutil.copyfile(original, inputs / f"copy{copy}-{original.parent.name}-{original.name}")
    return sorted(str(path) for path in inputs.iterdir())


def run_ocr_job(workdir: Path, inputs: list[str], workers: int, cpus: list[int]
                ) -> tuple[float, Path, tuple[float, float, float]]:
    """Wall seconds of the OCR script (Tesseract, the demo PDF source's settings) on the part,
    pinned to `cpus`; its output folder; the CPU seconds of its own process, of its start-up and
    of its workers."""
    out = workdir / f"ocr-{workers}-workers"
    shutil.rmtree(out, ignore_errors=True)
    command = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-P", str(REPO / "scripts" / "ocr.py"),
               "--inputs", *inputs, "--kind", "pdf", "--workers", str(workers),
               "--settings", ocr_settings(validate(demo_config()), "pdf_samples"),
               "--pages", str(out / "pages.jsonl.zst"), "--stats", str(out / "stats.json")]
    start = time.perf_counter()
    result = run_checked(f"ocr with {workers} worker(s)", command)
    return time.perf_counter() - start, out, tuple(map(float, JOB_CPU.search(result.stdout).groups()))


def ocr_part_job(workdir: Path, cpus: list[int], tiny: bool) -> None:
    """The OCR part job with 1 and 2 workers: wall time, the same bytes, and how many workers its
    own process feeds (per PDF, which is what it hands out, and per page Tesseract read)."""
    inputs = pdf_part_files(workdir, tiny)
    wall, outputs, cpu = {}, {}, {}
    for workers in WORKERS[:len(cpus)]:
        wall[workers], outputs[workers], cpu[workers] = run_ocr_job(workdir, inputs, workers, cpus[:workers])
    stats = json.loads((outputs[1] / "stats.json").read_text())
    read = stats["status"].get("ok", 0) + stats["status"].get("low_confidence", 0)
    print(f"\nocr (tesseract) part job: {stats['pdfs']} PDFs ({sum(os.path.getsize(p) for p in inputs) / 1e6:.1f} MB), "
          f"{stats['pages']} page rows, {read} pages read by Tesseract")
    for workers, seconds in wall.items():
        own, starting, workers_cpu = cpu[workers]
        per_pdf = max(own - starting, 1e-3)
        print(f"  {workers} worker(s) on {workers} core(s): {seconds:.1f} s wall; the job's own process {starting:.2f} s "
              f"starting, then {1000 * per_pdf / stats['pdfs']:.2f} ms per PDF; its workers "
              f"{1000 * workers_cpu / stats['pdfs']:.0f} ms per PDF ({workers_cpu / max(read, 1):.2f} s per page read): "
              f"one job feeds {workers_cpu / per_pdf:.0f} workers   (target >= 64)")
    if len(outputs) > 1:
        print(f"  speed-up 2 workers vs 1: {wall[1] / wall[2]:.2f}x   (target >= 1.9x)")
        print(f"ocr: outputs of 1 and 2 workers byte-identical: {same_bytes(outputs[1], outputs[2])}")


def same_bytes(first: Path, second: Path) -> bool:
    names = sorted(str(p.relative_to(first)) for p in first.rglob("*") if p.is_file())
    return names == sorted(str(p.relative_to(second)) for p in second.rglob("*") if p.is_file()) and \
        all(filecmp.cmp(first / name, second / name, shallow=False) for name in names)


def bare_engine(settings: dict):
    """The library call the job's engine makes on a decoded page."""
    engine = settings["engine"]
    if engine == "trafilatura":
        return lambda page, url: trafilatura.extract(
            page, url=url, fast=settings["fast"], favor_precision=settings["favor_precision"], include_comments=False,
            include_tables=settings["include_tables"], deduplicate=False) or ""
    if engine == "resiliparse":
        return lambda page, url: extract_plain_text(page, preserve_formatting=True, main_content=True, alt_texts=False,
                                                    comments=False)
    model = load_model(settings["blockml"]["model"], settings["blockml"]["sha256"])
    return lambda page, url: extract_blockml(page, model)[0]


def bare_extract_seconds(inputs: list[str], settings: dict) -> tuple[int, dict[str, float]]:
    """(pages, seconds of each bare library call) on the records the job parses, in this process."""
    holdout = HoldoutRules(**settings["holdout"])

    def read_records():
        for path in inputs:
            with open(path, "rb") as handle:
                for record in ArchiveIterator(handle, arc2warc=True):
                    record.content_stream().read()

    candidates = [c for path in inputs for c in warc_candidates(path, settings["max_bytes"], FileStats(), holdout)]
    pages = [(decode_html(c.payload, c.header_charset).text, c.url) for c in candidates]
    texts = []
    engine = bare_engine(settings)
    seconds = {"warcio: read every record": timed(read_records),
               f"{settings['engine']}: the page's text": timed(lambda: texts.extend(engine(*page) for page in pages))}
    seconds["ftfy.fix_encoding (its text)"] = timed(lambda: [ftfy.fix_encoding(text) for text in texts])
    return len(pages), seconds


def scorer_files(workdir: Path, tiny: bool) -> tuple[Path, Path]:
    """What the score job reads besides the documents: the fastText quality model trained on the
    bundled labels, and the decontamination index of the demo's benchmarks (--tiny: GSM8K)."""
    quality_model, index = workdir / "quality.bin", workdir / "decontamination_index"
    demo = validate(demo_config())
    train_fasttext(str(REPO / "data/sample/quality/aeb-quality-labels.jsonl.gz"), str(quality_model),
                   str(workdir / "quality.json"), FastTextSettings(**demo["quality"]["fasttext"]))
    config = demo["decontamination"]
    benchmarks = [Benchmark(b["name"], b["path"], b["format"], b["fields"]) for b in config["benchmarks"]
                  if not tiny or b["name"] == "gsm8k"]
    build_index(benchmarks, DecontaminationSettings(**{k: v for k, v in config.items() if k != "benchmarks"}),
                str(index))
    return quality_model, index


def run_score_job(workdir: Path, docs: Path, workers: int, cpus: list[int], scorers: tuple[Path, Path]
                  ) -> tuple[float, Path]:
    """Wall seconds of the score script on the extracted part, pinned to `cpus`; its output folder."""
    out = workdir / f"score-{workers}-workers"
    shutil.rmtree(out, ignore_errors=True)
    command = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-P", str(REPO / "scripts" / "score.py"),
               *score_arguments(docs, out, workers, *scorers)]
    return timed(lambda: run_checked(f"score with {workers} worker(s)", command)), out


# The score job's own code, signal by signal (score_signal_seconds), and datatrove's implementation of
# the same signal on the same texts where it has one (DATATROVE_SCORE): (row, datatrove's row or None).
SEGMENTERS = "words: the per-language segmenters"
SIGNAL_ROWS = (
    ("reading and parsing the documents", None),
    ("langid (fastText lid.176, script share)", "LanguageFilter (the same lid.176.ftz, k=-1)"),
    ("words: the unicode segmenter", "spaCy English word_tokenize (every document)"),
    ("MinHash signature, bands, line and content hashes", "MinhashDedupSignature shingles + signature"),
    ("heuristics, the rest (Gopher, C4, FineWeb, spam)", None),
    ("PII (5 kinds, spans)", "PIIFormatter (e-mail and IP addresses)"),
    ("toxicity (word lists)", None),
    ("fastText quality", "FastTextClassifierFilter (the same model, k=-1)"),
    ("naturalness", None),
    ("decontamination scan", None),
    ("writing the eight files", None),
)
HEURISTICS_PEER = "GopherRepetition + GopherQuality + C4Quality + FineWebQuality filters"
_WORD_USERS = {"MinHash signature, bands, line and content hashes": minhash_module, "toxicity (word lists)": toxicity_module,
               "naturalness": naturalness_module}


def score_signal_seconds(docs_path: Path, settings, out: Path) -> tuple[int, dict[str, float], dict[str, int], dict, float]:
    """(documents, CPU seconds of each row of SIGNAL_ROWS and of SEGMENTERS, documents of each
    segmenter, the segmenters' seconds inside each signal that segments a text again, the seconds
    of loading the per-language segmenters the documents need) of the score job's own code on the documents of `docs_path`, in this process:
    tokenmill.score.Scorers.rows taken apart, batch by batch as a worker scores them, then the files
    joined and written into `out` as score_part writes them (the caller compares them with the job's).
    What a worker loads once (the models, each segmenter, each language's word-list matcher) is loaded
    before the clock starts. The per-language segmenters (tokenmill.words: jieba, SudachiPy, Kiwi, ...)
    are counted apart, wherever they run: the words of read_documents, and MinHash's shingles,
    toxicity and naturalness where those segment a text again; so is their loading (the job loads a
    segmenter at its first document of that language, which on a part of a few thousand documents
    is a large share of its CPU per document: Kiwi's 0.8-1.3 s)."""
    clock = time.process_time
    scorers = Scorers(settings)
    seconds: collections.Counter = collections.Counter()
    inside: collections.Counter = collections.Counter()  # per-language segmenters' seconds inside a signal
    names = [row for row, _ in SIGNAL_ROWS]
    lines = [line for batch, _ in numbered_batches(str(docs_path), DOCUMENTS_PER_BATCH) for line in batch]
    warm = [parse_document(line) for line in lines]
    loading = 0.0
    for lang in set(langid_rows(warm, settings.langid_model, settings.langid_max_chars).column("lang").to_pylist()):
        start = clock()
        words(".", lang)  # a per-language segmenter loads at its first text
        if segmenter_of(lang) != UNICODE:
            loading += clock() - start
        if lang in scorers.wordlists:
            toxicity_score("x", scorers.wordlists[lang], lang)
    del warm

    def counted_words(row: str):
        def timed_words(text: str, lang: str | None) -> list[str]:
            if segmenter_of(lang) == UNICODE:
                return words(text, lang)
            start = clock()
            try:
                return words(text, lang)
            finally:
                inside[row] += clock() - start
        return timed_words

    for row, module in _WORD_USERS.items():
        module.words = counted_words(row)
    segmenters: collections.Counter = collections.Counter()
    tables: dict[str, list] = {signal: [] for signal in SIGNALS}
    try:
        start = clock()
        batches = list(numbered_batches(str(docs_path), DOCUMENTS_PER_BATCH))
        seconds[names[0]] += clock() - start
        for batch, first_row in batches:
            start = clock()
            docs = [parse_document(line) for line in batch]
            seconds[names[0]] += clock() - start
            start = clock()
            langid = langid_rows(docs, settings.langid_model, settings.langid_max_chars)
            seconds[names[1]] += clock() - start
            langs = langid.column("lang").to_pylist()
            # read_documents, the unicode segmenter's documents and the others' apart
            read = ReadDocuments([None] * len(docs))
            texts = [heuristics_text(doc) for doc in docs]
            for own in (False, True):
                start = clock()
                for number, (text, lang) in enumerate(zip(texts, langs)):
                    if (segmenter_of(lang) != UNICODE) == own:
                        read[number] = ReadDocument(text, *segmented(text, lang))
                seconds[SEGMENTERS if own else names[2]] += clock() - start
            segmenters.update(document.segmenter for document in read)
            rows = {}
            for signal, row, call in (
                    ("signatures", names[3], lambda: signature_rows(docs, settings.minhash, first_row, scorers.shingler,
                                                                    scorers.coefficients, settings.code_bands, langs)),
                    ("heuristics", names[4], lambda: heuristics_rows(docs, langs, scorers.languages, read)),
                    ("pii", names[5], lambda: pii_rows(docs)),
                    ("toxicity", names[6], lambda: toxicity_rows(docs, langs, scorers.wordlists, read)),
                    ("quality_fasttext", names[7], lambda: quality_rows(docs, scorers.quality_model, QUALITY_MAX_CHARS)),
                    ("quality_naturalness", names[8], lambda: naturalness_rows(docs, langs, scorers.naturalness,
                                                                               scorers.languages, read)),
                    ("decontaminate", names[9], lambda: decontamination_rows(docs, scorers.index, scorers.inherited))):
                start = clock()
                rows[signal] = call()
                seconds[row] += clock() - start
            rows["langid"] = langid
            for signal in SIGNALS:
                tables[signal].append(rows[signal])
    finally:
        for module in _WORD_USERS.values():
            module.words = words
    start = clock()
    schemas, metadata = settings.schemas(), settings.metadata()
    out.mkdir(parents=True, exist_ok=True)
    for signal in SIGNALS:
        write_parquet(str(out / f"{signal}.parquet"), joined(tables[signal], schemas[signal], metadata.get(signal)))
    seconds[names[10]] += clock() - start
    for row, spent in inside.items():
        seconds[row] -= spent
        seconds[SEGMENTERS] += spent
    return len(lines), dict(seconds), dict(segmenters), dict(inside), loading


DATATROVE_SCORE = r"""
import json, sys, tempfile, time
from importlib.metadata import version
from fasttext.FastText import _FastText
from datatrove.data import Document
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
from datatrove.pipeline.filters import (C4QualityFilter, FastTextClassifierFilter, FineWebQualityFilter,
                                       GopherQualityFilter, GopherRepetitionFilter, LanguageFilter)
from datatrove.pipeline.formatters import PIIFormatter
from datatrove.utils.word_tokenizers import load_word_tokenizer
texts = json.load(open(sys.argv[1], encoding="utf-8"))
lid_model, quality_model = sys.argv[2:4]
language = LanguageFilter()
language.model._model = _FastText(lid_model)  # tokenmill's lid.176.ftz: nothing downloads
quality = FastTextClassifierFilter(quality_model, keep_labels=("hq", 0.5))
quality._model = _FastText(quality_model)
signature = MinhashDedupSignature(output_folder=tempfile.mkdtemp(), config=MinhashConfig())
tokenizer = load_word_tokenizer("en")
filters = [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter()]
pii = PIIFormatter()


def minhash(text):
    shingles = signature.get_shingles(text)
    if len(shingles):  # datatrove skips documents shorter than one n-gram
        signature.get_signature(shingles)


calls = {
    "langid": lambda text: language.filter(Document(text=text, id="0")),
    "words": tokenizer.word_tokenize,
    "minhash": minhash,
    "pii": pii.format,
    "quality": lambda text: quality.filter(Document(text=text, id="0")),
    **{type(f).__name__: (lambda f: lambda text: f.filter(Document(text=text, id="0")))(f) for f in filters},
}
warm = "The warm up sentence is here, with a@b.com and 8.8.8.8 in it. " * 20
for call in calls.values():  # spaCy, its tokenizer and the models loaded before the clock starts
    call(warm)
seconds = {}
for name, call in calls.items():  # one signal over every text, then the next (datatrove's tokenization cache holds 5)
    start = time.process_time()
    for text in texts:
        call(text)
    seconds[name] = time.process_time() - start
print(json.dumps({"version": version("datatrove"), "spacy": version("spacy"), "seconds": seconds}))
"""
DATATROVE_KEYS = {"LanguageFilter (the same lid.176.ftz, k=-1)": "langid",
                  "spaCy English word_tokenize (every document)": "words",
                  "MinhashDedupSignature shingles + signature": "minhash", "PIIFormatter (e-mail and IP addresses)": "pii",
                  "FastTextClassifierFilter (the same model, k=-1)": "quality"}
DATATROVE_FILTERS = ("GopherRepetitionFilter", "GopherQualityFilter", "C4QualityFilter", "FineWebQualityFilter")


def datatrove_score_seconds(python: str, texts: list[str], quality_model: Path) -> dict:
    """datatrove's seconds per signal (DATATROVE_SCORE) on `texts`, in its own virtualenv, on this
    process's CPU."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "texts.json"
        path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        return json.loads(run_peer(python, DATATROVE_SCORE, str(path), bundled_model_path(), str(quality_model)))


def score_signals_section(workdir: Path, docs_path: Path, scorers: tuple[Path, Path], job_out: Path,
                          job_cpu: float, docs: int, extract_ms: float | None, datatrove_python: str | None) -> None:
    """The score job's CPU per document, signal by signal (score_signal_seconds), on one core, against
    datatrove's implementation of the same signals on the same texts, and against extract's CPU per
    document (`extract_ms`, the blockml job's on the same part); `job_cpu`: the whole job's CPU seconds
    per document beyond its start-up."""
    cpu = pin_to_one_cpu()
    settings = score_settings(*scorers)
    out = workdir / "score-signals"
    shutil.rmtree(out, ignore_errors=True)
    count, seconds, segmenters, inside, loading = score_signal_seconds(docs_path, settings, out)
    assert count == docs, f"the signal table read {count} documents, the job {docs}"
    ms = {row: 1000 * value / docs for row, value in seconds.items()}
    rest = sum(ms[row] for row, _ in SIGNAL_ROWS)
    figures = None
    if datatrove_python:
        figures = datatrove_score_seconds(datatrove_python, [doc["text"] for doc in read_jsonl_zst(docs_path)],
                                          scorers[0])
    peer = {row: 1000 * figures["seconds"][key] / docs for row, key in DATATROVE_KEYS.items()} if figures else {}
    print(f"\nthe score job's CPU per document, signal by signal, {docs} documents on one core (CPU {cpu}); "
          f"segmenters: {', '.join(f'{name} {number}' for name, number in sorted(segmenters.items()))}")
    print(f"  {'signal':<52} {'ms/doc':>7} {'share':>6}   {'datatrove ' + (figures['version'] if figures else ''):<58} "
          f"{'ms/doc':>7} {'tokenmill x':>11}")
    for row, peer_row in SIGNAL_ROWS:
        theirs = f"{peer_row:<58} {peer[peer_row]:7.3f} {ms[row] / peer[peer_row]:11.2f}" if peer_row in peer else ""
        print(f"  {row:<52} {ms[row]:7.3f} {ms[row] / rest:6.1%}   {theirs}")
    print(f"  {'total, the per-language segmenters aside':<52} {rest:7.3f}")
    again = ", ".join(f"{row.split(' ')[0]} {1000 * spent / docs:.3f}" for row, spent in inside.items() if spent)
    print(f"  {SEGMENTERS:<52} {ms[SEGMENTERS]:7.3f}   (their own budget; of it, segmenting a text again: "
          f"{again or 'none'})")
    print(f"  {'total':<52} {rest + ms[SEGMENTERS]:7.3f}")
    load_ms = 1000 * loading / docs
    print(f"  {'loading the per-language segmenters (the job: once)':<52} {load_ms:7.3f}   (their own budget; "
          "outside the table, inside the job's figure)")
    if figures:
        filters = {name: 1000 * figures["seconds"][name] / docs for name in DATATROVE_FILTERS}
        # their words: read_documents' (the per-language segmenters less what other signals segment again)
        read_words = ms["words: the unicode segmenter"] + ms[SEGMENTERS] - 1000 * sum(inside.values()) / docs
        ours = read_words + ms["heuristics, the rest (Gopher, C4, FineWeb, spam)"]
        print(f"  heuristics with their words: tokenmill {ours:.3f} ms/doc; datatrove {HEURISTICS_PEER} "
              f"{sum(filters.values()):.3f} ({', '.join(f'{name} {value:.3f}' for name, value in filters.items())}): "
              f"tokenmill {ours / sum(filters.values()):.2f}x")
        print(f"  (datatrove {figures['version']}, spaCy {figures['spacy']}: English words for every document, as its "
              "filters' default; a filter stops at its first failing rule; PIIFormatter looks for 2 of tokenmill's 5 kinds)")
    else:
        skipped("datatrove's implementation of the score job's signals", DATATROVE_SKIPPED)
    print(f"  the same files as the score job's: {same_bytes(out, job_out)}")
    aside = 1000 * job_cpu - ms[SEGMENTERS] - load_ms
    print(f"  the score job, 1 worker on 1 core: {1000 * job_cpu:.3f} ms per document beyond its start-up "
          f"(the table's total {rest + ms[SEGMENTERS]:.3f}; the per-language segmenters aside, their words "
          f"{1000 * job_cpu - ms[SEGMENTERS]:.3f}, their words and loading {aside:.3f})")
    if extract_ms is not None:
        print(f"  score / extract (blockml), CPU per document, the per-language segmenters aside: "
              f"{aside / extract_ms:.2f}   (target <= 1; extract {extract_ms:.3f} ms; their words aside, "
              f"not their loading: {(1000 * job_cpu - ms[SEGMENTERS]) / extract_ms:.2f})")


def score_job_cpu(workdir: Path, docs_path: Path, cpus: list[int], scorers: tuple[Path, Path]) -> tuple[float, Path]:
    """(CPU seconds per document of the score job with 1 worker on one core, beyond its start-up: the
    job on every document less the job on the first one alone; its output folder)."""
    first = workdir / "score-first-document.jsonl.zst"
    with JsonlZstWriter(first) as writer:
        writer.write(next(iter(read_jsonl_zst(docs_path))))
    spent = {}
    for name, path in (("first", first), ("all", docs_path)):
        out = workdir / f"score-cpu-{name}"
        shutil.rmtree(out, ignore_errors=True)
        command = ["taskset", "-c", str(cpus[0]), sys.executable, "-P", str(REPO / "scripts" / "score.py"),
                   *score_arguments(path, out, 1, *scorers)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run_checked(f"score ({name})", command)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent[name] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    docs = sum(1 for _ in read_jsonl_zst(docs_path))
    return (spent["all"] - spent["first"]) / max(docs - 1, 1), workdir / "score-cpu-all"


def extract_ms_per_document(cpu: tuple[float, float, float], docs: int) -> float:
    """An extract job's CPU per document beyond its start-up (its own process and its workers)."""
    own, starting, workers = cpu
    return 1000 * (own - starting + workers) / docs


def print_table(job: str, docs: int, bare: dict[str, float], wall: dict[int, float],
                cpu: dict[int, tuple[float, float, float]] | None = None) -> None:
    """One part job: its wall time per worker count against the bare calls' seconds on one core;
    with `cpu`, its own process's CPU per document (its start-up aside) against its workers'."""
    bare_total = sum(bare.values())
    rows = [*((f"bare {call}", seconds) for call, seconds in bare.items()), ("bare calls, sum (one core)", bare_total),
            *((f"{job} job, {workers} worker(s) on {workers} core(s)", seconds) for workers, seconds in wall.items())]
    print(f"\n{job} part job, {docs} documents")
    for name, seconds in rows:
        print(f"  {name:<46} {seconds:8.1f} s {docs / seconds:8.1f} docs/s")
    print(f"  job/bare (1 worker, docs/s): {bare_total / wall[1]:.3f}   (target >= 0.85)")
    if 2 in wall:
        print(f"  speed-up 2 workers vs 1: {wall[1] / wall[2]:.2f}x   (target >= 1.9x)")
    for workers, (own, starting, workers_cpu) in (cpu or {}).items():
        per_document = max(own - starting, 1e-3)
        print(f"  {workers} worker(s): the job's own process {starting:.2f} s starting, then {1000 * per_document / docs:.3f} "
              f"ms per document; its workers {1000 * workers_cpu / docs:.2f} ms: one job feeds "
              f"{workers_cpu / per_document:.0f} workers   (target >= 64)")


def score_only(workdir: Path, tiny: bool, datatrove_python: str | None) -> None:
    """--score-only: the blockml extract job with 1 worker on one core, then the score job's CPU per
    document on its documents, signal by signal, against datatrove's and extract's."""
    cpus = sorted(os.sched_getaffinity(0))
    inputs = part_files(workdir, tiny)
    print(f"one part of {len(inputs)} WARC files ({sum(os.path.getsize(p) for p in inputs) / 1e6:.1f} MB), "
          f"CPU {cpus[0]}")
    _, out, cpu = run_job(workdir, inputs, 1, cpus[:1], {**extract_settings(), "engine": "blockml"})
    docs = json.loads((out / "stats.json").read_text())["docs"]
    scorers = scorer_files(workdir, tiny)
    job_cpu, job_out = score_job_cpu(workdir, out / "docs.jsonl.zst", cpus, scorers)
    score_signals_section(workdir, out / "docs.jsonl.zst", scorers, job_out, job_cpu, docs,
                          extract_ms_per_document(cpu, docs), datatrove_python)


def main(workdir: Path, tiny: bool, score_only_mode: bool = False, datatrove_python: str | None = None) -> None:
    if score_only_mode:
        score_only(workdir, tiny, datatrove_python)
        return
    cpus = sorted(os.sched_getaffinity(0))
    inputs = part_files(workdir, tiny)
    print(f"one part of {len(inputs)} WARC files ({sum(os.path.getsize(p) for p in inputs) / 1e6:.1f} MB), "
          f"CPUs {cpus}")
    jobs = {}
    for engine in ENGINES:
        settings = {**extract_settings(), "engine": engine}
        wall, outputs, cpu = {}, {}, {}
        for workers in WORKERS:
            if workers > len(cpus):
                print(f"skipped: {workers} workers; this machine lets the benchmark use {len(cpus)} CPU(s)")
                continue
            wall[workers], outputs[workers], cpu[workers] = run_job(workdir, inputs, workers, cpus[:workers], settings)
        if len(outputs) > 1:
            print(f"{engine}: outputs of 1 and 2 workers byte-identical: {same_bytes(outputs[1], outputs[2])}")
        jobs[engine] = settings, wall, outputs, cpu
    print(f"peak memory of one process (the job or a worker): "
          f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")
    docs = json.loads((jobs["trafilatura"][2][1] / "stats.json").read_text())["candidates"]
    extracted = jobs["trafilatura"][2][1] / "docs.jsonl.zst"
    scorers = scorer_files(workdir, tiny)
    score_wall, score_outputs = {}, {}
    for workers in jobs["trafilatura"][1]:
        score_wall[workers], score_outputs[workers] = run_score_job(workdir, extracted, workers, cpus[:workers], scorers)
    if len(score_outputs) > 1:
        print(f"score outputs of 1 and 2 workers byte-identical: {same_bytes(score_outputs[1], score_outputs[2])}")
    ocr_part_job(workdir, cpus, tiny)
    pin_to_one_cpu()
    for engine, (settings, wall, _, cpu) in jobs.items():
        pages, bare = bare_extract_seconds(inputs, settings)
        assert pages == docs, f"the bare calls saw {pages} pages, the job {docs}"
        print_table(f"extract ({engine})", docs, bare, wall, cpu)
    texts = [doc["text"] for doc in read_jsonl_zst(extracted)]
    print_table("score", len(texts), score_bare_seconds(texts, bundled_model_path(), *map(str, scorers)), score_wall)
    # signal by signal, on the documents of the default engine (blockml)
    blockml_out, blockml_cpu = jobs["blockml"][2][1], jobs["blockml"][3][1]
    blockml_docs = json.loads((blockml_out / "stats.json").read_text())["docs"]
    job_cpu, job_out = score_job_cpu(workdir, blockml_out / "docs.jsonl.zst", cpus, scorers)
    score_signals_section(workdir, blockml_out / "docs.jsonl.zst", scorers, job_out, job_cpu, blockml_docs,
                          extract_ms_per_document(blockml_cpu, blockml_docs), datatrove_python)


def options(parser) -> None:
    parser.add_argument("--score-only", dest="score_only_mode", action="store_true",
                        help="the blockml extract job and the score job's CPU per document, signal by signal, only")
    parser.add_argument("--datatrove-python", default=None,
                        help=f"python of datatrove's own virtualenv, for its side of the signal table ({DATATROVE_VENV})")


if __name__ == "__main__":
    run_in_workdir(main, __doc__, "where the part and its outputs go (kept); default a temporary one", options)
