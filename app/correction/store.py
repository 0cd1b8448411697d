"""Correction rules in the KB: ingest on the write service, list by kind on the read service,
purge on the write service (kb-contract.md §2.3–§2.5, §5)."""

from __future__ import annotations

import logging
from typing import Any

from app.clients.knowledge_base import KnowledgeBaseClient, KnowledgeBaseError
from app.correction.errors import RuleStoreError
from app.correction.rules import (
    CORRECTION_KIND,
    CorrectionRule,
    new_correction_id,
    rule_from_chunk,
    rule_metadata,
    rule_sentence,
    source_urn_for,
)

log = logging.getLogger(__name__)

#: How many rules a correction loads into its prompt (as the original orchestrator).
LOAD_LIMIT = 200


class RuleStore:
    def __init__(self, kb: KnowledgeBaseClient) -> None:
        self._kb = kb

    async def submit(
        self,
        *,
        client_id: str,
        project_id: str | None,
        original: str,
        corrected: str,
        category: str = "general",
        context: str | None = None,
    ) -> CorrectionRule:
        correction_id = new_correction_id()
        rule = CorrectionRule(
            original=original, corrected=corrected, category=category or "general", context=context or "",
            correction_id=correction_id, source_urn=source_urn_for(correction_id), project_id=project_id or "",
            content=rule_sentence(original, corrected, category or "general", context),
        )
        try:
            await self._kb.ingest(source_urn=rule.source_urn, content=rule.content, client_id=client_id,
                                  project_id=project_id, kind=CORRECTION_KIND, metadata=rule_metadata(rule))
        except KnowledgeBaseError as exc:
            raise RuleStoreError(f"storing the correction rule failed: {exc}") from exc
        log.info("stored correction rule %r -> %r (%s, %s)", original, corrected, rule.category, rule.source_urn)
        return rule

    async def list_rules(self, *, client_id: str, project_id: str | None,
                         max_results: int = 100) -> list[CorrectionRule]:
        """The client's rules as the KB has them (one per sourceUrn), parsed from their sentences."""
        try:
            chunks = await self._kb.chunks_by_kind(CORRECTION_KIND, client_id=client_id, project_id=project_id,
                                                   max_results=max_results)
        except KnowledgeBaseError as exc:
            raise RuleStoreError(f"listing correction rules failed: {exc}") from exc
        rules: dict[str, CorrectionRule] = {}
        for chunk in chunks:
            key = chunk.source_urn or chunk.content
            if key not in rules:  # a long rule split by the KB's text splitter: its first piece
                rules[key] = rule_from_chunk(chunk.content, chunk.source_urn, chunk.metadata)
        return list(rules.values())

    async def load_for(self, *, client_id: str, project_id: str | None) -> list[CorrectionRule]:
        """Rules a correction applies: client-wide ones plus the project's (every project's when
        no project is given). A KB failure means no rules, never a failed correction."""
        try:
            rules = await self.list_rules(client_id=client_id, project_id=None, max_results=LOAD_LIMIT)
        except RuleStoreError as exc:
            log.warning("proceeding without correction rules: %s", exc)
            return []
        return [r for r in rules if r.usable and (not project_id or r.project_id in ("", project_id))]

    async def delete(self, source_urn: str) -> dict[str, Any]:
        try:
            return await self._kb.purge(source_urn)
        except KnowledgeBaseError as exc:
            raise RuleStoreError(f"deleting the correction rule failed: {exc}") from exc
