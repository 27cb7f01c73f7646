"""host_stats: per host of a snapshot, how many urls it served and how much of that was
distinct content.

A crawler trap (calendar pages, session ids in urls, faceted search, endless redirects to
the same template) is a host that serves very many urls with very little distinct text.
Near-duplicate clustering removes its copies one by one, but the cluster representatives
that remain are still template pages; seen per host, the trap is obvious. These are stored
values: select decides from `select.crawler_traps` which hosts to exclude.

The job reads three columns per document, never the documents, whose text is most of a
snapshot's bytes: the host and the url's 64-bit hash that score stores beside each MinHash
signature (tokenmill.dedup.minhash.signature_rows), and the near-duplicate cluster that
minhash_cluster gave it. Distinct urls are distinct url hashes.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenmill.io import read_parquet, write_parquet

SCHEMA = pa.schema([
    ("host", pa.string()),
    ("urls", pa.int64()),  # distinct urls
    ("docs", pa.int64()),
    ("distinct_content", pa.int64()),  # near-duplicate clusters among the host's documents
    ("unique_share", pa.float64()),  # distinct_content / docs
])
SIGNATURE_COLUMNS = ["host", "url_hash"]
PART_HOSTS = pa.schema([("host", pa.string()), ("url_hash", pa.uint64()), ("dup_cluster_id", pa.string())])


def host_of(url: str | None) -> str:
    """The lower-cased host name of a url; "" for a document without a parseable one."""
    if not url:
        return ""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # e.g. a malformed IPv6 literal: no host to count it under
        return ""


def _part_hosts(signatures_path: str, dedup_path: str) -> pa.Table:
    missing = set(SIGNATURE_COLUMNS) - set(pq.read_schema(signatures_path).names)
    if missing:
        raise ValueError(f"{signatures_path} has no {', '.join(sorted(missing))} column: it was scored by an older "
                         f"tokenmill; score its part again (snakemake --forcerun score)")
    hosts = read_parquet(signatures_path, columns=SIGNATURE_COLUMNS)
    clusters = read_parquet(dedup_path, columns=["dup_cluster_id"]).column("dup_cluster_id")
    if len(clusters) != hosts.num_rows:
        raise ValueError(f"{dedup_path} has {len(clusters)} rows and its part's signatures {signatures_path} "
                         f"{hosts.num_rows}")
    return hosts.append_column("dup_cluster_id", clusters)


def host_stats(parts: list[tuple[str, str]], out_path: str) -> pa.Table:
    """`parts`: (signatures, minhash_cluster attributes) of every part of one snapshot."""
    hosts = pa.concat_tables([_part_hosts(*part) for part in parts]) if parts else PART_HOSTS.empty_table()
    hosts = hosts.filter(pc.not_equal(hosts["host"], ""))
    every_value = pc.CountOptions(mode="all")  # a document outside every cluster (null) counts once, as before
    grouped = hosts.group_by("host").aggregate([
        ("url_hash", "count_distinct", every_value), ("url_hash", "count", every_value),
        ("dup_cluster_id", "count_distinct", every_value)]).sort_by("host")
    docs, distinct_content = grouped["url_hash_count"], grouped["dup_cluster_id_count_distinct"]
    table = pa.table({
        "host": grouped["host"],
        "urls": grouped["url_hash_count_distinct"],
        "docs": docs,
        "distinct_content": distinct_content,
        "unique_share": pc.divide(pc.cast(distinct_content, pa.float64()), pc.cast(docs, pa.float64())),
    }, schema=SCHEMA)
    write_parquet(out_path, table)
    return table


def crawler_traps(table: pa.Table, min_urls: int, max_unique_share: float) -> set[str]:
    """Hosts with at least `min_urls` urls of which under `max_unique_share` is distinct content."""
    return {host for host, count, share in zip(table.column("host").to_pylist(), table.column("urls").to_pylist(),
                                               table.column("unique_share").to_pylist())
            if count >= min_urls and share < max_unique_share}
