"""Group the real sentences of pemistahl/lingua-py's language test data into JSONL
documents: every 25 consecutive lines of one language file make one document, and the
documents of four languages share one file (four parts in all).

The sentences are independent samples from the Leipzig web corpora, so a document is a
run of unrelated sentences in one language, not a coherent text. Deterministic.

usage: python build_lingua_jsonl.py SHARED_DATA_DIR OUT_DIR
"""

import gzip
import json
import sys
from pathlib import Path

LANGUAGES = ["ar", "de", "en", "es", "fr", "hi", "it", "ja", "nl", "pl", "pt", "ru", "sw", "tr", "yo", "zh"]
LANGUAGES_PER_FILE = 4
LINES_PER_DOC = 25


def main(shared: str, out_dir: str) -> None:
    source = Path(shared) / "lid-lingua-sentences" / "sentences"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for first in range(0, len(LANGUAGES), LANGUAGES_PER_FILE):
        group = LANGUAGES[first:first + LANGUAGES_PER_FILE]
        records = []
        for lang in group:
            lines = [line.strip() for line in (source / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
                     if line.strip()]
            for start in range(0, len(lines) - LINES_PER_DOC + 1, LINES_PER_DOC):
                records.append({
                    "id": f"lingua-{lang}-{start // LINES_PER_DOC:04d}",
                    "text": "\n".join(lines[start:start + LINES_PER_DOC]),
                    "url": None,
                    "created": None,
                    "lang_hint": lang,
                })
        body = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")
        (out / f"lingua-{'-'.join(group)}.jsonl.gz").write_bytes(gzip.compress(body, compresslevel=9, mtime=0))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
