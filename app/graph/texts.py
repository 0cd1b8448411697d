"""What the user reads, in the run's language: progress messages, questions, gate descriptions
and report lines. One `Texts` per language; `texts(code)` picks it (English for any other code,
since the LLM-written parts follow `language_rule` anyway). Placeholders are `str.format` fields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Texts:
    # progress messages (one per node start; {…} filled from the state)
    node_intake: str
    node_clarify: str
    node_evidence_pack: str
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
    node_git_operations: str
    node_finalize: str
    budget_warning: str
    # evaluation findings (fed back to the agent on a retry)
    check_forbidden: str
    forbidden_reverted: str
    forbidden_kept: str
    check_too_many_files: str
    check_sentence_file: str
    check_syntax: str
    check_lost_definitions: str
    check_tests_failed: str
    check_tests_not_run: str
    check_no_test_command: str
    check_review_rejected: str
    check_review_no_verdict: str
    # recovery
    recovery_question: str
    recovery_cause: str
    recovery_cap_attempts: str
    recovery_options: str
    retry_section: str
    # gates
    plan_gate: str
    plan_gate_replanned: str
    commit_gate: str
    commit_gate_partial: str
    push_gate: str
    plan_rejected: str
    budget_extension_gate: str
    cloud_escalation_gate: str
    # report
    report_done_steps: str
    report_files: str
    report_finished_goals: str
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


CS = Texts(
    node_intake="Analyzuji požadavek…",
    node_clarify="Čekám na upřesnění…",
    node_evidence_pack="Sbírám kontext z Knowledge Base…",
    node_respond="Připravuji odpověď…",
    node_plan="Plánuji úlohu…",
    node_plan_epic="Plánuji epic…",
    node_design="Navrhuji řešení…",
    node_approve_plan="Čekám na schválení plánu…",
    node_select_goal="Vybírám další cíl…",
    node_plan_steps="Plánuji kroky cíle {goal}/{goals}…",
    node_execute_step="Provádím krok {step}/{steps} cíle {goal}/{goals}…",
    node_execute_retry="Opakuji krok {step}/{steps} cíle {goal}/{goals} (pokus {attempt})…",
    node_evaluate="Vyhodnocuji výsledek kroku {step}…",
    node_reflect="Krok {step} neprošel, analyzuji příčinu…",
    node_ask_user="Čekám na rozhodnutí uživatele…",
    node_replan="Přeplánovávám zbývající práci…",
    node_advance_step="Přecházím na další krok…",
    node_advance_goal="Přecházím na další cíl…",
    node_git_operations="Git operace…",
    node_finalize="Připravuji závěrečnou zprávu…",
    budget_warning="Rozpočet: {fraction} limitu ({dimension}) vyčerpáno",
    check_forbidden="Změněny zakázané soubory: {files}. Tyto soubory neměň.",
    forbidden_reverted="Vráceny do stavu před krokem: {files}.",
    forbidden_kept="Nelze vrátit (pracovní prostor nemá snímek stavu před krokem), zůstávají: {files}.",
    check_too_many_files="Změněno {count} souborů, povoleno nejvýše {limit}: zužte změnu jen na to, co krok žádá.",
    check_sentence_file="Vznikl soubor pojmenovaný jako věta: {path}. Změnu zapiš do souboru, kterého se krok týká.",
    check_syntax="{path} po změně nejde přeložit (řádek {line}: {error}). Oprav syntaxi.",
    check_lost_definitions="Z {path} zmizelo {names}, což krok nežádal. Zachovej původní obsah a jen přidej nebo uprav, co krok žádá.",
    check_tests_failed="Testy selhaly ({command}):\n{output}",
    check_tests_not_run="Testy nebyly spuštěny: {reason}",
    check_no_test_command="Testy nebyly spuštěny: v projektu jsem nenašel příkaz pro testy.",
    check_review_rejected="Review zamítlo změnu: {issues}",
    check_review_no_verdict="Review nedalo verdikt ({reason}).",
    recovery_question="Krok {step} cíle {goal} („{title}“) neprošel ani na {attempt}. pokus.\nChyba: {failure}",
    recovery_cause="Příčina: {cause}",
    recovery_cap_attempts="Vyčerpal jsem všech {attempts} pokusů o tento krok.",
    recovery_options=("Co mám udělat? Odpovězte například:\n"
                      "- „zkus znovu: <rada>“ – nový pokus s vaší radou\n"
                      "- „přeskoč“ – krok vynechat\n"
                      "- „přeplánuj“ – naplánovat zbývající práci znovu\n"
                      "- „stop“ – skončit (hotovou práci nabídnu ke commitu)"),
    retry_section="Předchozí pokus {attempt} selhal",
    plan_gate="Plán: {goals} cílů ve {waves} vlnách",
    plan_gate_replanned="Přeplánováno ({reason}). Plán: {goals} cílů ve {waves} vlnách",
    commit_gate="Commit {count} změněných souborů do větve '{branch}'",
    commit_gate_partial="Úloha nebyla dokončena ({problem}). Commitnout hotovou práci ({count} souborů) do větve '{branch}'?",
    push_gate="Push větve '{branch}' na vzdálený repozitář",
    plan_rejected="Plán byl zamítnut uživatelem; nic nebylo provedeno.",
    report_done_steps="Dokončeno {ok} z {total} kroků.",
    report_files="Změněné soubory: {files}.",
    report_finished_goals="Hotové cíle: {goals}.",
    report_skipped="Přeskočené kroky: {steps}.",
    report_failed="Selhalo: {what} – {reason}",
    report_left="Zbývá: {what}.",
    report_branch="Větev {branch}, commit {sha}.",
    report_not_committed="Hotová práce zůstala necommitnutá v pracovním adresáři.",
    report_warnings="Upozornění: {warnings}",
    report_conditions="Podmínky uživatele: {conditions}",
    report_problem="Problém: {problem}",
    report_budget_stop="Rozpočet LLM byl vyčerpán při závěrečné zprávě: {reason}",
    report_usage="Spotřeba LLM: {usage}.",
    git_commit_rejected="Commit byl zamítnut uživatelem; změny zůstaly v pracovním adresáři necommitnuté.",
    git_push_rejected="Push byl zamítnut uživatelem; commit zůstal jen lokálně ve větvi {branch}.",
    git_committed="Změny jsou commitnuté ve větvi {branch}.",
    git_pushed="Změny jsou commitnuté a pushnuté ve větvi {branch}.",
    git_not_a_repo="Pracovní adresář není git repozitář; změny nebyly commitnuty.",
    git_push_failed="Push selhal; commit zůstal jen lokálně ve větvi {branch}.",
    git_commit_failed="Commit selhal: {reason}",
    git_branch_not_allowed="Větev '{branch}' neodpovídá povoleným vzorům {allowed}; změny nebyly commitnuty.",
    cancelled="Orchestrace zrušena uživatelem",
    halt_exhausted="Krok {step} cíle {goal} neprošel ani po {attempts} pokusech: {reason}",
    halt_user_stop="Uživatel ukončil práci po selhání kroku {step} cíle {goal}: {reason}",
    halt_budget="Rozpočet vyčerpán: {reason}",
    halt_llm="Jazykový model selhal ({node}): {reason}",
    budget_extension_gate="{error} Pokračovat s dvojnásobným rozpočtem?",
    cloud_escalation_gate="Lokální model selhal ({cause}). Použít cloudový model {model} (tier {tier}, odhad ${cost:.4f})?",
    tracker_not_created="Issue „{title}“ nebylo založeno: tracker odpověděl bez klíče issue ({reason})",
    tracker_not_updated="Issue {key} nebylo změněno: tracker změnu neprovedl ({reason})",
)

EN = Texts(
    node_intake="Analysing the request…",
    node_clarify="Waiting for clarification…",
    node_evidence_pack="Gathering Knowledge Base context…",
    node_respond="Preparing the answer…",
    node_plan="Planning the task…",
    node_plan_epic="Planning the epic…",
    node_design="Designing the solution…",
    node_approve_plan="Waiting for plan approval…",
    node_select_goal="Selecting the next goal…",
    node_plan_steps="Planning the steps of goal {goal}/{goals}…",
    node_execute_step="Running step {step}/{steps} of goal {goal}/{goals}…",
    node_execute_retry="Retrying step {step}/{steps} of goal {goal}/{goals} (attempt {attempt})…",
    node_evaluate="Evaluating the result of step {step}…",
    node_reflect="Step {step} failed, analysing why…",
    node_ask_user="Waiting for the user's decision…",
    node_replan="Replanning the remaining work…",
    node_advance_step="Moving to the next step…",
    node_advance_goal="Moving to the next goal…",
    node_git_operations="Git operations…",
    node_finalize="Writing the final report…",
    budget_warning="Budget: {fraction} of the limit ({dimension}) used",
    check_forbidden="Forbidden files were changed: {files}. Do not touch them.",
    forbidden_reverted="Put back as they were before the step: {files}.",
    forbidden_kept="Could not be put back (the workspace has no snapshot of the step's start), left as they are: {files}.",
    check_too_many_files="{count} files changed, at most {limit} allowed: narrow the change to what the step asks.",
    check_sentence_file="A file named like a sentence was created: {path}. Write the change into the file the step is about.",
    check_syntax="{path} no longer parses (line {line}: {error}). Fix the syntax.",
    check_lost_definitions="{path} lost {names}, which the step did not ask for. Keep the file's content and only add or change what the step asks.",
    check_tests_failed="Tests failed ({command}):\n{output}",
    check_tests_not_run="Tests were not run: {reason}",
    check_no_test_command="Tests were not run: no test command was found in the project.",
    check_review_rejected="The review rejected the change: {issues}",
    check_review_no_verdict="The review gave no verdict ({reason}).",
    recovery_question="Step {step} of goal {goal} (“{title}”) failed on attempt {attempt}.\nError: {failure}",
    recovery_cause="Cause: {cause}",
    recovery_cap_attempts="I have used all {attempts} attempts at this step.",
    recovery_options=("What should I do? Answer for example:\n"
                      "- “retry: <hint>” – try again with your hint\n"
                      "- “skip” – leave the step out\n"
                      "- “replan” – plan the remaining work again\n"
                      "- “stop” – finish now (finished work is offered for commit)"),
    retry_section="Previous attempt {attempt} failed",
    plan_gate="Plan: {goals} goals in {waves} waves",
    plan_gate_replanned="Replanned ({reason}). Plan: {goals} goals in {waves} waves",
    commit_gate="Commit {count} changed files to branch '{branch}'",
    commit_gate_partial="The task was not completed ({problem}). Commit the finished work ({count} files) to branch '{branch}'?",
    push_gate="Push branch '{branch}' to the remote",
    plan_rejected="The plan was rejected by the user; nothing was done.",
    report_done_steps="Completed {ok} of {total} steps.",
    report_files="Changed files: {files}.",
    report_finished_goals="Finished goals: {goals}.",
    report_skipped="Skipped steps: {steps}.",
    report_failed="Failed: {what} – {reason}",
    report_left="Left: {what}.",
    report_branch="Branch {branch}, commit {sha}.",
    report_not_committed="The finished work stays uncommitted in the workspace.",
    report_warnings="Warnings: {warnings}",
    report_conditions="User's conditions: {conditions}",
    report_problem="Problem: {problem}",
    report_budget_stop="The LLM budget ran out while writing the final report: {reason}",
    report_usage="LLM usage: {usage}.",
    git_commit_rejected="The commit was rejected by the user; the changes stay uncommitted in the workspace.",
    git_push_rejected="The push was rejected by the user; the commit stays local on branch {branch}.",
    git_committed="The changes are committed on branch {branch}.",
    git_pushed="The changes are committed and pushed on branch {branch}.",
    git_not_a_repo="The workspace is not a git repository; nothing was committed.",
    git_push_failed="The push failed; the commit stays local on branch {branch}.",
    git_commit_failed="The commit failed: {reason}",
    git_branch_not_allowed="Branch '{branch}' matches none of the allowed patterns {allowed}; nothing was committed.",
    cancelled="Orchestration cancelled by the user",
    halt_exhausted="Step {step} of goal {goal} failed after {attempts} attempts: {reason}",
    halt_user_stop="The user stopped the work after step {step} of goal {goal} failed: {reason}",
    halt_budget="Budget exhausted: {reason}",
    halt_llm="The language model failed ({node}): {reason}",
    budget_extension_gate="{error} Continue with double the budget?",
    cloud_escalation_gate="The local model failed ({cause}). Use the cloud model {model} (tier {tier}, estimate ${cost:.4f})?",
    tracker_not_created="Issue '{title}' was not created: the tracker answered without an issue key ({reason})",
    tracker_not_updated="Issue {key} was not updated: the tracker did not carry it out ({reason})",
)

_BY_CODE = {"cs": CS, "en": EN}


def texts(language: str | None) -> Texts:
    """The texts of a language code; English for codes without a catalogue of their own."""
    return _BY_CODE.get((language or "").lower()[:2], EN)
