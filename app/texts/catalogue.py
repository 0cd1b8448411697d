"""The fields of a language's texts: one `str.format` template per thing the user reads.

Every language (`app.texts.cs`, `app.texts.en`) fills every field with the same placeholders
(tests/unit/test_texts.py holds them to it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Texts:
    # progress messages (one per node start; {…} filled from the state)
    node_intake: str
    node_clarify: str
    node_evidence_pack: str
    node_find_tests: str
    node_respond: str
    node_plan: str
    node_plan_epic: str
    node_design: str
    node_approve_plan: str
    node_select_goal: str
    node_plan_steps: str
    node_execute_step: str
    node_execute_retry: str
    node_evaluate: str
    node_reflect: str
    node_ask_user: str
    node_replan: str
    node_advance_step: str
    node_advance_goal: str
    node_review_epic: str
    node_run_goal: str
    node_merge_wave: str
    node_git_operations: str
    node_finalize: str
    budget_warning: str
    # a budget's dimensions and figures (warnings, the exhausted error, the report's usage line)
    dimension_tokens: str
    dimension_cost: str
    dimension_time: str
    usage_figures: str
    # evaluation findings (fed back to the agent on a retry)
    check_forbidden: str
    forbidden_reverted: str
    forbidden_kept: str
    check_too_many_files: str
    check_sentence_file: str
    check_placeholder_file: str
    check_tests_changed: str
    check_not_read: str
    """A changed file the agent left as a link: not read (path)."""
    check_syntax: str
    check_lost_definitions: str
    check_broken_import: str
    check_tests_failed: str
    check_tests_not_run: str
    check_no_test_command: str
    agent_fallback: str
    """A step ran on another program than its type's (step, agent, program, reason)."""
    agent_not_stopped: str
    """An agent's Job could not be deleted (job, error): the agent may still be running."""
    # the test command under require_tests (find_tests)
    tests_which_command: str
    tests_none_stop: str
    tests_found: str
    tests_source_user: str
    tests_source_remembered: str
    tests_source_environment: str
    check_review_rejected: str
    check_review_no_verdict: str
    # recovery
    recovery_question: str
    recovery_cause: str
    recovery_cap_attempts: str
    recovery_options: str
    retry_section: str
    recovery_repeat_hint: str
    # gates
    plan_gate: str
    plan_gate_replanned: str
    commit_gate: str
    commit_gate_partial: str
    push_gate: str
    plan_rejected: str
    # report
    report_done_steps: str
    report_done_work: str
    report_tests_passed: str
    report_files: str
    report_finished_goals: str
    report_epic_review_approved: str
    report_epic_review_rejected: str
    epic_review_no_verdict: str
    epic_fixup_goal: str
    # goals side by side (waves)
    wave_goal_failed: str
    wave_goal_conflict: str
    wave_conflict_reason: str
    wave_tests_goal: str
    report_wave_conflicts: str
    goal_state_done: str
    agent_changed_nothing: str
    local_model_offline: str
    goal_state_running: str
    goal_state_step: str
    goal_state_waiting: str
    design_gate: str
    report_skipped: str
    report_failed: str
    report_left: str
    report_branch: str
    report_not_committed: str
    report_warnings: str
    report_conditions: str
    report_problem: str
    report_budget_stop: str
    report_usage: str
    git_commit_rejected: str
    git_push_rejected: str
    git_committed: str
    git_pushed: str
    git_not_a_repo: str
    git_push_failed: str
    git_commit_failed: str
    git_branch_not_allowed: str
    cancelled: str
    halt_exhausted: str
    halt_user_stop: str
    halt_budget: str
    halt_llm: str
    # tracker operations Kotlin answered without doing them (placeholders)
    tracker_not_created: str
    tracker_not_updated: str
    # plan gate: a goal's dependencies after its title
    plan_gate_after: str
    plan_gate_wave: str
    plan_gate_unknown_dependency: str
    plan_gate_cycle: str
    # report warnings written by the orchestrator itself
    warning_classification_fallback: str
    warning_plan_fallback: str
    warning_branch_not_allowed: str
    warning_no_other_branch: str
    step_failed: str
    # run lifecycle (app/runs): ends and suspensions outside the graph
    run_restarted: str
    run_suspended: str
    run_suspended_outage: str
    cloud_rejected: str
    # LLM budget and cloud escalation (app/llm)
    budget_exhausted: str
    budget_extension_gate: str
    cloud_escalation_gate: str
    # transcript correction (app/correction)
    correction_chunk: str
    correction_chunk_generating: str
    correction_done: str
    correction_no_segments: str
    correction_instruct_failed: str
    correction_instruct_summary: str

    def dimension(self, name: str) -> str:
        """The name of a budget dimension (`tokens`, `cost`, `time`) in this language."""
        return str(getattr(self, f"dimension_{name}", name))
