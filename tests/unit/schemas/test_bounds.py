"""JSON-schema bounds of the structured answers (app/schemas/domain.py `bounded`): within what
llama.cpp's grammar parser takes (the real grammars are compiled by the embedded model's test in
tests/integration/test_embedded_model.py when the model is installed)."""

from __future__ import annotations

from typing import Any

import pytest

from app.schemas.domain import GRAMMAR_MAX_LENGTH, StepPlan, bounded


@pytest.mark.parametrize("bounds", [{"max_length": GRAMMAR_MAX_LENGTH + 1},
                                    {"items": 3, "item_length": GRAMMAR_MAX_LENGTH + 1}])
def test_a_string_bound_the_grammar_cannot_take_is_refused(bounds: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="grammar"):
        bounded(**bounds)


def test_the_step_plans_instructions_are_bounded_within_the_grammars_limit() -> None:
    step = StepPlan.model_json_schema()["$defs"]["CodingStep"]["properties"]["instructions"]
    assert step["maxLength"] == GRAMMAR_MAX_LENGTH
