// Jervis console: the runs list and one run's page, from the service's own routes.
// No framework, no build step: DOM built with textContent (nothing from a run is parsed as HTML).

const LIST_POLL_MS = 2000;
const RUN_POLL_MS = 2500;
const WAITING_POLL_MS = 3000;
const LOG_TAIL = 40;
const STATUSES = [["", "All"], ["running", "Running"], ["interrupted", "Waiting"], ["done", "Done"], ["error", "Error"]];

let stopPage = () => {};
let waitingCount = 0;
let pageTitle = "Jervis runs";

// ------------------------------------------------------------------ helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// replaceChildren() with the absent parts left out (the DOM would print "null").
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    credentials: "same-origin",
    ...options,
    headers: { "Accept": "application/json", "X-Jervis-Console": "1", ...(options.headers || {}) },
  });
  if (response.status === 401) {
    window.location.assign("/ui/login");
    throw new Error("signed out");
  }
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  return { status: response.status, ok: response.ok, body };
}

function age(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  const minutes = Math.round((seconds % 3600) / 60);
  return `${Math.floor(seconds / 3600)} h${minutes ? ` ${minutes} min` : ""}`;
}

function clock(ts) {
  return ts ? new Date(ts * 1000).toLocaleTimeString([], { hour12: false }) : "";
}

function statusLabel(status, waiting) {
  if (status === "interrupted") return waiting ? `waits: ${waiting}` : "waiting";
  return status;
}

function badge(status, waiting) {
  return el("span", { class: `badge status-${status}`, "data-status": status, text: statusLabel(status, waiting) });
}

function bar(percent) {
  const fill = el("span", { class: "fill" });
  fill.style.width = `${Math.max(0, Math.min(100, percent))}%`;
  return el("span", { class: "bar", title: `${percent.toFixed(0)} %` }, fill);
}

function modelSeconds(usage) {
  return usage ? usage.nodes.reduce((sum, node) => sum + node.llm_seconds, 0) : 0;
}

function setTitle(text) {
  pageTitle = text;
  document.title = waitingCount ? `(${waitingCount} waiting) ${text}` : text;
}

function navigate(href) {
  history.pushState({}, "", href);
  route();
}

// ------------------------------------------------------------------ the waiting badge (every page)

async function refreshWaiting() {
  try {
    const { ok, body } = await api("/runs?status=interrupted&limit=200");
    if (!ok) return;
    waitingCount = body.runs.length;
    const badgeNode = document.getElementById("waiting-badge");
    badgeNode.hidden = waitingCount === 0;
    badgeNode.textContent = `${waitingCount} waiting for you`;
    setTitle(pageTitle);
    document.getElementById("connection").textContent = "";
  } catch (error) {
    document.getElementById("connection").textContent = "service unreachable";
  }
}

// ------------------------------------------------------------------ runs list

function listPage(root) {
  const params = new URLSearchParams(location.search);
  let status = params.get("status") || "";
  setTitle("Jervis runs");
  const filters = el("nav", { class: "filters", "aria-label": "Filter by status" });
  const table = el("table", { class: "runs" },
    el("thead", {}, el("tr", {}, ["Status", "Request", "Progress", "Age", "Tokens", "Model time", "Working time"]
      .map((h) => el("th", { text: h })))),
    el("tbody", { id: "runs-body" }));
  const empty = el("p", { class: "muted", id: "runs-empty", hidden: true, text: "No runs yet." });
  fill(root, el("h1", { text: "Runs" }), filters, table, empty);

  function drawFilters() {
    fill(filters, ...STATUSES.map(([value, label]) => el("button", {
      class: value === status ? "filter active" : "filter", "data-filter": value || "all", text: label,
      onclick: () => { status = value; history.replaceState({}, "", value ? `/ui?status=${value}` : "/ui"); drawFilters(); load(); },
    })));
  }

  async function load() {
    const query = status ? `&status=${status}` : "";
    const { ok, body } = await api(`/runs?limit=100${query}`);
    if (!ok) return;
    const rows = body.runs.map((run) => {
      const link = el("a", { href: `/ui/runs/${encodeURIComponent(run.thread_id)}`, "data-nav": true,
        text: run.request || run.task_id });
      return el("tr", { class: run.status === "interrupted" ? "run waiting" : "run", "data-thread": run.thread_id },
        el("td", {}, badge(run.status, run.waiting)),
        el("td", { class: "request" }, link, el("div", { class: "muted small", text: run.thread_id })),
        el("td", { class: "progress" }, bar(run.percent), ` ${run.percent.toFixed(0)} %`),
        el("td", { text: age(run.created_at) }),
        el("td", { class: "num", text: run.usage ? run.usage.llm_tokens.toLocaleString() : "–" }),
        el("td", { class: "num", text: run.usage ? duration(modelSeconds(run.usage)) : "–" }),
        el("td", { class: "num", text: run.usage ? duration(run.usage.seconds) : "–" }));
    });
    document.getElementById("runs-body").replaceChildren(...rows);
    empty.hidden = rows.length > 0;
  }

  drawFilters();
  load();
  const timer = setInterval(load, LIST_POLL_MS);
  return () => clearInterval(timer);
}

// ------------------------------------------------------------------ one run

function runPage(root, threadId) {
  const header = el("section", { class: "run-header" });
  const question = el("section", { class: "question", id: "question", hidden: true });
  const answerNote = el("p", { id: "answer-result", role: "status" });
  const timeline = el("ol", { class: "timeline", id: "timeline" });
  const plan = el("div", { id: "plan" });
  const budget = el("div", { id: "budget" });
  const report = el("div", { id: "report" });
  const diff = el("div", { id: "diff" });
  const streamNote = el("p", { class: "muted small", id: "stream-note" });
  fill(root,
    el("p", {}, el("a", { href: "/ui", "data-nav": true, text: "← all runs" })),
    header, question, answerNote,
    el("div", { class: "columns" },
      el("section", { class: "panel" }, el("h2", { text: "Timeline" }), streamNote, timeline),
      el("div", {},
        el("section", { class: "panel" }, el("h2", { text: "Plan" }), plan),
        el("section", { class: "panel" }, el("h2", { text: "Budget" }), budget),
        el("section", { class: "panel" }, el("h2", { text: "Report" }), report))),
    el("section", { class: "panel" }, el("h2", {}, "Changes ",
      el("button", { class: "small-button", id: "diff-refresh", text: "refresh", onclick: () => loadDiff() })), diff));

  let detail = null;
  let stream = null;
  let closed = false;
  const starts = new Map();
  let logBox = null;
  let reloadTimer = null;
  let reloadDiff = false;
  // The timeline follows its end, unless the reader scrolled up (then it stays where they are).
  let following = true;
  timeline.addEventListener("scroll", () => {
    following = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 40;
  });
  function followEnd() {
    if (following) timeline.scrollTop = timeline.scrollHeight;
  }

  // Events come in bursts (a replay when the stream opens): one reload for the burst.
  function reloadSoon(withDiff = false) {
    reloadDiff = reloadDiff || withDiff;
    if (reloadTimer) return;
    reloadTimer = setTimeout(() => {
      reloadTimer = null;
      load();
      if (reloadDiff) { reloadDiff = false; loadDiff(); }
    }, 300);
  }

  async function load() {
    const { status, ok, body } = await api(`/runs/${encodeURIComponent(threadId)}`);
    if (status === 404) { fill(header, el("h1", { text: "No such run" }), el("p", { text: threadId })); return; }
    if (!ok) return;
    const first = detail === null;
    if (!first && detail.status !== body.status) refreshWaiting();  // the badge follows at once
    detail = body;
    drawHeader();
    drawQuestion();
    drawPlan();
    drawBudget();
    fill(report, detail.report ? el("pre", { class: "report-text", text: detail.report })
      : el("p", { class: "muted", text: "No report yet." }));
    if (first) { openStream(); loadDiff(); }
  }

  function drawHeader() {
    const d = detail;
    setTitle(d.status === "interrupted" ? `⏳ Waiting for you: ${d.request || d.task_id}` : `${d.request || d.task_id} · Jervis`);
    const cancellable = d.status === "running" || d.status === "interrupted";
    fill(header,
      el("h1", { text: d.request || d.task_id }),
      el("div", { class: "facts" },
        badge(d.status, d.waiting), bar(d.percent), el("span", { id: "percent", text: `${d.percent.toFixed(0)} %` }),
        d.node ? el("span", { class: "muted", text: `now: ${d.node}` }) : null,
        d.branch ? el("span", {}, "branch ", el("code", { text: d.branch })) : null,
        el("span", { class: "muted", text: `started ${age(d.created_at)} ago` }),
        el("span", { class: "muted small", text: d.thread_id }),
        cancellable ? el("button", { class: "danger", id: "cancel", text: "Cancel run", onclick: cancelRun }) : null),
      d.error ? el("pre", { class: "error-text", text: d.error }) : null,
      d.query && d.query !== d.request ? el("details", {}, el("summary", { text: "Whole request" }), el("pre", { text: d.query })) : null);
  }

  function drawQuestion() {
    const q = detail.question;
    if (!q) {
      question.hidden = true;
      delete question.dataset.key;
      return;
    }
    const key = q.id || `${q.action}\n${q.description}`;
    if (question.dataset.key === key) return;
    question.dataset.key = key;
    say("", true);  // a new question: the note on the last answer is over
    const text = el("textarea", { id: "answer-text", rows: 3,
      placeholder: q.clarification ? "Your answer" : "Or answer in words (e.g. \"yes, but name the branch feature/x\")" });
    const buttons = q.clarification ? [] : [
      el("button", { class: "primary", id: "answer-yes", text: "Yes", onclick: () => answer(true, "yes") }),
      el("button", { id: "answer-no", text: "No", onclick: () => answer(false, "no") })];
    fill(question,
      el("h2", { text: `The run waits for you: ${q.action}` }),
      el("pre", { class: "question-text", id: "question-text", text: q.description }),
      el("div", { class: "answer-row" }, ...buttons),
      el("div", { class: "answer-row" }, text, el("button", { id: "answer-send", text: "Send answer", onclick: () => {
        const words = text.value.trim();
        if (!words) { say("Write an answer first.", false); return; }
        answer(q.clarification ? true : approves(words), words);
      } })));
    question.hidden = false;
  }

  function say(message, ok) {
    answerNote.textContent = message;
    answerNote.className = ok ? "ok" : "error";
  }

  // Kotlin's rule for a typed answer to an approval: approved when the text says yes in either language.
  function approves(words) {
    const lower = words.toLowerCase();
    return ["ano", "yes", "approve", "schval"].some((w) => lower.includes(w));
  }

  async function answer(approved, reason) {
    question.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const { status, ok, body } = await api(`/approve/${encodeURIComponent(threadId)}`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ approved, modification: null, reason }),
    });
    if (ok) {
      say(body.status === "ended" ? "Answered: the run ends." : "Answered: the run goes on.", true);
      if (!stream) openStream();
    } else if (status === 409 && body && body.answered && body.answered.answered_at) {
      const a = body.answered;
      say(`Already answered elsewhere: ${a.approved ? "approved" : "declined"} at ${a.answered_at} on pod ${a.pod_id}.`,
        false);
    } else {
      say(`Not taken (${status}): ${body && body.detail ? body.detail : "no reason given"}`, false);
      question.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
    load();
  }

  async function cancelRun() {
    if (!window.confirm("Cancel this run? Its agent stops; finished work is reported, nothing is committed.")) return;
    const button = document.getElementById("cancel");
    if (button) button.disabled = true;
    const { ok, body } = await api(`/cancel/${encodeURIComponent(threadId)}`, { method: "POST" });
    addEntry("cancel", ok ? "Cancel sent" : `Cancel refused: ${body && body.detail}`, Date.now() / 1000);
    load();
  }

  function drawPlan() {
    if (!detail.goals.length) { fill(plan, el("p", { class: "muted", text: "No plan yet." })); return; }
    fill(plan, el("ol", { class: "goals" }, detail.goals.map((goal) => el("li", { class: `goal goal-${goal.status}`, "data-goal": goal.id },
      el("div", {}, badge(goal.status), " ", el("strong", { text: goal.title }),
        goal.wave ? el("span", { class: "muted small", text: ` wave ${goal.wave}` }) : null,
        goal.dependencies.length ? el("span", { class: "muted small", text: ` after ${goal.dependencies.join(", ")}` }) : null),
      goal.summary ? el("div", { class: "small", text: goal.summary }) : null,
      el("ol", { class: "steps" }, goal.steps.map((step) => el("li", { class: `step step-${step.status}` },
        badge(step.status), " ", el("span", { text: step.title }),
        el("ul", { class: "attempts" }, step.attempts.map((a) => el("li", { class: a.success ? "ok" : "failed" },
          `${a.success ? "✓" : "✗"} attempt ${a.attempt}${a.agent ? ` (${a.agent})` : ""}: `, a.summary,
          a.changed_files.length ? el("span", { class: "muted small", text: ` · ${a.changed_files.join(", ")}` }) : null))))))))));
  }

  function drawBudget() {
    const b = detail.budget;
    if (!b) { fill(budget, el("p", { class: "muted", text: "Nothing used yet." })); return; }
    const row = (label, used, limit, show) => el("div", { class: "budget-row" },
      el("span", { class: "budget-label", text: label }),
      limit ? bar((100 * used) / limit) : null,
      el("span", { class: "num", text: limit ? `${show(used)} of ${show(limit)}` : `${show(used)} (no limit)` }));
    fill(budget,
      row("Tokens", b.tokens, b.max_tokens, (v) => Math.round(v).toLocaleString()),
      row("Cost", b.cost_usd, b.max_cost_usd, (v) => `$${v.toFixed(2)}`),
      row("Time", b.seconds, b.max_seconds, duration),
      detail.usage ? el("p", { class: "muted small", text: `${detail.usage.llm_calls} model calls, ${duration(modelSeconds(detail.usage))} of model time` }) : null);
  }

  async function loadDiff() {
    const { ok, body } = await api(`/runs/${encodeURIComponent(threadId)}/diff`);
    if (!ok) { fill(diff, el("p", { class: "muted", text: "No diff." })); return; }
    if (!body.parts.length) { fill(diff, el("p", { class: "muted", text: body.note || "No change yet." })); return; }
    const view = el("pre", { class: "diff", id: "diff-text" });
    const pick = el("select", { id: "diff-part", onchange: () => show(Number(pick.value)) },
      body.parts.map((part, i) => el("option", { value: i, text: `${part.label}${part.diff ? "" : " (no change)"}` })));
    function show(i) {
      const lines = (body.parts[i].diff || "(no change)").split("\n");
      fill(view, ...lines.map((line) => el("span", { class: diffClass(line), text: `${line}\n` })));
    }
    fill(diff, pick, view);
    show(0);
  }

  function diffClass(line) {
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")) return "d-file";
    if (line.startsWith("+")) return "d-add";
    if (line.startsWith("-")) return "d-del";
    if (line.startsWith("@@")) return "d-hunk";
    return "";
  }

  // ---------------------------------------------------------------- the timeline (SSE)

  function addEntry(kind, text, ts, extra = {}) {
    const item = el("li", { class: `event event-${kind}`, "data-kind": kind, ...extra },
      el("span", { class: "time", text: clock(ts) }), el("span", { class: "kind", text: kind.replace("_", " ") }),
      el("span", { class: "text", text }));
    timeline.append(item);
    if (kind !== "agent_log") logBox = null;
    followEnd();
    return item;
  }

  function onEvent(type, data) {
    switch (type) {
      case "node_start": {
        const retry = data.attempt > 1 ? ` (attempt ${data.attempt})` : "";
        const item = addEntry("node", `${data.node}: ${data.message}${retry}`, data.ts, { "data-node": data.node });
        if (!data.goal_id) starts.set(data.node, item);  // node_end comes for the run's own nodes only
        if (typeof data.percent === "number" && detail) { detail.percent = Math.max(detail.percent, data.percent); drawHeader(); }
        break;
      }
      case "node_end": {
        const item = starts.get(data.node);
        if (item && data.duration_ms !== null && data.duration_ms !== undefined) {
          item.querySelector(".text").append(el("span", { class: "muted duration", text: ` · ${duration(data.duration_ms / 1000)}` }));
        }
        if (data.error) addEntry("error", `${data.node} failed: ${data.error}`, data.ts);
        reloadSoon(["execute_step", "merge_wave", "git_operations"].includes(data.node));
        break;
      }
      case "agent_log": {
        if (!logBox) {
          const box = el("pre", { class: "log-tail" });
          addEntry("agent_log", `${data.agent} output`, data.ts).append(box);
          logBox = box;  // after addEntry, which ends the previous output box
        }
        const lines = (logBox.textContent + data.line + "\n").split("\n");
        logBox.textContent = lines.slice(-LOG_TAIL - 1).join("\n");
        logBox.scrollTop = logBox.scrollHeight;
        followEnd();
        break;
      }
      case "agent_start": {
        const runs = data.program && data.program !== data.agent ? `${data.agent} → ${data.program}` : data.agent;
        addEntry("agent", `${runs} started`, data.ts);
        break;
      }
      case "reflection": addEntry("reflection", `step ${(data.step_index || 0) + 1} attempt ${data.attempt}: ${data.action}` +
        ` (${data.source}) after "${data.failure}"${data.hint ? `; next: ${data.hint}` : ""}`, data.ts); break;
      case "verification": addEntry("verification", (data.acceptable ? "accepted" : "not accepted") +
        (data.checks || []).map((c) => `; ${c.name} ${c.status}${c.message ? `: ${c.message}` : ""}`).join(""), data.ts); break;
      case "tests_start": addEntry("tests", `running ${data.command}`, data.ts); break;
      case "warning": case "budget_warning": addEntry("warning", data.message || `${data.dimension} at ${Math.round(data.fraction * 100)} %`, data.ts); break;
      case "wave_conflict": addEntry("warning", `goal ${data.goal} conflicts in ${(data.files || []).join(", ")}`, data.ts); break;
      case "paused": case "resumed": case "suspended": addEntry(type, data.message || data.reason || "", data.ts); break;
      case "gap": addEntry("gap", data.message, data.ts); break;
      case "approval_required": addEntry("waiting", `waits for you: ${(data.interrupt || {}).action || ""}`, data.ts); reloadSoon(true); break;
      case "done": addEntry("done", "done", data.ts); finish(); break;
      case "error": addEntry("error", data.error || "error", data.ts); finish(); break;
      default: addEntry(type, data.message || "", data.ts);
    }
  }

  function finish() {
    if (stream) { stream.close(); stream = null; }
    reloadSoon(true);
  }

  function openStream() {
    if (closed || stream || !detail) return;
    if (!detail.live) {
      streamNote.textContent = "This pod holds no event stream for this run (it ran elsewhere, or before a restart): " +
        "the plan, budget and report come from its checkpoint.";
      return;
    }
    streamNote.textContent = "";
    stream = new EventSource(`/stream/${encodeURIComponent(threadId)}`);
    const types = ["node_start", "node_end", "agent_log", "agent_start", "reflection", "verification", "tests_start",
      "warning", "budget_warning", "wave_conflict", "paused", "resumed", "suspended", "gap", "approval_required", "done", "error"];
    for (const type of types) {
      // A dropped connection is an `error` Event without data (EventSource reconnects by itself).
      stream.addEventListener(type, (event) => { if (typeof event.data === "string") onEvent(type, JSON.parse(event.data)); });
    }
  }

  load();
  const timer = setInterval(() => { if (detail && (detail.status === "running" || !detail.live)) load(); }, RUN_POLL_MS);
  return () => { closed = true; clearInterval(timer); if (stream) stream.close(); };
}

// ------------------------------------------------------------------ routing

function route() {
  stopPage();
  const root = document.getElementById("app");
  const match = location.pathname.match(/^\/ui\/runs\/([^/]+)$/);
  stopPage = match ? runPage(root, decodeURIComponent(match[1])) : listPage(root);
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-nav]");
  if (!link || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);
route();
refreshWaiting();
setInterval(refreshWaiting, WAITING_POLL_MS);
