"""The dataset card of a manifest: what is in it (sources, licences, tokens), what it was made with
(tokenizer, config and code pins), what it is known to contain (contamination) and, when a
training recipe pins it, the mixture a trainer will realize."""

from __future__ import annotations

from collections import Counter

from tokenmill.hashing import sha256_file
from tokenmill.io import atomic_output, read_json, write_json


def recipe_mixture(recipe_path: str | None, manifest_path: str) -> dict:
    """Planned vs realized share per phase and source from the recipe's replay, or why there is none."""
    if not recipe_path:
        return {"status": "no recipe configured (report.recipe)"}
    from tokenmill.trainer.loader import Loader
    from tokenmill.trainer.recipe import load_recipe

    recipe = load_recipe(recipe_path)
    actual = sha256_file(manifest_path)
    if recipe["manifest_sha256"] != actual:
        return {"recipe": recipe_path, "recipe_id": recipe["recipe_id"],
                "status": f"recipe {recipe_path} pins manifest {recipe['manifest_sha256'][:12]}..., this manifest is "
                          f"{actual[:12]}...: no replay (re-pin the recipe to this manifest)"}
    rows = Loader(recipe, manifest_path).replay()
    return {"recipe": recipe_path, "recipe_id": recipe["recipe_id"], "status": "replayed",
            "phases": [{key: row[key] for key in ("phase", "stream", "weight", "planned", "realized", "epochs",
                                                  "max_epochs")} for row in rows]}


def code_summary(repositories: list[dict]) -> dict:
    """What the card says of code repositories (rows of code_repositories.tsv): how many were read
    and kept, the licences of the kept ones, and the classes of all with how many of each kept."""
    kept = [row for row in repositories if int(row["selected"])]
    classes: dict[str, dict] = {}
    for row in repositories:
        entry = classes.setdefault(row["license_class"], {"repositories": 0, "kept": 0})
        entry["repositories"] += 1
        entry["kept"] += bool(int(row["selected"]))
    return {"repositories": len(repositories), "kept": len(kept),
            "kept_licences": dict(sorted(Counter(row["license"] for row in kept).items())),
            "classes": dict(sorted(classes.items()))}


def robots_card(state_summary: dict, policy: dict, documents_excluded: int) -> dict:
    """What the card says of robots.txt opt-outs: the policy date and agents, the captures the state
    was read from (robots_state's summary) and the documents it excluded."""
    return {"as_of": policy["as_of"], "agents": policy["agents"], "documents_excluded": documents_excluded,
            **{key: state_summary[key] for key in ("warc", "files", "captures", "hosts", "outcomes", "first_fetch",
                                                   "last_fetch")},
            "read_errors": len(state_summary["read_errors"])}


def synthetic_card(synthetic: dict | None) -> dict | None:
    """What the card says of generated text: per synthetic source its generator, templates, outputs,
    documents kept and distinguisher AUC; the rubric annotation's counts."""
    if not synthetic or not (synthetic["quality"] or synthetic["annotation"]):
        return None
    sources = {}
    for row in synthetic["quality"]:
        if row["template"] != "ALL":
            continue
        entry = sources.setdefault(row["source"], {**synthetic["generators"].get(row["source"], {}), "outputs": 0,
                                                    "documents": 0, "kept": 0, "distinguisher_auc": {}})
        entry["outputs"] += row["outputs"]
        entry["documents"] += row["documents"]
        entry["kept"] += row["kept"] or 0
        entry["distinguisher_auc"][row["snapshot"]] = row["distinguisher_auc"]
    annotation = synthetic["annotation"]
    return {"sources": sources, "annotation": None if annotation is None else
            {key: annotation[key] for key in ("documents", "statuses", "scores", "labels", "generator_model_id")}}


def build_card(manifest: dict, sources: dict, contamination: dict, mixture: dict,
               code_repositories: list[dict] = (), robots: dict | None = None, synthetic: dict | None = None) -> dict:
    """`sources`: source -> its config (tier, license_id, text_from). Every configured source is
    listed: one that select left nothing of has 0 shards (its yield rows say where it went).
    `code_repositories`: the rows of code_repositories.tsv (none without code sources); `robots`:
    robots_card's summary; `synthetic`: tokenmill.report.synthetic's report."""
    nothing = {"shards": 0, "n_docs": 0, "n_tokens": 0}
    return {
        "version": manifest["version"], "n_docs": manifest["n_docs"], "n_tokens": manifest["n_tokens"],
        "sources": [{"source": name, "tier": sources[name]["tier"], "license_id": sources[name]["license_id"],
                     "text_from": sources[name]["text_from"],
                     "shards": totals["shards"], "n_docs": totals["n_docs"], "n_tokens": totals["n_tokens"],
                     "token_share": round(totals["n_tokens"] / manifest["n_tokens"], 6) if manifest["n_tokens"] else 0.0}
                    for name, totals in ((name, manifest["sources"].get(name, nothing))
                                         for name in sorted({*manifest["sources"], *sources}))],
        "excluded_shards": manifest.get("excluded_shards", []),
        "pins": {"tokenizer_sha256": manifest["tokenizer"]["sha256"], "vocab_size": manifest["tokenizer"]["vocab_size"],
                 "config_sha256": manifest["config_sha256"], "code_version": manifest["code_version"]},
        "contamination": {"docs_scanned": contamination["docs_scanned"],
                          "benchmarks": [{key: b[key] for key in ("benchmark", "docs_flagged", "rate", "tokens_flagged",
                                                                  "items_hit", "max_run")}
                                         for b in contamination["benchmarks"]]},
        "mixture": mixture,
        "code": code_summary(list(code_repositories)),
        "robots": robots,
        "synthetic": synthetic_card(synthetic),
    }


def card_markdown(card: dict) -> str:
    lines = [f"# Dataset card: {card['version']}", "",
             f"{card['n_docs']:,} documents, {card['n_tokens']:,} tokens.", "", "## Sources", "",
             "| source | tier | licence | text from | shards | documents | tokens | share |",
             "|---|---|---|---|---:|---:|---:|---:|"]
    lines += [f"| {s['source']} | {s['tier']} | {s['license_id']} | {s['text_from']} | {s['shards']} | {s['n_docs']:,} | "
              f"{s['n_tokens']:,} | {s['token_share']:.1%} |" for s in card["sources"]]
    if card["excluded_shards"]:
        lines += ["", "Shards left out of the manifest by validation:", ""]
        lines += [f"- {s['source']}/{s['name']}: {', '.join(map(str, s['reasons']))}" for s in card["excluded_shards"]]
    code = card.get("code", {})
    if code.get("repositories"):
        lines += ["", "## Code repositories", "",
                  f"{code['repositories']:,} repositories read, {code['kept']:,} with documents in this version "
                  "(a repository is kept or dropped whole; code_repositories.tsv has each one).", "",
                  "Licences of the kept ones: " + (", ".join(f"{licence} ({count})" for licence, count
                                                            in code["kept_licences"].items()) or "none") + ".", "",
                  "By licence class: " + ", ".join(f"{name} {entry['repositories']} ({entry['kept']} kept)"
                                                   for name, entry in code["classes"].items()) + "."]
    lines += _robots_lines(card.get("robots"))
    lines += _synthetic_lines(card.get("synthetic"))
    pins = card["pins"]
    lines += ["", "## Pins", "", f"- tokenizer sha256: `{pins['tokenizer_sha256']}` ({pins['vocab_size']:,} tokens)",
              f"- config sha256: `{pins['config_sha256']}`", f"- code version: `{pins['code_version']}`",
              "", "## Contamination", "",
              f"{card['contamination']['docs_scanned']:,} documents scanned for benchmark 13-gram runs "
              "(flagged documents are excluded by select unless select.drop_contaminated is false).", "",
              "| benchmark | documents flagged | rate | items hit | longest run |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {b['benchmark']} | {b['docs_flagged']} | {b['rate']:.4%} | {b['items_hit']} | {b['max_run']} |"
              for b in card["contamination"]["benchmarks"]]
    mixture = card["mixture"]
    lines += ["", "## Mixture", ""]
    if mixture.get("phases"):
        lines += [f"Recipe `{mixture['recipe_id']}` ({mixture['recipe']}), replayed over this manifest:", "",
                  "| phase | source | target weight | planned | realized | epochs | max epochs |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {p['phase']} | {p['stream']} | {p['weight']:.4f} | {p['planned']:.4f} | {p['realized']:.4f} | "
                  f"{p['epochs']:.2f} | {p['max_epochs']:g} |" for p in mixture["phases"]]
    else:
        lines.append(mixture["status"])
    return "\n".join(lines) + "\n"


def _robots_lines(robots: dict | None) -> list[str]:
    if robots is None:
        return []
    lines = ["", "## robots.txt opt-outs", ""]
    if robots["as_of"] is None:
        return lines + ["No robots state applied (select.robots.as_of is null)."]
    read = [f"WARC files {', '.join(f'`{p}`' for p in robots['warc'])}"] if robots["warc"] else []
    read += [f"`{path}` (fetched {entry['fetch_ts']})" for entry in robots["files"] for path in entry["paths"]]
    outcomes = ", ".join(f"{name} {count}" for name, count in robots["outcomes"].items())
    return lines + [
        f"Robots state as of {robots['as_of']} for {len(robots['agents'])} agents ({', '.join(robots['agents'][:6])}"
        f"{', ...' if len(robots['agents']) > 6 else ''}): {robots['documents_excluded']:,} documents excluded "
        "(robots_disallowed), each by the latest capture of its host on or before that date.", "",
        f"{robots['captures']:,} captures of {robots['hosts']:,} hosts, fetched {robots['first_fetch']} to "
        f"{robots['last_fetch']} ({outcomes}; {robots['read_errors']} files with read errors), read from "
        + ("; ".join(read) or "nothing") + "."]


def _synthetic_lines(synthetic: dict | None) -> list[str]:
    if synthetic is None:
        return []
    lines = ["", "## Synthetic data", ""]
    for name, entry in synthetic["sources"].items():
        aucs = ", ".join(f"{snapshot} {auc:.3f}" if auc is not None else f"{snapshot} not measured"
                         for snapshot, auc in entry["distinguisher_auc"].items())
        lines += [f"- {name}: generator `{entry.get('generator_model_id')}` (sha256 `{(entry.get('generator_sha256') or '')[:16]}`"
                  f"..., {entry.get('engine')}, knowledge cutoff {entry.get('knowledge_cutoff')}), templates "
                  f"{', '.join(entry.get('templates', []))}: {entry['outputs']:,} outputs, {entry['documents']:,} "
                  f"documents, {entry['kept']:,} kept by select; real-vs-synthetic distinguisher AUC {aucs} "
                  "(synthetic.tsv)."]
    annotation = synthetic["annotation"]
    if annotation is not None:
        statuses = ", ".join(f"{status} {count}" for status, count in annotation["statuses"].items())
        lines += [f"- Rubric annotation by `{annotation['generator_model_id']}`: {annotation['documents']:,} documents "
                  f"({statuses}), {annotation['labels']['hq']} hq and {annotation['labels']['lq']} lq labels."]
    return lines


def write_card(out_dir: str, manifest_path: str, sources: dict, contamination: dict, recipe_path: str | None,
               code_repositories: list[dict] = (), robots: dict | None = None, synthetic: dict | None = None) -> dict:
    """DATASET_CARD.md and dataset_card.json in `out_dir`."""
    card = build_card(read_json(manifest_path), sources, contamination, recipe_mixture(recipe_path, manifest_path),
                      code_repositories, robots, synthetic)
    write_json(f"{out_dir}/dataset_card.json", card)
    with atomic_output(f"{out_dir}/DATASET_CARD.md") as temp:
        temp.write_text(card_markdown(card), encoding="utf-8")
    return card
