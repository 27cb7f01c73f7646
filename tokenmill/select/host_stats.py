"""host_stats: per host of a snapshot, how many urls it served and how much of that was
distinct content.

A crawler trap (calendar pages, session ids in urls, faceted search, endless redirects to
the same template) is a host that serves very many urls with very little distinct text.
Near-duplicate clustering removes its copies one by one, but the cluster representatives
that remain are still template pages; seen per host, the trap is obvious. These are stored
values: select decides from `select.crawler_traps` which hosts to exclude.
"""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import urlsplit

import pyarrow as pa

from tokenmill.io import read_jsonl_zst, read_parquet, write_parquet

SCHEMA = pa.schema([
    ("host", pa.string()),
    ("urls", pa.int64()),  # distinct urls
    ("docs", pa.int64()),
    ("distinct_content", pa.int64()),  # near-duplicate clusters among the host's documents
    ("unique_share", pa.float64()),  # distinct_content / docs
])


def host_of(url: str | None) -> str:
    """The lower-cased host name of a url; "" for a document without a parseable one."""
    if not url:
        return ""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # e.g. a malformed IPv6 literal: no host to count it under
        return ""


def host_stats(parts: list[tuple[str, str]], out_path: str) -> pa.Table:
    """`parts`: (docs, minhash_cluster attributes) of every part of one snapshot."""
    urls: dict[str, set[str]] = defaultdict(set)
    docs: dict[str, int] = defaultdict(int)
    clusters: dict[str, set[str]] = defaultdict(set)
    for docs_path, dedup_path in parts:
        cluster_ids = read_parquet(dedup_path, columns=["dup_cluster_id"]).column("dup_cluster_id").to_pylist()
        for doc, cluster_id in zip(read_jsonl_zst(docs_path), cluster_ids, strict=True):
            host = host_of(doc.get("url"))
            if host:
                urls[host].add(doc["url"])
                docs[host] += 1
                clusters[host].add(cluster_id)
    hosts = sorted(urls)
    table = pa.Table.from_pydict({
        "host": hosts,
        "urls": [len(urls[h]) for h in hosts],
        "docs": [docs[h] for h in hosts],
        "distinct_content": [len(clusters[h]) for h in hosts],
        "unique_share": [len(clusters[h]) / docs[h] for h in hosts],
    }, schema=SCHEMA)
    write_parquet(out_path, table)
    return table


def crawler_traps(table: pa.Table, min_urls: int, max_unique_share: float) -> set[str]:
    """Hosts with at least `min_urls` urls of which under `max_unique_share` is distinct content."""
    return {host for host, count, share in zip(table.column("host").to_pylist(), table.column("urls").to_pylist(),
                                               table.column("unique_share").to_pylist())
            if count >= min_urls and share < max_unique_share}
