"""What the benchmarks share: the repository on the import path, a timer, one CPU, the sample
texts, the --tiny option, running a script or a peer (in its own virtualenv), saying which
comparison was skipped, and the bare library calls of the score job."""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# The runs a benchmark starts (Snakemake's jobs, the peers') cache bytecode as on a user's
# machine even where PYTHONDONTWRITEBYTECODE is set (the CI image sets it): else each job compiles
# every module it imports from source again, seconds per job, and the fixed cost measured is that.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
WORDLIST = REPO / "data/wordlists/ldnoobw-en.txt"  # the demo's (safety.wordlist: null)

import fasttext  # noqa: E402

from tokenmill.decontaminate import Index  # noqa: E402
from tokenmill.dedup.minhash import (CodeBands, MinHashParams, Shingler, band_hashes,  # noqa: E402
                                     permutation_coefficients, signatures)
from tokenmill.dedup.normalize import content_hash, line_hashes, normalize_for_dedup  # noqa: E402
from tests.sample_data import demo_config  # noqa: E402
from tokenmill.config import schema_defaults, schema_settings, validate  # noqa: E402
from tokenmill.extract.part import extract_part  # noqa: E402
from tokenmill.extract.records import PartInfo  # noqa: E402
from tokenmill.io import read_jsonl_zst  # noqa: E402
from tokenmill.quality.fasttext import MAX_CHARS as QUALITY_MAX_CHARS, prepare  # noqa: E402
from tokenmill.languages import BUNDLED as BUNDLED_TABLE, load_language_table  # noqa: E402
from tokenmill.quality.heuristics import heuristic_scores, language_stop_words  # noqa: E402
from tokenmill.quality.naturalness import (load_model as load_naturalness_model, naturalness,  # noqa: E402
                                           resolve_model_path as resolve_naturalness_model)
from tokenmill.quality.pii import find_pii  # noqa: E402
from tokenmill.quality.toxicity import all_wordlists, configured_wordlists, load_wordlists, toxicity_score  # noqa: E402
from tokenmill.langid import resolve_model_path as resolve_langid_model  # noqa: E402
from tokenmill.score import SIGNALS, ScoreSettings  # noqa: E402
from tokenmill.sidecar import DOCUMENTS_PER_BATCH  # noqa: E402
from tokenmill.unicode_script import script_share  # noqa: E402
from tokenmill.words import words  # noqa: E402

# the `extract` section and a JSONL source's `fields`, as the schema's defaults make them
EXTRACT_SETTINGS = {**schema_defaults("extract"), "fields": schema_defaults("sources.source.fields")}
# datatrove 0.10.1 hashes str, which xxhash 4 refuses; its dedup imports tokenizers; the rest is what its
# WarcReader (python-magic needs libmagic1), Trafilatura (tokenmill's version), LanguageFilter and JSONL
# steps import (bench_end_to_end)
DATATROVE_VENV = ("python3 -m venv /tmp/dt && /tmp/dt/bin/pip install datatrove==0.10.1 xxhash==3.5.0 regex spacy "
                  "tokenizers trafilatura==2.3.1 lxml_html_clean warcio faust-cchardet python-magic "
                  "fasttext-numpy2-wheel fasteners orjson")
DATATROVE_SKIPPED = f"{DATATROVE_VENV}, then pass --datatrove-python /tmp/dt/bin/python"


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def pin_to_one_cpu() -> int:
    """Pin this process, and the peers it starts, to one CPU: seconds are core-seconds."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def add_tiny_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tiny", action="store_true",
                        help="the smallest sizes that still run every comparison, in seconds, so that "
                             "tests/workflow/test_bench.py keeps this benchmark running; its figures mean nothing")


def run_in_workdir(main, description: str, workdir_help: str, add_options=None) -> None:
    """`main(workdir, tiny, **options)` from the command line: in WORKDIR (kept), or in a temporary
    folder; `add_options(parser)` adds the benchmark's own options, passed to main by name."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", nargs="?", help=workdir_help)
    add_tiny_option(parser)
    if add_options:
        add_options(parser)
    args = vars(parser.parse_args())
    workdir, tiny = args.pop("workdir"), args.pop("tiny")
    if workdir:
        main(Path(workdir).resolve(), tiny, **args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp), tiny, **args)


def add_datatrove_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datatrove-python", default=None,
                        help=f"python of datatrove's own virtualenv ({DATATROVE_VENV})")


def commit_tree(commit: str, folder: Path) -> Path | None:
    """The repository's files at `commit` under folder/commit, or None outside a git checkout (the
    copy that tests/workflow/test_bench.py runs in has no history)."""
    tree = folder / commit
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True)
    if archive.returncode:
        return None
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


AT_SCALE = REPO / "config" / "cost_at_scale.json"


# A step in a process of its own, its tree's tokenmill on PYTHONPATH: CPU seconds, and its peak
# memory (Linux's VmHWM, reset after the imports) against its memory before it reads.
MEASURED_RUN = """import json, os, sys, time
import tokenmill
{imports}
def status_mb(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(field + ":")) / 1024
arguments = json.loads(sys.argv[1])
with open("/proc/self/clear_refs", "w") as handle:  # the peak so far (the imports') forgotten
    handle.write("5")
base = status_mb("VmRSS")
start, wall = os.times(), time.monotonic()
result = {call}
end = os.times()
cpu = sum(end[field] - start[field] for field in range(4))  # its own and its finished workers' CPU
measured = json.dumps({{"cpu_seconds": cpu, "wall_seconds": time.monotonic() - wall, "result": result,
                       "tree": tokenmill.__file__, "base_rss_mb": base, "peak_rss_mb": status_mb("VmHWM")}})
# a file per rank: ranks printing at once can share a line of mpiexec's output
with open(os.path.join(os.environ["MEASURED_DIR"], "rank-" + os.environ.get("PMI_RANK", "0")), "w") as handle:
    handle.write(measured)
"""
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def run_measured(tree: Path, code: str, arguments, ranks: int | None = None) -> dict:
    """`code` (MEASURED_RUN) with `tree`'s tokenmill in a process of its own, or in `ranks` MPI
    ranks: what it measured (of several ranks: the longest wall and the largest memory)."""
    # -P: not the working directory's tokenmill (a checkout's root) before the tree's
    launch = [MPIEXEC, "-n", str(ranks)] if ranks else []
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([*launch, sys.executable, "-P", "-c", code, json.dumps(arguments)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(tree), "MEASURED_DIR": folder}, check=True)
        runs = [json.loads(path.read_text()) for path in sorted(Path(folder).iterdir())]
    assert len(runs) == (ranks or 1), runs
    assert all(run["tree"].startswith(str(tree)) for run in runs), f"the step ran {runs[0]['tree']}, not {tree}'s"
    return {**runs[0], **{name: max(run[name] for run in runs) for name in ("wall_seconds", "peak_rss_mb")},
            "base_rss_mb": min(run["base_rss_mb"] for run in runs), "cpu_seconds": sum(run["cpu_seconds"] for run in runs)}


def memory_mb(measured: dict) -> float:
    return measured["peak_rss_mb"] - measured["base_rss_mb"]


def memory(measured: dict) -> str:
    return f"{memory_mb(measured):,.0f}"


def at_scale_entry(docs: int, measured: dict) -> dict:
    return {"documents": docs, "core_seconds": round(measured["cpu_seconds"], 3),
            **{name: round(measured[name], 1) for name in ("base_rss_mb", "peak_rss_mb")}}


def add_at_scale_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--write-at-scale", nargs="?", const=str(AT_SCALE), default=None, metavar="PATH",
                        help=f"record the measured per-document rates for plan-cost (default path: {AT_SCALE})")


def record_at_scale(path: str | None, stage: str, entry: dict, script: str, input_description: str) -> None:
    """Put one stage's measurement into the at-scale rates file that plan-cost reads
    (tokenmill.cost.read_at_scale), keeping the other stages' entries."""
    if path is None:
        return
    from tokenmill.cost import AT_SCALE_FORMAT
    from tokenmill.io import write_json
    from tokenmill.machine import cpu_model

    recorded = json.loads(Path(path).read_text()) if Path(path).exists() else {"format": AT_SCALE_FORMAT, "stages": {}}
    recorded["stages"][stage] = {**entry, "measured": {
        "by": f"bench/{script}", "date": time.strftime("%Y-%m-%d", time.gmtime()), "cpu": cpu_model(),
        "input": input_description}}
    recorded["stages"] = dict(sorted(recorded["stages"].items()))
    write_json(path, recorded)
    print(f"{stage}: rates at scale recorded in {path}")


def skipped(comparison: str, how_to_include: str) -> None:
    """A comparison whose peer is not installed: the benchmark goes on without it, and says so."""
    print(f"skipped: {comparison}; to include it: {how_to_include}")


def run_checked(what: str, command: list[str], cwd: Path | None = None, env: dict | None = None
                ) -> subprocess.CompletedProcess:
    """`command` with its output captured; a failure raises with the end of what it printed, so
    that a benchmark which stops says why."""
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-6000:]}")
    return result


def run_peer(python: str, source: str, *args: str) -> str:
    """`source` run by a peer's own interpreter (its virtualenv); the last line it printed."""
    return run_checked(f"{python} -c <benchmark>", [python, "-c", source, *args]).stdout.strip().splitlines()[-1]


def sample_docs(tmp: Path, repeat: int = 4, tiny: bool = False, warcs: str = "*", jsonl: bool = True) -> list[dict]:
    """Every document extracted from the bundled WARCs (of the folders `warcs` matches) and JSONL,
    `repeat` times over; with `tiny` the JSONL documents only, which have no HTML to parse."""
    docs = []
    inputs = [] if tiny else [(p, "warc") for p in sorted(glob.glob(str(REPO / f"data/sample/warc/{warcs}/*.warc*")))]
    inputs += [(p, "jsonl") for p in sorted(glob.glob(str(REPO / "data/sample/jsonl/*/*.jsonl.gz")))] if jsonl else []
    for i, (path, kind) in enumerate(inputs):
        out = tmp / f"{i}.jsonl.zst"
        extract_part(path, kind, PartInfo("s", "x", str(i), "crawl", "x"), EXTRACT_SETTINGS, str(out),
                     str(tmp / f"{i}.q.jsonl.zst"), str(tmp / f"{i}.json"))
        docs += read_jsonl_zst(out)
    return docs * repeat


def sample_texts(tmp: Path, repeat: int = 4, tiny: bool = False) -> list[str]:
    return [doc["text"] for doc in sample_docs(tmp, repeat, tiny)]


def _score_settings_json(config: dict) -> dict:
    return {"langid": {"max_chars": config["langid"]["max_chars"]},
            "minhash": {key: config["minhash"][key] for key in ("permutations", "bands", "rows", "ngram", "seed")},
            "minhash_code": config["minhash"]["code"]}


def score_settings(quality_model: Path, index_dir: Path) -> ScoreSettings:
    """The ScoreSettings that scripts/score.py makes of score_arguments (the demo config's)."""
    config = validate(demo_config())
    settings = _score_settings_json(config)
    return ScoreSettings(
        langid_model=resolve_langid_model(None), langid_max_chars=settings["langid"]["max_chars"],
        minhash=MinHashParams(**settings["minhash"]), code_bands=CodeBands(**settings["minhash_code"]),
        wordlists=configured_wordlists(config["safety"], str(WORDLIST)), language_table=BUNDLED_TABLE,
        naturalness_model=str(resolve_naturalness_model(None)),
        naturalness_sha256=config["quality"]["naturalness"]["sha256"] or None, quality_model=str(quality_model),
        decontamination_index=str(index_dir), derived_decontaminate=None)


def score_arguments(docs: Path, out: Path, workers: int, quality_model: Path, index_dir: Path) -> list[str]:
    """scripts/score.py's arguments as the score rule gives them with the demo config (the
    bundled lid.176 and word list), its seven files written into `out`."""
    config = validate(demo_config())
    settings = _score_settings_json(config)
    out.mkdir(parents=True, exist_ok=True)
    return ["--docs", str(docs), "--workers", str(workers), "--langid-model=", "--quality-model", str(quality_model),
            "--wordlists", json.dumps(configured_wordlists(config["safety"], str(WORDLIST))),
            "--language-table", BUNDLED_TABLE, "--naturalness-model", str(resolve_naturalness_model(None)),
            f"--naturalness-sha256={config['quality']['naturalness']['sha256']}",
            "--decontamination-index", str(index_dir), "--settings", json.dumps(settings),
            *(argument for signal in SIGNALS for argument in (f"--{signal.replace('_', '-')}", str(out / f"{signal}.parquet")))]


def score_bare_seconds(texts: list[str], langid_model: str, quality_model: str, index_dir: str) -> dict[str, float]:
    """Seconds of each library call that the score job makes, bare, in this process, on `texts`,
    with the schema's langid and MinHash settings (the demo's). Models, word list and index are
    loaded first, and each fastText input (one line per document) is prepared outside the timed
    call; MinHash goes from text to signature, bands, line and content hashes; the
    decontamination index scans batches as the job does."""
    langid_max_chars, params = schema_defaults("langid.max_chars"), schema_settings(MinHashParams, "minhash")
    lid, quality = fasttext.load_model(langid_model), fasttext.load_model(quality_model)
    lists = load_wordlists(all_wordlists(configured_wordlists(schema_defaults("safety"), str(WORDLIST))))
    index, table, model = Index(index_dir), load_language_table(), load_naturalness_model(None)
    shingler, coefficients = Shingler(params.ngram), permutation_coefficients(params)
    lid_lines = [text[:langid_max_chars].replace("\n", " ") for text in texts]
    quality_lines = [prepare(text, QUALITY_MAX_CHARS) for text in texts]
    langs = [label[0].removeprefix("__label__") for label in lid.predict(lid_lines, k=1)[0]]
    stop_words = [language_stop_words(lang, table) for lang in langs]
    # every segmenter loaded before the timer starts, as the job's workers load them once
    for lang in set(langs):
        words(".", lang)

    def minhash():
        band_hashes(signatures([shingler.shingles(normalize_for_dedup(text), lang) for text, lang in zip(texts, langs)],
                               params, coefficients), params.bands, params.rows)
        for text in texts:
            line_hashes(text)
            content_hash(text)

    return {
        "fastText lid.176 predict": timed(lambda: lid.predict(lid_lines, k=1)),
        "script share of the language": timed(lambda: [script_share(t, lang) for t, lang in zip(texts, langs)]),
        "the language's words (segmenters)": timed(lambda: [words(text, lang) for text, lang in zip(texts, langs)]),
        "MinHash signature, bands, line hashes": timed(minhash),
        "heuristic_scores": timed(lambda: [heuristic_scores(text, lang, stops)
                                           for text, lang, stops in zip(texts, langs, stop_words)]),
        "naturalness": timed(lambda: [naturalness(text, lang, model, table.entry(lang))
                                      for text, lang in zip(texts, langs)]),
        "find_pii": timed(lambda: [find_pii(text) for text in texts]),
        "toxicity_score": timed(lambda: [toxicity_score(text, lists[lang], lang)
                                         for text, lang in zip(texts, langs) if lang in lists]),
        "fastText quality predict": timed(lambda: quality.predict(quality_lines, k=2)),
        "Index.scan": timed(lambda: [index.scan(texts[start:start + DOCUMENTS_PER_BATCH])
                                     for start in range(0, len(texts), DOCUMENTS_PER_BATCH)]),
    }
