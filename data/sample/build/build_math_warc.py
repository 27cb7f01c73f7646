"""Wrap the two real English Wikipedia pages with formulas of data/bench/math-html (each formula
written three times: MathML with its TeX annotation, alttext and a fallback image's alt) as WARC
response records, so that the demo carries math through the whole graph.

The pages and their URLs are real; the HTTP and WARC envelopes are written here, as for the aeb
articles (build_aeb_warc.py): status 200, Content-Type text/html; charset=utf-8, a fixed WARC-Date
that is the date this file was built (the pages' fetch time is unknown), record ids uuid5(URL).
Deterministic: rebuilding gives the same bytes.

usage: python build_math_warc.py OUT_FILE   (from the repository root)
"""

import gzip
import io
import sys
import uuid
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WARC_DATE = "2026-12-01T00:00:00Z"
MATH_PAGES = Path("data/bench/math-html")
PAGES = {  # page -> the url it was saved from
    "readability/wikipedia-3.source.html.gz": "https://en.wikipedia.org/wiki/Hermitian_matrix",
    "trafilatura/en.wikipedia.org.tsne.html.gz":
        "https://en.wikipedia.org/wiki/T-distributed_stochastic_neighbor_embedding",
}


def main(out_file: str) -> None:
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    for page, url in PAGES.items():
        html = gzip.decompress((MATH_PAGES / page).read_bytes())
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                           ("Content-Length", str(len(html)))], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            url, "response", payload=io.BytesIO(html), http_headers=http,
            warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>",
                               "WARC-Date": WARC_DATE})
        writer.write_record(record)
    Path(out_file).write_bytes(buffer.getvalue())


if __name__ == "__main__":
    main(sys.argv[1])
