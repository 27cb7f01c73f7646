"""Formulas as TeX on real pages with math in every common form (data/bench/math-html, with its
expected formulas taken from each page's own markup), in every engine."""

from __future__ import annotations

import collections
import re

import lxml.html
import pytest

from tests.sample_data import MATH_PAGES, expected_formulas, formulas_found, math_page
from tests.unit.helpers import EXTRACT_SETTINGS
from tokenmill.extract.html import ENGINES, extract_main_text
from tokenmill.extract.math import recover_math

SCAFFOLDING_PAGE = "magic-html/3bea25afda1671509d82cee7e6529ae362a60b7c1f5817d4627a455cc9b23ab3.html"
ARXIV_PAGE = "magic-html/f6d0929419b4ce71ce70630a8fac43dcee3735f62f87d22a62f74c45b8103d76.html"


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_form_of_formula_is_found_once(engine):
    """Distinct formulas found verbatim (whitespace aside) per form, a Wikipedia formula once in any
    of its three copies and never written more often than the page has it."""
    found, total = collections.Counter(), collections.Counter()
    for file, entries in expected_formulas().items():
        if file == SCAFFOLDING_PAGE or file.endswith(".txt"):
            continue
        result = extract_main_text(math_page(file), None, {**EXTRACT_SETTINGS, "engine": engine})
        page_found, page_total, repeated = formulas_found(file, entries, result.text)
        found.update(page_found)
        total.update(page_total)
        assert repeated == 0, file
        if "wikipedia" in file:
            assert result.math_count == sum(entry["form"] == "annotation_x_tex" for entry in entries)
    assert set(total) == {"delim_bracket", "delim_dollar_dollar", "delim_env", "delim_paren", "script_math_tex",
                          "wikipedia"}
    assert {form: found[form] / total[form] >= 0.95 for form in total} == dict.fromkeys(total, True), (found, total)


@pytest.mark.parametrize("engine", ENGINES)
def test_mathjax_scaffolding_never_becomes_content(engine):
    result = extract_main_text(math_page(SCAFFOLDING_PAGE), None, {**EXTRACT_SETTINGS, "engine": engine})
    assert result.text and result.math_count == 0
    assert "begingroup" not in result.text and "endgroup" not in result.text


def test_katex_server_markup_becomes_its_tex():
    """The 24 cases of markdown-it-katex's fixture: the HTML KaTeX wrote, back to its TeX."""
    cases = {entry["case"]: entry for entry in expected_formulas()["markdown-it-katex/fixtures_default.txt"]}
    chunks = (MATH_PAGES / "markdown-it-katex" / "fixtures_default.txt").read_text(encoding="utf-8").split("\n.\n")
    formulas = 0
    for title, _, html in zip(chunks[0::3], chunks[1::3], chunks[2::3]):
        out, count = recover_math(f"<html><body>{html}</body></html>")
        text = squash(lxml.html.fromstring(out).text_content())
        wanted = cases[title.strip()]["annotation_tex"]
        assert count == len(wanted) and all(f"{squash(tex)}$" in text for tex in wanted), title
        formulas += count
    assert formulas == 16


def test_a_page_without_math_is_passed_on_untouched():
    html = "<html><body><p>Prices rose 5% in mathematics textbooks.</p></body></html>"
    assert recover_math(html) == (html, 0)


def test_a_class_named_like_mathjax_output_is_not_dropped_in_quirks_mode():
    """arXiv's abstract is `<blockquote class="abstract mathjax">` on a page without a doctype, where
    CSS class selectors ignore case: it must not be taken for MathJax's rendered copy."""
    result = extract_main_text(math_page(ARXIV_PAGE), None, {**EXTRACT_SETTINGS, "engine": "trafilatura"})
    assert "$R$esources" in result.text.replace(" ", "") and result.math_count == 7
