// The router and the live stream: each page refreshes in place on every stats event.
import { setToken } from "./api.js";
import { subscribe } from "./stream.js";
import * as views from "./views.js";

const ROUTES = [
  [/^#?\/?$/, "overview", views.overview],
  [/^#\/tasks$/, "tasks", views.tasks],
  [/^#\/task\/([\w.-]+)$/, "tasks", views.task],
  [/^#\/schedules$/, "schedules", views.schedules],
  [/^#\/workflows$/, "workflows", views.workflows],
  [/^#\/workflow\/([\w.-]+)$/, "workflows", views.workflow],
  [/^#\/limits$/, "limits", views.limits],
  [/^#\/nodes$/, "nodes", views.nodes],
  [/^#\/dead$/, "dead", views.dead],
];

let refresh = null;
let latest = null;
let busy = false;

async function update() {
  if (!refresh || busy) return;
  busy = true;
  try {
    await refresh(latest);
    document.getElementById("error").hidden = true;
  } catch (error) {
    views.showError(error);
  } finally {
    busy = false;
  }
}

function route() {
  const [path, query = ""] = location.hash.split("?");
  const root = document.getElementById("view");
  root.replaceChildren();
  for (const [pattern, name, view] of ROUTES) {
    const match = path.match(pattern);
    if (!match) continue;
    document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === name));
    refresh = view(root, new URLSearchParams(query), match[1] && decodeURIComponent(match[1]));
    update();
    return;
  }
  root.textContent = "No such page.";
  refresh = null;
}

function live(connected, detail) {
  const badge = document.getElementById("live");
  badge.className = `live ${connected ? "on" : "off"}`;
  badge.textContent = connected ? "live" : `reconnecting (${detail})`;
  if (!connected && (detail === "HTTP 401" || detail === "HTTP 403")) {
    document.getElementById("token-form").hidden = false;
  }
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  setToken(document.getElementById("token").value.trim());
  location.reload();
});
window.addEventListener("hashchange", route);
route();
const DEPENDENCIES = { store: "the store", ready_queue: "the ready queue" };

// The dependencies this node found failing: a banner until they answer again.
function outage(down) {
  const banner = document.getElementById("outage");
  banner.hidden = down.length === 0;
  const names = down.map((name) => DEPENDENCIES[name] ?? name).join(" and ");
  banner.textContent = `Outage: ${names} ${down.length > 1 ? "do" : "does"} not answer; tasks wait until ${down.length > 1 ? "they are" : "it is"} back.`;
}

subscribe("/api/stream", (name, data) => {
  if (name === "outage") {
    outage(data.outages.length ? data.outages : ["store"]);
    return;
  }
  if (name !== "stats") return;
  outage(data.outages ?? []);
  latest = data;
  update();
}, live);
