"""Wrap the 181 real article pages of scrapinghub/article-extraction-benchmark as WARC
response records, split into a few per-record-gzip WARC files.

The pages and their URLs are real; the HTTP and WARC envelopes are written here:
status 200, Content-Type text/html without a charset (so decoding must sniff), and a
fixed WARC-Date that is the date this file was built, not the pages' fetch time (unknown).
Deterministic: record ids are uuid5 of the URL, so rebuilding gives the same bytes.

usage: python build_aeb_warc.py SHARED_DATA_DIR OUT_DIR [N_FILES]
"""

import gzip
import io
import json
import sys
import uuid
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WARC_DATE = "2026-11-29T00:00:00Z"


def main(shared: str, out_dir: str, n_files: int = 4) -> None:
    root = Path(shared) / "html-scrapinghub-aeb"
    truth = json.loads((root / "ground-truth.json").read_text())
    keys = sorted(truth)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for index in range(n_files):
        buffer = io.BytesIO()
        writer = WARCWriter(buffer, gzip=True)
        for key in keys[index::n_files]:
            url = truth[key]["url"]
            html = gzip.decompress((root / "html" / f"{key}.html.gz").read_bytes())
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"),
                                               ("Content-Length", str(len(html)))], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(html), http_headers=http,
                warc_headers_dict={
                    "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>",
                    "WARC-Date": WARC_DATE,
                })
            writer.write_record(record)
        (out / f"aeb-articles-{index:04d}.warc.gz").write_bytes(buffer.getvalue())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(arg) for arg in sys.argv[3:]))
