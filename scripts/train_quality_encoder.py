"""train_quality_encoder: a small byte-level transformer on the quality labels (CPU, seeded)."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.quality.encoder import EncoderSettings, train_encoder
from tokenmill.quality.fasttext import check_label_counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--settings", required=True, help="the `quality.encoder` config section without parts_per_job, as JSON")
    parser.add_argument("--model", required=True)
    parser.add_argument("--metrics", required=True)
    parser.add_argument("--min-labels", type=int,
                        help="labels from annotate: refuse fewer of each class (synthetic.annotate.min_labels)")
    args = parser.parse_args(argv)
    if args.min_labels:
        check_label_counts(args.labels, args.min_labels)
    metrics = train_encoder(args.labels, args.model, args.metrics, EncoderSettings(**json.loads(args.settings)))
    print(json.dumps(metrics, indent=1))


if __name__ == "__main__":
    main()
