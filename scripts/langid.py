"""langid: fastText lid.176 language and confidence for every document of a part."""

import argparse

from tokenmill.faults import fail_once
from tokenmill.langid import langid_part, model_sha256, resolve_model_path
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", default="", help="fastText model file; empty uses the bundled lid.176.ftz")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--max-chars", type=int, default=20000)
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    fail_once(f"langid {args.out}")
    model = resolve_model_path(args.model or None)
    count = langid_part(args.docs, args.out, model, args.batch_size, args.max_chars)
    print(f"langid: {count} documents, model {model} (sha256 {model_sha256(model)})")


if __name__ == "__main__":
    main()
