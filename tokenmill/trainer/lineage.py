"""lineage: from a token of a stream back to the document it came from: its shard, its place in
the shard, and the extracted record (doc_id, source, url, fetch time, licence) with the records
it derives from (a synthetic document's source document, in the source it rewrote). Each shard's
.docs.parquet names the (snapshot, part, row) of every document; the records are the extract
step's docs in the same results folder (tokenmill.layout)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tokenmill.io import read_jsonl_zst
from tokenmill.layout import OUTPUTS
from tokenmill.trainer.reader import LoaderError
from tokenmill.trainer.schedule import Stream

MAX_DERIVATIONS = 16  # a derived_from chain longer than this is cut, in case it loops


class Lineage:
    def __init__(self, root: Path, shards: list[dict]):
        """`root`: the manifest's folder; `shards`: the manifest's shards (a stream's shard numbers index them)."""
        self.root = root
        self.shards = shards
        self.results = root.parent.parent  # the manifest is results/shards/{version}/manifest.json

    def origin(self, stream: Stream, offset: int) -> dict:
        """Where token `offset` of `stream` comes from: its shard, its document's number in the shard,
        its place in the document, the document's doc_id, source, url, fetch_ts, license_id and
        derived_from, and the chain of documents it derives from."""
        document = int(np.searchsorted(stream.starts, offset, side="right")) - 1
        shard = self.shards[int(stream.shards[document])]
        in_shard = int(stream.documents[document])
        docs = pq.read_table(self.root / f"{shard['path']}.docs.parquet").slice(in_shard, 1).to_pylist()[0]
        record = self._document(shard["source"], docs["snapshot_id"], docs["part"], docs["row"])
        chain = self.derivations(record, shard["source"])
        return {"shard": shard["path"], "document_in_shard": in_shard,
                "token_in_document": offset - int(stream.starts[document]),
                **{key: record.get(key) for key in ("doc_id", "source", "url", "fetch_ts", "license_id",
                                                    "derived_from")},
                "derived_chain": [{key: r.get(key) for key in ("doc_id", "url", "fetch_ts", "license_id")}
                                  for r in chain[1:]]}

    def derivations(self, record: dict, source: str) -> list[dict]:
        """The record, then the records it derives from, each the parent of the one before: a
        rewrite's source document straight from where its extract_meta says it is (another
        source), any other document by its derived_from among the records of its own source."""
        chain = [record]
        while chain[-1].get("derived_from") and len(chain) <= MAX_DERIVATIONS:
            origin = (chain[-1].get("extract_meta") or {}).get("synthetic", {}).get("origin")
            if origin is not None:
                parent = self._document(origin["source"], origin["snapshot"], origin["part"], origin["row"])
                source = origin["source"]
            else:
                parent = self._find(source, chain[-1]["derived_from"])
            if parent is None or parent["doc_id"] != chain[-1]["derived_from"]:
                break
            chain.append(parent)
        return chain

    def _docs_path(self, source: str, snapshot: str, part: str) -> Path:
        return self.results / OUTPUTS["docs"].format(source=source, snapshot=snapshot, part=part)

    def _document(self, source: str, snapshot: str, part: str, row: int) -> dict:
        for number, record in enumerate(read_jsonl_zst(self._docs_path(source, snapshot, part))):
            if number == row:
                return record
        raise LoaderError(f"{self._docs_path(source, snapshot, part)} has no row {row}")

    def _find(self, source: str, doc_id: str) -> dict | None:
        # every snapshot and part of the source: the layout's docs path without {snapshot}/{part}
        source_docs = self.results / str(Path(OUTPUTS["docs"]).parents[1]).format(source=source)
        for path in sorted(source_docs.rglob("*.jsonl.zst")):
            for record in read_jsonl_zst(path):
                if record["doc_id"] == doc_id:
                    return record
        return None
