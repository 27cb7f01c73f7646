"""Formulas on a web page become LaTeX in its HTML, once each, before any engine reads the page.

The web writes math in a few forms, and an extractor sees none of them as text: MathML `<math>`
(with the TeX source in an `annotation` or `alttext` when a converter made it), Wikipedia's
formula element (hidden MathML, an `alttext`, and a fallback image whose `alt` is the TeX: one
formula, three copies), KaTeX's server-side markup (MathML with the TeX annotation beside the
glyphs), and MathJax v2's `<script type="math/tex">` (the source, beside the rendered glyphs).
Each becomes `$tex$` inline or `$$tex$$` display, in place. TeX already in the text (`\\(…\\)`,
`$$…$$`) stays as it is. Rendered copies (MathJax's glyph spans) are dropped so that no formula
is read twice, and scripts that hold only MathJax scaffolding (`\\begingroup`, `\\endgroup`, macro
definitions) never become content.

Resiliparse's engine hands over the tree it parsed (querying it costs less than searching the
page's text); for trafilatura the page is parsed with resiliparse's DOM (lexbor) only when its
text shows one of these forms, and any other page is passed on untouched.
"""

from __future__ import annotations

import re

from resiliparse.parse.html import HTMLTree

TEX_ENCODINGS = ("application/x-tex", "tex", "latex", "text/x-tex")
# MathJax v2's rendered output (its source is in the script beside it)
RENDERED_CLASSES = frozenset({"MathJax", "MathJax_Preview", "MathJax_Display", "MathJax_SVG", "MathJax_SVG_Display",
                              "MathJax_CHTML", "MathJax_PHTML", "MathJax_MathML", "MJX_Assistive_MathML"})
# class selectors match regardless of case in quirks mode (a page without a doctype): the classes
# are checked again, exactly, so that arXiv's `class="abstract mathjax"` is not taken for output
RENDERED = ", ".join(f".{name}" for name in sorted(RENDERED_CLASSES))
FORMULAS = '.mwe-math-element, .katex-display, .katex, math, script[type^="math/tex" i], script[type^="text/tex" i]'
# a display formula between blocks is a paragraph of its own: extractors keep paragraphs and drop
# loose inline runs between blocks
BLOCK_PARENTS = frozenset({"div", "body", "section", "article", "main", "blockquote", "center", "td", "th", "li", "dd"})
# substrings (str.find is far faster than a regular expression's alternation over a whole page)
MARKERS = ("<math", "<MATH", "math/tex", "text/tex", "katex", "mwe-math-element", "MathJax")
_SCAFFOLDING = re.compile(r"\\(begingroup|endgroup|relax)\b|\\(newcommand|renewcommand|def|let|gdef)\b.*", re.S)
_MATH_SCRIPT = re.compile(r"^(math|text)/tex\b", re.I)


def is_scaffolding(tex: str) -> bool:
    """TeX that typesets nothing: MathJax's group markers and macro definitions."""
    return not _SCAFFOLDING.sub("", tex).strip()


def _classes(node) -> set[str]:
    return set((node.getattr("class") or "").split())


def _annotation_tex(node) -> str | None:
    for annotation in node.query_selector_all("annotation"):
        if (annotation.getattr("encoding") or "").lower() in TEX_ENCODINGS and annotation.text.strip():
            return annotation.text.strip()
    maths = [node] if node.tag == "math" else list(node.query_selector_all("math"))
    for math in maths:
        if (math.getattr("alttext") or "").strip():
            return math.getattr("alttext").strip()
    return None


def _formula(node) -> tuple[str | None, bool] | None:
    """(TeX, display) of a formula element; (None, _) for one to drop; None for no formula."""
    classes = _classes(node)
    if node.tag == "script":
        kind = node.getattr("type") or ""
        if not _MATH_SCRIPT.match(kind):
            return None
        tex = node.text.strip()
        return (None if not tex or is_scaffolding(tex) else tex), "mode=display" in kind.replace(" ", "")
    if "mwe-math-element" in classes:  # Wikipedia: annotation, alttext or the fallback image's alt
        images = [image for image in node.query_selector_all("img") if (image.getattr("alt") or "").strip()]
        tex = _annotation_tex(node) or (images[0].getattr("alt").strip() if images else None)
        display = bool(node.query_selector(".mwe-math-fallback-image-display, math[display=block]"))
        return tex, display
    if "katex-display" in classes:
        return _annotation_tex(node), True
    if "katex" in classes:
        return _annotation_tex(node), False
    if node.tag != "math":  # a class that matched only without regard to case
        return None
    tex = _annotation_tex(node)  # <math>: presentation MathML alone has no TeX and stays as it is
    return (tex, node.getattr("display") == "block") if tex else None


def _attached(node, document) -> bool:
    while node is not None:
        if node == document:
            return True
        node = node.parent
    return False


def recover_math_in_tree(tree: HTMLTree) -> tuple[int, bool]:
    """Every formula of a parsed page as `$tex$` or `$$tex$$` in place, rendered copies and
    scaffolding scripts dropped: (formulas written, whether the tree changed at all). A page
    without formula markup is left as it is, rendered glyphs included (they are then its only copy)."""
    if tree.body is None or not (formulas := tree.body.query_selector_all(FORMULAS)):
        return 0, False
    changed = False
    for node in tree.body.query_selector_all(RENDERED):
        if _classes(node) & RENDERED_CLASSES and (not changed or _attached(node, tree.document)):
            node.decompose()
            changed = True
    written = 0
    for node in formulas:  # a formula inside one replaced or dropped before it is gone from the tree
        if (changed and not _attached(node, tree.document)) or (found := _formula(node)) is None:
            continue
        tex, display = found
        changed = True
        if tex is None:
            node.decompose()
            continue
        delimiter = "$$" if display else "$"
        replacement = tree.create_element("p" if display and node.parent.tag in BLOCK_PARENTS else "span")
        replacement.append_child(tree.create_text_node(f"{delimiter}{tex}{delimiter}"))
        node.replace_with(replacement)
        written += 1
    return written, changed


def recover_math(html: str) -> tuple[str, int]:
    """The page with its formulas as TeX (recover_math_in_tree) and the number of formulas
    written; a page without math markup is returned as it came, unparsed."""
    if not any(marker in html for marker in MARKERS):
        return html, 0
    tree = HTMLTree.parse(html)
    written, changed = recover_math_in_tree(tree)
    return (tree.document.html if changed else html), written
