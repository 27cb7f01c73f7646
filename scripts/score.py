"""score: every per-document signal of a part (language, MinHash signature, heuristics, PII,
toxicity, naturalness and fastText quality, benchmark contamination) from one read of its documents."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.dedup.minhash import CodeBands, MinHashParams
from tokenmill.faults import fail_once
from tokenmill.langid import model_sha256, resolve_model_path
from tokenmill.progress import log_progress_to_stderr
from tokenmill.score import SIGNALS, ScoreSettings, score_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--workers", type=int, required=True, help="processes that score batches of documents")
    parser.add_argument("--langid-model", required=True,
                        help="fastText model file (langid.model); empty (--langid-model=) uses the bundled lid.176.ftz")
    parser.add_argument("--quality-model", required=True, help="train_quality_fasttext's model")
    parser.add_argument("--wordlists", required=True, help='toxicity word lists as JSON: {"<lid.176 code>": path}')
    parser.add_argument("--language-table", required=True, help="the language table (quality.language_table)")
    parser.add_argument("--naturalness-model", required=True, help="quality.naturalness.model")
    parser.add_argument("--naturalness-sha256", default=None, help="quality.naturalness.sha256 (its pin)")
    parser.add_argument("--decontamination-index", required=True)
    parser.add_argument("--derived-decontaminate", help="a synthetic part: the decontaminate file of the part it rewrites")
    parser.add_argument("--settings", required=True,
                        help='as JSON: {"langid": {"max_chars": ...}, "minhash": {MinHashParams fields}, "minhash_code": {CodeBands fields}}')
    for signal in SIGNALS:
        parser.add_argument(f"--{signal.replace('_', '-')}", required=True, help=f"output: the {signal} file")
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    fail_once(f"score {args.docs}")
    settings = json.loads(args.settings)
    langid_model = resolve_model_path(args.langid_model or None)
    summary = score_part(args.docs, {signal: getattr(args, signal) for signal in SIGNALS}, ScoreSettings(
        langid_model=langid_model, langid_max_chars=settings["langid"]["max_chars"],
        minhash=MinHashParams(**settings["minhash"]), code_bands=CodeBands(**settings["minhash_code"]),
        wordlists=json.loads(args.wordlists), language_table=args.language_table,
        naturalness_model=args.naturalness_model, naturalness_sha256=args.naturalness_sha256 or None,
        quality_model=args.quality_model,
        decontamination_index=args.decontamination_index, derived_decontaminate=args.derived_decontaminate),
        workers=args.workers)
    print(f"score: {summary['documents']} documents ({summary['flagged']} contaminated), {args.workers} workers, "
          f"langid model {langid_model} (sha256 {model_sha256(langid_model)})")


if __name__ == "__main__":
    main()
