"""extract: a part's WARC, JSONL, PDF, code or generation files to documents, quarantine and part stats;
held-out records carved."""

import argparse
import json
import time

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.extract.sandbox import print_job_cpu
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--inputs", required=True, nargs="+", help="the part's input files, in order")
    parser.add_argument("--workers", type=int, required=True, help="documents parsed at once, each in its own sandbox")
    parser.add_argument("--kind", required=True, choices=["warc", "jsonl", "pdf", "code", "synthetic"])
    parser.add_argument("--source", required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--part", required=True)
    parser.add_argument("--tier", required=True)
    parser.add_argument("--license-id", required=True)
    parser.add_argument("--settings", required=True,
                        help="what the part's kind reads (tokenmill.extract.settings.extract_settings), as JSON")
    parser.add_argument("--holdout-dir", required=True, help="where held-out records are carved (write-once)")
    parser.add_argument("--carve-receipt", required=True, help="the list of what this part carved")
    parser.add_argument("--docs", required=True)
    parser.add_argument("--quarantine", required=True)
    parser.add_argument("--stats", required=True)
    parser.add_argument("--ocr", help="the part's OCR rows (rule ocr or ocr_vllm), for the PDF pages without a text layer")
    parser.add_argument("--origin-docs", help="a synthetic part: the documents of the part it rewrites")
    args = parser.parse_args(argv)
    started = time.process_time()  # the job's start-up (imports), which its forked workers share
    log_progress_to_stderr()
    info = PartInfo(args.source, args.snapshot, args.part, args.tier, args.license_id)
    stats = extract_part(args.inputs, args.kind, info, json.loads(args.settings), args.docs, args.quarantine,
                         args.stats, workers=args.workers, holdout_dir=args.holdout_dir,
                         carve_receipt=args.carve_receipt, ocr_path=args.ocr,
                         origin_docs=args.origin_docs)
    print(json.dumps({key: value for key, value in stats.items() if key != "files"}, indent=1))
    print_job_cpu(started)


if __name__ == "__main__":
    main()
