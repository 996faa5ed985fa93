// Builds DOM nodes from data without ever parsing it as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function statusBadge(status) {
  return h("span", { class: `status ${status}`, dataset: { status } }, status);
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return date.toLocaleString(undefined, { hour12: false }) + "." +
    String(date.getMilliseconds()).padStart(3, "0");
}

export function table(headers, rows) {
  return h("table", {},
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows));
}

export function fields(pairs) {
  return h("dl", { class: "fields" },
    pairs.filter(([, value]) => value !== undefined)
      .map(([name, value]) => [h("dt", {}, name), h("dd", {}, value ?? "")]));
}
