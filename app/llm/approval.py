"""What the LLM layer raises when only the user can let a call go on.

The provider does not know the graph: it raises one of these and the orchestration's approval
gate turns it into an interrupt, in the run's language, and applies the answer. Outside a run
(`LlmScope.can_ask` false) the plain error is raised instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.llm.budget import BudgetExceededError


class ApprovalNeededError(Exception):
    """Base of the approval signals; `cause` is what is raised when the user says no.
    Deliberately not an `LlmError`: a missing gate must fail loudly, not halt the run quietly."""

    action: str
    cause: Exception


@dataclass
class BudgetApprovalNeededError(ApprovalNeededError):
    """The run's budget is spent and `BUDGET_ON_EXCEEDED=ask`: continue with a doubled budget?"""

    cause: BudgetExceededError
    task_id: str
    action: str = "budget"

    def __str__(self) -> str:
        return str(self.cause)


@dataclass
class CloudApprovalNeededError(ApprovalNeededError):
    """The local model failed and a cloud tier could help, but this run may not use it unasked."""

    cause: Exception
    task_id: str
    tier: str
    model: str
    estimated_cost_usd: float
    action: str = "cloud_model"

    def __str__(self) -> str:
        return f"{self.cause} (cloud {self.tier} {self.model} needs approval)"
