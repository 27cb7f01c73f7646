"""Grounded rephrasing: every source document under every prompt template, through one
generator, as documents of a synthetic source that carry their lineage and their quality
columns (select reads them as it reads any source's)."""

from __future__ import annotations

from typing import Iterator

from tokenmill.hashing import doc_id_for, url_hash
from tokenmill.synth.generator import Generator, Sampling, build_prompt, generate
from tokenmill.synth.quality import failure_reason, grounding, ngram_entropy, type_token_ratio


def rephrase(source_docs: list[dict], templates: dict[str, str], generator: Generator, sampling: Sampling,
             batch_size: int, checkpoint_dir: str, *, source: str, snapshot_id: str, license_id: str,
             generator_model_id: str, knowledge_cutoff: str, max_repeated_share: float = 0.3,
             stats: dict | None = None) -> Iterator[dict]:
    """One document per (source document, template), in source order then template id.
    `fetch_ts` is the generator's knowledge cutoff (what select's cutoff policy reads);
    `derived_from` the source document's id, so lineage reaches the source URL."""
    by_key = {f"{doc['doc_id']}:{tid}": (doc, tid) for doc in source_docs for tid in sorted(templates)}
    requests = [(key, build_prompt(generator, templates[tid], doc["text"], sampling.max_new_tokens))
                for key, (doc, tid) in by_key.items()]
    for output in generate(generator, requests, sampling, batch_size, checkpoint_dir, stats):
        doc, tid = by_key[output["key"]]
        text = output["text"].strip()
        yield {
            "doc_id": doc_id_for(text), "record_id": output["key"], "url": doc.get("url"),
            "url_hash": url_hash(doc["url"]) if doc.get("url") else None, "host": doc.get("host"),
            "fetch_ts": knowledge_cutoff, "snapshot_id": snapshot_id, "source": source, "tier": "synthetic",
            "license_id": license_id, "content_type": "text/plain", "derived_from": doc["doc_id"],
            "generator_model_id": generator_model_id, "prompt_template_id": tid,
            "extract_meta": {
                "extractor": "generator", "generator_sha256": generator.sha256, "finish": output["finish"],
                "prompt_tokens": output["prompt_tokens"], "new_tokens": output["new_tokens"],
                "failure": failure_reason(text, output["finish"], max_repeated_share),
                "grounding": grounding(text, doc["text"]),
                "type_token_ratio": type_token_ratio(text), "source_type_token_ratio": type_token_ratio(doc["text"]),
                "ngram_entropy": ngram_entropy(text), "source_ngram_entropy": ngram_entropy(doc["text"]),
            },
            "text": text,
        }
