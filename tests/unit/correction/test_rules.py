"""Rule sentences (kb-contract.md §5): built like the original orchestrator, parsed back from
`content` because the real KB drops `metadata`."""

from __future__ import annotations

import pytest

from app.correction.rules import (
    CATEGORY_LABELS,
    correction_id_of,
    format_rules,
    parse_sentence,
    rule_from_chunk,
    rule_sentence,
    source_urn_for,
)


def test_sentence_matches_the_contract_example_exactly() -> None:
    assert rule_sentence("Jarda", "Jaroslav", "person_name") == (
        'When "Jarda" appears in a transcript, it should be corrected to "Jaroslav". '
        "Category: Person Names / Jmena osob.")
    assert rule_sentence("k8s", "Kubernetes", "abbreviation", "DevOps meeting") == (
        'When "k8s" appears in a transcript, it should be corrected to "Kubernetes". '
        "Category: Abbreviations / Zkratky. Context: DevOps meeting.")


def test_every_category_has_a_label() -> None:
    assert set(CATEGORY_LABELS) == {"person_name", "company_name", "department", "terminology", "abbreviation",
                                    "general"}


@pytest.mark.parametrize("category", [*CATEGORY_LABELS, "custom_kind"])
@pytest.mark.parametrize("context", [None, "", "porada o nasazení", 'řekl "ahoj". Pak odešel'])
@pytest.mark.parametrize(("original", "corrected"), [
    ("kubernetis", "Kubernetes"),
    ('Jan "Honza" Damek', "Jan Damek"),
    ("ej aj", "AI. Agent"),
])
def test_sentence_round_trip(original: str, corrected: str, category: str, context: str | None) -> None:
    parsed = parse_sentence(rule_sentence(original, corrected, category, context))
    assert parsed == {"original": original, "corrected": corrected, "category": category, "context": context or ""}


def test_loose_fallback_reads_a_sentence_cut_by_the_kb_splitter() -> None:
    content = rule_sentence("Jarda", "Jaroslav", "person_name", "x" * 2000)[:1000]
    parsed = parse_sentence(content)
    assert parsed is not None
    assert (parsed["original"], parsed["corrected"], parsed["category"]) == ("Jarda", "Jaroslav", "person_name")


def test_unparseable_content_gives_none() -> None:
    assert parse_sentence("Some other note about Kubernetes.") is None


def test_chunk_without_metadata_is_parsed_from_content_and_urn() -> None:
    urn = source_urn_for("0b5f2c1e-aaaa")
    content = rule_sentence("kubernetis", "Kubernetes", "terminology")
    # What the real KB returns from chunks/by-kind: only its five Weaviate properties.
    metadata = {"content": content, "sourceUrn": urn, "clientId": "c1", "projectId": "p1",
                "kind": "transcript_correction"}
    rule = rule_from_chunk(content, urn, metadata)
    assert (rule.original, rule.corrected, rule.category, rule.context) == ("kubernetis", "Kubernetes",
                                                                            "terminology", "")
    assert rule.correction_id == "0b5f2c1e-aaaa" == correction_id_of(urn)
    assert rule.project_id == "p1" and rule.usable


def test_real_metadata_wins_over_the_sentence() -> None:
    urn = source_urn_for("id-1")
    content = rule_sentence("a", "b", "general")
    rule = rule_from_chunk(content, urn, {"original": "Jarda", "corrected": "Jaroslav", "category": "person_name",
                                          "context": "ctx", "correctionId": "meta-id"})
    assert (rule.original, rule.corrected, rule.category, rule.context, rule.correction_id) == (
        "Jarda", "Jaroslav", "person_name", "ctx", "meta-id")


def test_unreadable_chunk_is_an_unusable_rule_with_string_fields() -> None:
    rule = rule_from_chunk("garbled", "transcript-correction::x", {})
    assert (rule.original, rule.corrected, rule.category, rule.context, rule.correction_id) == (
        "", "", "general", "", "x")
    assert not rule.usable


def test_prompt_lists_rules_grouped_by_label() -> None:
    rules = [rule_from_chunk(rule_sentence("Jarda", "Jaroslav", "person_name", "CEO"), "u1", {}),
             rule_from_chunk(rule_sentence("kubernetis", "Kubernetes", "terminology"), "u2", {})]
    text = format_rules(rules)
    assert "### Person Names / Jmena osob" in text and '- "Jarda" -> "Jaroslav" (context: CEO)' in text
    assert "### Terminology / Terminologie" in text and '- "kubernetis" -> "Kubernetes"' in text
