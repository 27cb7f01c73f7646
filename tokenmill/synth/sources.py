"""What the workflow decides for generation: which part a synthetic part rewrites, which generator
a synthetic source or annotate uses and with which settings, what the demo generator trains on,
which documents annotate scores, and what the quality encoder trains on.

A synthetic source rewrites another source (its `synthetic.from`) snapshot for snapshot and part
for part, so every lookup is the origin's part of the same snapshot and part name. The rules pass
their wildcards; the answers are paths filled from the workflow's own templates.
"""

from __future__ import annotations

import json

from tokenmill.config import ConfigError, generator_settings, synthetic_sources
from tokenmill.engine_rules import generation_rule
from tokenmill.io import folder_state
from tokenmill.plan import Part, Plan
from tokenmill.synth.templates import resolve_templates

ANNOTATE = "annotate"  # generator_of and generation_settings take it in place of a source name


class Generation:
    """The generation lookups of a validated config, over its `plan` and the workflow's path
    templates `paths` (layout.results_paths); `bundled_labels` is the quality labels file that
    quality.labels null stands for."""

    def __init__(self, config: dict, plan: Plan, paths: dict[str, str], bundled_labels: str):
        self.config, self.plan, self.paths = config, plan, paths
        self.sources = synthetic_sources(config)
        for name in self.sources:
            try:
                resolve_templates(config["sources"][name]["synthetic"]["templates"])
            except ValueError as error:
                raise ConfigError(f"config key sources.{name}.synthetic.templates: {error}") from None
        self.annotate = config["synthetic"]["annotate"]
        self.annotate_rule = generation_rule(config, self.annotate["generator"], "annotate")
        # what the quality encoder trains on: annotate's labels, or quality.labels
        self.quality_labels = (paths[f"{self.annotate_rule}_labels"]
                               if config["quality"]["encoder"]["train_on"] == "annotate" else bundled_labels)

    def origin_source(self, source: str) -> str:
        """The source that a synthetic source rewrites."""
        return self.config["sources"][source]["synthetic"]["from"]

    def origin_part(self, source: str, snapshot: str, part: str) -> Part:
        """The part that a synthetic part rewrites."""
        return self.plan.part(self.origin_source(source), snapshot, part)

    def origin_files(self, kind: str, source: str, snapshot: str, part: str) -> list[str]:
        """The `kind` file of the part a synthetic part rewrites; none for a part of another source."""
        if source not in self.sources:
            return []
        return [self.plan.path(kind, self.origin_part(source, snapshot, part))]

    def origin_snapshot(self, template: str, source: str, snapshot: str) -> str:
        """`template` ({source}, {snapshot}) for the snapshot a synthetic snapshot rewrites."""
        return template.format(source=self.origin_source(source), snapshot=snapshot)

    def origin_snapshot_files(self, kind: str, source: str, snapshot: str) -> list[str]:
        """The `kind` file of every part of the snapshot a synthetic snapshot rewrites."""
        return self.plan.files(kind, self.plan.by_snapshot[(self.origin_source(source), snapshot)])

    def generator_of(self, source: str) -> str:
        """The synthetic.generators name that a synthetic source, or annotate (ANNOTATE), uses."""
        if source == ANNOTATE:
            return self.annotate["generator"]
        return self.config["sources"][source]["synthetic"]["generator"]

    def generator_model(self, name: str) -> str:
        """The model directory of a generator: its path, or the model train_generator makes."""
        return generator_settings(self.config, name)["path"] or self.paths["generator_model"]

    def generator_state(self, name: str) -> str:
        """A configured model directory's tree (a changed file reruns what it generated; the job
        pins its sha256); nothing for the trained model, an output of the workflow."""
        path = generator_settings(self.config, name)["path"]
        return folder_state(path) if path else ""

    def generation_settings(self, source: str) -> str:
        """What a generation job of a synthetic source, or of annotate, runs with, as canonical JSON:
        its section, its generator's settings and the generator's config key."""
        name = self.generator_of(source)
        section = self.annotate if source == ANNOTATE else self.config["sources"][source]["synthetic"]
        return json.dumps({ANNOTATE if source == ANNOTATE else "source": section,
                           "generator": generator_settings(self.config, name), "key": f"synthetic.generators.{name}"},
                          sort_keys=True)

    def generation_stats_file(self, part: Part) -> str:
        """The stats of the generate (or generate_vllm) job of a synthetic part."""
        template = self.paths[f"{generation_rule(self.config, self.generator_of(part.source), 'generate')}_stats"]
        return template.format(source=part.source, snapshot=part.snapshot, part=part.part)

    def annotated_sources(self) -> list[str]:
        """The sources annotate samples: synthetic.annotate.sources, else every source not synthetic."""
        return self.annotate["sources"] or [name for name in sorted(self.config["sources"]) if name not in self.sources]

    def trained_on(self) -> list[str]:
        """The sources whose documents the demo generator trains on: synthetic.train.sources, else
        the sources that synthetic sources rewrite, else the sources annotate samples."""
        return (self.config["synthetic"]["train"]["sources"] or sorted({self.origin_source(s) for s in self.sources})
                or self.annotated_sources())
