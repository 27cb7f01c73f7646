"""Rebuild htmldate-test-pages.tar.zst: the date-annotated pages of adbar/htmldate's evaluation
(tests/eval_default.json and tests/eval_mediacloud_2020.json) whose site is neither a site of
trafilatura's 990-page evaluation (its 92 pages here are blockml's test set, the other 898 are held
out by the maintainers) nor a site of the aeb gold pages (so their out-of-fold F1 stays honest).

    python data/train/extractor/pack_htmldate_pages.py HTMLDATE_CLONE OUT

HTMLDATE_CLONE is a git clone of https://github.com/adbar/htmldate (read at its HEAD, with
`git show`); the pages go into the archive unchanged, with URLS.tsv (path, url). The evaluation's
urls are the repository's list of them (blockml_train.EVALUATION_URLS).
"""

import io
import json
import subprocess
import sys
import tarfile
from urllib.parse import urlsplit

import zstandard

from tokenmill.extract.blockml_train import (EVALUATION_URLS, GOLD, MAX_HTML_BYTES, REPOSITORY, read_gold, read_urls,
                                             unarchived)
from tokenmill.io import atomic_output

INDEXES = (("tests/eval_default.json", ("tests/eval", "tests/cache")),
           ("tests/eval_mediacloud_2020.json", ("tests/test_set",)))
SECOND_LEVEL = {"co", "com", "org", "net", "ac", "gov", "edu", "or", "ne", "gv"}


def site(url: str) -> str:
    """The registered domain, roughly: example.co.uk, example.com (sub-domains fold into it); an
    archived copy's (web.archive.org/web/<time>/<url>) is its url's."""
    labels = (urlsplit(unarchived(url.strip())).hostname or "").lower().removeprefix("www.").split(".")
    country_second_level = len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in SECOND_LEVEL
    return ".".join(labels[-3 if country_second_level else -2:])


def main(clone: str, out: str) -> None:
    def show(path: str) -> bytes:
        return subprocess.run(["git", "-C", clone, "show", f"HEAD:{path}"], capture_output=True, check=True).stdout

    excluded = {site(url) for url in [*read_urls(REPOSITORY / EVALUATION_URLS), *read_gold(REPOSITORY / GOLD)]}
    listed = subprocess.run(["git", "-C", clone, "ls-tree", "-r", "--name-only", "HEAD", "tests/"],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    paths, pages = set(listed), {}
    for index, folders in INDEXES:
        for url, entry in sorted(json.loads(show(index)).items()):
            path = next((f"{folder}/{entry['file']}" for folder in folders if f"{folder}/{entry['file']}" in paths), None)
            if site(url) in excluded or path is None or not path.endswith(".html") or path in pages:
                continue
            data = show(path)
            if len(data) <= MAX_HTML_BYTES:
                pages[path] = (url, data)
    listing = "".join(f"{path}\t{url}\n" for path, (url, _) in sorted(pages.items())).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in [("URLS.tsv", listing)] + [(path.removeprefix("tests/"), data)
                                                    for path, (_, data) in sorted(pages.items())]:
            info = tarfile.TarInfo(f"htmldate/{name}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            archive.addfile(info, io.BytesIO(data))
    with atomic_output(out) as temporary:
        temporary.write_bytes(zstandard.ZstdCompressor(level=19).compress(raw.getvalue()))
    print(f"{len(pages)} pages of {len({site(url) for url, _ in pages.values()})} sites -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
