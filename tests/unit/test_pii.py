"""PII detection and scrubbing on real formats, the must-not-match list, and pii_part."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import sample, written_twice
from tests.unit.helpers import pii_part
from tokenmill.io import read_parquet, write_jsonl_zst
from tokenmill.quality.pii import PII_SCHEMA, PLACEHOLDERS, PiiSpan, find_pii, luhn_valid, scrub


def found(text: str) -> list[tuple[str, str]]:
    return [(text[span.start:span.end], span.kind) for span in find_pii(text)]


def test_contact_sentence_spans_and_scrub():
    text = ("Write to jane.doe@example.com or call (555) 123-4567 / 555-123-4567; "
            "London +44 20 7946 0958, Berlin +49 30 901820.")
    spans = find_pii(text)
    assert spans == [
        PiiSpan(9, 29, "email"),
        PiiSpan(38, 52, "phone"),
        PiiSpan(55, 67, "phone"),
        PiiSpan(76, 92, "phone"),
        PiiSpan(101, 114, "phone"),
    ]
    assert scrub(text) == ("Write to <EMAIL> or call <PHONE> / <PHONE>; London <PHONE>, Berlin <PHONE>.")
    assert scrub(text, spans) == scrub(text)


def test_mixed_sentence_scrub_keeps_names():
    text = ("John Smith (SSN 123-45-6789) paid with 4111 1111 1111 1111 from 93.184.216.34 "
            "and 2606:4700:4700::1111, mail john_smith+news@mail.example.co.uk.")
    assert found(text) == [
        ("123-45-6789", "ssn"),
        ("4111 1111 1111 1111", "credit_card"),
        ("93.184.216.34", "ip"),
        ("2606:4700:4700::1111", "ip"),
        ("john_smith+news@mail.example.co.uk", "email"),
    ]
    assert scrub(text) == ("John Smith (SSN <SSN>) paid with <CREDIT_CARD> from <IP_ADDRESS> "
                           "and <IP_ADDRESS>, mail <EMAIL>.")


def test_placeholders_are_stable():
    assert PLACEHOLDERS == {"email": "<EMAIL>", "phone": "<PHONE>", "ip": "<IP_ADDRESS>", "ssn": "<SSN>",
                            "credit_card": "<CREDIT_CARD>"}
    assert scrub("no pii here", []) == "no pii here"


@pytest.mark.parametrize("phone", [
    "(555) 123-4567", "555-123-4567", "555.123.4567", "1-800-555-0199", "+1 (555) 123-4567",
    "+1.555.123.4567", "+44 20 7946 0958", "+44 (0)20 7946 0958", "+49 30 901820", "+33 1 23 45 67 89",
    "020 7946 0958", "01 23 45 67 89", "030/9018201", "(06021) 462060",
])
def test_phone_formats(phone):
    assert found(f"Tel.: {phone}.") == [(phone, "phone")]


@pytest.mark.parametrize("text", [
    "Deadline 2024-03-15, or 15/03/2024, or 03.15.2024, or 2024-03-15T10:30:00Z.",
    "It starts at 10:30:45 and ends at 11:00 pm; John 3:16.",
    "Upgrade from 1.2.3 to v10.0.19041, kernel 4.15.0-112-generic, build 10.0.19041.1415.",
    "Section 1.1.2.1 and 2.3.4.5 apply.",
    "Now $1,234.56 instead of €12.99 (1.299,00 € in Germany), save 15%.",
    "ISBN 978-3-16-148410-0 and ISBN 0-306-40615-2.",
    "In 2023 there were 331 449 281 people and 7 800 000 000 worldwide; the years 2019 2020 2021 2022.",
    "Order #1234567890123 and order 4111 1111 1111 1112 were shipped.",
    "Send it to 90210, 10001 or 02134-1234.",
    "The team won 3-2, then 102-98; coordinates 40.7128, -74.0060.",
    "Timestamp 1700000000000 and id 550e8400-e29b-41d4-a716-446655440000, MAC 00:1A:2B:3C:4D:5E.",
    "std::vector<int> and a::b::c; ratio 1:2:3.",
    "Retina image logo@2x.png, mention @user.",
    "Temperatures +2.5 3.1 4.2 5.3 degrees, +10% and +5 points.",
    "Call 911 or 112; ticket 555 123 4567 is space separated.",
])
def test_must_not_match(text):
    assert find_pii(text) == []


def test_only_public_ips():
    private = ["10.0.0.1", "172.16.5.4", "192.168.1.1", "127.0.0.1", "169.254.10.20", "224.0.0.251",
               "239.255.255.250", "0.0.0.0", "255.255.255.255", "240.1.2.3", "100.64.1.2", "192.0.2.10",
               "::1", "::", "fe80::1ff:fe23:4567:890a", "fd12:3456:789a::1", "ff02::fb", "2001:db8::1"]
    for address in private:
        assert find_pii(f"host {address} is up") == [], address
    public = ["93.184.216.34", "151.101.1.69", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e", "::ffff:93.184.216.34"]
    for address in public:
        assert found(f"host {address} is up") == [(address, "ip")], address
    assert found("999.1.2.3 and 01.02.03.04") == []


def test_luhn_cards():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    for card in ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "5555 5555 5555 4444",
                 "378282246310005", "3782 822463 10005", "6011 1111 1111 1117"]:
        assert found(f"card: {card}.") == [(card, "credit_card")], card
    for card in ["4111 1111 1111 1112", "4111-1111-1111-1121", "5555 5555 5555 4445", "378282246310006",
                 "4111 1111-1111 1111", "1234567812345670"]:  # last: passes Luhn, no card prefix
        assert find_pii(f"card: {card}.") == [], card


def test_ssn_ranges():
    assert found("SSN 123-45-6789 and 772-01-0001.") == [("123-45-6789", "ssn"), ("772-01-0001", "ssn")]
    for invalid in ["000-12-3456", "666-12-3456", "900-12-3456", "999-12-3456", "123-00-4567", "123-45-0000"]:
        assert find_pii(f"SSN {invalid}.") == [], invalid


def test_overlaps_resolved_earliest_then_longest():
    text = "Call +1 555-123-4567 now"
    assert found(text) == [("+1 555-123-4567", "phone")]
    spans = find_pii("a@example.com 4111111111111111 b@example.org")
    assert [s.start for s in spans] == sorted(s.start for s in spans)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))


def test_article_bodies_have_few_false_positives():
    """The 181 real article bodies: every hit is a real contact detail printed in the article."""
    with gzip.open(sample("gold", "aeb-ground-truth.json.gz"), "rt", encoding="utf-8") as handle:
        bodies = [item["articleBody"] for item in json.load(handle).values()]
    hits = sorted(hit for body in bodies for hit in found(body))
    assert hits == [
        ("+49 (0)40 890 85-433", "phone"),
        ("347-966-3806", "phone"),
        ("info@givewell.org", "email"),
        ("louise_matsakis@wired.com", "email"),
        ("pillgoo9@gmail.com", "email"),
        ("thekian1@entermedia.co.kr", "email"),
    ]


def test_pii_part_rows_and_deterministic_bytes(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    write_jsonl_zst(docs, [
        {"doc_id": "d0", "text": "Nothing personal, released 2024-03-15 for $12.99."},
        {"doc_id": "d1", "text": "Mail a@example.com or b@example.org, call 555-123-4567, card 4111111111111111."},
        {"doc_id": "d2", "text": ""},
        {"doc_id": "d3", "text": "SSN 123-45-6789 from 93.184.216.34 (not 10.0.0.1)."},
    ])
    first, count = written_twice(tmp_path, lambda out: pii_part(str(docs), out))
    assert count == 4
    table = read_parquet(first)
    assert table.schema.equals(PII_SCHEMA)
    rows = table.to_pylist()
    assert [row["doc_id"] for row in rows] == ["d0", "d1", "d2", "d3"]
    assert rows[0]["pii_spans"] == [] and rows[2]["pii_spans"] == []
    assert [span["kind"] for span in rows[1]["pii_spans"]] == ["email", "email", "phone", "credit_card"]
    assert rows[1]["pii_spans"][0] == {"start": 5, "end": 18, "kind": "email"}
    counts = [[row[f"pii_{kind}"] for kind in ("email", "phone", "ip", "ssn", "credit_card")] for row in rows]
    assert counts == [[0, 0, 0, 0, 0], [2, 1, 0, 0, 1], [0, 0, 0, 0, 0], [0, 0, 1, 1, 0]]
