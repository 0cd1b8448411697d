"""Failures of the correction agent's dependencies; the routes answer them with 502."""

from __future__ import annotations


class CorrectionUpstreamError(RuntimeError):
    """A dependency (KB or model) failed; the message says which and why."""


class RuleStoreError(CorrectionUpstreamError):
    """The KB could not store, list or delete correction rules."""


class CorrectionModelError(CorrectionUpstreamError):
    """The model gave no usable correction."""
