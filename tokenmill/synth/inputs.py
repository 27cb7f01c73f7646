"""synthetic_inputs: which documents of a source a synthetic source rewrites.

Per snapshot of the rewritten source, the quantiles of its quality score (select.quality.score's
kinds: fasttext, encoder or the ensemble of both) are computed per language, as select's quality
cut is, and written as a small JSON; each part's generate job then takes the documents of its part
that are in the configured language list with confidence, long enough, the kept copy of their exact
group and near-duplicate cluster (rewriting copies is waste), and whose score lies in the band.
Everything read is a stored score, never a decision of select: the rewrite does not depend on the
dataset version, and a policy change reruns no generation.
"""

from __future__ import annotations

from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.io import read_json, read_parquet, read_part_rows, write_json
from tokenmill.select.thresholds import ScoreFiles, by_language, language_entry, language_values


def band_thresholds(rows: list[ScoreFiles], band: dict, out_path: str) -> dict:
    """The score values at the band's quantiles, per language of the snapshot with the documents to
    have them (`rows`: the ScoreFiles of each part), written to `out_path`. The band judges every
    language its source's `languages` lets through (English by default): that list is its validity."""
    languages = by_language(rows, band["min_language_docs"], band["score"], [band["min"], band["max"]])
    for entry in languages.values():
        if "values" in entry:
            entry["low"], entry["high"] = entry.pop("values")
    thresholds = {"score": band["score"], "min": band["min"], "max": band["max"], "valid": {}, "languages": languages}
    write_json(out_path, thresholds)
    return thresholds


def chosen_rows(docs: list[dict], part: str, attribute_paths: dict[str, str], thresholds_path: str, settings: dict,
                seed: int) -> tuple[list[int], dict]:
    """The rows of a part's documents to rewrite, in order, and how many each rule left out.
    `attribute_paths`: the part's langid, quality_fasttext, quality_encoder (chunk) and
    minhash_cluster files; `settings`: the source's `synthetic` section."""
    langid = read_parquet(attribute_paths["langid"], ["lang", "lang_conf"])
    fasttext = read_parquet(attribute_paths["quality_fasttext"], ["quality_fasttext"]).column("quality_fasttext").to_numpy()
    encoder = read_part_rows(attribute_paths["quality_encoder"], part, ["quality_encoder"]).column("quality_encoder").to_numpy()
    copies = read_parquet(attribute_paths["minhash_cluster"], ["exact_canonical", "is_cluster_representative"])
    if not len(docs) == langid.num_rows == len(fasttext) == len(encoder) == copies.num_rows:
        raise ValueError(f"part {part}: the score and minhash_cluster files are not aligned with its {len(docs)} "
                         "documents; rerun score")
    thresholds = read_json(thresholds_path)
    langs, confidence = langid.column("lang").to_pylist(), langid.column("lang_conf").to_pylist()
    canonical = copies.column("exact_canonical").to_pylist()
    representative = copies.column("is_cluster_representative").to_pylist()
    values = language_values(thresholds, langs, {"fasttext": fasttext, "encoder": encoder})
    left_out = {"language": 0, "too_short": 0, "copy": 0, "quality_band": 0, "part_cap": 0}
    chosen = []
    for row, doc in enumerate(docs):
        entry = language_entry(thresholds, langs[row])
        if settings["languages"] is not None and langs[row] not in settings["languages"] \
                or confidence[row] < settings["min_lang_conf"]:
            left_out["language"] += 1
        elif len(doc["text"]) < settings["min_chars"]:
            left_out["too_short"] += 1
        elif not (canonical[row] and representative[row]):
            left_out["copy"] += 1
        elif not entry["low"] <= values[row] <= entry["high"]:
            left_out["quality_band"] += 1
        else:
            chosen.append(row)
    cap = settings["max_docs_per_part"]
    if cap is not None and len(chosen) > cap:
        key = seed_key(seed)
        kept = set(sorted(chosen, key=lambda row: (keyed_hash64(key, f"synthetic:{docs[row]['doc_id']}"), row))[:cap])
        left_out["part_cap"] = len(chosen) - cap
        chosen = [row for row in chosen if row in kept]
    return chosen, left_out
