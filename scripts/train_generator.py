"""train_generator: the demo generator (a small GPT-2 and its byte-level BPE) from the documents of
synthetic.train.sources, for the generators configured without a model directory."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.io import read_jsonl_zst
from tokenmill.synth.generator import TrainSettings, train_generator
from tokenmill.tokenize import capped_texts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True, nargs="+", help="the documents to train on, in plan order")
    parser.add_argument("--settings", required=True, help="the `synthetic.train` config section without sources, as JSON")
    parser.add_argument("--out", required=True, help="the model directory")
    args = parser.parse_args(argv)
    settings = TrainSettings(**json.loads(args.settings))
    docs = [doc for path in args.docs for doc in read_jsonl_zst(path)]
    capped = capped_texts((doc["text"] for doc in docs), settings.max_chars)
    texts = list(capped)
    # its knowledge ends where its training text does: the newest fetch time among the documents read
    cutoff = max((doc["fetch_ts"] for doc in docs[:capped.documents] if doc.get("fetch_ts")), default=None)
    record = train_generator(texts, args.out, settings, knowledge_cutoff=cutoff)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
