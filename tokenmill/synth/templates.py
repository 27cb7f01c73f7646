"""Prompt templates of grounded rephrasing. Each has an id that names its text: a changed
template is a new `prompt_template_id`, so lineage never points at words that were not used.
The four follow the styles of WRAP (Maini et al. 2024) and Nemotron-CC's rephrasing prompts."""

from __future__ import annotations

import hashlib

SOURCE_SLOT = "{text}"

TEMPLATES = {
    "wikipedia": ("For the following text, write a paraphrase in high-quality English, in the style of "
                  "Wikipedia. Keep every fact it states and add none.\n\nText:\n{text}\n\nParaphrase:\n"),
    "qa": ("Read the following text and write questions about its facts, each followed by its answer, as "
           "'Question: ...' and 'Answer: ...' lines. Use only what the text says.\n\nText:\n{text}\n\n"
           "Questions and answers:\n"),
    "knowledge_list": ("List the facts that the following text states, one per line, each starting with "
                       "'- '. Leave out anything the text does not say.\n\nText:\n{text}\n\nFacts:\n"),
    "simple": ("Rewrite the following text in plain English that a twelve-year-old can follow, keeping its "
               "meaning.\n\nText:\n{text}\n\nPlain version:\n"),
}


def template_id(name: str, text: str) -> str:
    """`name-<first 8 hex of the text's sha256>`."""
    return f"{name}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


def resolve_templates(configured: dict[str, str | None]) -> dict[str, str]:
    """{prompt_template_id: text} for the configured names; a name mapped to null takes the
    bundled text, any other value is the template itself and must hold the source slot."""
    resolved = {}
    for name, text in sorted(configured.items()):
        if text is None:
            if name not in TEMPLATES:
                raise ValueError(f"prompt template {name!r}: no bundled template of that name "
                                 f"(bundled: {', '.join(sorted(TEMPLATES))}); give its text")
            text = TEMPLATES[name]
        if text.count(SOURCE_SLOT) != 1:
            raise ValueError(f"prompt template {name!r}: needs {SOURCE_SLOT} exactly once, where the source text goes")
        resolved[template_id(name, text)] = text
    return resolved
