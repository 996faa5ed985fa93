// A workflow as a layered graph: each task one level below its deepest dependency,
// coloured by state. Enough for the DAGs people read; thousands of nodes still draw.
const SVG = "http://www.w3.org/2000/svg";
const BOX_W = 150, BOX_H = 30, GAP_X = 24, GAP_Y = 46;

function svgEl(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, value);
  return el;
}

function levels(tasks) {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const level = new Map();
  const visit = (name, seen = new Set()) => {
    if (level.has(name)) return level.get(name);
    if (seen.has(name)) return 0;  // a cycle cannot be stored; be safe anyway
    seen.add(name);
    const deps = byName.get(name)?.dependencies || [];
    const depth = deps.length ? 1 + Math.max(...deps.map((d) => visit(d, seen))) : 0;
    level.set(name, depth);
    return depth;
  };
  tasks.forEach((t) => visit(t.name));
  return level;
}

export function workflowGraph(tasks, onPick) {
  const level = levels(tasks);
  const rows = [];
  for (const task of tasks) (rows[level.get(task.name)] ||= []).push(task);
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = widest * (BOX_W + GAP_X) + GAP_X;
  const height = rows.length * (BOX_H + GAP_Y) + GAP_Y;
  const at = new Map();
  rows.forEach((row, y) => row.forEach((task, x) => {
    const offset = (width - row.length * (BOX_W + GAP_X) + GAP_X) / 2;
    at.set(task.name, { x: offset + x * (BOX_W + GAP_X), y: GAP_Y / 2 + y * (BOX_H + GAP_Y) });
  }));
  const svg = svgEl("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "workflow graph" });
  svg.style.height = `${Math.min(height, 900)}px`;
  const defs = svgEl("defs", {});
  const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
    markerWidth: "6", markerHeight: "6", orient: "auto-start-reverse" });
  marker.append(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9a9a94" }));
  defs.append(marker);
  svg.append(defs);
  for (const task of tasks) {
    const to = at.get(task.name);
    for (const dep of task.dependencies) {
      const from = at.get(dep);
      if (!from) continue;
      svg.append(svgEl("path", { class: "edge",
        d: `M ${from.x + BOX_W / 2} ${from.y + BOX_H} C ${from.x + BOX_W / 2} ${from.y + BOX_H + GAP_Y / 2}, ${to.x + BOX_W / 2} ${to.y - GAP_Y / 2}, ${to.x + BOX_W / 2} ${to.y}` }));
    }
  }
  for (const task of tasks) {
    const { x, y } = at.get(task.name);
    const group = svgEl("g", { class: "node", transform: `translate(${x},${y})`,
      "data-name": task.name, "data-status": task.status, tabindex: "0" });
    group.append(svgEl("rect", { width: BOX_W, height: BOX_H, rx: "5",
      fill: `var(--${task.status}, #8a8a84)` }));
    const label = svgEl("text", { x: "8", y: "19" });
    label.textContent = task.name.length > 20 ? task.name.slice(0, 19) + "…" : task.name;
    const title = svgEl("title", {});
    title.textContent = `${task.name}: ${task.status}`;
    group.append(label, title);
    group.addEventListener("click", () => onPick(task));
    svg.append(group);
  }
  return svg;
}
