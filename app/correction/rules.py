"""Correction rules as KB chunks (kb-contract.md §5): build the sentence, read it back.

The real KB drops `metadata` on ingest, so the rule only survives in the chunk's `content`
sentence; it is parsed back from there, and real metadata wins when a KB ever returns it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.schemas.correction import CORRECTION_URN_PREFIX

CORRECTION_KIND = "transcript_correction"

#: Category → the label written into the rule sentence (as the original orchestrator wrote it).
CATEGORY_LABELS: dict[str, str] = {
    "person_name": "Person Names / Jmena osob",
    "company_name": "Company Names / Nazvy firem",
    "department": "Departments / Oddeleni",
    "terminology": "Terminology / Terminologie",
    "abbreviation": "Abbreviations / Zkratky",
    "general": "General Corrections / Obecne opravy",
}
_LABEL_TO_CATEGORY = {label.casefold(): category for category, label in CATEGORY_LABELS.items()}

_SENTENCE = re.compile(
    r'^When "(?P<original>.*)" appears in a transcript, it should be corrected to "(?P<corrected>.*)"\.'
    r" Category: (?P<label>.*?)\.(?: Context: (?P<context>.*)\.)?$",
    re.DOTALL,
)
#: The contract's looser fallback (e.g. a chunk the KB's 1000-char splitter cut short).
_LOOSE = re.compile(r'When "(.*)" appears .* corrected to "(.*)"\.', re.DOTALL)
_LOOSE_LABEL = re.compile(r" Category: (.*?)\.(?: |$)", re.DOTALL)
_LOOSE_CONTEXT = re.compile(r" Context: (.*)\.$", re.DOTALL)


@dataclass(frozen=True)
class CorrectionRule:
    original: str
    corrected: str
    category: str = "general"
    context: str = ""
    correction_id: str = ""
    source_urn: str = ""
    project_id: str = ""
    content: str = ""

    @property
    def usable(self) -> bool:
        """A rule the correction prompt can apply (both sides known)."""
        return bool(self.original.strip()) and self.corrected != ""


def new_correction_id() -> str:
    return str(uuid.uuid4())


def source_urn_for(correction_id: str) -> str:
    return f"{CORRECTION_URN_PREFIX}{correction_id}"


def correction_id_of(source_urn: str) -> str:
    return source_urn[len(CORRECTION_URN_PREFIX):] if source_urn.startswith(CORRECTION_URN_PREFIX) else ""


def category_label(category: str) -> str:
    return CATEGORY_LABELS.get(category, category)


def category_of_label(label: str) -> str:
    """Inverse of `category_label`; an unknown label was written from an unknown category as is."""
    label = label.strip()
    if label in CATEGORY_LABELS:
        return label
    return _LABEL_TO_CATEGORY.get(label.casefold(), label or "general")


def rule_sentence(original: str, corrected: str, category: str = "general", context: str | None = None) -> str:
    """`When "<original>" appears in a transcript, it should be corrected to "<corrected>". Category: <label>.`"""
    sentence = (f'When "{original}" appears in a transcript, it should be corrected to "{corrected}". '
                f"Category: {category_label(category)}.")
    if context:
        sentence += f" Context: {context}."
    return sentence


def rule_metadata(rule: CorrectionRule) -> dict[str, str]:
    """The `metadata` written on ingest (kept for a KB that stores it) and answered by /list."""
    return {"original": rule.original, "corrected": rule.corrected, "category": rule.category,
            "context": rule.context, "correctionId": rule.correction_id}


def parse_sentence(content: str) -> dict[str, str] | None:
    """original / corrected / category / context from a rule sentence, or None."""
    text = content.strip()
    match = _SENTENCE.match(text)
    if match:
        return {"original": match["original"], "corrected": match["corrected"],
                "category": category_of_label(match["label"]), "context": match["context"] or ""}
    loose = _LOOSE.search(text)
    if not loose:
        return None
    label = _LOOSE_LABEL.search(text, loose.end() - 1)
    context = _LOOSE_CONTEXT.search(text, loose.end() - 1)
    return {"original": loose[1], "corrected": loose[2],
            "category": category_of_label(label[1]) if label else "general",
            "context": context[1] if context else ""}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def rule_from_chunk(content: str, source_urn: str, metadata: Mapping[str, Any] | None) -> CorrectionRule:
    """A rule from a KB chunk: real metadata where present, else parsed from `content`."""
    metadata = metadata or {}
    parsed = parse_sentence(content) or {}
    meta_rule = bool(_text(metadata.get("original")).strip()) and "corrected" in metadata

    def pick(key: str, default: str) -> str:
        if meta_rule and metadata.get(key) is not None:
            return _text(metadata.get(key))
        return parsed.get(key, default)

    return CorrectionRule(
        original=pick("original", ""),
        corrected=pick("corrected", ""),
        category=pick("category", "general") or "general",
        context=pick("context", ""),
        correction_id=_text(metadata.get("correctionId")) or correction_id_of(source_urn),
        source_urn=source_urn,
        project_id=_text(metadata.get("projectId")),
        content=content,
    )


def format_rules(rules: Iterable[CorrectionRule]) -> str:
    """Rules for a prompt, grouped by category label."""
    grouped: dict[str, list[CorrectionRule]] = {}
    for rule in rules:
        grouped.setdefault(category_label(rule.category), []).append(rule)
    lines: list[str] = []
    for label, entries in grouped.items():
        lines.append(f"### {label}")
        for rule in entries:
            line = f'- "{rule.original}" -> "{rule.corrected}"'
            if rule.context:
                line += f" (context: {rule.context})"
            lines.append(line)
    return "\n".join(lines)
