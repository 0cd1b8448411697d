"""The correction agent: what each `/correction/*` route does, without HTTP."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from app.correction import prompts
from app.correction.chunking import CHUNK_SIZE, GPU_CTX_CAP, OUTPUT_BUDGET, estimate_tokens, plan_chunks
from app.correction.errors import CorrectionModelError, RuleStoreError
from app.correction.merge import CorrectionReply, InstructReply, ModelRule, build_questions, merge_texts
from app.correction.progress import CorrectionProgress, ProgressSink
from app.correction.rules import CorrectionRule
from app.correction.store import RuleStore
from app.llm.provider import Llm, LlmError, LlmJsonError, Message
from app.schemas.correction import (
    CorrectionAnswerRequest,
    CorrectionAnswerResult,
    CorrectionChunk,
    CorrectionInstructRequest,
    CorrectionInstructResult,
    CorrectionListRequest,
    CorrectionListResult,
    CorrectionQuestion,
    CorrectionRequest,
    CorrectionResult,
    CorrectionRuleMetadata,
    CorrectionSegment,
    CorrectionSubmitRequest,
    CorrectionSubmitResult,
    CorrectionTargetedRequest,
)
from app.texts import Texts, texts
from app.texts.clip import clip
from app.texts.language import choose_language

log = logging.getLogger(__name__)

#: Neighbouring segments shown as context on each side of a chunk (full correction).
CONTEXT_SEGMENTS = 2
#: Characters of each context segment shown (context conveys the gist; it must not crowd the GPU).
CONTEXT_SEGMENT_CHARS = 300
#: Room for the questions list in the model's answer (output budget estimate).
QUESTIONS_ALLOWANCE_TOKENS = 512
#: Segments a request's language is read from (`response_language: auto`).
LANGUAGE_SAMPLE_SEGMENTS = 50


def _submit_result(rule: CorrectionRule) -> CorrectionSubmitResult:
    return CorrectionSubmitResult(correction_id=rule.correction_id, source_urn=rule.source_urn, status="success")


def _clipped(segment: CorrectionSegment) -> CorrectionSegment:
    if len(segment.text) <= CONTEXT_SEGMENT_CHARS:
        return segment
    return segment.model_copy(update={"text": clip(segment.text, CONTEXT_SEGMENT_CHARS)})


def _status(questions: Sequence[CorrectionQuestion]) -> str:
    return "needs_input" if questions else "success"


class CorrectionService:
    def __init__(
        self,
        *,
        llm: Llm,
        store: RuleStore,
        progress_sink: ProgressSink | None,
        progress_interval: float = 10.0,
        chunk_size: int = CHUNK_SIZE,
        context_cap: int = GPU_CTX_CAP,
        output_budget: int = OUTPUT_BUDGET,
        language: str = "auto",
    ) -> None:
        """`language` is `response_language`: the language of the progress and summaries, or
        `auto` for each request's own (the instruction's, else the transcript's)."""
        self._llm = llm
        self._store = store
        self._sink = progress_sink
        self._interval = progress_interval
        self._chunk_size = chunk_size
        self._context_cap = context_cap
        self._output_budget = output_budget
        self._language = language

    # ------------------------------------------------------------------ rules
    async def submit(self, request: CorrectionSubmitRequest) -> CorrectionSubmitResult:
        rule = await self._store.submit(client_id=request.client_id, project_id=request.project_id,
                                        original=request.original, corrected=request.corrected,
                                        category=request.category, context=request.context)
        return _submit_result(rule)

    async def answer(self, request: CorrectionAnswerRequest) -> CorrectionAnswerResult:
        """Each answered question becomes a rule (an answer without both sides teaches nothing)."""
        created = 0
        for item in request.answers:
            if not item.original.strip() or not item.corrected.strip():
                continue
            await self._store.submit(client_id=request.client_id, project_id=request.project_id,
                                     original=item.original, corrected=item.corrected, category=item.category,
                                     context=item.context)
            created += 1
        return CorrectionAnswerResult(status="success", rules_created=created)

    async def list_rules(self, request: CorrectionListRequest) -> CorrectionListResult:
        rules = await self._store.list_rules(client_id=request.client_id, project_id=request.project_id,
                                             max_results=request.max_results)
        return CorrectionListResult(corrections=[
            CorrectionChunk(content=rule.content, source_urn=rule.source_urn, metadata=CorrectionRuleMetadata(
                original=rule.original, corrected=rule.corrected, category=rule.category, context=rule.context,
                correction_id=rule.correction_id,
            ))
            for rule in rules
        ])

    async def delete(self, source_urn: str) -> dict[str, Any]:
        return await self._store.delete(source_urn)

    # ------------------------------------------------------------ corrections
    async def correct(self, request: CorrectionRequest) -> CorrectionResult:
        segments = list(request.segments)
        positions = list(range(len(segments)))
        rules = await self._store.load_for(client_id=request.client_id, project_id=request.project_id) \
            if segments else []
        corrected, questions, uncorrected = await self._correct_positions(
            segments, positions, rules, chunk_size=request.chunk_size, client_id=request.client_id,
            meeting_id=request.meeting_id, neighbours=CONTEXT_SEGMENTS, targeted=False, t=self._texts(segments),
        )
        return CorrectionResult(segments=corrected, questions=questions, status=_status(questions),
                                uncorrected=uncorrected)

    async def correct_targeted(self, request: CorrectionTargetedRequest) -> CorrectionResult:
        """Only re-transcribed segments go to the model (neighbours as context); the user's own
        corrections are applied as they are and never sent."""
        user = request.user_corrections
        segments = [s.model_copy(update={"text": user[s.i]}) if s.i in user else s for s in request.segments]
        wanted = set(request.retranscribed_indices) - set(user)
        positions = [p for p, s in enumerate(segments) if s.i in wanted]
        rules = await self._store.load_for(client_id=request.client_id, project_id=request.project_id) \
            if positions else []
        corrected, questions, uncorrected = await self._correct_positions(
            segments, positions, rules, chunk_size=self._chunk_size, client_id=request.client_id,
            meeting_id=request.meeting_id, neighbours=1, targeted=True, t=self._texts(segments),
        )
        return CorrectionResult(segments=corrected, questions=questions, status=_status(questions),
                                uncorrected=uncorrected)

    async def instruct(self, request: CorrectionInstructRequest) -> CorrectionInstructResult:
        """Apply a natural-language instruction to every segment; store the rules it implies.

        A model failure is answered `status: "failed"` with the segments unchanged (the DTO has
        that status); a rule the KB cannot store is reported `status: "failed"` in `newRules`.
        """
        segments = list(request.segments)
        t = self._texts(segments, request.instruction)
        if not segments:
            return CorrectionInstructResult(segments=[], new_rules=[], status="success",
                                            summary=t.correction_no_segments)
        rules = await self._store.load_for(client_id=request.client_id, project_id=request.project_id)
        chunks = self._plan(range(len(segments)), self._chunk_size,
                            lambda ps: prompts.instruct([segments[p] for p in ps], rules, request.instruction),
                            list(segments))
        proposed: list[ModelRule] = []
        summaries: list[str] = []
        result = list(segments)
        for number, chunk_positions in enumerate(chunks, start=1):
            chunk = [segments[p] for p in chunk_positions]
            try:
                reply = await self._llm.complete_json(prompts.instruct(chunk, rules, request.instruction),
                                                      InstructReply, max_tokens=self._output_budget)
            except LlmError as exc:
                log.warning("instruction correction failed (chunk %d/%d): %s", number, len(chunks), exc)
                return CorrectionInstructResult(
                    segments=segments, new_rules=[], status="failed",
                    summary=t.correction_instruct_failed.format(chunk=number, chunks=len(chunks), error=exc),
                )
            for position, segment in zip(chunk_positions, merge_texts(chunk, reply.segments), strict=True):
                result[position] = segment
            proposed += reply.new_rules
            if reply.summary and reply.summary.strip():
                summaries.append(reply.summary.strip())
        new_rules = await self._store_new_rules(request, proposed, rules)
        changed = sum(1 for before, after in zip(segments, result, strict=True) if before.text != after.text)
        summary = " ".join(dict.fromkeys(summaries)) or t.correction_instruct_summary.format(
            changed=changed, total=len(segments), rules=len(new_rules))
        return CorrectionInstructResult(segments=result, new_rules=new_rules, status="success", summary=summary)

    # --------------------------------------------------------------- internals
    def _texts(self, segments: Sequence[CorrectionSegment], instruction: str = "") -> Texts:
        """The request's texts: the configured language, or (`auto`) the one the user's
        instruction is written in, else the transcript's."""
        transcript = choose_language(self._language, " ".join(s.text for s in segments[:LANGUAGE_SAMPLE_SEGMENTS]))
        return texts(choose_language(self._language, instruction, default=transcript))

    async def _store_new_rules(self, request: CorrectionInstructRequest, proposed: Sequence[ModelRule],
                               existing: Sequence[CorrectionRule]) -> list[CorrectionSubmitResult]:
        known = {(r.original.casefold(), r.corrected) for r in existing}
        results: list[CorrectionSubmitResult] = []
        for rule in proposed:
            key = (rule.original.strip().casefold(), rule.corrected.strip())
            if not key[0] or not key[1] or key in known or rule.original.strip() == rule.corrected.strip():
                continue
            known.add(key)
            try:
                stored = await self._store.submit(client_id=request.client_id, project_id=request.project_id,
                                                  original=rule.original.strip(), corrected=rule.corrected.strip(),
                                                  category=rule.category)
            except RuleStoreError as exc:
                log.warning("rule from the instruction not stored: %s", exc)
                results.append(CorrectionSubmitResult(correction_id="", source_urn="", status="failed"))
                continue
            results.append(_submit_result(stored))
        return results

    def _plan(self, positions: Sequence[int], chunk_size: int, messages_for: Any,
              segments: Sequence[CorrectionSegment]) -> list[list[int]]:
        def prompt_tokens(chunk: Sequence[int]) -> int:
            return sum(estimate_tokens(m["content"]) for m in messages_for(chunk))

        def output_tokens(chunk: Sequence[int]) -> int:
            text = prompts.output_text([segments[p] for p in chunk])
            return estimate_tokens(text) + QUESTIONS_ALLOWANCE_TOKENS

        return plan_chunks(list(positions), chunk_size, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                           context_cap=self._context_cap, output_budget=self._output_budget)

    async def _correct_positions(
        self,
        segments: list[CorrectionSegment],
        positions: Sequence[int],
        rules: Sequence[CorrectionRule],
        *,
        chunk_size: int,
        client_id: str,
        meeting_id: str | None,
        neighbours: int,
        targeted: bool,
        t: Texts,
    ) -> tuple[list[CorrectionSegment], list[CorrectionQuestion], list[int]]:
        """Correct the segments at `positions`, chunk by chunk, with progress pushes.

        A chunk whose reply stays unreadable (after the provider's repair round) keeps its text and
        its segment indices are returned as uncorrected: one bad chunk must not fail a meeting's
        whole transcript. Only when no chunk could be corrected, or the model is unreachable, is
        the correction an error.
        """
        result = list(segments)
        targets = set(positions)

        def context_of(chunk: Sequence[int]) -> list[CorrectionSegment]:
            around = {q for p in chunk for q in range(p - neighbours, p + neighbours + 1)}
            keep = sorted(q for q in around if 0 <= q < len(result) and q not in chunk and
                          (not targeted or q not in targets))
            return [_clipped(result[q]) for q in keep]

        def messages_for(chunk: Sequence[int]) -> list[Message]:
            return prompts.correct([result[p] for p in chunk], rules, context=context_of(chunk), targeted=targeted)

        chunks = self._plan(positions, chunk_size, messages_for, result)
        progress = CorrectionProgress(self._sink, meeting_id=meeting_id, client_id=client_id,
                                      total_chunks=len(chunks), t=t, interval=self._interval)
        questions: list[CorrectionQuestion] = []
        uncorrected: list[int] = []
        unreadable: LlmJsonError | None = None
        for index, chunk_positions in enumerate(chunks):
            chunk = [result[p] for p in chunk_positions]
            await progress.chunk_started(index, expected_tokens=estimate_tokens(prompts.output_text(chunk)))
            try:
                reply = await self._llm.complete_json(messages_for(chunk_positions), CorrectionReply,
                                                      on_token=progress.on_token, max_tokens=self._output_budget)
            except LlmJsonError as exc:
                log.warning("correction of chunk %d/%d unreadable, its text kept: %s", index + 1, len(chunks), exc)
                uncorrected += [result[p].i for p in chunk_positions]
                unreadable = exc
                continue
            except LlmError as exc:
                raise CorrectionModelError(
                    f"correction of chunk {index + 1}/{len(chunks)} failed: {exc}") from exc
            allowed = {s.i for s in chunk}
            for position, segment in zip(chunk_positions, merge_texts(chunk, reply.segments, allowed), strict=True):
                result[position] = segment
            questions += build_questions(reply.questions, chunk, allowed)
        if chunks and len(uncorrected) == len(positions) and unreadable is not None:
            raise CorrectionModelError(f"correction of every chunk ({len(chunks)}) failed: {unreadable}") \
                from unreadable
        await progress.finished()
        log.info("corrected %d of %d segments in %d chunk(s), %d rule(s), %d question(s)", len(positions),
                 len(segments), len(chunks), len(rules), len(questions))
        return result, questions, uncorrected
