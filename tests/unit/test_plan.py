"""Planning: input files grouped into parts, the per-snapshot listing that replaces globbing,
files added later, vanished files, and lookups that stay linear in the number of parts."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import demo_config
from tokenmill.__main__ import main
from tokenmill.config import ConfigError, validate
from tokenmill.plan import (PLAN_COLUMNS, Plan, group_files, list_inputs, listing_path, part_name,
                            read_plan, snapshot_plan_rows, text_from, write_plan)

PATHS = {kind: f"out/{kind}/{{source}}/{{snapshot}}/{{part}}" for kind in PLAN_COLUMNS[5:]}
PATHS["quality_encoder"] = "out/encoder/{source}/{snapshot}/chunk-{chunk}.parquet"
PATHS["judge"] = "out/judge/{version}/{source}/{snapshot}/{part}.parquet"


def crawl_config(pattern: str, target_bytes: int = 10, max_files: int = 3, **snapshots) -> dict:
    """A config of one WARC source whose snapshot s1 is `pattern` (plus `snapshots`), as a user
    writes it; validate() fills in the defaults."""
    return {"sources": {"web": {"kind": "warc", "tier": "crawl", "license_id": "x",
                                "snapshots": {"s1": [pattern], **snapshots}}},
            "parts": {"target_bytes": target_bytes, "max_files": max_files}}


def planned(config: dict, plan_dir, **options):
    return list_inputs(validate(copy.deepcopy(config)), str(plan_dir), **options)


def placeholders(folder: Path, sizes: dict[str, int]) -> None:
    """Sparse files of the given sizes (no data written), as a crawl's WARCs stand in the tests."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, size in sizes.items():
        with open(folder / name, "wb") as handle:
            handle.truncate(size)


def layout(listings) -> list[tuple[str, list[str]]]:
    """(part, input file names) of every part, in plan order."""
    return [(part.part, [Path(path).name for path in part.inputs]) for listing in listings for part in listing.parts]


def test_files_are_grouped_in_order_by_bytes_and_by_count():
    files = [("a", 4), ("b", 4), ("c", 4), ("d", 10), ("e", 1), ("f", 1), ("g", 1), ("h", 1), ("i", 30)]
    groups = group_files(files, target_bytes=8, max_files=3)
    # a+b fill 8 bytes; d is a part of its own at the target; e-g stop at 3 files; i is larger than the target
    assert [[name for name, _ in group] for group in groups] == [["a", "b"], ["c"], ["d"], ["e", "f", "g"], ["h"],
                                                                 ["i"]]
    assert group_files(files, target_bytes=1000, max_files=1000) == [files]
    assert group_files([], 8, 3) == []


def test_the_demo_config_makes_parts_of_several_files_and_keeps_one_file_names(tmp_path):
    listings = list_inputs(validate(demo_config()), str(tmp_path))
    parts = {(listing.source, listing.snapshot): layout([listing]) for listing in listings}
    assert sum(map(len, parts.values())) == 23 and len(parts) == 16
    # the synthetic source rewrites aeb_articles part for part: its inputs are the parts' generation records
    assert parts[("aeb_rephrased", "built-2026-11-29")] == [("aeb-articles-0000", ["aeb-articles-0000.jsonl.zst"]),
                                                             ("aeb-articles-0002", ["aeb-articles-0002.jsonl.zst"])]
    rewritten = next(listing for listing in listings if listing.source == "aeb_rephrased")
    assert rewritten.parts[0].inputs == (f"{tmp_path.parent}/generate/outputs/aeb_rephrased/built-2026-11-29/"
                                         "aeb-articles-0000.jsonl.zst",)
    assert rewritten.parts[0].bytes == next(l for l in listings if l.source == "aeb_articles").parts[0].bytes
    assert Path(listing_path(str(tmp_path), "aeb_rephrased", "built-2026-11-29")).read_text().startswith(
        '# tokenmill input listing {"rewrites":"aeb_articles/built-2026-11-29"}')
    # aeb_articles by size (3.5 MB), lingua by count (2 files); a one-file part keeps its file's name
    assert parts[("aeb_articles", "built-2026-11-29")] == [
        ("aeb-articles-0000", ["aeb-articles-0000.warc.gz", "aeb-articles-0001.warc.gz"]),
        ("aeb-articles-0002", ["aeb-articles-0002.warc.gz", "aeb-articles-0003.warc.gz"])]
    assert parts[("lingua_sentences", "lingua-754ce21")] == [
        ("lingua-ar-de-en-es", ["lingua-ar-de-en-es.jsonl.gz", "lingua-fr-hi-it-ja.jsonl.gz"]),
        ("lingua-nl-pl-pt-ru", ["lingua-nl-pl-pt-ru.jsonl.gz", "lingua-sw-tr-yo-zh.jsonl.gz"])]
    assert parts[("govuk", "BL-20140325121225")] == [("BL-20140325121225068-00000-32090_opera_8443",
                                                      ["BL-20140325121225068-00000-32090~opera~8443.warc.gz"])]
    assert part_name("/x/CC-MAIN-2020.warc.gz") == "CC-MAIN-2020" and part_name("a b.jsonl.zst") == "a_b"


def test_planning_is_deterministic_whatever_the_order_of_the_config(tmp_path):
    placeholders(tmp_path / "in", {f"f{n}.warc.gz": 3 + n % 4 for n in range(12)})
    config = crawl_config(str(tmp_path / "in" / "f1*.warc.gz"), s0=[str(tmp_path / "in" / "f[02-9].warc.gz")])
    reordered = copy.deepcopy(config)
    snapshots = reordered["sources"]["web"]["snapshots"]
    reordered["sources"]["web"]["snapshots"] = dict(reversed(list(snapshots.items())))
    first, second = planned(config, str(tmp_path / "a")), planned(reordered, str(tmp_path / "b"))
    assert first == second and [listing.snapshot for listing in first] == ["s0", "s1"]
    for snapshot in ("s0", "s1"):
        assert (Path(listing_path(str(tmp_path / "a"), "web", snapshot)).read_bytes()
                == Path(listing_path(str(tmp_path / "b"), "web", snapshot)).read_bytes())
    assert all(part.bytes <= 10 and len(part.inputs) <= 3 for listing in first for part in listing.parts)


def test_the_listing_is_read_instead_of_globbing(tmp_path):
    placeholders(tmp_path / "in", {"b.warc.gz": 4, "c.warc.gz": 4, "d.warc.gz": 4})
    config = crawl_config(str(tmp_path / "in" / "*.warc.gz"))
    plan_dir = str(tmp_path / "plan")
    first = planned(config, plan_dir)
    listing = Path(listing_path(plan_dir, "web", "s1"))
    written = listing.stat().st_mtime_ns
    placeholders(tmp_path / "in", {"a.warc.gz": 4})  # globbing would find it
    second = planned(config, plan_dir)
    assert first[0].globbed and not second[0].globbed
    assert layout(second) == layout(first) == [("b", ["b.warc.gz", "c.warc.gz"]), ("d", ["d.warc.gz"])]
    assert listing.stat().st_mtime_ns == written


def test_a_file_added_later_joins_a_new_part_and_no_listed_part_changes(tmp_path, capsys):
    placeholders(tmp_path / "in", {"b.warc.gz": 4, "c.warc.gz": 4, "d.warc.gz": 4})
    config = crawl_config(str(tmp_path / "in" / "*.warc.gz"))
    plan_dir = tmp_path / "results" / "plan"  # where the command below, run from tmp_path, keeps it
    before = layout(planned(config, plan_dir))
    # sorts first and would fit the last part's bytes: it still goes to a new part at the end
    placeholders(tmp_path / "in", {"a.warc.gz": 1, "e.warc.gz": 1})
    relisted = planned(config, plan_dir, relist=True)
    assert layout(relisted) == before + [("a", ["a.warc.gz", "e.warc.gz"])]
    assert (relisted[0].new_files, relisted[0].new_parts) == (2, 1)
    assert layout(planned(config, plan_dir)) == layout(relisted)  # what the workflow reads next

    # the command a user runs
    placeholders(tmp_path / "in", {"f.warc.gz": 1})
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert main(["relist", str(config_path)]) == 0
    assert "web/s1: 6 files in 4 parts; 1 new files in 1 new parts" in capsys.readouterr().out
    assert layout(planned(config, plan_dir))[:2] == before


def test_changed_patterns_append_and_changed_sizes_regroup(tmp_path):
    placeholders(tmp_path / "in", {"b.warc.gz": 4, "c.warc.gz": 4, "x.jsonl": 2})
    plan_dir = str(tmp_path / "plan")
    planned(crawl_config(str(tmp_path / "in" / "*.warc.gz")), plan_dir)
    wider = crawl_config(str(tmp_path / "in" / "*.warc.gz"))
    wider["sources"]["web"]["snapshots"]["s1"].append(str(tmp_path / "in" / "*.jsonl"))
    widened = planned(wider, plan_dir)
    assert widened[0].globbed and layout(widened) == [("b", ["b.warc.gz", "c.warc.gz"]), ("x", ["x.jsonl"])]
    narrower = crawl_config(str(tmp_path / "in" / "[bx]*"))  # c is no longer matched: it leaves its part
    assert layout(planned(narrower, plan_dir)) == [("b", ["b.warc.gz"]), ("x", ["x.jsonl"])]
    regrouped = planned(crawl_config(str(tmp_path / "in" / "[bx]*"), target_bytes=100), plan_dir)
    assert layout(regrouped) == [("b", ["b.warc.gz", "x.jsonl"])]


def test_a_vanished_file_is_an_error_naming_the_key_and_the_file(tmp_path):
    placeholders(tmp_path / "in", {"b.warc.gz": 4, "c.warc.gz": 4})
    config = crawl_config(str(tmp_path / "in" / "*.warc.gz"))
    plan_dir = str(tmp_path / "plan")
    planned(config, plan_dir)
    (tmp_path / "in" / "c.warc.gz").unlink()
    for relist in (False, True):
        with pytest.raises(ConfigError) as raised:
            planned(config, plan_dir, relist=relist)
        assert "config key sources.web.snapshots.s1: listed input file" in str(raised.value)
        assert f"{tmp_path / 'in' / 'c.warc.gz'}' no longer exists" in str(raised.value)
    # a job reads the listing as the main process checked it, without a stat per file
    assert layout(planned(config, plan_dir, verify=False)) == [("b", ["b.warc.gz", "c.warc.gz"])]


def test_glob_without_match_and_part_name_collision_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="sources.web.snapshots.s1: .* matches no file"):
        planned(crawl_config(str(tmp_path / "*.warc.gz")), str(tmp_path / "plan"))
    placeholders(tmp_path / "a", {"x.warc.gz": 1})
    placeholders(tmp_path / "b", {"x.warc": 1})
    with pytest.raises(ConfigError, match="both become part 'x'; rename one"):
        planned(crawl_config(str(tmp_path / "*" / "x.warc*"), max_files=1), str(tmp_path / "plan"))
    # in one part, only the first file names it
    assert layout(planned(crawl_config(str(tmp_path / "*" / "x.warc*")), str(tmp_path / "plan"))) == [
        ("x", ["x.warc.gz", "x.warc"])]


def test_plan_lookups_chunks_and_rows(tmp_path):
    placeholders(tmp_path / "in", {f"p{n}.warc.gz": 10 for n in range(5)})
    plan = Plan(planned(crawl_config(str(tmp_path / "in" / "*.warc.gz")), str(tmp_path / "plan")), 2, PATHS)
    assert [part.part for part in plan.parts] == ["p0", "p1", "p2", "p3", "p4"]
    assert [len(plan.chunks[("web", "s1", chunk)]) for chunk in ("0000", "0001", "0002")] == [2, 2, 1]
    p3 = plan.part("web", "s1", "p3")
    assert plan.path("quality_encoder", p3) == "out/encoder/web/s1/chunk-0001.parquet"
    assert plan.path("judge", p3) == "out/judge/{version}/web/s1/p3.parquet"
    assert plan.files("quality_encoder", plan.by_snapshot[("web", "s1")]) == [
        f"out/encoder/web/s1/chunk-{chunk}.parquet" for chunk in ("0000", "0001", "0002")]
    with pytest.raises(ValueError, match="no part web/s1/p9 in the plan"):
        plan.part("web", "s1", "p9")
    write_plan(plan.rows(), str(tmp_path / "parts.tsv"))
    rows = read_plan(str(tmp_path / "parts.tsv"), version="v1")
    assert [row["inputs"] for row in rows] == [[str(tmp_path / "in" / f"p{n}.warc.gz")] for n in range(5)]
    assert rows[3]["judge"] == "out/judge/v1/web/s1/p3.parquet" and rows[3]["quality_encoder"].endswith("chunk-0001.parquet")
    assert plan.digest() == plan.digest(("web", "s1")) != Plan(plan.listings, 3, PATHS).digest()
    # a snapshot's MPI job writes every part's file into one folder, and refuses another
    assert snapshot_plan_rows(str(tmp_path / "parts.tsv"), "judge", "out/judge/v1/web/s1/", version="v1") == rows
    with pytest.raises(ValueError, match="part p0 belongs in out/judge/v1/web/s1, not in out/judge/v2/web/s1"):
        snapshot_plan_rows(str(tmp_path / "parts.tsv"), "judge", "out/judge/v2/web/s1", version="v1")


def executed_lines(function) -> int:
    """Python lines executed by `function()` (in any module): a measure of work that does not
    depend on the machine's speed."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        count += event == "line"
        return trace

    sys.settrace(trace)
    try:
        function()
    finally:
        sys.settrace(None)
    return count


def test_planning_and_every_lookup_the_workflow_makes_grow_linearly(tmp_path):
    """One part per file (the most parts): globbing, listing, reading the listing, and for each
    part the lookups the rules make. A scan of all parts per part would make 10x the files
    cost 100x the lines."""
    def plan_and_look_up(files: int) -> tuple[int, int]:
        folder = tmp_path / str(files)
        placeholders(folder / "in", {f"CC-{n:06d}.warc.gz": 1 for n in range(files)})
        config = validate(crawl_config(str(folder / "in" / "*.warc.gz"), max_files=1))

        def workflow():
            for _ in ("globbed", "read"):
                plan = Plan(list_inputs(config, str(folder / "plan")), 64, PATHS)
                for part in plan.parts:
                    plan.part(*part.key)
                    plan.files("docs", plan.by_snapshot[(part.source, part.snapshot)][:1])
                    plan.path("quality_encoder", part)
                plan.digest(("web", "s1"))
        lines = executed_lines(workflow)
        return lines, Path(listing_path(str(folder / "plan"), "web", "s1")).stat().st_size

    small_lines, small_listing = plan_and_look_up(1000)
    large_lines, large_listing = plan_and_look_up(10_000)
    assert large_lines / small_lines < 11, (small_lines, large_lines)
    assert large_listing / small_listing < 11


def crawls_plan(tmp_path, **select) -> tuple[Plan, dict]:
    """Three crawls of source web, listed out of time order, and one of source news; the
    `select` settings given (the cross-snapshot pass is on)."""
    placeholders(tmp_path / "in", {"a.warc.gz": 1})
    pattern = [str(tmp_path / "in" / "*.warc.gz")]
    config = {"sources": {"web": {"kind": "warc", "tier": "crawl", "license_id": "x",
                                  "snapshots": {crawl: pattern for crawl in ("CC-MAIN-2024-22", "CC-MAIN-2020-34",
                                                                            "CC-MAIN-2023-50")}},
                          "news": {"kind": "warc", "tier": "crawl", "license_id": "x",
                                   "snapshots": {"CC-MAIN-2021-04": pattern}}},
              "minhash": {"cross_snapshot": {"enabled": True}}, "select": select}
    config = validate(config)
    return Plan(list_inputs(config, str(tmp_path / "plan")), 2, PATHS), config


def test_a_sources_snapshots_before_and_after_one_are_in_time_order(tmp_path):
    plan, _ = crawls_plan(tmp_path)
    assert plan.snapshots_before("web", "CC-MAIN-2024-22") == ["CC-MAIN-2020-34", "CC-MAIN-2023-50"]
    assert plan.snapshots_before("web", "CC-MAIN-2023-50") == ["CC-MAIN-2020-34"]
    assert plan.snapshots_after("web", "CC-MAIN-2020-34") == ["CC-MAIN-2023-50", "CC-MAIN-2024-22"]
    assert plan.snapshots_before("web", "CC-MAIN-2020-34") == plan.snapshots_after("web", "CC-MAIN-2024-22") == []
    assert plan.snapshots_after("news", "CC-MAIN-2021-04") == []  # another source's crawls are not its own


def test_a_snapshot_is_probed_against_the_index_generations_of_the_earlier_ones(tmp_path):
    plan, config = crawls_plan(tmp_path)
    index = "index/{source}/{snapshot}"
    assert plan.older_generations(config, "web", "CC-MAIN-2024-22", index) == [
        "index/web/CC-MAIN-2020-34", "index/web/CC-MAIN-2023-50"]
    assert plan.older_generations(config, "web", "CC-MAIN-2020-34", index) == []
    config["minhash"]["cross_snapshot"]["enabled"] = False
    assert plan.older_generations(config, "web", "CC-MAIN-2024-22", index) == []


@pytest.mark.parametrize("enabled, select, read", [
    (True, {}, False),  # by default cross-snapshot duplicates are only tagged
    (True, {"drop_cross_snapshot_duplicates": True}, False),  # the older copy is kept: the later crawls do not matter
    (True, {"drop_cross_snapshot_duplicates": True, "cross_snapshot_prefer": "newer"}, True),
    (False, {"drop_cross_snapshot_duplicates": True, "cross_snapshot_prefer": "newer"}, False),  # no pass, no probes
])
def test_select_reads_the_later_snapshots_probes_only_when_it_keeps_the_newer_copy(tmp_path, enabled, select, read):
    plan, config = crawls_plan(tmp_path, **select)
    config["minhash"]["cross_snapshot"]["enabled"] = enabled
    assert plan.later_probes(config, "web", "CC-MAIN-2020-34") == (  # every part of each later snapshot
        [f"out/cross_snapshot_dedup/web/{crawl}/{part.part}" for crawl in ("CC-MAIN-2023-50", "CC-MAIN-2024-22")
         for part in plan.by_snapshot[("web", crawl)]] if read else [])
    assert plan.later_probes(config, "web", "CC-MAIN-2024-22") == []


def test_text_from_names_what_made_each_sources_text():
    config = validate(demo_config())
    config["sources"]["lingua_sentences"]["fields"] = {"text": "sentence", "id": "key"}
    assert text_from(config, "common_crawl") == "HTML, extract engine resiliparse; PDF responses: text layer, " \
                                                "pages without one listed for OCR"
    assert text_from(config, "aeb_articles") == "HTML, extract engine blockml; PDF responses quarantined " \
                                                "(pdf_responses false)"
    assert text_from(config, "pdf_samples") == "PDF text layer (pdfium); pages without one read by tesseract OCR"
    assert text_from(config, "lingua_sentences") == "JSONL field `sentence`"
