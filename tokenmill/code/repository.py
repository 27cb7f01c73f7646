"""One repository, from an archive (.tar.gz, .tgz, .tar, .tar.bz2, .tar.xz, .zip) or a directory,
read into memory without extracting anything to disk.

A repository is what a release or checkout holds: every regular file, in sorted path order, with
the single top-level folder of an archive (`NAME-VERSION/` of an sdist, `package/` of an npm
tarball) stripped. Hostile archives are expected: a member that is a link or a device, a name that
climbs out (`..`) or is absolute, a member past the size, total or count caps is not read but
listed in `Repository.skipped` with its reason, so that the yield table sees every member and a
bad member never costs the rest of the repository.

Provenance: name, version, url and the declared licence come from the root's PKG-INFO,
package.json, pyproject.toml or Cargo.toml (the first one present, in that order), else from the
archive's or folder's name; each file carries its path, size, language and (on demand) sha256.
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import os
import re
import stat
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

# Caps of the reader; a member past one is listed with the reason, never read. The per-file cap
# bounds memory for one member; the class of "too big to be source" is decided later, by
# tokenmill.code.files, with a lower threshold.
MAX_FILE_BYTES = 20 * 2**20
MAX_TOTAL_BYTES = 2**30
MAX_FILES = 100_000

# reasons of the reader (tokenmill.code.files adds its own)
SYMLINK = "symlink"
HARDLINK = "hardlink"
SPECIAL_FILE = "special_file"        # device, FIFO, anything not a regular file
UNSAFE_PATH = "unsafe_path"          # absolute, `..`, backslash or control characters
DUPLICATE_PATH = "duplicate_path"    # the same path twice in one archive: the first one is kept
ENCRYPTED = "encrypted"
UNREADABLE = "unreadable"            # a member whose bytes could not be read (a truncated archive)
UNREADABLE_ARCHIVE = "unreadable_archive"  # the archive stopped being readable at this point
TOO_LARGE = "too_large"
OVER_TOTAL_BYTES = "over_total_bytes"
OVER_FILE_COUNT = "over_file_count"

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")


@dataclass(frozen=True)
class Language:
    name: str
    kind: str                   # programming, markup, config, prose
    grammar: str | None = None  # tree-sitter-language-pack's name, where a parse is worth it


def _languages(*entries: tuple[Language, tuple[str, ...]]) -> dict[str, Language]:
    return {key: language for language, keys in entries for key in keys}


PYTHON = Language("Python", "programming", "python")
JAVASCRIPT = Language("JavaScript", "programming", "javascript")
TEXT = Language("Text", "prose")

# The one table of languages: by extension (lower case, with the dot), then by whole file name.
LANGUAGE_BY_EXTENSION = _languages(
    (PYTHON, (".py", ".pyi", ".pyw")),
    (Language("Cython", "programming"), (".pyx", ".pxd")),
    (JAVASCRIPT, (".js", ".mjs", ".cjs", ".jsx")),
    (Language("TypeScript", "programming", "typescript"), (".ts", ".mts", ".cts")),
    (Language("TSX", "programming", "tsx"), (".tsx",)),
    (Language("C", "programming", "c"), (".c", ".h")),
    (Language("C++", "programming", "cpp"), (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx")),
    (Language("C#", "programming", "csharp"), (".cs",)),
    (Language("Go", "programming", "go"), (".go",)),
    (Language("Rust", "programming", "rust"), (".rs",)),
    (Language("Java", "programming", "java"), (".java",)),
    (Language("Kotlin", "programming", "kotlin"), (".kt", ".kts")),
    (Language("Scala", "programming", "scala"), (".scala",)),
    (Language("Swift", "programming", "swift"), (".swift",)),
    (Language("Ruby", "programming", "ruby"), (".rb",)),
    (Language("PHP", "programming", "php"), (".php",)),
    (Language("Perl", "programming"), (".pl", ".pm")),
    (Language("Lua", "programming", "lua"), (".lua",)),
    (Language("R", "programming", "r"), (".r",)),
    (Language("Julia", "programming", "julia"), (".jl",)),
    (Language("Haskell", "programming", "haskell"), (".hs",)),
    (Language("Shell", "programming", "bash"), (".sh", ".bash", ".zsh")),
    (Language("Batchfile", "programming"), (".bat", ".cmd")),
    (Language("PowerShell", "programming"), (".ps1",)),
    (Language("SQL", "programming"), (".sql",)),
    (Language("HTML", "markup", "html"), (".html", ".htm")),
    (Language("CSS", "markup", "css"), (".css",)),
    (Language("SCSS", "markup", "scss"), (".scss",)),
    (Language("XML", "markup"), (".xml", ".xsd", ".xsl")),
    (Language("Jinja", "markup"), (".jinja", ".jinja2", ".j2")),
    (Language("JSON", "config", "json"), (".json",)),
    (Language("YAML", "config", "yaml"), (".yml", ".yaml")),
    (Language("TOML", "config", "toml"), (".toml",)),
    (Language("INI", "config"), (".ini", ".cfg")),
    (Language("Markdown", "prose"), (".md", ".markdown")),
    (Language("reStructuredText", "prose"), (".rst",)),
    (TEXT, (".txt",)),
)
LANGUAGE_BY_FILENAME = _languages(
    (Language("Makefile", "programming", "make"), ("makefile", "gnumakefile")),
    (Language("Dockerfile", "programming", "dockerfile"), ("dockerfile",)),
    (Language("CMake", "programming", "cmake"), ("cmakelists.txt",)),
    (Language("Ignore List", "config"), (".gitignore", ".gitattributes", ".dockerignore", ".npmignore")),
    (Language("Manifest", "config"), ("manifest.in",)),
    (TEXT, ("readme", "license", "licence", "copying", "notice", "authors", "changes", "changelog",
            "contributors", "history")),
)


# an extensionless script's interpreter (`#!/usr/bin/env node`) names its language
LANGUAGE_BY_INTERPRETER = {"python": PYTHON, "python3": PYTHON, "python2": PYTHON, "node": JAVASCRIPT,
                           "sh": LANGUAGE_BY_EXTENSION[".sh"], "bash": LANGUAGE_BY_EXTENSION[".sh"],
                           "zsh": LANGUAGE_BY_EXTENSION[".sh"], "ruby": LANGUAGE_BY_EXTENSION[".rb"],
                           "perl": LANGUAGE_BY_EXTENSION[".pl"]}
SHEBANG = re.compile(rb"#!\s*(?:\S*/)?([\w.-]+)(?:\s+(?:-\S+\s+)*([\w.-]+))?")


def language_of(path: str, head: bytes = b"") -> Language | None:
    """The language of a path by its file name, then its extension, then (`LICENSE.APACHE`) the
    name before the first dot, then the `#!` line of `head` (the file's first bytes) when it has
    no extension; None when unknown."""
    name = PurePosixPath(path).name.lower()
    if name in LANGUAGE_BY_FILENAME:
        return LANGUAGE_BY_FILENAME[name]
    suffix = PurePosixPath(name).suffix
    if suffix in LANGUAGE_BY_EXTENSION:
        return LANGUAGE_BY_EXTENSION[suffix]
    if LANGUAGE_BY_FILENAME.get(name.split(".", 1)[0]) is TEXT:
        return TEXT
    if not suffix and head.startswith(b"#!"):
        return _interpreter_language(head.split(b"\n", 1)[0])
    return None


def _interpreter_language(shebang: bytes) -> Language | None:
    match = SHEBANG.match(shebang)
    if not match:
        return None
    program = match.group(1).decode("ascii", "replace")
    if program == "env" and match.group(2):  # `#!/usr/bin/env [-S] node`
        program = match.group(2).decode("ascii", "replace")
    return LANGUAGE_BY_INTERPRETER.get(re.sub(r"[\d.]+$", "", program)) or LANGUAGE_BY_INTERPRETER.get(program)


@dataclass(frozen=True, eq=False)
class RepoFile:
    path: str       # relative to the repository root, '/'-separated
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    @cached_property
    def language(self) -> Language | None:
        return language_of(self.path, self.data[:256])

    @cached_property
    def sha256(self) -> str:
        # computed on demand: a rejected file need not be hashed
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def text(self) -> str | None:
        """The file as UTF-8 (a BOM dropped), or None when it is not."""
        try:
            return self.data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None

    def provenance(self) -> dict:
        return {"path": self.path, "size": self.size, "sha256": self.sha256,
                "language": self.language.name if self.language else None}


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str
    size: int | None = None  # as the archive declared it, when known


@dataclass(frozen=True)
class Repository:
    name: str
    version: str | None
    source: str                                # the archive or folder read
    files: tuple[RepoFile, ...]                # sorted by path
    skipped: tuple[Skipped, ...] = ()          # members not read, each with its reason, sorted by path
    url: str | None = None
    commit: str | None = None
    declared_license: str | None = None        # License-Expression / License / "license" as written
    license_classifiers: tuple[str, ...] = ()  # "License :: ..." trove classifiers
    metadata_file: str | None = None           # the file that gave name and version, if any
    extra: dict = field(default_factory=dict)

    @property
    def license_files(self) -> tuple[str, ...]:
        """LICENSE / LICENCE / COPYING / NOTICE files at the root."""
        return tuple(f.path for f in self.files
                     if "/" not in f.path and re.match(r"(licen[cs]e|copying|notice)", f.path, re.I))

    def provenance(self) -> dict:
        return {"name": self.name, "version": self.version, "url": self.url, "commit": self.commit,
                "source": self.source, "declared_license": self.declared_license,
                "license_classifiers": list(self.license_classifiers), "license_files": list(self.license_files)}


# ---------------------------------------------------------------------------------------------
# members: what an archive or a folder lists, before anything is read

@dataclass
class _Member:
    name: str           # as stored, before the top-level folder is stripped
    size: int
    problem: str | None  # a reader reason when the member is not a readable regular file
    handle: object       # what _read needs: a TarInfo, a ZipInfo or a Path


def _safe_name(name: str) -> str | None:
    """The member's name as a relative '/'-path, or None when it is unsafe to use at all."""
    if not name or "\\" in name or any(ord(ch) < 32 for ch in name) or name.startswith("/") \
            or re.match(r"[A-Za-z]:", name):
        return None
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _tar_problem(info: tarfile.TarInfo) -> str | None:
    if info.issym():
        return SYMLINK
    if info.islnk():
        return HARDLINK
    return None if info.isreg() else SPECIAL_FILE


def _tar_members(archive: tarfile.TarFile) -> tuple[list[_Member], str | None]:
    members = []
    try:
        for info in archive:  # one pass over the headers; member data is skipped, not kept
            if not info.isdir():
                members.append(_Member(info.name, info.size, _tar_problem(info), info))
    except (tarfile.TarError, OSError, EOFError) as error:
        return members, f"{type(error).__name__}: {error}"
    return members, None


def _zip_problem(info: zipfile.ZipInfo) -> str | None:
    mode = info.external_attr >> 16  # unix mode bits, where the archiver stored them
    if stat.S_ISLNK(mode):
        return SYMLINK
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # many archivers leave the type bits 0
        return SPECIAL_FILE
    return ENCRYPTED if info.flag_bits & 0x1 else None


def _zip_members(archive: zipfile.ZipFile) -> list[_Member]:
    return [_Member(info.filename, info.file_size, _zip_problem(info), info)
            for info in archive.infolist() if not info.is_dir()]


def _folder_members(root: Path) -> list[_Member]:
    members = []
    for folder, dirs, files in os.walk(root):  # os.walk does not follow links to folders
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            info = path.lstat()
            problem = SYMLINK if stat.S_ISLNK(info.st_mode) else None if stat.S_ISREG(info.st_mode) else SPECIAL_FILE
            members.append(_Member(path.relative_to(root).as_posix(), info.st_size, problem, path))
    return members


def _strip_top_folder(names: list[str | None]) -> int:
    """How many leading characters to drop: the single top-level folder that holds every member
    (0 when the members do not all sit in one)."""
    tops = {name.split("/", 1)[0] for name in names if name is not None}
    if len(tops) == 1 and all(name is None or "/" in name for name in names):
        return len(tops.pop()) + 1
    return 0


# ---------------------------------------------------------------------------------------------
# deciding which members to read, in sorted order so that caps cut at the same place every time

def _plan(members: list[_Member], strip_top_folder: bool, max_file_bytes: int, max_total_bytes: int,
          max_files: int):
    """(path, member, reason) per member, sorted by path; reason None for those to read."""
    safe = [_safe_name(member.name) for member in members]
    cut = _strip_top_folder(safe) if strip_top_folder else 0
    named = sorted(((name[cut:] if name is not None else member.name, name is None, member)
                    for name, member in zip(safe, members)), key=lambda item: (item[0], item[1]))
    plan, seen, total, count = [], set(), 0, 0
    for path, unsafe, member in named:
        if unsafe:
            reason = UNSAFE_PATH
        elif path in seen:
            reason = DUPLICATE_PATH
        else:
            reason = member.problem or _cap_reason(member.size, total, count, max_file_bytes, max_total_bytes,
                                                   max_files)
        seen.add(path)
        if reason is None:
            total, count = total + member.size, count + 1
        plan.append((path, member, reason))
    return plan


def _cap_reason(size: int, total: int, count: int, max_file_bytes: int, max_total_bytes: int,
                max_files: int) -> str | None:
    if size > max_file_bytes:
        return TOO_LARGE
    if count >= max_files:
        return OVER_FILE_COUNT
    if total + size > max_total_bytes:
        return OVER_TOTAL_BYTES
    return None


def _read(opened, member: _Member) -> bytes:
    if isinstance(opened, tarfile.TarFile):
        handle = opened.extractfile(member.handle)
        return handle.read(member.size + 1)  # one byte more: a size that lies shows as a mismatch
    if isinstance(opened, zipfile.ZipFile):
        with opened.open(member.handle) as handle:
            return handle.read(member.size + 1)
    return member.handle.read_bytes()


def _collect(opened, plan) -> tuple[list[RepoFile], list[Skipped]]:
    files, skipped = [], []
    # read in the archive's own order: a compressed tar only streams forwards
    order = sorted((item for item in plan if item[2] is None), key=lambda item: _offset(item[1]))
    data_by_path = {}
    for path, member, _ in order:
        try:
            data = _read(opened, member)
        except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError):
            data = None
        data_by_path[path] = data if data is not None and len(data) == member.size else None
    for path, member, reason in plan:
        if reason is None and data_by_path[path] is not None:
            files.append(RepoFile(path, data_by_path[path]))
        else:
            skipped.append(Skipped(path, reason or UNREADABLE, member.size))
    return files, skipped


def _offset(member: _Member) -> int:
    handle = member.handle
    return getattr(handle, "offset", None) or getattr(handle, "header_offset", 0)


# ---------------------------------------------------------------------------------------------
# provenance

def _name_and_version_from(stem: str) -> tuple[str, str | None]:
    """`python-dateutil-2.8.2` -> (`python-dateutil`, `2.8.2`): the version starts at the last
    '-' or '_' followed by a digit."""
    match = re.match(r"(.+?)[-_](v?\d[\w.+!-]*)$", stem)
    return (match.group(1), match.group(2)) if match else (stem, None)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _known(value: str | None) -> str | None:
    """A metadata field's value, None for setuptools' "UNKNOWN" placeholder."""
    return value.strip() if value and value.strip().upper() not in ("UNKNOWN", "") else None


def _source_url(project_urls: list[str]) -> str | None:
    """The code's address among PKG-INFO's `Project-URL: label, url` lines (not the docs' or the
    changelog's)."""
    labelled = [[part.strip() for part in value.split(",", 1)] for value in project_urls if "," in value]
    for wanted in ("source", "repository", "code", "github", "homepage"):
        for label, address in labelled:
            if wanted in label.lower():
                return address
    return None


def _from_pkg_info(text: str) -> dict:
    message = email.parser.Parser().parsestr(text, headersonly=True)
    license_text = _known(message.get("License-Expression") or message.get("License"))
    return {"name": message.get("Name"), "version": message.get("Version"),
            "url": _source_url(message.get_all("Project-URL") or []) or _known(message.get("Home-page")),
            "declared_license": license_text.strip() if license_text else None,
            "license_classifiers": tuple(c for c in message.get_all("Classifier") or [] if c.startswith("License ::"))}


def _from_package_json(text: str) -> dict:
    package = json.loads(text)
    repository = package.get("repository")
    url = repository.get("url") if isinstance(repository, dict) else repository
    license_field = package.get("license")
    if isinstance(license_field, dict):  # the old {"type": ..., "url": ...} form
        license_field = license_field.get("type")
    return {"name": package.get("name"), "version": package.get("version"), "url": url or package.get("homepage"),
            "declared_license": license_field if isinstance(license_field, str) else None}


def _from_pyproject(text: str) -> dict:
    data = tomllib.loads(text)
    project = data.get("project") or data.get("tool", {}).get("poetry") or {}
    license_field = project.get("license")
    if isinstance(license_field, dict):  # PEP 621's {text = ...} / {file = ...}
        license_field = license_field.get("text")
    urls = project.get("urls") or {}
    url = project.get("repository") or project.get("homepage") or next(iter(urls.values()), None)
    version = project.get("version")
    return {"name": project.get("name"), "version": version if isinstance(version, str) else None,
            "url": url, "declared_license": license_field if isinstance(license_field, str) else None}


def _from_cargo(text: str) -> dict:
    package = tomllib.loads(text).get("package") or {}
    version = package.get("version")
    return {"name": package.get("name"), "version": version if isinstance(version, str) else None,
            "url": package.get("repository") or package.get("homepage"), "declared_license": package.get("license")}


METADATA_READERS = (("PKG-INFO", _from_pkg_info), ("package.json", _from_package_json),
                    ("pyproject.toml", _from_pyproject), ("Cargo.toml", _from_cargo))


def _metadata(files: list[RepoFile]) -> dict:
    by_path = {f.path: f for f in files}
    for filename, reader in METADATA_READERS:
        found = by_path.get(filename)
        if found is None or found.text is None:
            continue
        try:
            fields = reader(found.text)
        except (ValueError, tomllib.TOMLDecodeError, AttributeError, TypeError):
            continue  # a metadata file that does not parse: try the next kind, then the name
        if fields.get("name"):
            return {**{key: value for key, value in fields.items() if value}, "metadata_file": filename}
    return {}


# ---------------------------------------------------------------------------------------------

def _open(path: Path):
    lower = path.name.lower()
    if path.is_dir():
        return None
    if lower.endswith(".zip"):
        return zipfile.ZipFile(path)
    return tarfile.open(path, mode="r:*")


def read_repository(path: str | os.PathLike, *, url: str | None = None, commit: str | None = None,
                    max_file_bytes: int = MAX_FILE_BYTES, max_total_bytes: int = MAX_TOTAL_BYTES,
                    max_files: int = MAX_FILES) -> Repository:
    """The repository at `path` (an archive or a directory), every member read or skipped with a
    reason. `url` and `commit`, when the caller knows them (a git checkout), win over what the
    metadata says. An archive that cannot be opened at all raises (tarfile.ReadError,
    zipfile.BadZipFile); one that breaks part-way keeps what was read before the break."""
    path = Path(path)
    opened = _open(path)
    try:
        broken = None
        if opened is None:
            members = _folder_members(path)
        elif isinstance(opened, zipfile.ZipFile):
            members = _zip_members(opened)
        else:
            members, broken = _tar_members(opened)
        # a folder is the root itself; an archive's one top folder is packaging, not part of the repository
        plan = _plan(members, opened is not None, max_file_bytes, max_total_bytes, max_files)
        files, skipped = _collect(opened, plan)
    finally:
        if opened is not None:
            opened.close()
    if broken is not None:
        skipped.append(Skipped("", UNREADABLE_ARCHIVE))
    fields = _metadata(files)
    fallback_name, fallback_version = _name_and_version_from(_stem(path))
    return Repository(
        name=fields.get("name") or fallback_name, version=fields.get("version") or fallback_version,
        source=str(path), files=tuple(files), skipped=tuple(skipped), url=url or fields.get("url"), commit=commit,
        declared_license=fields.get("declared_license"), license_classifiers=fields.get("license_classifiers", ()),
        metadata_file=fields.get("metadata_file"), extra={"archive_error": broken} if broken else {})
