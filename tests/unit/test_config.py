"""Config validation names the wrong key; parts are discovered deterministically."""

from __future__ import annotations

import copy

import pytest

from tests.conftest import demo_config
from tokenmill.config import ConfigError, config_sha256, discover_parts, part_name, validate


def test_demo_config_validates_and_gets_defaults():
    config = validate(demo_config())
    assert config["extract"]["max_bytes"] == 8 << 20 and config["extract"]["zstd_level"] == 6
    assert config["langid"]["model"] is None
    assert config["sources"]["lingua_sentences"]["fields"]["text"] == "text"
    assert config["select"]["keep_truncated_records"] is False


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["extract"].update(max_byte=1), "config key extract.max_byte: unknown key 'max_byte'"),
    (lambda c: c.update(shard={}), "config key shard: unknown key 'shard'"),
    (lambda c: c["sources"]["govuk"].update(tier="web"), "config key sources.govuk.tier: 'web' is not one of"),
    (lambda c: c["select"].update(min_chars="200"), "config key select.min_chars: '200' is not of type 'integer'"),
    (lambda c: c["sources"]["govuk"].pop("license_id"), "config key sources.govuk: 'license_id' is a required property"),
    (lambda c: c["sources"]["govuk"].update(fields={"text": "body"}), "config key sources.govuk.fields: only jsonl"),
    (lambda c: c["tokenizer"].update(sha256="abc"), "config key tokenizer.sha256: 'abc' does not match"),
    (lambda c: c.update(version="bad/name"), "config key version: 'bad/name' does not match"),
])
def test_bad_config_names_the_key(mutate, message):
    config = demo_config()
    config.setdefault("extract", {})
    mutate(config)
    with pytest.raises(ConfigError) as raised:
        validate(config)
    assert message in str(raised.value)


def test_pin_without_path_is_refused():
    config = demo_config(tokenizer={"sha256": "0" * 64})
    with pytest.raises(ConfigError, match="tokenizer.sha256: a pin needs tokenizer.path"):
        validate(config)


def test_parts_are_discovered_in_sorted_order_with_safe_names():
    parts = discover_parts(validate(demo_config()))
    assert len(parts) == 20
    govuk = [p.part for p in parts if p.source == "govuk"]
    assert govuk == ["BL-20140325121225068-00000-32090_opera_8443", "BL-20140325122341434-00000-32090_opera_8443"]
    aeb = [p.part for p in parts if p.source == "aeb_articles"]
    assert aeb == sorted(aeb) and len(aeb) == 4
    assert part_name("/x/CC-MAIN-2020.warc.gz") == "CC-MAIN-2020" and part_name("a b.jsonl.zst") == "a_b"


def test_glob_without_match_and_name_collision_are_errors(tmp_path):
    config = validate(demo_config())
    broken = copy.deepcopy(config)
    broken["sources"]["govuk"]["snapshots"]["later"] = [str(tmp_path / "*.warc.gz")]
    with pytest.raises(ConfigError, match="sources.govuk.snapshots.later: .* matches no file"):
        discover_parts(broken)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.warc.gz").write_bytes(b"")
    (tmp_path / "b" / "x.warc").write_bytes(b"")
    broken["sources"]["govuk"]["snapshots"]["later"] = [str(tmp_path / "*" / "x.warc*")]
    with pytest.raises(ConfigError, match="both become part 'x'"):
        discover_parts(broken)


def test_config_hash_changes_with_policy():
    base = validate(demo_config())
    changed = copy.deepcopy(base)
    changed["select"]["min_chars"] += 1
    assert config_sha256(base) == config_sha256(copy.deepcopy(base)) != config_sha256(changed)
