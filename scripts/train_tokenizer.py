"""train_tokenizer: byte-level BPE on the selected text of every part in the plan."""

import argparse

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.plan import read_plan
from tokenmill.tokenize import capped_texts, selected_texts, train_bpe


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--min-frequency", type=int, required=True)
    parser.add_argument("--max-train-chars", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    plan = read_plan(args.plan, version=args.version)
    documents = (doc["text"] for row in plan for _, doc in selected_texts(row["docs"], row["select"]))
    texts = capped_texts(documents, args.max_train_chars)
    sha256 = train_bpe(texts, args.vocab_size, args.min_frequency, args.out)
    print(f"train_tokenizer: {texts.documents} documents, {texts.chars} characters -> {args.out} (sha256 {sha256})")


if __name__ == "__main__":
    main()
