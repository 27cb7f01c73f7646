"""Distributions of a dataset version, per snapshot: what the yield table's totals hide (tokens by
language, document lengths, score histograms, duplicate cluster sizes, hosts, quarantine reasons)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np

from tokenmill.io import read_json, read_parquet, read_part_rows, write_json, write_tsv

# characters per document; the edges are the lower bounds of the bins, the last bin is open
LENGTH_EDGES = [0, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000]
SCORE_EDGES = [round(x, 2) for x in np.linspace(0.0, 0.95, 20)]  # probabilities or percentile ranks: 1.0 is in the last bin
CLUSTER_SIZE_EDGES = [1, 2, 3, 5, 9, 17, 33, 65, 129, 257]  # documents per near-duplicate cluster
SCORES = ("quality_fasttext", "quality_encoder", "select_quality")
TOP_HOSTS = 25


@dataclass
class PartFiles:
    """The per-part files the distributions read (paths from the plan)."""

    source: str
    snapshot: str
    part: str
    stats: str
    select: str
    tokenize: str
    dedup: str
    quality: str
    encoder: str
    decontaminate: str


def _bins(values, edges: list[float]) -> np.ndarray:
    """The bin of each value: bin i is [edges[i], edges[i+1]), the last one open-ended."""
    return np.searchsorted(np.asarray(edges[1:], dtype=np.float64), np.asarray(values, dtype=np.float64), side="right")


def _histogram(values, edges: list[float], weights=None) -> list[int]:
    return np.bincount(_bins(values, edges), weights=weights, minlength=len(edges)).astype(np.int64).tolist()


def _add(counts: list[int], more: list[int]) -> list[int]:
    return [a + b for a, b in zip(counts, more)] if counts else list(more)


@dataclass
class _Snapshot:
    docs: int = 0
    selected_docs: int = 0
    tokens: int = 0
    length_extracted: list = field(default_factory=list)
    length_selected: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)  # score -> {"all": counts, "selected": counts}
    cluster_sizes: Counter = field(default_factory=Counter)  # cluster size -> clusters
    languages: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # lang -> [docs, tokens]
    hosts: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))  # host -> [docs, kept docs, tokens]
    quarantine: Counter = field(default_factory=Counter)


@dataclass
class Distributions:
    snapshots: dict = field(default_factory=lambda: defaultdict(_Snapshot))  # (source, snapshot) -> _Snapshot

    def add_part(self, part: PartFiles) -> None:
        into = self.snapshots[part.source, part.snapshot]
        stats = read_json(part.stats)
        into.quarantine.update({f"quarantine:{reason}": count for reason, count in stats["quarantined"].items()})
        into.quarantine.update({"no_main_text": stats["no_text"], "read_error": len(stats["read_errors"])})

        selection = read_parquet(part.select, columns=["row", "selected", "lang", "quality", "chars"])
        rows = selection.column("row").to_numpy()
        selected = selection.column("selected").to_numpy(zero_copy_only=False)
        tokens = np.zeros(len(rows), dtype=np.int64)
        tokenized = read_parquet(part.tokenize, columns=["row", "n_tokens"])
        tokens[np.searchsorted(rows, tokenized.column("row").to_numpy())] = tokenized.column("n_tokens").to_numpy()
        into.docs += len(rows)
        into.selected_docs += int(selected.sum())
        into.tokens += int(tokens.sum())

        chars = selection.column("chars").to_numpy()
        into.length_extracted = _add(into.length_extracted, _histogram(chars, LENGTH_EDGES))
        into.length_selected = _add(into.length_selected, _histogram(chars[selected], LENGTH_EDGES))
        scores = {
            "quality_fasttext": read_parquet(part.quality, columns=["quality_fasttext"]).column(0),
            "quality_encoder": read_part_rows(part.encoder, part.part, ["quality_encoder"]).column("quality_encoder"),
            "select_quality": selection.column("quality"),
        }
        for name, column in scores.items():
            values = column.to_numpy(zero_copy_only=False).astype(np.float64)
            known = ~np.isnan(values)  # a document no classifier scored (another language) has no score
            into.scores.setdefault(name, {"all": [], "selected": []})
            into.scores[name]["all"] = _add(into.scores[name]["all"], _histogram(values[known], SCORE_EDGES))
            into.scores[name]["selected"] = _add(into.scores[name]["selected"],
                                                 _histogram(values[known & selected], SCORE_EDGES))

        clusters = read_parquet(part.dedup, columns=["is_cluster_representative", "dup_cluster_size"])
        representatives = clusters.column("is_cluster_representative").to_numpy(zero_copy_only=False)
        into.cluster_sizes.update(clusters.column("dup_cluster_size").to_numpy()[representatives].tolist())

        for lang, kept, count in zip(selection.column("lang").to_pylist(), selected, tokens):
            if kept:
                into.languages[lang or "unknown"][0] += 1
                into.languages[lang or "unknown"][1] += int(count)
        urls = read_parquet(part.decontaminate, columns=["url"]).column("url").to_pylist()
        for url, kept, count in zip(urls, selected, tokens):
            host = into.hosts[(urlsplit(url).hostname or "") if url else ""]
            host[0] += 1
            host[1] += int(kept)
            host[2] += int(count)

    def rows(self) -> list[dict]:
        """One record per snapshot, in (source, snapshot) order; a host is new when no earlier
        snapshot of its source (by snapshot id, which sorts in time for crawl ids) had it."""
        out, seen_hosts = [], defaultdict(set)
        for (source, snapshot), data in sorted(self.snapshots.items()):
            hosts = set(data.hosts) - {""}
            new_hosts = hosts - seen_hosts[source]
            seen_hosts[source] |= hosts
            ranked = sorted(((h, c) for h, c in data.hosts.items() if h), key=lambda item: (-item[1][2], item[0]))
            out.append({
                "source": source, "snapshot": snapshot, "docs": data.docs, "selected_docs": data.selected_docs,
                "tokens": data.tokens, "hosts": len(hosts), "new_hosts": len(new_hosts),
                "new_host_rate": round(len(new_hosts) / len(hosts), 6) if hosts else None,
                "length_extracted": data.length_extracted, "length_selected": data.length_selected,
                "scores": data.scores,
                "cluster_sizes": _histogram(list(data.cluster_sizes), CLUSTER_SIZE_EDGES,
                                            weights=list(data.cluster_sizes.values())),
                "languages": [{"lang": lang, "docs": docs, "tokens": tokens}
                              for lang, (docs, tokens) in sorted(data.languages.items(), key=lambda i: (-i[1][1], i[0]))],
                "top_hosts": [{"host": host, "docs": docs, "selected_docs": kept, "tokens": tokens}
                              for host, (docs, kept, tokens) in ranked[:TOP_HOSTS]],
                "quarantine": {reason: count for reason, count in sorted(data.quarantine.items()) if count},
            })
        return out


def write_distributions(parts: list[PartFiles], out_dir: str) -> dict:
    """distributions.json (every distribution per snapshot, with the bin edges), and the tables a
    person greps: tokens_by_language.tsv, top_hosts.tsv, hosts_by_snapshot.tsv."""
    distributions = Distributions()
    for part in parts:
        distributions.add_part(part)
    snapshots = distributions.rows()
    document = {"length_edges": LENGTH_EDGES, "score_edges": SCORE_EDGES, "cluster_size_edges": CLUSTER_SIZE_EDGES,
                "snapshots": snapshots}
    write_json(f"{out_dir}/distributions.json", document)
    key = ("source", "snapshot")
    write_tsv(f"{out_dir}/tokens_by_language.tsv", [*key, "lang", "docs", "tokens"],
               [{"source": s["source"], "snapshot": s["snapshot"], **row} for s in snapshots for row in s["languages"]], ignore_extra=True)
    write_tsv(f"{out_dir}/top_hosts.tsv", [*key, "host", "docs", "selected_docs", "tokens"],
               [{"source": s["source"], "snapshot": s["snapshot"], **row} for s in snapshots for row in s["top_hosts"]], ignore_extra=True)
    write_tsv(f"{out_dir}/hosts_by_snapshot.tsv", [*key, "hosts", "new_hosts", "new_host_rate"], snapshots,
              ignore_extra=True)
    return document
