"""generate: one part of a synthetic source, the rewrites of the chosen documents of the matching
part of the source it rewrites, one per (document, prompt template).

The outputs are generation records, not documents yet: the synthetic part's extract job reads
them beside the source documents, stores each one's quality checks and makes the documents, so a
change to the checks reruns no generation. A record carries its lineage: `derived_from` (the
source document's doc_id) and `origin` (its source, snapshot, part and row), the generator's id
and sha256, the prompt template's id and the generator's knowledge cutoff as fetch_ts.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenmill.io import read_json, read_jsonl_zst, write_json, write_jsonl_zst
from tokenmill.synth.engines import load_engine
from tokenmill.synth.generator import TRAINING_RECORD, Sampling, build_prompt, generate
from tokenmill.synth.inputs import chosen_rows
from tokenmill.synth.templates import resolve_templates

DEMO_MODEL_ID = "tokenmill-demo-gpt2"


def generator_identity(settings: dict, model_dir: str) -> tuple[str, str | None]:
    """(generator_model_id, knowledge cutoff) of a `synthetic.generators` entry whose model is at
    `model_dir`: the configured values, else for the trained model its name and the newest fetch
    time it was trained on, for another directory its name."""
    record_path = Path(model_dir, TRAINING_RECORD)
    trained = read_json(record_path) if settings["path"] is None and record_path.is_file() else None
    model_id = settings["model_id"] or (DEMO_MODEL_ID if trained is not None else Path(model_dir).resolve().name)
    return model_id, settings["knowledge_cutoff"] or (trained or {}).get("knowledge_cutoff")


def rephrase_part(generator, *, part: str, docs_path: str, origin: dict, attribute_paths: dict[str, str],
                  thresholds_path: str, settings: dict, generator_settings: dict, seed: int, out_path: str,
                  stats_path: str, cache_dir: str, measured_path: str) -> dict:
    """Rewrite, for the synthetic part `part` (source/snapshot/part), the chosen documents of the
    part at `docs_path` (`origin`: its source, snapshot and part) under every template of
    `settings` (the synthetic source's `synthetic` section) and write the generation records to
    `out_path` in document order, then template id; the part's stats (choice, requests, tokens)
    to `stats_path`, and what the job measured (batches, tokens per second by device) to
    `measured_path`."""
    docs = list(read_jsonl_zst(docs_path))
    chosen, left_out = chosen_rows(docs, origin["part"], attribute_paths, thresholds_path, settings, seed)
    templates = resolve_templates(settings["templates"])
    sampling = Sampling(**settings["sampling"])
    model_id, cutoff = generator_identity(generator_settings, generator.path)
    pairs = [(row, template_id) for row in chosen for template_id in sorted(templates)]
    keys = [f"{docs[row]['doc_id']}:{template_id}" for row, template_id in pairs]

    source_chars: dict[int, int] = {}

    def prompt(index: int) -> str:
        row, template_id = pairs[index]
        made = build_prompt(generator, templates[template_id], docs[row]["text"], sampling.max_new_tokens)
        source_chars[index] = made.source_chars
        return made.text

    generation, measured = {}, {}
    outputs = generate(generator, keys, prompt, sampling, generator_settings["batch_size"], cache_dir, generation,
                       measured)
    records = []
    for index, ((row, template_id), output) in enumerate(zip(pairs, outputs)):
        doc = docs[row]
        records.append({
            "id": keys[index], "derived_from": doc["doc_id"], "origin": {**origin, "row": row},
            "url": doc.get("url"), "fetch_ts": cutoff, "prompt_template_id": template_id,
            "generator_model_id": model_id, "generator_sha256": generator.sha256, "engine": generator.engine,
            "finish": output["finish"], "prompt_tokens": output["prompt_tokens"], "new_tokens": output["new_tokens"],
            "source_chars": source_chars[index], "text": output["text"],
        })
    write_jsonl_zst(out_path, records)
    stats = {"part": part, "origin": origin, "documents": len(docs), "chosen": len(chosen), "left_out": left_out,
             "templates": sorted(templates), "generator_model_id": model_id, "generator_sha256": generator.sha256,
             "engine": generator.engine, "knowledge_cutoff": cutoff, **generation}
    write_json(stats_path, stats)
    write_json(measured_path, {"part": part, **measured})
    print(json.dumps({**{key: stats[key] for key in ("chosen", "left_out", "requests", "batches", "new_tokens")},
                      **measured}))
    return stats


def main(engine: str, description: str, argv=None) -> None:
    """The command line of rules generate and generate_vllm (scripts/generate*.py)."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--part", required=True, help="the synthetic part: source/snapshot/part")
    parser.add_argument("--docs", required=True, help="the documents of the part rewritten")
    parser.add_argument("--origin", required=True, help="its source, snapshot and part, as JSON")
    for name in ("langid", "quality-fasttext", "quality-encoder", "minhash-cluster"):
        parser.add_argument(f"--{name}", required=True, help=f"that part's {name} file")
    parser.add_argument("--thresholds", required=True, help="synthetic_inputs' quantiles of the snapshot")
    parser.add_argument("--model", required=True, help="the generator's model directory")
    parser.add_argument("--settings", required=True,
                        help='as JSON: {"source": the synthetic source\'s `synthetic` section, "generator": its '
                             'synthetic.generators entry, "key": that entry\'s config key}')
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--stats", required=True)
    parser.add_argument("--cache", required=True, help="the part's folder of finished batches")
    parser.add_argument("--measured", required=True, help="where the job's batches and tokens per second go")
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)
    generator = load_engine(engine, args.model, settings["generator"], settings["key"], args.seed)
    rephrase_part(generator, part=args.part, docs_path=args.docs, origin=json.loads(args.origin),
                  attribute_paths={"langid": args.langid, "quality_fasttext": args.quality_fasttext,
                                   "quality_encoder": args.quality_encoder, "minhash_cluster": args.minhash_cluster},
                  thresholds_path=args.thresholds, settings=settings["source"], generator_settings=settings["generator"],
                  seed=args.seed, out_path=args.out, stats_path=args.stats, cache_dir=args.cache,
                  measured_path=args.measured)
