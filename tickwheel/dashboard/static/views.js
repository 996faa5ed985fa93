// One function per page: each renders into `root` and returns a refresh function that
// the live stream calls (with the latest stats) to update the page in place.
import { api } from "./api.js";
import { areaChart } from "./charts.js";
import { fields, h, statusBadge, table, when } from "./dom.js";
import { workflowGraph } from "./graph.js";

const STATES = ["pending", "blocked", "waiting", "running", "succeeded", "failed",
  "cancelled", "upstream_failed", "expired"];
const SERIES = [["triggered", "#5f7fd1"], ["started", "#2b59c3"], ["succeeded", "#2f8f4e"],
  ["failed", "#c23b32"]];

const go = (hash) => { location.hash = hash; };
const ms = (value) => (value === null || value === undefined ? "–" : `${Math.round(value)} ms`);

// -- overview ----------------------------------------------------------------

export function overview(root) {
  root.append(h("h1", {}, "Overview"), h("div", { id: "overview" }, h("p", { class: "muted" }, "Waiting for the first update…")));
  return (stats) => {
    if (!stats) return;
    const perSecond = (name) => stats.series[name].at(-2) ?? 0;  // the last whole second
    document.getElementById("overview").replaceChildren(
      h("div", { class: "cards", id: "counts" }, STATES.map((state) =>
        h("a", { class: "card", href: `#/tasks?status=${state}`, dataset: { state } },
          h("div", { class: "n" }, (stats.counts[state] ?? 0).toLocaleString()),
          h("div", { class: "k" }, state)))),
      h("h2", {}, "Last 15 minutes, per second"),
      h("div", { class: "charts" }, SERIES.map(([name, color]) =>
        h("div", { class: "panel chart", dataset: { series: name } },
          h("div", { class: "k" }, h("span", {}, name), h("span", {}, `${perSecond(name)}/s`)),
          areaChart(stats.series[name], { color, label: `${name} per second` })))),
      h("div", { class: "two" },
        h("div", {},
          h("h2", {}, "Lateness, last minute"),
          table(["", "p50", "p99", "samples"], ["trigger", "start"].map((kind) => {
            const l = stats.lateness_ms[kind];
            return h("tr", { dataset: { lateness: kind } }, h("td", {}, kind),
              h("td", { class: "num" }, ms(l.p50)), h("td", { class: "num" }, ms(l.p99)),
              h("td", { class: "num" }, l.samples));
          }))),
        h("div", {},
          h("h2", {}, "Ready queues"),
          table(["queue", "depth"], Object.entries(stats.queues).map(([queue, depth]) =>
            h("tr", {}, h("td", {}, queue), h("td", { class: "num" }, depth.toLocaleString())))),
          h("h2", {}, "Admission"),
          fields([
            ["submissions", stats.admission.admitting ? "admitted" : "refused (429)"],
            ["backlog", stats.admission.backlog.toLocaleString()],
            ["drain", `${stats.admission.drain_per_second.toFixed(0)} tasks/s`],
            ["time to drain", stats.admission.seconds_to_drain === null ? "–" : `${stats.admission.seconds_to_drain.toFixed(1)} s`],
            ["wheel", `${stats.wheel_size.toLocaleString()} tasks on ${stats.partitions_owned} partitions here`],
          ]))));
  };
}

// -- tasks -------------------------------------------------------------------

function taskRow(task) {
  return h("tr", { class: "link", dataset: { taskId: task.task_id }, onclick: () => go(`#/task/${task.task_id}`) },
    h("td", {}, h("code", {}, task.task_id)), h("td", {}, task.task_type),
    h("td", {}, statusBadge(task.status)), h("td", {}, task.queue),
    h("td", {}, when(task.due_time)), h("td", { class: "num" }, task.attempts),
    h("td", { class: "muted" }, task.last_error ?? ""));
}

const TASK_COLUMNS = ["id", "type", "status", "queue", "due", "attempts", "last error"];

export function tasks(root, params) {
  const filters = h("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const [key, value] of new FormData(event.target)) if (value) query.append(key, value);
    go(`#/tasks?${query}`);
  } },
    h("label", {}, "status", h("select", { name: "status" }, h("option", { value: "" }, "any"),
      STATES.map((s) => h("option", { value: s, selected: params.get("status") === s }, s)))),
    h("label", {}, "type", h("input", { name: "task_type", value: params.get("task_type") ?? "", size: 14 })),
    h("label", {}, "queue", h("input", { name: "queue", value: params.get("queue") ?? "", size: 10 })),
    h("label", {}, "created after", h("input", { name: "created_after", type: "datetime-local", value: params.get("created_after") ?? "" })),
    h("label", {}, "created before", h("input", { name: "created_before", type: "datetime-local", value: params.get("created_before") ?? "" })),
    h("label", {}, "id or idempotency key", h("input", { name: "q", value: params.get("q") ?? "", size: 28 })),
    h("button", { class: "primary", type: "submit" }, "Filter"));
  const body = h("div", {});
  root.append(h("h1", {}, "Tasks"), filters, body);
  const pages = [null];  // the token of each page seen, for "newer"
  const query = () => {
    const found = Object.fromEntries(params);
    for (const key of ["created_after", "created_before"]) {
      if (found[key]) found[key] = new Date(found[key]).toISOString();
    }
    return found;
  };
  const refresh = async () => {
    const page = await api("/api/tasks", { params: { ...query(), limit: 50, next_token: pages.at(-1) } });
    body.replaceChildren(
      table(TASK_COLUMNS, page.tasks.map(taskRow)),
      page.tasks.length ? "" : h("p", { class: "muted" }, "No task matches."),
      h("div", { class: "pager" },
        h("button", { disabled: pages.length === 1, onclick: () => { pages.pop(); refresh(); } }, "Newer"),
        h("button", { disabled: !page.next_token, onclick: () => { pages.push(page.next_token); refresh(); } }, "Older")));
  };
  return refresh;
}

export function task(root, params, id) {
  const body = h("div", {});
  root.append(h("h1", {}, "Task ", h("code", {}, id)), body);
  return async () => {
    const [t, history] = await Promise.all([
      api(`/api/tasks/${encodeURIComponent(id)}`),
      api(`/api/tasks/${encodeURIComponent(id)}/history`, { params: { limit: 100 } }),
    ]);
    const act = async (action) => {
      try { await action(); } catch (error) { showError(error); }
    };
    const cron = t.schedule.type === "cron";
    const preview = cron && t.schedule.schedule_id
      ? await api(`/api/schedules/${encodeURIComponent(t.schedule.schedule_id)}/next`, { params: { count: 10 } })
      : null;
    body.replaceChildren(
      h("div", { class: "actions" },
        ["pending", "blocked", "waiting", "running"].includes(t.status) || cron
          ? h("button", { class: "danger", id: "cancel", onclick: () => act(() => api(`/api/tasks/${encodeURIComponent(id)}`, { method: "DELETE" })) }, "Cancel")
          : "",
        ["failed", "upstream_failed", "cancelled"].includes(t.status)
          ? h("button", { class: "primary", id: "redrive", onclick: () => act(() => api("/api/tasks/redrive", { method: "POST", body: { task_ids: [id] } })) }, "Re-drive")
          : ""),
      waitingOn(t.waiting_on),
      h("div", { class: "two" },
        h("div", { class: "panel" }, fields([
          ["status", statusBadge(t.status)], ["type", t.task_type], ["queue", t.queue],
          ["priority", t.priority], ["attempts", `${t.attempts} of ${t.max_retries + 1}`],
          ["fence", t.fence], ["worker", t.worker_id], ["due", when(t.due_time)],
          ["created", when(t.created_at)], ["triggered", when(t.triggered_at)],
          ["started", when(t.started_at)], ["completed", when(t.completed_at)],
          ["lease until", when(t.lease_expires_at)], ["expires", t.expires_at ? when(t.expires_at) : undefined],
          ["limit key", t.limit_key ?? undefined],
          ["idempotency key", t.idempotency_key],
          ["ordering key", t.ordering_key], ["last error", t.last_error],
        ])),
        h("div", { class: "panel" }, fields([
          ["schedule", t.schedule.type], ["cron", t.schedule.cron_expression],
          ["timezone", t.schedule.timezone], ["jitter", t.schedule.jitter_seconds === null ? undefined : `${t.schedule.jitter_seconds} s`],
          ["schedule status", t.schedule.schedule_status],
          ["instances expire", t.schedule.expires_after_seconds == null ? undefined : `${t.schedule.expires_after_seconds} s after each fire`],
          ["current instance", t.current_instance_id ? h("a", { href: `#/task/${t.current_instance_id}` }, t.current_instance_id) : undefined],
        ]), h("h2", {}, "Payload"), h("pre", {}, JSON.stringify(t.payload, null, 2)))),
      fireTimes(preview),
      h("h2", {}, "Attempts"),
      table(["attempt", "worker", "started", "ended", "outcome", "error", "fence"],
        history.executions.map((e) => h("tr", { dataset: { outcome: e.outcome } },
          h("td", { class: "num" }, e.attempt), h("td", {}, e.worker_id ?? ""),
          h("td", {}, when(e.started_at)), h("td", {}, when(e.ended_at)),
          h("td", {}, statusBadge(e.outcome)), h("td", { class: "muted" }, e.error ?? ""),
          h("td", { class: "num" }, e.fence)))));
  };
}

// A schedule's next fire times, in its own time zone, with the daylight-saving
// changes that move or repeat them said in words.
function fireTimes(preview) {
  if (!preview) return "";
  // The API writes a UTC time with Z, any other with its offset.
  const local = (iso) => `${iso.slice(0, 16).replace("T", " ")} (UTC${iso.endsWith("Z") ? "+00:00" : iso.slice(-6)})`;
  return h("div", { class: "panel fire-times", id: "fire-times" },
    h("h2", {}, `Next fire times (${preview.timezone})`,
      preview.status !== "active" ? h("span", { class: "muted" }, ` (${preview.status}: none of these fires)`) : ""),
    table(["local time", "your time", "daylight saving"],
      preview.fire_times.map((f) => h("tr", { dataset: { change: f.clock_change ?? "" } },
        h("td", {}, local(f.local_time)), h("td", {}, when(f.fire_time)),
        h("td", { class: "muted" }, f.note ?? "")))));
}

// Why the task has not started: each cause in words, with links to what it waits on
// (where the API's message names a task, the link says it instead).
function waitingOn(waits) {
  if (!waits || !waits.length) return "";
  const taskLink = (taskId) => h("a", { href: `#/task/${taskId}` }, h("code", {}, taskId));
  const said = (w) => {
    switch (w.reason) {
      case "predecessors":
        return w.tasks.length
          ? ["waits on predecessors not yet succeeded: ",
            w.tasks.map((p) => h("span", { class: "predecessor" }, taskLink(p.task_id), " ", statusBadge(p.status)))]
          : w.message;
      case "ordering_key":
        return w.holder ? [`waits its turn on ordering key "${w.key}", held by `, taskLink(w.holder)] : w.message;
      case "schedule_paused":
        return [w.message, " (schedule ", taskLink(w.schedule_id), ")"];
      case "queued":
      case "no_worker":
      case "no_scheduler":
        return [w.message, " (", h("a", { href: "#/nodes" }, "nodes"), ")"];
      case "limit":
        return [w.message, " (", h("a", { href: "#/limits" }, "limits"), ")"];
      default:
        return w.message;
    }
  };
  return h("div", { class: "panel waiting-on", id: "waiting-on" },
    h("h2", {}, "Waiting on"),
    h("ul", {}, waits.map((w) => h("li", { dataset: { reason: w.reason } }, said(w)))));
}

// -- schedules, workflows, nodes, dead letters -------------------------------------

export function schedules(root) {
  const body = h("div", {});
  root.append(h("h1", {}, "Schedules"), body);
  return async () => {
    const page = await api("/api/schedules", { params: { limit: 200 } });
    const toggle = (s) => async () => {
      try {
        await api(`/api/tasks/${encodeURIComponent(s.schedule_id)}/${s.status === "paused" ? "resume" : "pause"}`, { method: "POST" });
      } catch (error) { showError(error); }
    };
    body.replaceChildren(table(
      ["schedule", "type", "cron", "jitter", "next fire", "last outcome", "status", ""],
      page.schedules.map((s) => h("tr", { dataset: { scheduleId: s.schedule_id } },
        h("td", {}, h("a", { href: `#/task/${s.schedule_id}` }, h("code", {}, s.schedule_id))),
        h("td", {}, s.task_type), h("td", {}, h("code", {}, s.cron_expression), " ", h("span", { class: "muted" }, s.timezone)),
        h("td", { class: "num" }, `${s.jitter_seconds} s`), h("td", {}, when(s.next_fire_time)),
        h("td", {}, s.last_run ? h("a", { href: `#/task/${s.last_run.task_id}` }, statusBadge(s.last_run.status)) : h("span", { class: "muted" }, "none yet")),
        h("td", { class: "schedule-status" }, statusBadge(s.status)),
        h("td", {}, h("button", { onclick: toggle(s) }, s.status === "paused" ? "Resume" : "Pause"))))));
  };
}

export function workflows(root) {
  const body = h("div", {});
  root.append(h("h1", {}, "Workflows"), body);
  return async () => {
    const page = await api("/api/workflows", { params: { limit: 100 } });
    body.replaceChildren(table(["workflow", "name", "status", "tasks", "created"],
      page.workflows.map((w) => h("tr", { class: "link", onclick: () => go(`#/workflow/${w.workflow_id}`) },
        h("td", {}, h("code", {}, w.workflow_id)), h("td", {}, w.name), h("td", {}, statusBadge(w.status)),
        h("td", { class: "num" }, w.task_count), h("td", {}, when(w.created_at))))));
  };
}

export function workflow(root, params, id) {
  const body = h("div", {});
  root.append(h("h1", {}, "Workflow ", h("code", {}, id)), body);
  return async () => {
    const w = await api(`/api/workflows/${encodeURIComponent(id)}`);
    body.replaceChildren(
      fields([["name", w.name], ["status", statusBadge(w.status)], ["created", when(w.created_at)],
        ["tasks", Object.entries(w.counts).map(([s, n]) => `${n} ${s}`).join(", ")]]),
      h("div", { class: "actions" }, ["running"].includes(w.status)
        ? h("button", { class: "danger", onclick: async () => {
          try { await api(`/api/workflows/${encodeURIComponent(id)}`, { method: "DELETE" }); } catch (error) { showError(error); }
        } }, "Cancel workflow") : ""),
      h("div", { class: "graph" }, workflowGraph(w.tasks, (t) => go(`#/task/${t.task_id}`))));
  };
}

export function limits(root) {
  const body = h("div", {});
  root.append(h("h1", {}, "Rate and concurrency limits"), body);
  return async () => {
    const found = await api("/api/limits");
    const held = (l) => {
      const id = `${l.scope}:${l.name}`;
      return l.held ? h("a", { href: `#/tasks?held_by=${encodeURIComponent(id)}` }, l.held.toLocaleString()) : "0";
    };
    body.replaceChildren(
      table(["scope", "name", "rate", "started in window", "concurrency", "running", "held back"], found.limits.map((l) =>
        h("tr", { dataset: { limit: `${l.scope}:${l.name}` } }, h("td", {}, l.scope), h("td", {}, h("code", {}, l.name)),
          h("td", {}, l.rate ?? "–"), h("td", { class: "num" }, l.rate ? l.started_in_window.toLocaleString() : "–"),
          h("td", { class: "num" }, l.concurrency ?? "–"), h("td", { class: "num" }, l.running.toLocaleString()),
          h("td", { class: "num", dataset: { held: l.held } }, held(l))))),
      found.limits.length ? "" : h("p", { class: "muted" }, "No limits. Set one with PUT /api/limits/{scope}/{name} or tickwheel limits set."));
  };
}

export function nodes(root) {
  const body = h("div", {});
  root.append(h("h1", {}, "Workers and scheduler nodes"), body);
  return async () => {
    const found = await api("/api/nodes");
    body.replaceChildren(
      h("h2", {}, "Scheduler nodes"),
      table(["node", "partitions (epoch)", "heartbeat until"], found.schedulers.map((s) =>
        h("tr", { dataset: { nodeId: s.node_id } }, h("td", {}, h("code", {}, s.node_id)),
          h("td", { class: "num" }, `${s.partitions.length}: ${s.partitions.map((p) => `${p.partition} (${p.epoch})`).join(", ")}`),
          h("td", {}, s.heartbeat_expires_at ? when(s.heartbeat_expires_at) : "embedded: holds its leases")))),
      found.unowned_partitions.length ? h("p", { class: "error" }, `Partitions with no owner: ${found.unowned_partitions.join(", ")}`) : "",
      h("h2", {}, "Workers"),
      table(["worker", "kind", "queues", "task types", "in flight", "concurrency", "last heartbeat"], found.workers.map((w) =>
        h("tr", { dataset: { workerId: w.worker_id } }, h("td", {}, h("code", {}, w.worker_id)),
          h("td", {}, w.kind), h("td", {}, w.queues.join(", ")),
          h("td", {}, w.task_types ? w.task_types.join(", ") : h("span", { class: "muted" }, "any")),
          h("td", { class: "num" }, w.inflight),
          h("td", { class: "num" }, w.concurrency ?? "–"), h("td", {}, when(w.last_heartbeat_at))))));
  };
}

export function dead(root) {
  const body = h("div", {});
  const selected = new Set();
  const redrive = async (ids) => {
    try {
      await api("/api/tasks/redrive", { method: "POST", body: { task_ids: ids } });
      selected.clear();
    } catch (error) { showError(error); }
  };
  root.append(h("h1", {}, "Dead letters"), body);
  return async () => {
    const page = await api("/api/tasks", { params: { status: "failed", limit: 100 } });
    body.replaceChildren(
      h("div", { class: "actions" },
        h("button", { class: "primary", id: "redrive-selected", onclick: () => selected.size && redrive([...selected]) }, "Re-drive selected"),
        h("button", { id: "redrive-all", disabled: !page.tasks.length, onclick: () => redrive(page.tasks.map((t) => t.task_id)) }, "Re-drive all shown")),
      table(["", "id", "type", "attempts", "failed at", "error", ""], page.tasks.map((t) =>
        h("tr", { dataset: { taskId: t.task_id } },
          h("td", {}, h("input", { type: "checkbox", checked: selected.has(t.task_id), onchange: (e) => {
            if (e.target.checked) selected.add(t.task_id); else selected.delete(t.task_id);
          } })),
          h("td", {}, h("a", { href: `#/task/${t.task_id}` }, h("code", {}, t.task_id))),
          h("td", {}, t.task_type), h("td", { class: "num" }, t.attempts),
          h("td", {}, when(t.completed_at)), h("td", { class: "muted" }, t.last_error ?? ""),
          h("td", {}, h("button", { onclick: () => redrive([t.task_id]) }, "Re-drive"))))),
      page.tasks.length ? "" : h("p", { class: "muted" }, "No dead letters."));
  };
}

// -- errors --------------------------------------------------------------------

export function showError(error) {
  const box = document.getElementById("error");
  box.textContent = error.message;
  box.hidden = false;
  if (error.status === 401 || error.status === 403) document.getElementById("token-form").hidden = false;
}
