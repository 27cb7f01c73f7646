"""Words per language: each language written without spaces is read by its own segmenter, from its
wheel; every other language by the unicode tokenizer; a long text in pieces; a poison text never fails."""

from __future__ import annotations

import pytest

from tests.conftest import lingua_records
from tokenmill import words
from tokenmill.words import SEGMENT_CHARS, UNICODE, segmented, segmenter_of, segmenter_versions, unicode_words


@pytest.mark.parametrize("lang, text, expected, segmenter", [
    ("zh", "广东省人民政府首页要闻动态", ["广东省", "人民政府", "首页", "要闻", "动态"], "jieba"),
    ("ja", "日本語のテキストを単語に分けます。", ["日本", "語", "の", "テキスト", "を", "単語", "に", "分け", "ます", "。"],
     "sudachi"),
    # Kiwi's morphemes, as surface spans: a contracted ending's overlapping spans are cut where the last one ended
    ("ko", "한국어 문장을 형태소로 나눕니다.", ["한국어", "문장", "을", "형태소", "로", "나눕", "니다", "."], "kiwi"),
    ("th", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ", ["ภาษาไทย", "ไม่", "มี", "การ", "เว้นวรรค", "ระหว่าง", "คำ"], "pythainlp"),
    ("lo", "ລາວຮຽນພາສາອັງກິດ", ["ລາວ", "ຮຽນ", "ພາສາອັງກິດ"], "laonlp"),
    ("km", "ភាសាខ្មែរ", ["ភាសា", "ខ្មែរ"], "khmernltk"),
    ("my", "ကျွန်တော်တို့အိမ်", ["ကျွန်တော်", "တို့", "အိမ်"], "pyidaungsu"),
    ("bo", "བོད་ཡིག་ནི་", ["བོད", "ཡིག", "ནི"], "tibetan_syllables"),
    ("ru", "Привет, мир!", ["Привет", ",", "мир", "!"], UNICODE),
    ("hi", "हिन्दी भाषा।", ["हिन्दी", "भाषा", "।"], UNICODE),
])
def test_each_language_is_read_by_its_segmenter(lang, text, expected, segmenter):
    assert segmented(text, lang) == (expected, segmenter)
    assert segmenter_of(lang) == segmenter


def test_a_language_without_spaces_is_never_read_as_whitespace_words():
    """Real Chinese and Japanese sentences: a whitespace split leaves a whole sentence one "word"."""
    for lang in ("zh", "ja"):
        text = lingua_records(lang)[0]["text"]
        assert len(segmented(text, lang)[0]) > 5 * len(text.split())
        assert sum(map(len, segmented(text, lang)[0])) == len("".join(text.split()))  # no character lost or added


def test_a_long_text_is_read_in_pieces_cut_at_line_ends():
    text = "\n".join(record["text"] for record in lingua_records("zh")) * 2
    assert len(text) > 3 * SEGMENT_CHARS
    whole = [word for line in text.split("\n") for word in segmented(line, "zh")[0]]
    assert segmented(text, "zh")[0] == whole
    japanese = "\n".join(record["text"] for record in lingua_records("ja")) * 4
    assert len(japanese.encode()) > 49_149  # what SudachiPy refuses in one call
    assert segmented(japanese, "ja")[1] == "sudachi"


def test_a_segmenter_that_raises_falls_back_to_unicode_for_that_document(monkeypatch):
    def broken(name):
        raise RuntimeError("a segmenter's bug")
    monkeypatch.setattr(words, "_segmenter", broken)
    assert segmented("中文文本", "zh") == (unicode_words("中文文本"), "jieba-failed")
    assert segmented("", "zh") == ([], "jieba")


def test_the_segmenters_versions_are_recorded():
    versions = segmenter_versions()
    assert versions["jieba"].startswith("rjieba==") and "SudachiDict-core==" in versions["sudachi"]
    assert versions[UNICODE] == ""
