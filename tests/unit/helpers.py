"""Small real inputs for the tokenize and shard tests, built from the bundled sample."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import sample
from mpi4py import MPI

from tokenmill.dedup.cluster import ClusterPart, ClusterSettings, run
from tokenmill.dedup.minhash import MinHashParams, signatures_part
from tokenmill.extract import PartInfo, extract_part
from tokenmill.langid import bundled_model_path, langid_part
from tokenmill.select import select_part

EXTRACT_SETTINGS = {"max_bytes": 8 << 20, "fast": False, "favor_precision": True, "include_tables": True,
                    "zstd_level": 6, "fields": {"text": "text", "id": "id", "url": "url", "fetch_ts": "created"}}
POLICY = {"languages": None, "min_lang_conf": 0.0, "lang_conf": {}, "min_chars": 0, "keep_truncated_records": True,
          "drop_exact_duplicates": False, "drop_near_duplicates": False, "drop_cross_snapshot_duplicates": False,
          "boilerplate_lines": {"min_count": 3, "rate": 1e-7}}


def prepared_part(tmp: Path, lang: str) -> tuple[str, str]:
    """(docs, select) paths of one lingua JSONL part, extracted, language-tagged, deduplicated
    (a one-rank minhash_cluster) and selected."""
    docs, select = tmp / f"{lang}.docs.jsonl.zst", tmp / f"{lang}.select.parquet"
    extract_part(sample("jsonl", "lingua-sentences", f"lingua-{lang}.jsonl.gz"), "jsonl",
                 PartInfo("lingua", "s1", lang, "academic", "Apache-2.0"), EXTRACT_SETTINGS,
                 str(docs), str(tmp / f"{lang}.q.jsonl.zst"), str(tmp / f"{lang}.stats.json"))
    langid = tmp / f"{lang}.langid.parquet"
    langid_part(str(docs), str(langid), bundled_model_path(), 64, 20000)
    signatures, dedup = tmp / f"{lang}.sig.parquet", tmp / f"{lang}.dedup.parquet"
    signatures_part(str(docs), str(signatures), MinHashParams())
    run(MPI.COMM_SELF, [ClusterPart("lingua", "s1", lang, str(signatures), str(dedup))], ClusterSettings())
    select_part(str(docs), str(langid), str(dedup), str(select), POLICY)
    return str(docs), str(select)
