"""decontaminate: find benchmark text (GSM8K, HumanEval, MMLU, ...) inside training documents.

The index holds the 64-bit hashes of every normalized n-gram (lower case, punctuation
stripped, word tokens; n = 13 by default) of every benchmark item, behind a Bloom filter
for the fast probe. A document is contaminated by an item when it contains a run of at
least `min_run` consecutive n-grams of that item in the item's own order (confirmed
against the exact hash set, not the Bloom filter); an item with fewer n-grams than
`min_run` needs all of them in order. An item shorter than n words is one gram of its own
length. Template and common-English n-grams are left out of the index: those shared by more
than `max_items` items ("which of the following is ...") and those with fewer than
`min_content_words` words outside jusText's English stop list. Items with fewer than
`min_item_tokens` tokens are not indexed at all (they would match ordinary prose).
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import justext
import numpy as np
import pyarrow as pa

from tokenmill.bloom import bloom_contains, build_bloom
from tokenmill.dedup.minhash import fmix64
from tokenmill.io import atomic_output, read_json, read_jsonl_zst, write_json, write_parquet
from tokenmill.progress import Progress

_PRIME = np.uint64(0x9E3779B97F4A7C15)
_BASE = np.uint64(0x100000001B3)  # odd
_BASE_INVERSE = np.uint64(pow(int(_BASE), -1, 1 << 64))
COMMON_ENGLISH = frozenset(justext.get_stoplist("English"))


@dataclass(frozen=True)
class DecontaminationSettings:
    ngram: int = 13
    min_run: int = 10
    max_items: int = 10
    min_item_tokens: int = 8
    min_content_words: int = 3
    false_positive_rate: float = 1e-4


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
        powers = np.cumprod(np.full(len(codes), _BASE, dtype=np.uint64)) * _BASE_INVERSE  # base**i
        inverse_powers = np.cumprod(np.full(len(codes), _BASE_INVERSE, dtype=np.uint64)) * _BASE
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
            stops = np.cumsum([len(character.lower()) for character in text])
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


def keyed(grams: np.ndarray, n: int, ngram: int) -> np.ndarray:
    """Index keys: a short item's whole-item gram carries its length, so lengths never collide."""
    return grams if n == ngram else grams ^ np.uint64(n)


def _open_text(path: str):
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    return io.TextIOWrapper(raw, encoding="utf-8", newline="")


def read_items(benchmark: Benchmark) -> list[str]:
    """Each item's indexed text: its configured fields joined by spaces, in file order
    (a directory of CSV files is read file by sorted name)."""
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
                        items.append(" ".join(str(record[f]) for f in benchmark.fields))
            else:
                for number, row in enumerate(csv.reader(handle), start=1):
                    if row:
                        if max(benchmark.fields) >= len(row):
                            raise ValueError(f"{file}:{number}: benchmark {benchmark.name} row has no column "
                                             f"{max(benchmark.fields)}")
                        items.append(" ".join(row[c] for c in benchmark.fields))
    return items


def _window_sums(values: np.ndarray, n: int) -> np.ndarray:
    total = np.concatenate([[0], np.cumsum(values)])
    return total[n:] - total[:-n]


def _longest_runs(items: np.ndarray, positions: np.ndarray, item_count: int) -> np.ndarray:
    """Per item, the longest run of consecutive positions present in (items, positions)."""
    longest = np.zeros(item_count, dtype=np.int64)
    if not len(items):
        return longest
    pairs = np.unique(np.stack([items, positions.astype(np.int64)], axis=1), axis=0)
    new_run = np.concatenate([[True], (pairs[1:, 0] != pairs[:-1, 0]) | (pairs[1:, 1] != pairs[:-1, 1] + 1)])
    run_id = np.cumsum(new_run) - 1
    np.maximum.at(longest, pairs[new_run, 0], np.bincount(run_id))
    return longest


def build_index(benchmarks: list[Benchmark], settings: DecontaminationSettings, out_dir: str) -> dict:
    """The index directory: the Bloom filter and the sorted probe keys with their item and
    position. A short item (fewer than n words) is probed by the hash of its first
    `prefix` words (prefix = min(min_item_tokens, n)), so that a scan computes two gram lengths
    only, and confirmed by its whole-item hash (`short_hash`, `short_length`)."""
    prefix = min(settings.min_item_tokens, settings.ngram)
    grams, items, positions, names, counts = [], [], [], [], {}
    short_hash, short_length, short_prefix = [], [], []
    item_offset, boundaries = 0, [0]
    for benchmark in benchmarks:
        texts = read_items(benchmark)
        names.append(benchmark.name)
        counts[benchmark.name] = {"items": len(texts), "too_short": 0}
        tokens = Words.of(texts)
        for local in range(len(texts)):
            words = tokens.words(local)
            word_hashes = tokens.hashes[tokens.firsts[local]:tokens.firsts[local + 1]]
            n = min(settings.ngram, len(words))  # an item shorter than n is one gram of its own length
            if len(words) < settings.min_item_tokens:
                counts[benchmark.name]["too_short"] += 1
                n = 0
            hashes = keyed(gram_hashes(word_hashes, n), n, settings.ngram) if n else np.zeros(0, np.uint64)
            kept = _window_sums(np.array([w not in COMMON_ENGLISH for w in words], dtype=np.int64), n) \
                >= settings.min_content_words if n else np.zeros(0, bool)
            grams.append(hashes[kept])
            items.append(np.full(int(kept.sum()), item_offset + local, dtype=np.int64))
            positions.append(np.flatnonzero(kept).astype(np.int32))
            is_short = 0 < n < settings.ngram
            short_hash.append(hashes[0] if is_short else 0)
            short_length.append(n if is_short else 0)
            short_prefix.append(keyed(gram_hashes(word_hashes[:prefix], prefix), prefix, settings.ngram)[0]
                                if is_short else 0)
        item_offset += len(texts)
        boundaries.append(item_offset)
    gram_array = np.concatenate(grams) if grams else np.zeros(0, np.uint64)
    item_array = np.concatenate(items) if items else np.zeros(0, np.int64)
    position_array = np.concatenate(positions) if positions else np.zeros(0, np.int32)
    short_hash, short_length = np.array(short_hash, dtype=np.uint64), np.array(short_length, dtype=np.int64)
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
    for number, name in enumerate(names):
        needed = needed_run[boundaries[number]:boundaries[number + 1]]
        counts[name]["unindexable"] = int(np.count_nonzero(needed == 0)) - counts[name]["too_short"]
        counts[name]["short"] = int(np.count_nonzero((needed > 0) & (needed < settings.min_run)))
    is_short = short_length[item_array] > 0
    gram_array[is_short] = np.array(short_prefix, dtype=np.uint64)[item_array[is_short]]
    order = np.lexsort([position_array, item_array, gram_array])
    gram_array, item_array, position_array = gram_array[order], item_array[order], position_array[order]
    distinct = np.unique(gram_array)
    bloom, hashes = build_bloom(distinct, settings.false_positive_rate)
    bits = len(bloom) * 64
    arrays = {"bloom": bloom, "grams": gram_array, "items": item_array, "positions": position_array,
              "needed_run": needed_run, "short_hash": short_hash, "short_length": short_length}
    meta = {"settings": asdict(settings), "benchmarks": names, "item_boundaries": boundaries, "items": counts,
            "bloom_bits": bits, "bloom_hashes": hashes, "indexed_grams": int(len(gram_array)),
            "distinct_grams": int(len(distinct)), "template_grams_dropped": common, "prefix_length": prefix,
            "short_lengths": sorted({int(n) for n in short_length if n}),
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
        self.bloom = np.load(folder / "bloom.npy")
        self.grams = np.load(folder / "grams.npy")
        self.items = np.load(folder / "items.npy")
        self.positions = np.load(folder / "positions.npy")
        self.needed_run = np.load(folder / "needed_run.npy")
        self.short_hash = np.load(folder / "short_hash.npy")
        self.short_length = np.load(folder / "short_length.npy")
        self.boundaries = np.array(self.meta["item_boundaries"])

    def benchmark_of(self, item: int) -> str:
        return self.meta["benchmarks"][int(np.searchsorted(self.boundaries, item, side="right") - 1)]

    def maybe(self, keys: np.ndarray) -> np.ndarray:
        return bloom_contains(self.bloom, self.meta["bloom_hashes"], keys)

    def candidates(self, word_hashes: np.ndarray, ends: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray], np.ndarray]:
        """Keys that pass the Bloom filter: the n-grams and the short-item prefixes that lie
        inside one document (`ends`: where each document's words end), with their positions;
        also the gram hashes of the short-item lengths (to confirm whole items) and the words
        left in its document at each position. All lengths come from one pass."""
        ngram, prefix = self.settings.ngram, self.meta["prefix_length"]
        short = set(self.meta["short_lengths"])
        room = np.repeat(ends, np.diff(np.concatenate([[0], ends]))) - np.arange(len(word_hashes))
        keys, positions, by_length = [], [], {}
        grams = word_hashes
        for length in range(1, ngram + 1):
            grams = grams if length == 1 else extend_grams(grams, word_hashes, length)
            if not len(grams):
                break
            if length in short:
                by_length[length] = keyed(grams, length, ngram)
            if length == ngram or (short and length == prefix):
                inside = np.flatnonzero(room[:len(grams)] >= length)
                keys.append(keyed(grams[inside], length, ngram))
                positions.append(inside)
        if not keys:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64), by_length, room
        keys, positions = np.concatenate(keys), np.concatenate(positions)
        passed = self.maybe(keys)
        return keys[passed], positions[passed], by_length, room

    def scan(self, texts: list[str]) -> list[tuple[list[dict], int]]:
        """For each text, its contaminating items [{benchmark, item, run, start, end}] (character
        offsets) and its number of word tokens. Texts are scanned together: one vectorised
        pass over all of their words."""
        words = Words.of(texts)
        ends = words.firsts[1:]
        results: list[tuple[list[dict], int]] = [([], int(count)) for count in words.counts]
        keys, doc_pos, by_length, room = self.candidates(words.hashes, ends)
        left = np.searchsorted(self.grams, keys, side="left")
        right = np.searchsorted(self.grams, keys, side="right")
        hits = right > left
        if not hits.any():
            return results
        per_key = (right - left)[hits]
        doc_pos = np.repeat(doc_pos[hits], per_key)
        index = np.repeat(left[hits] - np.cumsum(per_key) + per_key, per_key) + np.arange(int(per_key.sum()))
        item = self.items[index]
        sizes = np.where(self.short_length[item] > 0, self.short_length[item], self.settings.ngram)
        confirmed = self.short_length[item] == 0
        for length, grams in by_length.items():  # a short item's prefix matched: is the whole item there?
            check = np.flatnonzero(self.short_length[item] == length)
            check = check[room[doc_pos[check]] >= length]
            confirmed[check] = grams[doc_pos[check]] == self.short_hash[item[check]]
        doc_pos, item, sizes, index = doc_pos[confirmed], item[confirmed], sizes[confirmed], index[confirmed]
        if not len(item):
            return results
        diagonal = doc_pos - self.positions[index].astype(np.int64)
        order = np.lexsort([doc_pos, diagonal, item])
        item, diagonal, doc_pos, sizes = item[order], diagonal[order], doc_pos[order], sizes[order]
        new_run = np.concatenate([[True], (item[1:] != item[:-1]) | (diagonal[1:] != diagonal[:-1])
                                  | (doc_pos[1:] != doc_pos[:-1] + 1)])
        run_length = np.bincount(np.cumsum(new_run) - 1)
        found: dict[tuple[int, int], tuple[int, int, int]] = {}  # (doc, item) -> (run, first, last token)
        for run, start in zip(run_length.tolist(), np.flatnonzero(new_run).tolist()):
            key, first = int(item[start]), int(doc_pos[start])
            doc = int(np.searchsorted(ends, first, side="right"))
            if run >= self.needed_run[key] and run > found.get((doc, key), (0, 0, 0))[0]:
                found[doc, key] = (run, first, first + run - 1 + int(sizes[start]) - 1)
        for (doc, key), (run, first, last) in sorted(found.items()):
            start, end = words.span(doc, texts[doc], first, last)
            results[doc][0].append({"benchmark": self.benchmark_of(key), "item": key, "run": run,
                                    "start": start, "end": end})
        return results

    def matches(self, text: str) -> tuple[list[dict], int]:
        return self.scan([text])[0]


SPAN_FIELDS = ("start", "end", "benchmark", "item", "run")
SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("url", pa.string()),
    ("contaminated_by", pa.list_(pa.string())),
    ("longest_run", pa.int32()),
    # character offsets in the extracted text; item numbers count from 0 through the benchmark list
    ("matched_spans", pa.list_(pa.struct([("start", pa.int32()), ("end", pa.int32()), ("benchmark", pa.string()),
                                          ("item", pa.int64()), ("run", pa.int32())]))),
    ("words", pa.int64()),
])


def decontaminate_part(docs_path: str, index_dir: str, out_path: str, batch: int = 256) -> dict:
    index = Index(index_dir)
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    docs = iter(read_jsonl_zst(docs_path))
    progress = Progress("decontaminate")
    while chunk := list(itertools.islice(docs, batch)):
        for doc, (hits, words) in zip(chunk, index.scan([doc["text"] for doc in chunk])):
            columns["doc_id"].append(doc["doc_id"])
            columns["url"].append(doc.get("url"))
            columns["contaminated_by"].append(sorted({h["benchmark"] for h in hits}))
            columns["longest_run"].append(max((h["run"] for h in hits), default=0))
            columns["matched_spans"].append([{k: h[k] for k in SPAN_FIELDS} for h in hits])
            columns["words"].append(words)
        progress.tick(len(chunk))
    progress.finish()
    write_parquet(out_path, pa.Table.from_pydict(columns, schema=SCHEMA))
    return {"documents": len(columns["doc_id"]), "flagged": sum(bool(c) for c in columns["contaminated_by"])}
