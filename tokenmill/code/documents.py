"""Repository documents: what a code repository becomes in the corpus, and its dedup shingles.

A repository is read (tokenmill.code.repository), its vendored, generated, minified, binary and
data files rejected and the rest parse-gated (tokenmill.code.parse), its licence detected
(tokenmill.code.license). The kept files become documents: the README first, then every other
file in path order, each under a path header, cut at file boundaries into documents of at most
`max_document_tokens` (estimated as UTF-8 bytes / `bytes_per_token`: extract runs before the
tokenizer exists). A single file over the budget is a document of its own, never cut inside.

Every document of a repository carries the repository's provenance and its `sketch`: the
SKETCH_SIZE smallest hashes of the whitespace-collapsed lines of its programming-language files
(a bottom-k sample of the set, the same size for any repository), which the repository-level
MinHash is taken over. Whole-file hashes were measured first on data/bench/code-repos: the five
version pairs share 0.00-0.88 of their file hashes (tomli 2.0.1 moved every module into src/ and
changed each), but 0.89-1.00 of these lines, while no two different projects share more than
0.10 of them.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import PurePosixPath

from tokenmill.code.files import VENDORED, Selection, collapsed_lines, reject_files
from tokenmill.code.license import LicenseResult, repository_license
from tokenmill.code.parse import ParseGate, RepositoryFeatures, parse_gate, repository_features
from tokenmill.code.repository import RepoFile, Repository, read_repository
from tokenmill.hashing import hash64

README_STEMS = ("readme",)
PROSE_FIRST = ("README.md", "README.rst", "README.txt", "README")
SKETCH_SIZE = 256


@dataclass(frozen=True)
class RepositoryDocument:
    text: str
    paths: tuple[str, ...]  # the files it holds, in order
    chunk: int              # its position among the repository's documents
    chunks: int


def is_readme(path: str) -> bool:
    return "/" not in path and PurePosixPath(path).stem.lower() in README_STEMS


def document_order(files: tuple[RepoFile, ...]) -> list[RepoFile]:
    """The root README first (README.md before README.rst when both exist), then every other
    file by path."""
    readmes = sorted((file for file in files if is_readme(file.path)),
                     key=lambda file: (PROSE_FIRST.index(file.path) if file.path in PROSE_FIRST else len(PROSE_FIRST),
                                       file.path))
    first = readmes[:1]
    return first + [file for file in files if file not in first]


def file_block(file: RepoFile) -> str:
    """A file under its path header; the text ends with one newline."""
    text = file.text or ""
    return f"<file path={file.path}>\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}</file>\n"


def estimated_tokens(text: str, bytes_per_token: float) -> int:
    return int(len(text.encode("utf-8")) / bytes_per_token + 0.999)


def repository_documents(files: tuple[RepoFile, ...], max_document_tokens: int,
                         bytes_per_token: float) -> list[RepositoryDocument]:
    """The kept `files` as documents of at most `max_document_tokens`, cut at file boundaries."""
    groups: list[list[tuple[str, str]]] = []
    size = 0
    for file in document_order(files):
        block = file_block(file)
        tokens = estimated_tokens(block, bytes_per_token)
        if groups and size + tokens <= max_document_tokens:
            groups[-1].append((file.path, block))
            size += tokens
        else:
            groups.append([(file.path, block)])
            size = tokens
    return [RepositoryDocument("".join(block for _, block in group), tuple(path for path, _ in group), index,
                               len(groups)) for index, group in enumerate(groups)]


def line_sketch(files: tuple[RepoFile, ...], size: int = SKETCH_SIZE) -> list[str]:
    """The `size` smallest hex hashes (64 bits) of the distinct whitespace-collapsed lines of the
    files whose language is a programming language (of every file, in a repository without one):
    a sample of the set a repository is deduplicated by, in sorted order."""
    code = [file for file in files if file.language is not None and file.language.kind == "programming"]
    lines = set()
    for file in code or files:
        lines.update(hashlib.blake2b(line.encode("utf-8"), digest_size=8).hexdigest()
                     for line in collapsed_lines(file.text or ""))
    return sorted(lines)[:size]


def repository_meta(repository: Repository, selection: Selection, features: RepositoryFeatures,
                    licence: LicenseResult) -> dict:
    """What the first document of a repository records about it (extract_meta.code; the others
    repeat only the repository, licence, features and sketch, and each lists its own files)."""
    kept = {file.path for file in selection.kept}
    reasons = {item.path: item.reason for item in selection.rejected}
    return {
        "repository": repository.provenance(),
        "license": licence.expression,
        "license_class": licence.license_class,
        "path_licenses": licence.path_licenses,
        "file_licenses": {path: expression for path, expression in licence.file_licenses.items() if path in kept},
        "features": features.to_dict(),
        "sketch": line_sketch(selection.kept),
        "rejected": [{"path": item.path, "reason": item.reason} for item in selection.rejected],
        # content hashes of the vendored copies, to name the repositories they copy
        "vendored_sha256": sorted({file.sha256 for file in repository.files
                                   if reasons.get(file.path) == VENDORED}),
    }


@dataclass(frozen=True)
class MadeRepository:
    """A repository read, selected, licensed and cut into documents."""
    repository: Repository
    selection: Selection
    features: RepositoryFeatures
    license: LicenseResult
    documents: list[RepositoryDocument]

    @functools.cached_property
    def _about(self) -> dict:
        return repository_meta(self.repository, self.selection, self.features, self.license)

    @functools.cached_property
    def _kept(self) -> dict[str, RepoFile]:
        return {file.path: file for file in self.selection.kept}

    def meta(self, document: RepositoryDocument) -> dict:
        """extract_meta.code of one of its documents: the whole account on the first, the
        repository, licence and sketch on every other; each lists the files it holds."""
        about = self._about if document.chunk == 0 else {key: self._about[key] for key in SHARED_META}
        return {**about, "chunk": document.chunk, "chunks": document.chunks,
                "files": [self._kept[path].provenance() for path in document.paths]}


SHARED_META = ("repository", "license", "license_class", "features", "sketch")


def repository_group(record: dict) -> tuple[str, int] | None:
    """(group_id, group_pos) of an extracted code document: its repository (the input it was read
    from, as derived_from names it) and its place among the repository's documents, which hold
    the README first and then every file in path order (document_order). The repository's licence
    is on every one of its documents (SHARED_META), so select decides the group's licence alike
    for all of them. None for a document that is not a repository's."""
    code = (record.get("extract_meta") or {}).get("code")
    if not code or "chunk" not in code or not record.get("derived_from"):
        return None
    return f"repo-{hash64(record['derived_from']):016x}", int(code["chunk"])


@functools.cache
def _parse_gate() -> ParseGate:
    return ParseGate()  # its parsers are built once per process


def code_documents(path: str, settings: dict) -> MadeRepository:
    """The repository at `path` as documents, with `settings` the `extract.code` config section."""
    repository = read_repository(path)
    result = parse_gate(reject_files(repository, max_source_bytes=settings["max_file_bytes"]), _parse_gate())
    documents = repository_documents(result.selection.kept, settings["max_document_tokens"],
                                     settings["bytes_per_token"])
    return MadeRepository(repository, result.selection, repository_features(repository, result),
                          repository_license(repository), documents)
