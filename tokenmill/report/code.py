"""The report's tables of code sources: one row per repository (its licence, documents and what
select made of them), and what repositories share file for file (vendored copies of repositories
of the corpus, and byte-identical files kept by several)."""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import groupby

from tokenmill.code.overlap import repository_files, shared_files, vendored_copies
from tokenmill.io import read_jsonl_zst, read_parquet, write_tsv

REPOSITORY_COLUMNS = ["source", "snapshot", "repository", "name", "version", "license", "license_class", "documents",
                      "selected", "reasons", "files_kept", "files_rejected", "languages"]
OVERLAP_COLUMNS = ["source", "snapshot", "kind", "repository", "other", "files", "share_of_other"]


def _repository_row(row: dict, docs: list[dict], reasons: list[str]) -> dict:
    code = docs[0]["extract_meta"]["code"]
    features = code["features"]
    return {"source": row["source"], "snapshot": row["snapshot"], "repository": docs[0]["derived_from"],
            "name": code["repository"]["name"], "version": code["repository"]["version"], "license": code["license"],
            "license_class": code["license_class"], "documents": len(docs),
            "selected": sum(not reason for reason in reasons),
            "reasons": ",".join(f"{reason}:{count}" for reason, count in sorted(Counter(r for r in reasons if r).items())),
            "files_kept": features["file_count"], "files_rejected": sum(features["rejections"].values()),
            "languages": ",".join(f"{name}:{entry['files']}" for name, entry in features["languages"].items())}


def write_code_tables(code_rows: list[dict], out_dir: str) -> list[dict]:
    """code_repositories.tsv and code_overlap.tsv in `out_dir`, from the plan rows of the parts of
    code sources (their documents and select tables); overlaps are found within each snapshot.
    Returns the repositories' rows."""
    repositories, overlaps, snapshot_files = [], [], defaultdict(list)
    for row in code_rows:
        docs = list(read_jsonl_zst(row["docs"]))
        reasons = read_parquet(row["select"], ["reason"]).column("reason").to_pylist()
        # a repository's documents are consecutive, and all in one part
        for _, group in groupby(zip(docs, reasons), key=lambda pair: pair[0]["derived_from"]):
            members = list(group)
            repositories.append(_repository_row(row, [doc for doc, _ in members], [reason for _, reason in members]))
        snapshot_files[row["source"], row["snapshot"]] += repository_files(docs)
    for (source, snapshot), files in snapshot_files.items():
        kept = {repository.name: len(repository.kept) for repository in files}
        overlaps += [{"source": source, "snapshot": snapshot, "kind": "vendored_copy", "repository": copy["repository"],
                      "other": copy["copies"], "files": copy["files"], "share_of_other": copy["share_of_copied"]}
                     for copy in vendored_copies(files)]
        pairs = Counter((first, other) for names in shared_files(files).values()
                        for i, first in enumerate(names) for other in names[i + 1:])
        overlaps += [{"source": source, "snapshot": snapshot, "kind": "identical_files", "repository": first,
                      "other": other, "files": count, "share_of_other": round(count / kept[other], 4)}
                     for (first, other), count in sorted(pairs.items())]
    write_tsv(f"{out_dir}/code_repositories.tsv", REPOSITORY_COLUMNS, repositories)
    write_tsv(f"{out_dir}/code_overlap.tsv", OVERLAP_COLUMNS, overlaps)
    return repositories
