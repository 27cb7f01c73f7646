"""host_stats: per host of a snapshot, how many urls it served and how much of that was
distinct content.

A crawler trap (calendar pages, session ids in urls, faceted search, endless redirects to
the same template) is a host that serves very many urls with very little distinct text.
Near-duplicate clustering removes its copies one by one, but the cluster representatives
that remain are still template pages; seen per host, the trap is obvious. These are stored
values: select decides from `select.crawler_traps` which hosts to exclude.

The counts are made inside minhash_cluster's MPI job (tokenmill.dedup.minhash_cluster), where a
snapshot's documents and their clusters already are, spread over its ranks: from the host and the
url's 64-bit hash that score stores beside each MinHash signature
(tokenmill.dedup.minhash.signature_rows), never from the documents. Distinct urls are distinct url
hashes. This module holds the table's form and what select reads of it; it imports no MPI.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SCHEMA = pa.schema([
    ("host", pa.string()),
    ("urls", pa.int64()),  # distinct urls
    ("docs", pa.int64()),
    ("distinct_content", pa.int64()),  # near-duplicate clusters among the host's documents
    ("unique_share", pa.float64()),  # distinct_content / docs
])
HOST_COLUMNS = ["host", "url_hash"]  # of the signatures


def check_host_columns(signatures_path: str, columns: list[str]) -> None:
    """`columns`: the signatures file's (its footer, which the caller has read)."""
    missing = set(HOST_COLUMNS) - set(columns)
    if missing:
        raise ValueError(f"{signatures_path} has no {', '.join(sorted(missing))} column: it was scored by an older "
                         f"tokenmill; score its part again (snakemake --forcerun score)")


def host_table(hosts: list[str], urls: np.ndarray, docs: np.ndarray, distinct_content: np.ndarray) -> pa.Table:
    """The stored table of per-host counts, in host order (UTF-8 bytes)."""
    table = pa.table({"host": pa.array(hosts, pa.string()), "urls": pa.array(urls, pa.int64()),
                      "docs": pa.array(docs, pa.int64()), "distinct_content": pa.array(distinct_content, pa.int64())})
    table = table.take(pc.sort_indices(table, sort_keys=[("host", "ascending")]))
    share = pc.divide(pc.cast(table["distinct_content"], pa.float64()), pc.cast(table["docs"], pa.float64()))
    return table.append_column("unique_share", share).cast(SCHEMA)


def host_of(url: str | None) -> str:
    """The lower-cased host name of a url; "" for a document without a parseable one."""
    if not url:
        return ""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # e.g. a malformed IPv6 literal: no host to count it under
        return ""


def crawler_traps(table: pa.Table, min_urls: int, max_unique_share: float) -> set[str]:
    """Hosts with at least `min_urls` urls of which under `max_unique_share` is distinct content."""
    return {host for host, count, share in zip(table.column("host").to_pylist(), table.column("urls").to_pylist(),
                                               table.column("unique_share").to_pylist())
            if count >= min_urls and share < max_unique_share}
