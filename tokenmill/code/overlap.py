"""What repositories share file for file: vendored copies of repositories we also have, and files
that several repositories hold byte for byte.

Both are read from the repository documents' extract_meta.code (tokenmill.code.documents): the
sha256 of every kept file, and on the first document those of the vendored files left out.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from tokenmill.dedup.union_find import union_find_labels


EMPTY_FILE = hashlib.sha256(b"").hexdigest()  # every package's empty __init__.py: shared, but not a copy


@dataclass
class RepositoryFiles:
    name: str                                        # the repository (its archive or folder)
    kept: set[str] = field(default_factory=set)      # sha256 of its kept files
    vendored: set[str] = field(default_factory=set)  # sha256 of its vendored files (left out)


def repository_files(docs) -> list[RepositoryFiles]:
    """The kept and vendored file hashes of every repository of `docs` (repository documents), in
    order of first appearance."""
    repositories: dict[str, RepositoryFiles] = {}
    for doc in docs:
        code = doc["extract_meta"]["code"]
        entry = repositories.setdefault(doc["derived_from"], RepositoryFiles(doc["derived_from"]))
        entry.kept.update(file["sha256"] for file in code["files"] if file["sha256"] != EMPTY_FILE)
        entry.vendored.update(sha256 for sha256 in code.get("vendored_sha256", ()) if sha256 != EMPTY_FILE)
    return list(repositories.values())


def vendored_copies(repositories: list[RepositoryFiles], min_files: int = 2) -> list[dict]:
    """Each (repository, copied repository) where at least `min_files` of the first's vendored
    files are byte-identical to kept files of the second: how many, and what share of the copied
    repository's kept files that is (1.0: a whole copy)."""
    owners = defaultdict(set)
    for repository in repositories:
        for sha256 in repository.kept:
            owners[sha256].add(repository.name)
    by_name = {repository.name: repository for repository in repositories}
    rows = []
    for repository in repositories:
        matched = defaultdict(int)
        for sha256 in repository.vendored:
            for owner in owners.get(sha256, ()):
                if owner != repository.name:
                    matched[owner] += 1
        rows += [{"repository": repository.name, "copies": owner, "files": count,
                  "share_of_copied": round(count / len(by_name[owner].kept), 4)}
                 for owner, count in sorted(matched.items()) if count >= min_files]
    return rows


def shared_files(repositories: list[RepositoryFiles]) -> dict[str, list[str]]:
    """sha256 -> the repositories that keep a byte-identical copy of that file, for files kept by
    more than one repository."""
    owners = defaultdict(list)
    for repository in repositories:
        for sha256 in sorted(repository.kept):
            owners[sha256].append(repository.name)
    return {sha256: names for sha256, names in sorted(owners.items()) if len(names) > 1}


def bucket_groups(keys: list[str], bands: np.ndarray) -> list[set[str]]:
    """The groups of `keys` joined through any shared LSH bucket: row i of `bands` (documents x
    bands) belongs to keys[i], and several rows may share a key (a repository's documents). The
    single-process reading of what minhash_cluster does, for checks against ground truth."""
    names = sorted(set(keys))
    vertex = {key: number for number, key in enumerate(names)}
    buckets = defaultdict(list)
    for row, key in enumerate(keys):
        for band in range(bands.shape[1]):
            buckets[band, int(bands[row, band])].append(vertex[key])
    edges = [(members[0], other) for members in buckets.values() for other in members[1:]]
    labels = union_find_labels(len(names), np.array([u for u, _ in edges], dtype=np.int64),
                               np.array([v for _, v in edges], dtype=np.int64))
    groups = defaultdict(set)
    for key, label in zip(names, labels.tolist()):
        groups[label].add(key)
    return sorted(groups.values(), key=min)
