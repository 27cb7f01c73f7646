"""Every language judged by rules made for it: what select keeps of text labelled by native speakers,
of real articles in 17 languages, and what the per-language work costs the score job.

1. The graph on labelled excerpts: the labels (default: the development set, data/train/naturalness,
   HPLT v2 excerpts in Russian, Persian, Asturian and English; --labels another file of the same
   form, such as the languages held out) as a JSONL source, each excerpt's two pieces joined by a
   paragraph break where the labels have a line of ten dots, run by Snakemake from the repository
   root with a config that names that source and nothing else (every other key the schema's
   default), up to select. Per labelled language: the unnatural share of the input and of what
   select keeps, the natural excerpts kept, those lost to language identification, and the AUC of
   select's `quality` column (the score its quality rules judge by), unnatural against natural.
2. Leave one language out (the development labels only): the same, each language's naturalness
   from a model fitted on the other three, its other rules as the run decided them: what a
   language the model never saw can expect.
3. Real articles: the pages of trafilatura's evaluation set (92, 16 languages) and of the
   article-extraction benchmark (the sample's WARCs, 181), extracted by the default engine, judged
   under the defaults (tokenmill.select.preview): the share kept per language and why the rest was not.
4. The score job's CPU per document, this checkout's against --baseline's (a git revision, its own
   scripts/score.py, side by side on one core) on the same documents: every document of the sample's
   WARCs and JSONL (16 languages), once and four times over (per document: the difference, start-up
   and the dictionaries loaded on first use aside), the best of three runs of each, the trees in turn.

usage: python bench/bench_languages.py [WORKDIR] [--labels FILE] [--baseline REV] [--tiny]
(--tiny: 60 excerpts, 10 pages, no baseline; its figures mean nothing)
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import resource
import shutil
import sys
from pathlib import Path

from common import REPO, commit_tree, pin_to_one_cpu, run_checked, run_in_workdir, sample_docs  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from common import EXTRACT_SETTINGS  # noqa: E402
from tokenmill.config import schema_defaults  # noqa: E402
from tokenmill.extract.html import decode_html, extract_main_text  # noqa: E402
from tokenmill.io import JsonlZstWriter, read_jsonl_zst, read_parquet  # noqa: E402
from tokenmill.languages import load_language_table  # noqa: E402
from tokenmill.quality.naturalness import load_model  # noqa: E402
from tokenmill.quality.naturalness_train import (JOIN_LINE, auc, excerpt_scores, fit, fitted_probability,  # noqa: E402
                                                  labelled_inputs)
from tokenmill.quality.toxicity import all_wordlists, configured_wordlists, load_wordlists  # noqa: E402
from tokenmill.select.judge import FILTER_STAGES, reason_stage  # noqa: E402
from tokenmill.select.preview import first_failed_rules, stored_values  # noqa: E402

DEV_LABELS = REPO / "data/train/naturalness/hplt-dev.jsonl.gz"
LANGID_REASONS = ("langid_unclaimed", "lang_not_selected", "script_mismatch")


def read_any(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def tiny_slice(rows: list[dict], size: int) -> list[dict]:
    """Every n-th row, so that each language and both labels appear."""
    return rows[::max(1, len(rows) // size)][:size]


def run_graph(workdir: Path, rows: list[dict], cores: int) -> dict[str, dict]:
    """The graph up to select on the excerpts; their select rows by excerpt id."""
    source = workdir / "excerpts.jsonl"
    source.write_text("".join(json.dumps({"id": row["id"], "text": row["text"].replace(JOIN_LINE, "\n\n")},
                                         ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    config = workdir / "excerpts.yaml"
    config.write_text(yaml.safe_dump({"version": "languages", "sources": {"excerpts": {
        "kind": "jsonl", "tier": "crawl", "license_id": "labelled", "snapshots": {"labelled": [str(source)]}}}}))
    run = workdir / "run"
    shutil.rmtree(run, ignore_errors=True)
    run_checked("the graph on the excerpts", [sys.executable, "-m", "snakemake", "--configfile", str(config),
                                               "--directory", str(run), "--cores", str(cores), "--until", "select",
                                               "--quiet"], cwd=REPO)
    ids = {doc["doc_id"]: doc["record_id"] for doc in read_jsonl_zst(
        next((run / "results/extract/docs/excerpts/labelled").glob("*.jsonl.zst")))}
    # an excerpt without text (one of the development set's) has no document: extract's no_main_text
    selected = {row["id"]: {"selected": False, "reason": "no_text", "quality": None} for row in rows}
    for table in (run / "results/select/languages/tables/excerpts/labelled").glob("*.parquet"):
        for row in read_parquet(table).to_pylist():
            selected[ids[row["doc_id"]]] = row
    return selected


def kept_figures(rows: list[dict], kept: dict[str, bool], quality: dict[str, float | None],
                 langid_lost: dict[str, bool]) -> list[tuple]:
    """Per labelled language (and all): excerpts, unnatural, unnatural share in and kept, natural kept,
    natural lost to language identification, AUC of `quality` (natural high)."""
    out = []
    for lang in ["ALL", *sorted({row["lang"] for row in rows})]:
        chosen = [row for row in rows if lang == "ALL" or row["lang"] == lang]
        natural = [row for row in chosen if not row["unnatural"]]
        unnatural = [row for row in chosen if row["unnatural"]]
        kept_natural = sum(kept[row["id"]] for row in natural)
        kept_unnatural = sum(kept[row["id"]] for row in unnatural)
        scores = [(quality[row["id"]], not row["unnatural"]) for row in chosen if quality[row["id"]] is not None]
        value = auc(np.array([s for s, _ in scores]), np.array([n for _, n in scores])) if scores else float("nan")
        out.append((lang, len(chosen), len(unnatural), len(unnatural) / len(chosen),
                    kept_unnatural / max(1, kept_unnatural + kept_natural), kept_natural / max(1, len(natural)),
                    sum(langid_lost[row["id"]] for row in natural) / max(1, len(natural)), value))
    return out


def print_figures(title: str, figures: list[tuple]) -> None:
    print(f"\n{title}")
    print(f"  {'language':<10} {'excerpts':>8} {'unnat.':>6} {'unnatural in':>12} {'kept':>6} {'natural kept':>12} "
          f"{'lost to langid':>14} {'AUC':>6}")
    for lang, n, unnatural, share_in, share_kept, natural_kept, langid_lost, value in figures:
        print(f"  {lang:<10} {n:8d} {unnatural:6d} {share_in:12.1%} {share_kept:6.1%} {natural_kept:12.1%} "
              f"{langid_lost:14.1%} {value:6.3f}")
    languages = [figure for figure in figures[1:] if not np.isnan(figure[-1])]
    if languages:
        print(f"  median per-language AUC: {np.median([figure[-1] for figure in languages]):.3f}; lowest "
              f"{min(languages, key=lambda f: f[-1])[0]} {min(f[-1] for f in languages):.3f}")


def graph_section(workdir: Path, rows: list[dict], cores: int) -> dict[str, dict]:
    selected = run_graph(workdir, rows, cores)
    kept = {key: row["selected"] for key, row in selected.items()}
    quality = {key: row["quality"] for key, row in selected.items()}
    langid = {key: row["reason"] in LANGID_REASONS for key, row in selected.items()}
    print_figures("the graph on the labelled excerpts, schema defaults (select's own decisions)",
                  kept_figures(rows, kept, quality, langid))
    reasons = collections.Counter((row["reason"], label) for key, row in selected.items()
                                  for label in [next(r["unnatural"] for r in rows if r["id"] == key)] if row["reason"])
    for label, name in ((False, "natural"), (True, "unnatural")):
        counts = sorted(((count, reason) for (reason, unnatural), count in reasons.items() if unnatural == label),
                        reverse=True)[:8]
        print(f"  {name} excerpts not kept, by reason: " + ", ".join(f"{reason} {count}" for count, reason in counts))
    return selected


def leave_one_language_out(rows: list[dict], selected: dict[str, dict]) -> None:
    """Each language's naturalness from a model fitted on the others; every other rule as the run decided."""
    labelled = labelled_inputs(rows, load_language_table())
    languages = np.array(labelled.languages)
    probability = np.zeros(len(labelled.natural))
    for lang in sorted(set(languages)):
        held_out = languages == lang
        fitted = fit(labelled.inputs[~held_out], labelled.natural[~held_out], labelled.weights[~held_out])
        probability[held_out] = fitted_probability(fitted, labelled.inputs[held_out])
    score = excerpt_scores(probability, labelled)
    cut = schema_defaults("select")["min_naturalness"]
    kept, quality, langid = {}, {}, {}
    for number, row in enumerate(rows):
        decided = selected[row["id"]]
        others = decided["selected"] or decided["reason"] == "unnatural"
        kept[row["id"]] = bool(others and score[number] >= cut)
        quality[row["id"]] = float(score[number])
        langid[row["id"]] = decided["reason"] in LANGID_REASONS
    print_figures(f"leave one language out: naturalness from a model fitted on the other languages, cut {cut}",
                  kept_figures(rows, kept, quality, langid))


def article_pages(tiny: bool, workdir: Path) -> list[tuple[str, str]]:
    """(name, text) of the real article pages, extracted by the default engine."""
    pages = []
    for path in sorted((REPO / "data/bench/html-trafilatura-eval/html").glob("*.html.gz"))[:10 if tiny else None]:
        decoded = decode_html(gzip.open(path, "rb").read(), None)
        pages.append((path.name, extract_main_text(decoded.text, None, EXTRACT_SETTINGS, decoded.utf8).text))
    if not tiny:
        warcs = workdir / "aeb"
        warcs.mkdir(exist_ok=True)
        for doc in sample_docs(warcs, repeat=1, warcs="aeb-articles", jsonl=False):
            pages.append((doc["url"], doc["text"]))
    return [(name, text) for name, text in pages if text.strip()]


def articles_section(workdir: Path, tiny: bool) -> None:
    pages = article_pages(tiny, workdir)
    table, select = load_language_table(), schema_defaults("select")
    lists = load_wordlists(all_wordlists(configured_wordlists(schema_defaults("safety"),
                                                          str(REPO / "data/wordlists/ldnoobw-en.txt"))))
    values = stored_values([text for _, text in pages], table, load_model(None), lists, schema_defaults("langid")["max_chars"])
    reasons = first_failed_rules(values, select, table)
    by_language = collections.defaultdict(list)
    for row, reason in zip(values, reasons):
        by_language[row["lang"]].append(reason)
    print(f"\nreal article pages, the default engine's text, schema defaults: {len(pages)} pages")
    print(f"  kept {sum(not r for r in reasons)} ({sum(not r for r in reasons) / len(reasons):.1%}); "
          f"non-English kept {sum(not r for row, r in zip(values, reasons) if row['lang'] != 'en')} of "
          f"{sum(row['lang'] != 'en' for row in values)}; under min_naturalness "
          f"{sum(row['quality_naturalness'] < select['min_naturalness'] for row in values)}")
    for lang, decided in sorted(by_language.items(), key=lambda item: -len(item[1])):
        lost = collections.Counter(reason for reason in decided if reason)
        print(f"  {lang:<4} {len(decided):4d} pages, kept {sum(not r for r in decided):4d}  "
              + ", ".join(f"{reason} {count}" for reason, count in lost.most_common()))
    stages = collections.Counter(reason_stage(reason) for reason in reasons if reason)
    print("  not kept, by stage: " + ", ".join(f"{stage} {stages[stage]}" for stage in FILTER_STAGES if stages[stage]))


SCORE_REPEAT = 4


def score_cpu(workdir: Path, tree: Path, docs: Path, scorers: tuple[Path, Path], name: str) -> float:
    """CPU seconds of `tree`'s own score script on `docs` (its own arguments, from its own bench/common.py)."""
    out = workdir / f"score-{name}"
    shutil.rmtree(out, ignore_errors=True)
    code = ("import json, sys\nfrom pathlib import Path\n"
            f"sys.path[:0] = [{str(tree)!r}, {str(tree / 'bench')!r}]\n"
            "from common import score_arguments\n"
            f"print(json.dumps(score_arguments(Path({str(docs)!r}), Path({str(out)!r}), 1, "
            f"Path({str(scorers[0])!r}), Path({str(scorers[1])!r}))))")
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the tree's own library, not the installed one
    arguments = json.loads(run_checked(f"{name}'s score arguments", [sys.executable, "-c", code], cwd=tree, env=env).stdout)
    command = [sys.executable, "-P", str(tree / "scripts" / "score.py"), *arguments]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_checked(f"{name}'s score job", command, cwd=tree, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def score_section(workdir: Path, baseline: str) -> None:
    """The score job of `baseline` and of this checkout on the sample's documents, once and four times
    over: CPU per document is the difference over the extra documents (start-up and the segmenters'
    dictionaries loaded on first use aside), start-up what the single run spent beyond its documents."""
    base = commit_tree(baseline, workdir / "trees")
    if base is None:
        print(f"\nskipped: the score job against {baseline}; this copy has no git history")
        return
    docs = sample_docs(workdir / "sample", repeat=1)
    paths = {}
    for repeat in (1, SCORE_REPEAT):
        paths[repeat] = workdir / f"sample-docs-{repeat}.jsonl.zst"
        with JsonlZstWriter(paths[repeat]) as writer:
            for copy in range(repeat):
                for doc in docs:
                    writer.write({**doc, "doc_id": f"{doc['doc_id']}-{copy}"})
    # in a process of its own: fastText's training met NaN (RuntimeError) in this one, after the sections before
    code = (f"import json, sys; sys.path[:0] = [{str(REPO)!r}, {str(REPO / 'bench')!r}]\nfrom pathlib import Path\n"
            "from bench_part import scorer_files\n"
            f"print(json.dumps([str(path) for path in scorer_files(Path({str(workdir)!r}), tiny=False)]))")
    printed = run_checked("the score job's models", [sys.executable, "-c", code]).stdout
    scorers = tuple(map(Path, json.loads(printed.strip().splitlines()[-1])))
    pin_to_one_cpu()
    samples: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for _ in range(3):  # the two trees in turn, so that a slower minute of the machine weighs on both
        for name, tree in ((baseline, base), ("this checkout", REPO)):
            for repeat, path in paths.items():
                samples[name, repeat].append(score_cpu(workdir, tree, path, scorers, name))
    seconds = {name: {repeat: min(samples[name, repeat]) for repeat in paths} for name in (baseline, "this checkout")}
    per_document = {name: (runs[SCORE_REPEAT] - runs[1]) / ((SCORE_REPEAT - 1) * len(docs))
                    for name, runs in seconds.items()}
    print(f"\nthe score job's CPU on one core, {len(docs)} documents of the sample (its WARCs and JSONL, 16 languages) "
          f"and {SCORE_REPEAT} times as many")
    for name, runs in seconds.items():
        print(f"  {name:<16} {runs[1]:6.1f} s, {runs[SCORE_REPEAT]:6.1f} s: {1000 * per_document[name]:.2f} ms per "
              f"document, start-up {runs[1] - per_document[name] * len(docs):.1f} s")
    print(f"  this checkout / {baseline}, per document: {per_document['this checkout'] / per_document[baseline]:.2f}x"
          "   (target <= 1.3x)")


def main(workdir: Path, tiny: bool, labels: str | None, baseline: str | None) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    rows = read_any(Path(labels) if labels else DEV_LABELS)
    for number, row in enumerate(rows):
        row.setdefault("id", f"excerpt-{number}")
    if tiny:
        rows = tiny_slice(rows, 60)
    selected = graph_section(workdir, rows, max(1, len(os.sched_getaffinity(0))))
    if labels is None:
        leave_one_language_out(rows, selected)
    articles_section(workdir, tiny)
    if baseline and not tiny:
        score_section(workdir, baseline)


def options(parser) -> None:
    parser.add_argument("--labels", help="labelled excerpts (JSONL, gzipped or not: id, lang, unnatural, text); "
                                         "default the development set")
    parser.add_argument("--baseline", help="a git revision whose score job the score section measures against")


if __name__ == "__main__":
    run_in_workdir(main, __doc__, "where the runs go (kept); default a temporary one", options)
