"""The parse gate and the per-repository features.

Each kept file whose language has a grammar (tokenmill.code.repository's table) is parsed with
tree-sitter; the grammars come compiled inside the tree-sitter-language-pack 0.13 wheel (its 1.x
releases download them at run time, which the pipeline may not do). A file whose parse tree has
more than MAX_ERROR_SHARE of its bytes under ERROR nodes (a MISSING node counts one byte) is
rejected `unparseable`. A few errors are tolerated: tree-sitter's grammars trail the languages
(a C macro the grammar cannot see through, a Python 2 `print x` in an old package), and such a
file is still code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tree_sitter_language_pack import get_parser

from tokenmill.code.files import Rejected, Selection, is_test_path, reject_files
from tokenmill.code.repository import RepoFile, Repository

UNPARSEABLE = "unparseable"

# Calibrated on data/bench/code-repos: of the 1,700 files with a grammar the worst kept one has
# 0.9% of its bytes in ERROR nodes (poetry-core's fixture extended.c, a CPython macro); a file of
# another language or a truncated one has tens of percent.
MAX_ERROR_SHARE = 0.02


class ParseGate:
    """tree-sitter parsers, one per grammar, made on first use."""

    def __init__(self) -> None:
        self._parsers = {}

    def parser(self, grammar: str):
        if grammar not in self._parsers:
            self._parsers[grammar] = get_parser(grammar)
        return self._parsers[grammar]

    def error_share(self, file: RepoFile) -> float | None:
        """Share of the file's bytes in ERROR nodes, or None when its language has no grammar."""
        language = file.language
        if language is None or language.grammar is None:
            return None
        tree = self.parser(language.grammar).parse(file.data)
        return _error_bytes(tree.root_node) / max(1, len(file.data))


def _error_bytes(root) -> int:
    if not root.has_error:
        return 0
    total, stack = 0, [root]
    while stack:
        node = stack.pop()
        if node.is_error:
            total += node.end_byte - node.start_byte  # an ERROR's subtree is not looked into
        elif node.is_missing:
            total += 1
        else:
            stack.extend(child for child in node.children if child.has_error or child.is_missing)
    return total


@dataclass(frozen=True)
class ParseResult:
    selection: Selection
    parsed: int         # files that had a grammar
    unparseable: int


def parse_gate(selection: Selection, gate: ParseGate | None = None, *,
               max_error_share: float = MAX_ERROR_SHARE) -> ParseResult:
    """`selection` with the kept files that do not parse moved to the rejected ones."""
    gate = gate or ParseGate()
    kept, failed, parsed = [], [], 0
    for file in selection.kept:
        share = gate.error_share(file)
        parsed += share is not None
        if share is not None and share > max_error_share:
            failed.append(Rejected(file.path, UNPARSEABLE))
        else:
            kept.append(file)
    rejected = tuple(sorted(selection.rejected + tuple(failed), key=lambda item: item.path))
    return ParseResult(Selection(tuple(kept), rejected), parsed, len(failed))


@dataclass(frozen=True)
class RepositoryFeatures:
    name: str
    version: str | None
    file_count: int                 # kept files
    bytes: int                      # of the kept files
    languages: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {"files", "bytes"}
    parse_failure_share: float = 0.0  # unparseable among the files that had a grammar
    test_file_share: float = 0.0      # of the kept files
    members: int = 0                  # every member of the repository, kept or not
    rejections: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def repository_features(repository: Repository, result: ParseResult) -> RepositoryFeatures:
    kept = result.selection.kept
    languages: dict[str, dict[str, int]] = {}
    for file in kept:
        entry = languages.setdefault(file.language.name if file.language else "unknown", {"files": 0, "bytes": 0})
        entry["files"] += 1
        entry["bytes"] += file.size
    tests = sum(is_test_path(file.path) for file in kept)
    return RepositoryFeatures(
        name=repository.name, version=repository.version, file_count=len(kept), bytes=sum(f.size for f in kept),
        languages=dict(sorted(languages.items())),
        parse_failure_share=result.unparseable / result.parsed if result.parsed else 0.0,
        test_file_share=tests / len(kept) if kept else 0.0,
        members=len(kept) + len(result.selection.rejected),
        rejections=dict(sorted(Counter(r.reason for r in result.selection.rejected).items())))


def select_code(repository: Repository, gate: ParseGate | None = None) -> tuple[Selection, RepositoryFeatures]:
    """Rejection, then the parse gate, then the features: the whole of the code sub-pipeline's
    file selection for one repository."""
    result = parse_gate(reject_files(repository), gate)
    return result.selection, repository_features(repository, result)
