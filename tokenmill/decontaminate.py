"""decontaminate: find benchmark text (GSM8K, HumanEval, MMLU, ...) inside training documents.

The index holds the 64-bit hashes of every normalized n-gram (lower case, punctuation
stripped, word tokens; n = 13 by default) of every benchmark item, behind a Bloom filter
for the fast probe. A document is contaminated by an item in either of two ways:

- whole item: it contains a run of at least `min_run` consecutive n-grams of that item in
  the item's own order (confirmed against the exact hash set, not the Bloom filter); an
  item with fewer n-grams than `min_run` needs all of them in order. An item shorter than n
  words is one gram of its own length.
- field by field: every field of the item (an MMLU question and each of its options, a
  GSM8K question and its answer) is in the document, whole, inside one window at most
  `field_gap_words` words per field longer than the item, in any order and whatever lies
  between the fields. This finds an item printed as a quiz ("(a) ... (b) ...", "A. ..." one
  option per line, options shuffled, the question last), where the option labels break
  every n-gram that crosses a field boundary. A field with indexed n-grams is found by a run
  of them inside the field (at least min(`min_run`, its longest run)); any other field by
  the hash of all of its words. The anchors, probed in every document, are the fields with
  indexed n-grams and the other fields of `_ANCHOR_WORDS` words or more that no more than
  `max_items` items share; the rest ("True", "4", "None of the above") are looked for only
  near the anchors of their item, so they can complete a match but never start one.

Template and common-English n-grams are left out of the index: those shared by more than
`max_items` items ("which of the following is ...") and those with fewer than
`min_content_words` words outside jusText's English stop list. Items with fewer than
`min_item_tokens` tokens are not indexed at all (they would match ordinary prose), and items
with fewer than `min_content_words` such words are not matched field by field.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import gzip
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import justext
import numpy as np
import pyarrow as pa

from tokenmill.bloom import bloom_contains, build_bloom
from tokenmill.hashing import fmix64
from tokenmill.io import atomic_output, read_json, read_parquet, write_json

_PRIME = np.uint64(0x9E3779B97F4A7C15)
_BASE = np.uint64(0x100000001B3)  # odd
_BASE_INVERSE = np.uint64(pow(int(_BASE), -1, 1 << 64))
COMMON_ENGLISH = frozenset(justext.get_stoplist("English"))
# A field matched by its whole hash is probed in every document (an anchor) from this many
# words, by one gram of this length: one or two words ("Paris", "True, False") occur in any
# text, and each probe length costs a Bloom probe per word of every document.
_ANCHOR_WORDS = 3
_NOT_REQUIRED, _ANCHOR, _COMPANION = 0, 1, 2  # a field's role in the field-by-field match


@dataclass(frozen=True)
class DecontaminationSettings:
    """The `decontamination` config section but benchmarks (the schema holds the defaults)."""

    ngram: int
    min_run: int
    max_items: int
    min_item_tokens: int
    min_content_words: int
    field_gap_words: int
    false_positive_rate: float


@dataclass(frozen=True)
class Benchmark:
    name: str
    path: str
    format: str  # jsonl | csv
    fields: list  # names (jsonl) or column numbers (csv)


@functools.cache
def _word_characters() -> np.ndarray:
    """For every code point, whether Python's `\\w` matches it (alphanumeric or underscore)."""
    table = np.fromiter((chr(code).isalnum() for code in range(0x110000)), dtype=bool, count=0x110000)
    table[ord("_")] = True
    return table


# base**i and base**-i for i below a batch's characters: computed once for the longest batch yet (of at
# most _POWERS_HELD characters), and their first elements are the same powers for a shorter batch
_POWERS_HELD = 1 << 21  # 2 x 16 MB
_held_powers: list[np.ndarray] = [np.zeros(0, np.uint64), np.zeros(0, np.uint64)]


def _powers(count: int) -> tuple[np.ndarray, np.ndarray]:
    """(base**i, base**-i) for i < count, mod 2**64."""
    if count > len(_held_powers[0]):
        size = count if count > _POWERS_HELD else min(max(count, 2 * len(_held_powers[0])), _POWERS_HELD)
        powers = np.cumprod(np.full(size, _BASE, dtype=np.uint64)) * _BASE_INVERSE
        inverse = np.cumprod(np.full(size, _BASE_INVERSE, dtype=np.uint64)) * _BASE
        if size > _POWERS_HELD:
            return powers, inverse
        _held_powers[:] = powers, inverse
    return _held_powers[0][:count], _held_powers[1][:count]


@dataclass
class Words:
    """The word tokens of a batch of texts (runs of `\\w` in the lower-cased text), found and
    hashed with array operations rather than a Python call per word."""

    hashes: np.ndarray  # uint64 per word, all texts in order
    counts: np.ndarray  # words per text
    firsts: np.ndarray  # where each text's words begin in `hashes`, then the total
    starts: np.ndarray  # per word, its offsets in its own lower-cased text
    ends: np.ndarray
    lowered: list
    # per text whose lower-casing changes its length, where each original character's lower case ends
    _stops: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, texts: list[str]) -> "Words":
        lowered = [text.lower() for text in texts]
        joined = "\n".join(lowered)  # a separator that is never part of a word
        codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        word = _word_characters()[codes]
        edges = np.diff(np.concatenate([[False], word, [False]]).astype(np.int8))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        text_starts = np.cumsum([0] + [len(text) + 1 for text in lowered[:-1]]) if texts else np.zeros(0, np.int64)
        owner = np.searchsorted(text_starts, starts, side="right") - 1
        counts = np.bincount(owner, minlength=len(texts)).astype(np.int64)
        # polynomial hash of each word from prefix sums (an odd base is invertible mod 2**64)
        values = codes.astype(np.uint64) + np.uint64(1)
        powers, inverse_powers = _powers(len(codes))  # base**i, base**-i
        prefix = np.concatenate([np.zeros(1, np.uint64), np.cumsum(values * powers, dtype=np.uint64)])
        raw = (prefix[ends] - prefix[starts]) * inverse_powers[starts]
        hashes = fmix64(raw + (ends - starts).astype(np.uint64) * _PRIME)
        firsts = np.concatenate([[0], np.cumsum(counts)])
        return cls(hashes, counts, firsts, starts - text_starts[owner], ends - text_starts[owner], lowered)

    def words(self, text: int) -> list[str]:
        first, stop = int(self.firsts[text]), int(self.firsts[text + 1])
        lowered = self.lowered[text]
        return [lowered[s:e] for s, e in zip(self.starts[first:stop].tolist(), self.ends[first:stop].tolist())]

    def span(self, number: int, text: str, first: int, last: int) -> tuple[int, int]:
        """Character offsets in text `number` (`text`, as given to `of`) from word `first` to word
        `last` (indices into this batch)."""
        lowered = self.lowered[number]
        start, end = int(self.starts[first]), int(self.ends[last])
        if len(lowered) != len(text):  # a character lower-cases to several ("İ"): map offsets back
            stops = self._stops.get(number)
            if stops is None:
                stops = self._stops[number] = np.cumsum([len(character.lower()) for character in text])
            return int(np.searchsorted(stops, start, side="right")), int(np.searchsorted(stops, end - 1, side="right")) + 1
        return start, end


def extend_grams(grams: np.ndarray, word_hashes: np.ndarray, n: int) -> np.ndarray:
    """The (n)-gram hashes from the (n-1)-gram hashes: one more word folded into each window."""
    count = len(word_hashes) - n + 1
    return fmix64(grams[:max(count, 0)] * _PRIME + word_hashes[n - 1:n - 1 + max(count, 0)])


def gram_hashes(word_hashes: np.ndarray, n: int) -> np.ndarray:
    """Hash of every window of n consecutive words (vectorised, order-sensitive)."""
    grams = word_hashes.copy()
    for length in range(2, n + 1):
        grams = extend_grams(grams, word_hashes, length)
    return grams[:max(len(word_hashes) - n + 1, 0)]


def grams_at(word_hashes: np.ndarray, starts: np.ndarray, lengths: np.ndarray | int) -> np.ndarray:
    """The hash of the `lengths` words from each of `starts`: what gram_hashes gives there."""
    lengths = np.broadcast_to(np.asarray(lengths, dtype=np.int64), starts.shape)
    grams = word_hashes[starts]
    for offset in range(1, int(lengths.max(initial=1))):
        longer = np.flatnonzero(lengths > offset)
        grams[longer] = fmix64(grams[longer] * _PRIME + word_hashes[starts[longer] + offset])
    return grams


def keyed(grams: np.ndarray, lengths: np.ndarray | int, ngram: int) -> np.ndarray:
    """Index keys: a gram shorter or longer than n carries its length, so lengths never collide."""
    lengths = np.asarray(lengths, dtype=np.uint64)
    return grams ^ (lengths * (lengths != ngram))


def _open_text(path: str):
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    return io.TextIOWrapper(raw, encoding="utf-8", newline="")


def read_item_fields(benchmark: Benchmark) -> list[list[str]]:
    """Each item's configured fields, in file order (a directory of CSV files is read file by
    sorted name)."""
    path = Path(benchmark.path)
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    items = []
    for file in files:
        with _open_text(str(file)) as handle:
            if benchmark.format == "jsonl":
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        record = json.loads(line)
                        missing = [f for f in benchmark.fields if f not in record]
                        if missing:
                            raise ValueError(f"{file}:{number}: benchmark {benchmark.name} has no field {missing[0]!r}")
                        items.append([str(record[f]) for f in benchmark.fields])
            else:
                for number, row in enumerate(csv.reader(handle), start=1):
                    if row:
                        if max(benchmark.fields) >= len(row):
                            raise ValueError(f"{file}:{number}: benchmark {benchmark.name} row has no column "
                                             f"{max(benchmark.fields)}")
                        items.append([row[c] for c in benchmark.fields])
    return items


def read_items(benchmark: Benchmark) -> list[str]:
    """Each item's indexed text: its configured fields joined by spaces."""
    return [" ".join(fields) for fields in read_item_fields(benchmark)]


def _changes(*columns: np.ndarray) -> np.ndarray:
    """Where a row of sorted columns differs from the row before in any column (the first row does)."""
    change = np.zeros(len(columns[0]), dtype=bool)
    change[:1] = True
    for column in columns:
        change[1:] |= column[1:] != column[:-1]
    return change


def _distinct(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting: numpy 2's hash-based unique takes ~10x longer on a million uint64 keys."""
    ordered = np.sort(values)
    return ordered[_changes(ordered)]


def _longest_runs(items: np.ndarray, positions: np.ndarray, item_count: int) -> np.ndarray:
    """Per item, the longest run of consecutive positions present in (items, positions)."""
    longest = np.zeros(item_count, dtype=np.int64)
    if not len(items):
        return longest
    order = np.lexsort([positions, items])
    items, positions = items[order], positions[order].astype(np.int64)
    distinct = _changes(items, positions)
    items, positions = items[distinct], positions[distinct]
    new_run = _changes(items, positions - np.arange(len(positions)))
    np.maximum.at(longest, items[new_run], np.bincount(np.cumsum(new_run) - 1))
    return longest


def _items_per_key(keys: np.ndarray, owners: np.ndarray) -> np.ndarray:
    """For each (key, owner) pair, how many distinct owners share its key."""
    distinct, key_id = np.unique(keys, return_inverse=True)
    pairs = np.unique(key_id.astype(np.int64) * (int(owners.max(initial=0)) + 1) + owners)
    return np.bincount(pairs // (int(owners.max(initial=0)) + 1), minlength=len(distinct))[key_id]


def _field_index(word_hashes: np.ndarray, item_words: np.ndarray, item_content: np.ndarray,
                 field_items: np.ndarray, field_length: np.ndarray, kept_items: np.ndarray,
                 kept_positions: np.ndarray, settings: DecontaminationSettings) -> dict[str, np.ndarray]:
    """The arrays of the field-by-field match. Fields are numbered item by item, and their words
    follow one another in `word_hashes` (all items' words in order). `kept_items` and
    `kept_positions` are the indexed n-grams of the items of n words or more."""
    n = settings.ngram
    field_start = np.concatenate([[0], np.cumsum(field_length)])[:-1]
    item_first = np.concatenate([[0], np.cumsum(item_words)])
    # a long field is found by a run of its own indexed n-grams: those that do not cross its edges
    word = item_first[kept_items] + kept_positions
    field = np.searchsorted(field_start, word, side="right") - 1
    inside = word + n <= field_start[field] + field_length[field]
    needed_run = np.minimum(_longest_runs(field[inside], kept_positions[inside], len(field_length)),
                            settings.min_run)
    # any other field (shorter than n, or with no indexed n-gram) by the hash of all of its words
    field_hash = keyed(grams_at(word_hashes, field_start, field_length), field_length, n)
    whole = np.flatnonzero((field_length > 0) & (needed_run == 0))
    shared = np.zeros(len(field_length), np.int64)
    shared[whole] = _items_per_key(field_hash[whole], field_items[whole])
    role = np.where(field_length > 0, _COMPANION, _NOT_REQUIRED)
    role[(needed_run > 0) | ((field_length >= _ANCHOR_WORDS) & (needed_run == 0) & (shared <= settings.max_items))] \
        = _ANCHOR
    indexed = (item_words >= settings.min_item_tokens) & (item_content >= settings.min_content_words)
    role[~indexed[field_items]] = _NOT_REQUIRED
    needed_run[role != _ANCHOR] = 0
    # a whole-hash anchor is probed by its gram of _ANCHOR_WORDS words that the fewest fields
    # share: a common opening ("which of the following") would send every document that has
    # it to hundreds of fields
    probed = np.flatnonzero((role == _ANCHOR) & (needed_run == 0))
    choices = field_length[probed] - _ANCHOR_WORDS + 1
    candidate_field = np.repeat(probed, choices)
    candidate_offset = np.arange(int(choices.sum())) - np.repeat(np.cumsum(choices) - choices, choices)
    candidate_key = keyed(grams_at(word_hashes, field_start[candidate_field] + candidate_offset, _ANCHOR_WORDS),
                          _ANCHOR_WORDS, n)
    best = np.lexsort([candidate_offset, _items_per_key(candidate_key, candidate_field), candidate_field])
    best = best[_changes(candidate_field[best])]
    best = best[np.lexsort([candidate_field[best], candidate_key[best]])]
    return {"field_items": field_items, "field_length": field_length, "field_hash": field_hash,
            "field_needed_run": needed_run, "field_role": role.astype(np.int8), "item_words": item_words,
            "item_anchors": np.bincount(field_items[role == _ANCHOR], minlength=len(item_words)),
            "field_keys": candidate_key[best], "field_key_fields": candidate_field[best],
            "field_key_offsets": candidate_offset[best]}


@dataclass
class _ItemGrams:
    """One benchmark's indexed grams (before template grams are dropped) and its per-item columns."""

    grams: np.ndarray  # keyed hash of each gram with enough content words
    items: np.ndarray  # its item (numbered within the benchmark)
    positions: np.ndarray  # its first word, within the item
    content: np.ndarray  # per item, its words that are not common English
    short_hash: np.ndarray  # per item shorter than n (0 otherwise): its whole keyed hash,
    short_length: np.ndarray  # its length,
    short_prefix: np.ndarray  # and the keyed hash of its first `prefix` words
    too_short: int  # items under min_item_tokens words, never indexed


@functools.cache
def _common_word_hashes() -> np.ndarray:
    """The word hashes of the common English words that are one whole word token each."""
    listed = [word for word in sorted(COMMON_ENGLISH) if word == word.lower()]
    words = Words.of(listed)
    single = np.flatnonzero(words.counts == 1)
    first = words.firsts[single]
    whole = (words.starts[first] == 0) & (words.ends[first] == np.array([len(listed[i]) for i in single]))
    return np.sort(words.hashes[first[whole]])


def _item_grams(tokens: Words, settings: DecontaminationSettings, prefix: int) -> _ItemGrams:
    """Every item's n-grams (an item of fewer than n words is one gram of its own length), with a
    whole-array pass over the benchmark's words rather than a Python loop over its items."""
    hashes, starts, lengths = tokens.hashes, tokens.firsts[:-1], tokens.counts
    content = (~np.isin(hashes, _common_word_hashes())).astype(np.int64)
    content_before = np.concatenate([[0], np.cumsum(content)])
    indexed = np.where(lengths < settings.min_item_tokens, 0, np.minimum(lengths, settings.ngram))
    # windows of n words that stay inside their item: the gram of every word position at once
    windows = np.where(indexed == settings.ngram, lengths - settings.ngram + 1, 0)
    window_item = np.repeat(np.arange(len(lengths)), windows)
    window_start = starts[window_item] + np.arange(len(window_item)) - np.repeat(np.cumsum(windows) - windows, windows)
    full = gram_hashes(hashes, settings.ngram)
    short = np.flatnonzero((indexed > 0) & (indexed < settings.ngram))
    gram_item = np.concatenate([window_item, short])
    gram_start = np.concatenate([window_start, starts[short]])
    gram_length = indexed[gram_item]
    gram = keyed(np.concatenate([full[window_start], grams_at(hashes, starts[short], indexed[short])]),
                 gram_length, settings.ngram)
    kept = content_before[gram_start + gram_length] - content_before[gram_start] >= settings.min_content_words
    short_hash, short_length, short_prefix = (np.zeros(len(lengths), np.uint64), np.zeros(len(lengths), np.int64),
                                              np.zeros(len(lengths), np.uint64))
    short_hash[short] = gram[len(window_item):]
    short_length[short] = indexed[short]
    short_prefix[short] = keyed(grams_at(hashes, starts[short], prefix), prefix, settings.ngram)
    return _ItemGrams(gram[kept], gram_item[kept], (gram_start - starts[gram_item])[kept].astype(np.int32),
                      content_before[starts + lengths] - content_before[starts], short_hash, short_length, short_prefix,
                      int(np.count_nonzero(lengths < settings.min_item_tokens)))


def build_index(benchmarks: list[Benchmark], settings: DecontaminationSettings, out_dir: str) -> dict:
    """The index directory: the Bloom filter, the sorted probe keys of the item n-grams with their
    item and position, and the fields of every item with the probe keys of the anchors matched
    by their whole hash. A short item (fewer than n words) is probed by the hash of its first `prefix` words
    (prefix = min(min_item_tokens, n)), so that a scan computes few gram lengths, and confirmed
    by its whole-item hash (`short_hash`, `short_length`)."""
    prefix = min(settings.min_item_tokens, settings.ngram)
    grams, items, positions, names, counts = [], [], [], [], {}
    short_hash, short_length, short_prefix = [], [], []
    word_hashes, item_words, item_content, field_length, field_items = [], [], [], [], []
    item_offset, boundaries = 0, [0]
    for benchmark in benchmarks:
        fielded = read_item_fields(benchmark)
        texts = [" ".join(fields) for fields in fielded]
        names.append(benchmark.name)
        tokens = Words.of(texts)
        word_hashes.append(tokens.hashes)
        item_words.append(tokens.counts)
        field_length.append(Words.of([field for fields in fielded for field in fields]).counts)
        field_items.append(np.repeat(np.arange(item_offset, item_offset + len(texts)), [len(f) for f in fielded]))
        item_grams = _item_grams(tokens, settings, prefix)
        counts[benchmark.name] = {"items": len(texts), "too_short": item_grams.too_short}
        item_content.append(item_grams.content)
        grams.append(item_grams.grams)
        items.append(item_grams.items + item_offset)
        positions.append(item_grams.positions)
        short_hash.append(item_grams.short_hash)
        short_length.append(item_grams.short_length)
        short_prefix.append(item_grams.short_prefix)
        item_offset += len(texts)
        boundaries.append(item_offset)
    gram_array = np.concatenate(grams) if grams else np.zeros(0, np.uint64)
    item_array = np.concatenate(items) if items else np.zeros(0, np.int64)
    position_array = np.concatenate(positions) if positions else np.zeros(0, np.int32)
    short_hash = np.concatenate(short_hash) if short_hash else np.zeros(0, np.uint64)
    short_length = np.concatenate(short_length) if short_length else np.zeros(0, np.int64)
    short_prefix = np.concatenate(short_prefix) if short_prefix else np.zeros(0, np.uint64)
    order = np.lexsort([position_array, item_array, gram_array])
    gram_array, item_array, position_array = gram_array[order], item_array[order], position_array[order]
    # n-grams (and whole short items) shared by many items are template text, not contamination
    new_gram = np.concatenate([[True], gram_array[1:] != gram_array[:-1]]) if len(gram_array) else np.zeros(0, bool)
    new_pair = new_gram | np.concatenate([[True], item_array[1:] != item_array[:-1]]) if len(gram_array) else new_gram
    gram_id = np.cumsum(new_gram) - 1
    items_per_gram = np.bincount(gram_id[new_pair], minlength=int(new_gram.sum()))
    keep = items_per_gram[gram_id] <= settings.max_items
    common = int(np.count_nonzero(items_per_gram > settings.max_items))
    gram_array, item_array, position_array = gram_array[keep], item_array[keep], position_array[keep]
    # the run an item needs: min_run, or its longest run of indexed grams when that is shorter
    needed_run = np.minimum(_longest_runs(item_array, position_array, item_offset), settings.min_run)
    fields = _field_index(
        np.concatenate(word_hashes) if word_hashes else np.zeros(0, np.uint64),
        np.concatenate(item_words).astype(np.int64) if item_words else np.zeros(0, np.int64),
        np.concatenate(item_content) if item_content else np.zeros(0, np.int64),
        np.concatenate(field_items).astype(np.int64) if field_items else np.zeros(0, np.int64),
        np.concatenate(field_length).astype(np.int64) if field_length else np.zeros(0, np.int64),
        item_array, position_array.astype(np.int64), settings)
    for number, name in enumerate(names):
        needed = needed_run[boundaries[number]:boundaries[number + 1]]
        counts[name]["unindexable"] = int(np.count_nonzero(needed == 0)) - counts[name]["too_short"]
        counts[name]["short"] = int(np.count_nonzero((needed > 0) & (needed < settings.min_run)))
        counts[name]["field_matchable"] = int(np.count_nonzero(
            fields["item_anchors"][boundaries[number]:boundaries[number + 1]]))
    is_short = short_length[item_array] > 0
    gram_array[is_short] = short_prefix[item_array[is_short]]
    order = np.lexsort([position_array, item_array, gram_array])
    gram_array, item_array, position_array = gram_array[order], item_array[order], position_array[order]
    distinct = _distinct(np.concatenate([gram_array, fields["field_keys"]]))
    bloom, hashes = build_bloom(distinct, settings.false_positive_rate)
    bits = len(bloom) * 64
    arrays = {"bloom": bloom, "grams": gram_array, "items": item_array, "positions": position_array,
              "needed_run": needed_run, "short_hash": short_hash, "short_length": short_length, **fields}
    meta = {"settings": asdict(settings), "benchmarks": names, "item_boundaries": boundaries, "items": counts,
            "bloom_bits": bits, "bloom_hashes": hashes, "indexed_grams": int(len(gram_array)),
            "distinct_grams": int(np.count_nonzero(_changes(gram_array))), "template_grams_dropped": common,
            "prefix_length": prefix, "short_lengths": sorted({int(n) for n in short_length if n}),
            "field_probe_length": _ANCHOR_WORDS, "field_keys": int(len(fields["field_keys"])),
            "index_bytes": int(sum(array.nbytes for array in arrays.values()))}
    with atomic_output(out_dir, directory=True) as temp:
        for name, array in arrays.items():
            np.save(temp / f"{name}.npy", array)
        write_json(temp / "meta.json", meta)
    return meta


class Index:
    def __init__(self, directory: str):
        folder = Path(directory)
        self.meta = read_json(folder / "meta.json")
        self.settings = DecontaminationSettings(**self.meta["settings"])
        for name in ("bloom", "grams", "items", "positions", "needed_run", "short_hash", "short_length",
                     "field_items", "field_length", "field_hash", "field_needed_run", "field_role", "item_words",
                     "item_anchors", "field_keys", "field_key_fields", "field_key_offsets"):
            setattr(self, name, np.load(folder / f"{name}.npy"))
        self.boundaries = np.array(self.meta["item_boundaries"])
        self.field_start = np.concatenate([[0], np.cumsum(self.field_length)])[:-1]  # in all items' words
        self.item_first = np.concatenate([[0], np.cumsum(self.item_words)])
        self.item_fields = np.searchsorted(self.field_items, np.arange(len(self.item_words) + 1))

    def benchmark_of(self, item: int) -> str:
        return self.meta["benchmarks"][int(np.searchsorted(self.boundaries, item, side="right") - 1)]

    def maybe(self, keys: np.ndarray) -> np.ndarray:
        return bloom_contains(self.bloom, self.meta["bloom_hashes"], keys)

    def candidates(self, word_hashes: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys that pass the Bloom filter: the n-grams, the short-item prefixes and the field
        probes that lie inside one document (`ends`: where each document's words end), with their
        positions; also the words left in its document at each position. All lengths come from
        one pass."""
        ngram = self.settings.ngram
        probed = {ngram, self.meta["field_probe_length"]}
        if self.meta["short_lengths"]:
            probed.add(self.meta["prefix_length"])
        room = np.repeat(ends, np.diff(np.concatenate([[0], ends]))) - np.arange(len(word_hashes))
        keys, positions = [], []
        grams = word_hashes
        for length in range(1, max(probed) + 1):
            grams = grams if length == 1 else extend_grams(grams, word_hashes, length)
            if not len(grams):
                break
            if length in probed:
                inside = np.flatnonzero(room[:len(grams)] >= length)
                keys.append(keyed(grams[inside], length, ngram))
                positions.append(inside)
        if not keys:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64), room
        keys, positions = np.concatenate(keys), np.concatenate(positions)
        passed = self.maybe(keys)
        return keys[passed], positions[passed], room

    @staticmethod
    def _lookup(table: np.ndarray, keys: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position, row) of every row of the sorted `table` that holds one of `keys`."""
        left = np.searchsorted(table, keys, side="left")
        per_key = np.searchsorted(table, keys, side="right") - left
        hits = per_key > 0
        left, per_key = left[hits], per_key[hits]
        rows = np.repeat(left - np.cumsum(per_key) + per_key, per_key) + np.arange(int(per_key.sum()))
        return np.repeat(positions[hits], per_key), rows

    def _item_gram_hits(self, word_hashes: np.ndarray, keys: np.ndarray, positions: np.ndarray,
                        room: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(document position, row of the item-gram table) of each match, short items confirmed
        whole (their probe is a prefix)."""
        doc_pos, rows = self._lookup(self.grams, keys, positions)
        length = self.short_length[self.items[rows]]
        check = np.flatnonzero(length > 0)
        check = check[room[doc_pos[check]] >= length[check]]
        confirmed = length == 0
        confirmed[check] = keyed(grams_at(word_hashes, doc_pos[check], length[check]), length[check],
                                 self.settings.ngram) == self.short_hash[self.items[rows[check]]]
        return doc_pos[confirmed], rows[confirmed]

    def _whole_item_matches(self, doc_pos: np.ndarray, rows: np.ndarray, ends: np.ndarray) -> dict:
        """(doc, item) -> (run, first word, last word) of the longest run of the item's n-grams in
        its own order, where that run is long enough."""
        found: dict[tuple[int, int], tuple[int, int, int]] = {}
        item = self.items[rows]
        sizes = np.where(self.short_length[item] > 0, self.short_length[item], self.settings.ngram)
        diagonal = doc_pos - self.positions[rows].astype(np.int64)
        order = np.lexsort([doc_pos, diagonal, item])
        item, diagonal, doc_pos, sizes = item[order], diagonal[order], doc_pos[order], sizes[order]
        new_run = _changes(item, diagonal, doc_pos - np.arange(len(doc_pos)))  # consecutive grams, one diagonal
        run_length = np.bincount(np.cumsum(new_run) - 1)
        for run, start in zip(run_length.tolist(), np.flatnonzero(new_run).tolist()):
            key, first = int(item[start]), int(doc_pos[start])
            doc = int(np.searchsorted(ends, first, side="right"))
            if run >= self.needed_run[key] and run > found.get((doc, key), (0, 0, 0))[0]:
                found[doc, key] = (run, first, first + run - 1 + int(sizes[start]) - 1)
        return found

    def _whole_fields_at(self, word_hashes: np.ndarray, fields: np.ndarray, starts: np.ndarray, room: np.ndarray,
                         firsts: np.ndarray, document: np.ndarray) -> np.ndarray:
        """Which of `fields` are there whole, all of their words, from `starts` (each inside
        `document`, a document number per row)."""
        length = self.field_length[fields]
        inside = np.flatnonzero((starts >= firsts[document]) & (room[np.maximum(starts, 0)] >= length))
        there = np.zeros(len(fields), dtype=bool)
        there[inside] = keyed(grams_at(word_hashes, starts[inside], length[inside]), length[inside],
                              self.settings.ngram) == self.field_hash[fields[inside]]
        return there

    def _anchor_events(self, word_hashes: np.ndarray, doc_pos: np.ndarray, rows: np.ndarray, keys: np.ndarray,
                       positions: np.ndarray, room: np.ndarray, firsts: np.ndarray, ends: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(field, first word, last word, run) of every anchor field found: by a long enough run of
        the indexed n-grams inside it, or by its probe key and then the hash of all of its words."""
        ngram = self.settings.ngram
        item = self.items[rows]
        word = self.item_first[item] + self.positions[rows].astype(np.int64)
        field = np.searchsorted(self.field_start, word, side="right") - 1
        inside = (self.short_length[item] == 0) & (word + ngram <= self.field_start[field] + self.field_length[field]) \
            & (self.field_needed_run[field] > 0)
        field, at, diagonal = field[inside], doc_pos[inside], (doc_pos - word)[inside]
        order = np.lexsort([at, diagonal, field])
        field, at, diagonal = field[order], at[order], diagonal[order]
        # one occurrence of a field: its n-grams on one diagonal, found by their longest run
        new_run = _changes(field, diagonal, at - np.arange(len(at)))
        new_occurrence = _changes(field, diagonal)
        occurrence = np.cumsum(new_occurrence) - 1
        starts = np.flatnonzero(new_occurrence)
        longest, last_gram = np.zeros(len(starts), np.int64), np.zeros(len(starts), np.int64)
        np.maximum.at(longest, occurrence[new_run], np.bincount(np.cumsum(new_run) - 1))
        np.maximum.at(last_gram, occurrence, at)
        enough = longest >= self.field_needed_run[field[starts]]
        gram_field, gram_first, gram_run = field[starts][enough], at[starts][enough], longest[enough]
        gram_last = last_gram[enough] + ngram - 1
        # where the field is there whole, that is the occurrence (its common-English ends included)
        placed = self.field_start[gram_field] + diagonal[starts][enough]
        whole = self._whole_fields_at(word_hashes, gram_field, placed, room, firsts,
                                      np.searchsorted(ends, gram_first, side="right"))
        gram_first[whole], gram_last[whole] = placed[whole], placed[whole] + self.field_length[gram_field[whole]] - 1
        probe_pos, key_rows = self._lookup(self.field_keys, keys, positions)
        probed_field = self.field_key_fields[key_rows]
        probed_first = probe_pos - self.field_key_offsets[key_rows]
        whole = self._whole_fields_at(word_hashes, probed_field, probed_first, room, firsts,
                                      np.searchsorted(ends, probe_pos, side="right"))
        probed_field, probed_first = probed_field[whole], probed_first[whole]
        return (np.concatenate([gram_field, probed_field]),
                np.concatenate([gram_first, probed_first]),
                np.concatenate([gram_last, probed_first + self.field_length[probed_field] - 1]),
                np.concatenate([gram_run, np.zeros(len(probed_field), np.int64)]))

    def _field_matches(self, word_hashes: np.ndarray, events: tuple, firsts: np.ndarray, ends: np.ndarray) -> dict:
        """(doc, item) -> (run, first word, last word) of the smallest window that holds every
        field of the item, where that window is at most `field_gap_words` per field longer than
        the item. Only items with all of their anchor fields in the document are looked at closer."""
        field, first, last, run = events
        item = self.field_items[field]
        doc = np.searchsorted(ends, first, side="right")
        order = np.lexsort([first, field, item, doc])
        field, first, last, run, item, doc = (a[order] for a in (field, first, last, run, item, doc))
        new_group, new_field = _changes(doc, item), _changes(doc, item, field)
        group = np.cumsum(new_group) - 1
        group_starts = np.flatnonzero(new_group)
        anchors_found = np.bincount(group[new_field], minlength=len(group_starts))
        complete = np.flatnonzero(anchors_found == self.item_anchors[item[group_starts]])
        bounds = np.concatenate([group_starts, [len(field)]])
        found: dict[tuple[int, int], tuple[int, int, int]] = {}
        for number in complete.tolist():
            lo, hi = int(bounds[number]), int(bounds[number + 1])
            key, in_doc = int(item[lo]), int(doc[lo])
            fields = np.arange(self.item_fields[key], self.item_fields[key + 1])
            required = fields[self.field_role[fields] != _NOT_REQUIRED]
            limit = int(self.item_words[key]) + self.settings.field_gap_words * len(required)
            window_first = max(int(first[lo:hi].min()) - limit, int(firsts[in_doc]))
            window_end = min(int(last[lo:hi].max()) + limit + 1, int(ends[in_doc]))
            found_events = list(zip(first[lo:hi].tolist(), last[lo:hi].tolist(), field[lo:hi].tolist(),
                                    run[lo:hi].tolist()))
            for companion in fields[self.field_role[fields] == _COMPANION].tolist():
                length = int(self.field_length[companion])
                starts = np.arange(window_first, window_end - length + 1)
                hashes = keyed(grams_at(word_hashes, starts, length), length, self.settings.ngram)
                for start in starts[hashes == self.field_hash[companion]].tolist():
                    found_events.append((start, start + length - 1, companion, 0))
            window = _smallest_window(sorted(found_events), set(required.tolist()), limit)
            if window:
                found[in_doc, key] = window
        return found

    def scan(self, texts: list[str]) -> list[tuple[list[dict], int]]:
        """For each text, its contaminating items [{benchmark, item, run, start, end}] (character
        offsets) and its number of word tokens. Texts are scanned together: one vectorised
        pass over all of their words."""
        words = Words.of(texts)
        firsts, ends = words.firsts[:-1], words.firsts[1:]
        results: list[tuple[list[dict], int]] = [([], int(count)) for count in words.counts]
        keys, positions, room = self.candidates(words.hashes, ends)
        if not len(keys):
            return results
        doc_pos, rows = self._item_gram_hits(words.hashes, keys, positions, room)
        found = self._whole_item_matches(doc_pos, rows, ends)
        events = self._anchor_events(words.hashes, doc_pos, rows, keys, positions, room, firsts, ends)
        for key, (run, first, last) in self._field_matches(words.hashes, events, firsts, ends).items():
            # a window with every field is the better span; a run that reaches into it (a label
            # that happens to repeat the item's next word) widens it
            if key in found and found[key][1] <= last and first <= found[key][2]:
                run, first, last = max(run, found[key][0]), min(first, found[key][1]), max(last, found[key][2])
            found[key] = (run, first, last)
        for (doc, key), (run, first, last) in sorted(found.items()):
            start, end = words.span(doc, texts[doc], first, last)
            results[doc][0].append({"benchmark": self.benchmark_of(key), "item": key, "run": run,
                                    "start": start, "end": end})
        return results

    def matches(self, text: str) -> tuple[list[dict], int]:
        return self.scan([text])[0]


def _smallest_window(events: list[tuple[int, int, int, int]], required: set, limit: int
                     ) -> tuple[int, int, int] | None:
    """(longest run, first word, last word) of the shortest stretch of document, at most `limit`
    words, whose events (first word, last word, field, run; sorted) cover every required field."""
    best = None
    for number, (first, _, _, _) in enumerate(events):
        seen, last, run = set(), first, 0
        for event_first, event_last, field, event_run in events[number:]:
            if event_first - first >= limit:
                break
            seen.add(field)
            last, run = max(last, event_last), max(run, event_run)
            if seen >= required:
                if last - first < limit and (best is None or last - first < best[2] - best[1]):
                    best = (run, first, last)
                break
    return best


SPAN_FIELDS = ("start", "end", "benchmark", "item", "run")
SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("url", pa.string()),
    # the benchmarks found in the document, or in the one it derives from (a rewrite of a leaked item)
    ("contaminated_by", pa.list_(pa.string())),
    ("derived_contaminated_by", pa.list_(pa.string())),  # of those, the ones found in that source document
    ("longest_run", pa.int32()),
    # character offsets in the extracted text; item numbers count from 0 through the benchmark list
    ("matched_spans", pa.list_(pa.struct([("start", pa.int32()), ("end", pa.int32()), ("benchmark", pa.string()),
                                          ("item", pa.int64()), ("run", pa.int32())]))),
    ("words", pa.int64()),
])


def decontamination_rows(docs: list[dict], index: Index, inherited: dict[str, list[str]] | None = None) -> pa.Table:
    """One row of SCHEMA per document, in order; the batch is scanned in one pass. `inherited`:
    doc_id -> benchmarks of the documents the batch's documents may derive from (a synthetic part's
    source part): a rewrite of a contaminated document is contaminated, whatever words it chose."""
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for doc, (hits, words) in zip(docs, index.scan([doc["text"] for doc in docs])):
        derived = sorted((inherited or {}).get(doc.get("derived_from") or "", []))
        columns["doc_id"].append(doc["doc_id"])
        columns["url"].append(doc.get("url"))
        columns["contaminated_by"].append(sorted({h["benchmark"] for h in hits} | set(derived)))
        columns["derived_contaminated_by"].append(derived)
        columns["longest_run"].append(max((h["run"] for h in hits), default=0))
        columns["matched_spans"].append([{k: h[k] for k in SPAN_FIELDS} for h in hits])
        columns["words"].append(words)
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def contamination_summary(table: pa.Table) -> dict:
    """Documents, and documents flagged, of a part's decontamination table."""
    flagged = table.column("contaminated_by").to_pylist()
    return {"documents": table.num_rows, "flagged": sum(bool(benchmarks) for benchmarks in flagged)}


def contaminated_documents(decontamination_path: str) -> dict[str, list[str]]:
    """doc_id -> benchmarks, of the contaminated documents of a part's decontamination table."""
    table = read_parquet(decontamination_path, ["doc_id", "contaminated_by"])
    return {doc_id: benchmarks for doc_id, benchmarks in zip(table.column("doc_id").to_pylist(),
                                                              table.column("contaminated_by").to_pylist()) if benchmarks}
