"""candidates: what each ablation candidate trains on, built from one version's scores and shards.

Three kinds of candidate, all drawn from the version the config builds (its judge tables and its
manifest), so that no extraction, scoring or tokenization runs again:

- a quality threshold, `keep_top-<q>` (ablate.thresholds.keep_top): the version's selected
  documents that also pass select's quality cut at keep_top q, the cut computed per snapshot and
  language exactly as select_thresholds computes it and applied exactly as judge applies it
  (tokenmill.select.judge.quality_cut). Its documents are copied from the version's shards into
  shards of its own, with a manifest the loader opens; its mixture is its own token shares.
  It differs from a full `select` at that threshold in one way only: the copy of a duplicate
  cluster that select keeps is chosen among the members that pass the version's cut, not the
  candidate's (a cluster whose kept copy fails the candidate's cut is dropped, not replaced).
- a heuristic rule set, `rules-<name>` (ablate.rules.<name>: kind -> family -> metric -> {min, max}):
  the version's selected documents that also pass the set's rules, laid over each kind's profile
  and each source's own set (a language's own values still replace those that do not carry over
  from English, as judge resolves them: Policy.heuristic_thresholds), on the metrics score stored,
  tested as judge tests them (Policy.failed_heuristic). It is copied into shards
  of its own as a threshold candidate is. A set can only drop what the
  version kept: a bound looser than the kind's profile (select.heuristics.profiles) is refused.
- a mixture, `mixture-<n>` (ablate.mixtures): a recipe over the version's own manifest whose
  source weights are sampled around their natural token shares (tokenmill.ablate.mixture).

Every candidate's recipe trains for the same token budget (ablate.proxy.tokens), so candidates
compare at equal compute; ablate.max_epochs bounds the passes over any source.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from tokenmill.ablate.mixture import sample_mixtures
from tokenmill.config import ConfigError
from tokenmill.hashing import keyed_hash64, seed_key, sha256_file
from tokenmill.io import read_json, read_parquet, write_json, write_parquet
from tokenmill.languages import load_language_table
from tokenmill.select.judge import Policy, quality_cut
from tokenmill.select.thresholds import build_thresholds, score_files, thresholds_policy, valid_for
from tokenmill.shards.megatron import CODE_DTYPES, MegatronReader, MegatronWriter
from tokenmill.trainer.recipe import validate_recipe

THRESHOLD = "keep_top-"
RULES = "rules-"
MIXTURE = "mixture-"
CANDIDATE_FILE = "candidate.json"
JUDGED_COLUMNS = ["row", "doc_id", "quality", "lang", "lang_tier"]


def threshold_name(keep_top: float | None) -> str:
    return f"{THRESHOLD}{'none' if keep_top is None else format(keep_top, 'g')}"


def candidate_names(ablate: dict) -> list[str]:
    """Every candidate of the `ablate` config section: its thresholds, its rule sets, then its mixtures."""
    return ([threshold_name(value) for value in ablate["thresholds"]["keep_top"]]
            + [f"{RULES}{name}" for name in sorted(ablate["rules"])]
            + [f"{MIXTURE}{number:03d}" for number in range(ablate["mixtures"]["count"])])


def candidate_kind(name: str) -> str:
    """threshold, rules or mixture."""
    if name.startswith(THRESHOLD):
        return "threshold"
    return "rules" if name.startswith(RULES) else "mixture"


def is_pool(name: str) -> bool:
    """Whether candidate `name` is a pool of the version's documents (its own shards), not a mixture."""
    return candidate_kind(name) != "mixture"


def candidate_keep_top(name: str) -> float | None:
    value = name.removeprefix(THRESHOLD)
    return None if value == "none" else float(value)


def mixture_number(name: str) -> int:
    return int(name.removeprefix(MIXTURE))


def ablate_problems(config: dict) -> list[str]:
    """What makes the `ablate` section unbuildable from this config, each naming its key: a
    threshold candidate can only keep fewer documents than the version it is drawn from, and a
    mixture fit needs more runs than it has weights."""
    ablate, problems = config["ablate"], []
    base = config["select"]["quality"]["keep_top"]
    values = ablate["thresholds"]["keep_top"]
    if len({threshold_name(value) for value in values}) != len(values):
        problems.append(f"ablate.thresholds.keep_top: {values} names a candidate twice")
    for value in values:
        if base is not None and (value is None or value > base):
            problems.append(f"ablate.thresholds.keep_top: {value} keeps more than select.quality.keep_top {base}, and "
                            "candidates are drawn from the version's selection; set select.quality.keep_top to null "
                            f"or at least {value}")
    problems += _looser_rules(ablate["rules"], config["select"]["heuristics"]["profiles"])
    count = ablate["mixtures"]["count"]
    if 0 < count < 4:
        problems.append(f"ablate.mixtures.count: {count} mixtures cannot fit a regression; use 0 (no mixture search) "
                        "or at least 4")
    return problems


def _looser_rules(rule_sets: dict, profiles: dict) -> list[str]:
    """The bounds of ablate.rules looser than their kind's profile: a rule set is drawn from the
    version's selection, so it cannot keep what the profile drops."""
    problems = []
    for name, kinds in sorted(rule_sets.items()):
        for kind, families in sorted(kinds.items()):
            for family, metrics in sorted((families or {}).items()):
                for metric, rule in sorted((metrics or {}).items()):
                    profile = ((profiles[kind].get(family) or {}).get(metric)) or {}
                    for bound, looser in (("min", lambda new, old: new < old), ("max", lambda new, old: new > old)):
                        new, old = (rule or {}).get(bound), profile.get(bound)
                        if old is not None and (new is None or looser(new, old)):
                            problems.append(
                                f"ablate.rules.{name}.{kind}.{family}.{metric}.{bound}: {new} keeps more than "
                                f"select.heuristics.profiles.{kind}.{family}.{metric}.{bound} {old}, and candidates "
                                "are drawn from the version's selection; loosen the profile or tighten the rule")
    return problems


def budget_tokens(proxy: dict) -> int:
    """The proxy's token budget in whole steps: every candidate trains on exactly this many."""
    step = proxy["seq_len"] * proxy["micro_batch"]
    steps = proxy["tokens"] // step
    if steps < 1:
        raise ConfigError(f"ablate.proxy.tokens: {proxy['tokens']} is less than one step "
                          f"(seq_len {proxy['seq_len']} x micro_batch {proxy['micro_batch']} = {step} tokens)")
    return steps * step


def proxy_recipe(recipe_id: str, manifest_path: str | os.PathLike, weights: dict[str, float], max_epochs: float,
                 proxy: dict, seed: int) -> dict:
    """A one-phase recipe over `manifest_path`: the proxy's budget at its seq_len, one micro-batch
    a step (the proxy trains on one process), `weights` (sources of weight 0 left out)."""
    manifest = read_json(manifest_path)
    used = {source: weight for source, weight in sorted(weights.items()) if weight > 0}
    return validate_recipe({
        "recipe_id": recipe_id, "manifest_sha256": sha256_file(manifest_path),
        "tokenizer_sha256": manifest["tokenizer"]["sha256"], "seed": seed, "global_batch": proxy["micro_batch"],
        "max_skipped_share": 0.0,
        "phases": [{"name": "proxy", "tokens": budget_tokens(proxy), "seq_len": proxy["seq_len"], "weights": used,
                    "max_epochs": {source: max_epochs for source in used}}]})


def source_tokens(manifest: dict) -> dict[str, int]:
    """Each source's tokens in the manifest, the sources that hold any."""
    return {source: entry["n_tokens"] for source, entry in sorted(manifest["sources"].items()) if entry["n_tokens"]}


def natural_shares(manifest: dict) -> dict[str, float]:
    """Each source's share of the manifest's tokens."""
    return {source: tokens / manifest["n_tokens"] for source, tokens in source_tokens(manifest).items()}


def check_budget(name: str, tokens: dict[str, int], max_epochs: float, budget: int) -> None:
    """A candidate must hold the budget within ablate.max_epochs passes (at its natural shares)."""
    held = sum(tokens.values())
    if held * max_epochs < budget:
        raise ConfigError(f"ablate.proxy.tokens: candidate {name} holds {held} tokens, and {budget} tokens at "
                          f"ablate.max_epochs {max_epochs} need {-(-budget // max_epochs):.0f}; lower "
                          "ablate.proxy.tokens, raise ablate.max_epochs or ablate.pool_tokens, or drop the candidate")


def shard_order(shards: list[dict], seed: int) -> list[int]:
    """The order a candidate's pool reads the version's shards in: by keyed hash of their paths, so
    that a pool cut at ablate.pool_tokens is a sample of every source and snapshot, the same for
    every candidate."""
    key = seed_key(seed)
    return sorted(range(len(shards)), key=lambda number: (keyed_hash64(key, shards[number]["path"]), number))


class Pool:
    """A pool candidate's documents: the version's shards read in shard_order, each document kept
    where it passes the candidate's test, until the pool holds pool_tokens. The test is decided over
    every row of a part at once, and once: a shard group's shards each hold documents of all its
    parts, so each part is asked for once per shard."""

    def __init__(self, plan_rows: list[dict]):
        self.rows = {(row["source"], row["snapshot"], row["part"]): row for row in plan_rows}
        self._kept: dict[tuple[str, str, str], np.ndarray] = {}

    def kept(self, source: str, snapshot: str, part: str, rows: list[int]) -> np.ndarray:
        """Whether each of `rows` of a part's judge table passes the candidate's test."""
        if (source, snapshot, part) not in self._kept:
            self._kept[source, snapshot, part] = self._part_kept(source, snapshot, self.rows[source, snapshot, part])
        return self._kept[source, snapshot, part][rows]

    def _part_kept(self, source: str, snapshot: str, row: dict) -> np.ndarray:
        """The test over every row of the part of plan row `row`."""
        raise NotImplementedError


class ThresholdPool(Pool):
    """A threshold candidate's pool: the documents that pass select's quality cut at its keep_top."""

    def __init__(self, keep_top: float | None, plan_rows: list[dict], select: dict, valid: dict, seed: int,
                 out_dir: Path):
        super().__init__(plan_rows)
        self.policy = {**thresholds_policy({**select, "quality": {**select["quality"], "keep_top": keep_top}}),
                       "valid": valid}
        self.cut_tiers = select["tiers"]["quality_cut"]
        self.seed = seed
        self.out_dir = out_dir
        self._thresholds: dict[tuple[str, str], dict] = {}

    def thresholds(self, source: str, snapshot: str) -> dict:
        """The candidate's select_thresholds file of a snapshot (written beside its shards)."""
        if (source, snapshot) not in self._thresholds:
            parts = [row for key, row in self.rows.items() if key[:2] == (source, snapshot)]
            self._thresholds[source, snapshot] = build_thresholds(
                score_files(parts), self.policy, str(self.out_dir / "thresholds" / source / f"{snapshot}.json"))
        return self._thresholds[source, snapshot]

    def _part_kept(self, source: str, snapshot: str, row: dict) -> np.ndarray:
        thresholds = self.thresholds(source, snapshot)
        judged = read_parquet(row["judge"], JUDGED_COLUMNS).to_pydict()
        judges = [valid_for(thresholds["valid"], thresholds["score"], lang) for lang in judged["lang"]]
        below, mid = quality_cut(thresholds, judged["quality"], judged["lang"], judges, judged["lang_tier"],
                                 judged["doc_id"], self.cut_tiers, self.seed)
        passes = np.zeros(max(judged["row"], default=-1) + 1, dtype=bool)
        passes[judged["row"]] = [not low or kept_mid for low, kept_mid in zip(below, mid)]
        return passes


def with_rules(thresholds: dict, rules: dict) -> dict:
    """A threshold set (family -> metric -> rule) with `rules` laid over it, added where it has none."""
    merged = {family: dict(metrics or {}) for family, metrics in thresholds.items()}
    for family, metrics in rules.items():
        merged.setdefault(family, {}).update(metrics or {})
    return merged


class RulesPool(Pool):
    """A rule set's pool: the documents that pass the set's rules. The set is laid over each kind's
    profile and each source's own set, and a language's own values (the language table's,
    select.heuristics.by_language) still replace those that do not carry over from English, as
    judge resolves them."""

    def __init__(self, rules: dict, plan_rows: list[dict], select: dict, language_table: str | None, seed: int):
        super().__init__(plan_rows)
        heuristics = select["heuristics"]
        laid = {**heuristics,
                "profiles": {kind: with_rules(profile, rules[kind]) if kind in rules else profile
                             for kind, profile in heuristics["profiles"].items()},
                "by_source": {source: {kind: with_rules(own, rules[kind]) if kind in rules and own is not None else own
                                       for kind, own in kinds.items()}
                              for source, kinds in heuristics["by_source"].items()}}
        self.kinds = set(rules)
        self.policy = Policy({**select, "heuristics": laid}, seed, load_language_table(language_table))

    def _part_kept(self, source: str, snapshot: str, row: dict) -> np.ndarray:
        judged = read_parquet(row["judge"], ["row", "lang", "kind", "reason"]).to_pydict()
        values = read_parquet(row["heuristics"]).drop(["doc_id"]).to_pylist()  # a row per document of the part
        passes = np.zeros(len(values), dtype=bool)
        for number, lang, kind, reason in zip(judged["row"], judged["lang"], judged["kind"], judged["reason"]):
            if reason:  # the version dropped it: no shard holds it
                continue
            passes[number] = kind not in self.kinds or not self.policy.failed_heuristic(values[number], source, kind,
                                                                                         lang)
        return passes


def _copy_shard(shard: dict, base_root: Path, pool: Pool, out_root: Path) -> dict | None:
    """The documents of one of the version's shards that pass the pool's cut, as a shard of the
    same name under `out_root`: its manifest entry, or None when none passes."""
    prefix = base_root / shard["path"]
    lineage_table = read_parquet(f"{prefix}.docs.parquet")
    lineage = lineage_table.to_pydict()
    keep = np.zeros(len(lineage["row"]), dtype=bool)
    for part in sorted(set(lineage["part"])):
        numbers = [i for i, name in enumerate(lineage["part"]) if name == part]
        snapshot = lineage["snapshot_id"][numbers[0]]
        keep[numbers] = pool.kept(shard["source"], snapshot, part, [lineage["row"][i] for i in numbers])
    if not keep.any():
        return None
    reader = MegatronReader(prefix)
    out_prefix = out_root / shard["path"]
    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    writer = MegatronWriter(out_prefix, CODE_DTYPES[shard["dtype_code"]])
    for number in np.flatnonzero(keep):
        writer.add(reader[int(number)])
    writer.close()
    write_parquet(f"{out_prefix}.docs.parquet", lineage_table.take(pa.array(np.flatnonzero(keep))))
    return {**shard, "n_docs": int(keep.sum()), "n_tokens": writer.n_tokens,
            "bin_sha256": sha256_file(f"{out_prefix}.bin"), "bin_bytes": os.path.getsize(f"{out_prefix}.bin"),
            "idx_sha256": sha256_file(f"{out_prefix}.idx")}


def build_pool_candidate(name: str, manifest_path: str, plan_rows: list[dict], settings: dict, valid: dict,
                         language_table: str | None, out_dir: str) -> dict:
    """Candidate `name`'s shards, manifest and candidate file (CANDIDATE_FILE) in `out_dir`, from
    the version's manifest and the judge tables and score files of `plan_rows` (the plan's rows,
    versioned). `settings`: candidate_settings'; `valid`: the languages each quality score may
    judge (select_thresholds'); `language_table`: quality.language_table (None: the bundled one),
    whose per-language heuristics thresholds a rule set is laid over."""
    out = Path(out_dir)
    base_path = Path(manifest_path)
    manifest = read_json(base_path)
    if candidate_kind(name) == "threshold":
        pool = ThresholdPool(candidate_keep_top(name), plan_rows, settings["select"], valid, settings["judge_seed"],
                             out)
        details = {"keep_top": candidate_keep_top(name)}
    else:
        rules = settings["rules"]
        pool = RulesPool(rules, plan_rows, settings["select"], language_table, settings["judge_seed"])
        details = {"rules": rules}
    limit = settings["pool_tokens"]
    copied: dict[int, dict] = {}
    held = 0
    for number in shard_order(manifest["shards"], settings["seed"]):
        if limit is not None and held >= limit:
            break
        entry = _copy_shard(manifest["shards"][number], base_path.parent, pool, out)
        if entry is not None:
            copied[number] = entry
            held += entry["n_tokens"]
    shards = [copied[number] for number in sorted(copied)]
    sources: dict[str, dict] = {}
    for shard in shards:
        totals = sources.setdefault(shard["source"], {"tier": manifest["sources"][shard["source"]]["tier"],
                                                      "shards": 0, "n_docs": 0, "n_tokens": 0, "excluded_shards": 0})
        totals["shards"] += 1
        totals["n_docs"] += shard["n_docs"]
        totals["n_tokens"] += shard["n_tokens"]
    tokenizer = {**manifest["tokenizer"],
                 "path": os.path.relpath(base_path.parent / manifest["tokenizer"]["path"], out)}
    candidate_manifest = {**manifest, "version": f"{manifest['version']}.{name}", "tokenizer": tokenizer,
                          "sources": dict(sorted(sources.items())), "n_docs": sum(s["n_docs"] for s in shards),
                          "n_tokens": sum(s["n_tokens"] for s in shards), "shards": shards, "excluded_shards": []}
    write_json(out / "manifest.json", candidate_manifest)
    return _write_candidate(name, out, out / "manifest.json", natural_shares(candidate_manifest),
                            source_tokens(candidate_manifest), settings,
                            {**details,
                             "documents": {"version": manifest["n_docs"], "candidate": candidate_manifest["n_docs"]}})


def build_mixture_candidate(name: str, manifest_path: str, settings: dict, out_dir: str) -> dict:
    """Candidate `name`'s candidate file: the version's own manifest at its mixture's weights."""
    manifest = read_json(manifest_path)
    return _write_candidate(name, Path(out_dir), Path(manifest_path), mixture_weights(manifest, settings, name),
                            source_tokens(manifest), settings, {"natural": natural_shares(manifest)})


def source_caps(tokens: dict[str, int], settings: dict) -> dict[str, float]:
    """The largest weight each source can take in the budget within ablate.max_epochs passes."""
    budget = budget_tokens(settings["proxy"])
    return {source: min(1.0, settings["max_epochs"] * count / budget) for source, count in sorted(tokens.items())}


def _write_candidate(name: str, out: Path, manifest_path: Path, weights: dict[str, float], tokens: dict[str, int],
                     settings: dict, details: dict) -> dict:
    check_budget(name, tokens, settings["max_epochs"], budget_tokens(settings["proxy"]))
    recipe = proxy_recipe(f"ablate-{name}", manifest_path, weights, settings["max_epochs"], settings["proxy"],
                          settings["seed"])
    candidate = {"candidate": name, "kind": candidate_kind(name),
                 "manifest": os.path.relpath(manifest_path, out), "tokens": dict(sorted(tokens.items())),
                 "weights": recipe["phases"][0]["weights"], **details, "recipe": recipe}
    write_json(out / CANDIDATE_FILE, candidate)
    return candidate


def read_candidate(candidate_dir: str | os.PathLike) -> tuple[dict, Path]:
    """A candidate file and the path of the manifest its recipe pins."""
    folder = Path(candidate_dir)
    candidate = read_json(folder / CANDIDATE_FILE)
    return candidate, folder / candidate["manifest"]


def candidate_settings(config: dict, name: str) -> dict:
    """What candidate `name`'s job reads of the config, and nothing else: a threshold candidate the
    select section (its cut, tiers and languages) and judge's seed, a rule set those and its rules,
    a mixture its sampling."""
    ablate = config["ablate"]
    shared = {"seed": ablate["seed"], "max_epochs": ablate["max_epochs"],
              "proxy": {key: ablate["proxy"][key] for key in ("seq_len", "micro_batch", "tokens")}}
    if candidate_kind(name) == "threshold":
        return {**shared, "pool_tokens": ablate["pool_tokens"], "select": config["select"], "judge_seed": config["seed"]}
    if candidate_kind(name) == "rules":
        return {**shared, "pool_tokens": ablate["pool_tokens"], "select": config["select"], "judge_seed": config["seed"],
                "rules": ablate["rules"][name.removeprefix(RULES)]}
    return {**shared, "mixtures": {"count": ablate["mixtures"]["count"]}}


def decide_settings(config: dict) -> dict:
    """What ablate_decide reads of the config."""
    ablate = config["ablate"]
    return {"seed": ablate["seed"], "seeds": ablate["seeds"], "max_epochs": ablate["max_epochs"],
            "eval": {"metric": ablate["eval"]["metric"]}, "mixtures": ablate["mixtures"],
            "proxy": {key: ablate["proxy"][key] for key in ("seq_len", "micro_batch", "tokens")}}


def mixture_weights(manifest: dict, settings: dict, name: str) -> dict[str, float]:
    """Mixture `name`'s weights: its draw of ablate.mixtures.count mixtures sampled around the
    manifest's natural shares, each source capped by what ablate.max_epochs lets it give."""
    mixtures = sample_mixtures(natural_shares(manifest), settings["mixtures"]["count"], settings["seed"],
                               caps=source_caps(source_tokens(manifest), settings))
    return mixtures[mixture_number(name)]
