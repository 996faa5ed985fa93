// A per-second series as an SVG area chart: no library, no canvas state to keep.
const SVG = "http://www.w3.org/2000/svg";

export function areaChart(values, { color = "#2b59c3", label = "" } = {}) {
  const width = 900, height = 80;
  const top = Math.max(1, ...values);
  const step = width / Math.max(1, values.length - 1);
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - (v / top) * (height - 4)).toFixed(1)}`);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const area = document.createElementNS(SVG, "polygon");
  area.setAttribute("points", `0,${height} ${points.join(" ")} ${width},${height}`);
  area.setAttribute("fill", color);
  area.setAttribute("fill-opacity", "0.25");
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", color);
  line.setAttribute("stroke-width", "1.5");
  line.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(area, line);
  return svg;
}
