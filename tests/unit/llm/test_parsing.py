"""JSON objects out of model output (app/llm/parsing.py)."""

from __future__ import annotations

import pytest

from app.llm.parsing import JsonParseError, parse_json_object


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [1, 2]}', {"a": 1, "b": [1, 2]}),
        ('  \n {"a": 1}\n', {"a": 1}),
        ('```json\n{"goals": [{"id": "g1"}]}\n```', {"goals": [{"id": "g1"}]}),
        ('```JSON\n{"a": true}\n```', {"a": True}),
        ('```\n{"a": null}\n```', {"a": None}),
        ('Here is the plan:\n```json\n{"a": 1}\n```\nLet me know.', {"a": 1}),
        ('Sure! The answer is {"task_category": "advice", "goal_clear": true} — hope it helps.',
         {"task_category": "advice", "goal_clear": True}),
    ],
    ids=["bare", "whitespace", "fenced-json", "fenced-upper", "fenced-plain", "fence-in-prose", "prose-around"],
)
def test_parse_json_object_reads_bare_fenced_and_embedded_json(text: str, expected: dict) -> None:
    assert parse_json_object(text) == expected


def test_parse_json_object_keeps_braces_and_quotes_inside_strings() -> None:
    text = 'Result: {"code": "def f() { return \\"}\\" }", "nested": {"x": {"y": 2}}} trailing } text'
    assert parse_json_object(text) == {"code": 'def f() { return "}" }', "nested": {"x": {"y": 2}}}


def test_parse_json_object_accepts_raw_newline_inside_a_string() -> None:
    text = '{"instructions": "line one\nline two\ttabbed"}'
    assert parse_json_object(text) == {"instructions": "line one\nline two\ttabbed"}


def test_parse_json_object_skips_braces_in_prose_before_the_json() -> None:
    text = 'The {goals} list follows: {"goals": []}'
    assert parse_json_object(text) == {"goals": []}


@pytest.mark.parametrize("text", ["[1, 2]", "```json\n[1, 2]\n```", '"just a string"', "42"])
def test_parse_json_object_raises_when_json_is_not_an_object(text: str) -> None:
    with pytest.raises(JsonParseError, match="expected a JSON object"):
        parse_json_object(text)


@pytest.mark.parametrize("text", ['[{"id": "g1"}, {"id": "g2"}]', '```json\n[{"id": "g1"}, {"id": "g2"}]\n```'])
def test_parse_json_object_raises_when_answer_is_an_array_of_objects(text: str) -> None:
    # Returning the first element would silently drop the rest of the model's answer.
    with pytest.raises(JsonParseError, match="expected a JSON object"):
        parse_json_object(text)


@pytest.mark.parametrize("text", ["", "   ", "I cannot help with that.", "{not json}", '{"a": 1', "```json\n```"])
def test_parse_json_object_raises_json_parse_error_on_garbage(text: str) -> None:
    with pytest.raises(JsonParseError, match="no JSON object"):
        parse_json_object(text)


def test_json_parse_error_is_a_value_error() -> None:
    assert issubclass(JsonParseError, ValueError)
