"""recipe: the versioned training mixture (config/recipe.yaml) a loader follows."""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from tokenmill.config import SCHEMA_PATH, ConfigError, load_schema, schema_problems

RECIPE_SCHEMA = SCHEMA_PATH.with_name("recipe.schema.yaml")  # beside the config's schema, wherever this module moves
# document length buckets in tokens: [low, high)
BUCKETS = {"0-1k": (0, 1 << 10), "1k-4k": (1 << 10, 1 << 12), "4k-16k": (1 << 12, 1 << 14),
           "16k-64k": (1 << 14, 1 << 16), "64k+": (1 << 16, math.inf)}


class RecipeError(ConfigError):
    """A recipe problem; the message names the field."""


def _sums_to_one(values: dict, where: str) -> list[str]:
    total = sum(values.values())
    return [] if math.isclose(total, 1.0, abs_tol=1e-9) else [f"recipe field {where}: weights sum to {total}, not 1"]


def phase_samples(phase: dict) -> int:
    return phase["tokens"] // phase["seq_len"]


def whole_step_problems(phases: list[dict], global_batch: int) -> list[str]:
    """A phase whose samples are not a multiple of the global batch would end inside a step: that
    step would mix two phases (of different seq_len, perhaps) or, for the last phase, never fill.
    One problem per such phase, with the nearest token counts that make whole steps."""
    problems = []
    for number, phase in enumerate(phases):
        steps, left = divmod(phase_samples(phase), global_batch)
        if left:
            step_tokens = phase["seq_len"] * global_batch
            choices = [f"{count * step_tokens} ({count} steps)" for count in (steps, steps + 1) if count]
            problems.append(f"recipe field phases.{number}.tokens: phase {phase['name']!r} has {phase_samples(phase)} "
                            f"samples ({phase['tokens']} // seq_len {phase['seq_len']}), not a multiple of global "
                            f"batch {global_batch} ({steps} steps and {left} samples); use tokens "
                            f"{' or '.join(choices)}")
    return problems


def validate_recipe(recipe: dict) -> dict:
    """Validate in place (filling defaults); RecipeError names every bad field."""
    problems = schema_problems(recipe, load_schema(RECIPE_SCHEMA), noun="recipe field")
    if not problems:
        names = [phase["name"] for phase in recipe["phases"]]
        if len(set(names)) != len(names):
            problems.append("recipe field phases: phase names must be unique")
        for number, phase in enumerate(recipe["phases"]):
            where = f"phases.{number}"
            problems += _sums_to_one(phase["weights"], f"{where}.weights")
            if phase["tokens"] < phase["seq_len"]:
                problems.append(f"recipe field {where}.tokens: fewer than one sample of seq_len {phase['seq_len']}")
            for key in ("max_epochs", "bucket_weights"):
                for source in phase[key]:
                    if source not in phase["weights"]:
                        problems.append(f"recipe field {where}.{key}.{source}: not a source of {where}.weights")
            for source, buckets in phase["bucket_weights"].items():
                problems += _sums_to_one(buckets, f"{where}.bucket_weights.{source}")
            if phase["mask"] == "group" and not phase["groups"]:
                problems.append(f"recipe field {where}.mask: group masks need the phase's groups kept whole "
                                f"(set {where}.groups: true)")
        if "global_batch" in recipe:
            problems += whole_step_problems(recipe["phases"], recipe["global_batch"])
    if problems:
        raise RecipeError("invalid recipe:\n  " + "\n  ".join(problems))
    return recipe


def load_recipe(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return validate_recipe(yaml.safe_load(handle))
