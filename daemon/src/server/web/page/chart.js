// A bar chart as inline SVG, built with DOM calls: one bar per day,
// stacked by agent. No library, nothing fetched.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 400;
const HEIGHT = 200;
const LEFT = 48;
const BOTTOM = 24;
const RIGHT = 18;

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// days: ["YYYY-MM-DD", …]; series: [{ name, values: Map(day -> number) }];
// format: how an axis value is written.
export function barChart(days, series, format) {
  const chart = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", class: "chart",
    "aria-label": "spend per day and agent",
  });
  const totals = days.map((day) => series.reduce((sum, s) => sum + (s.values.get(day) ?? 0), 0));
  const top = Math.max(...totals, 0) || 1;
  const plotHeight = HEIGHT - BOTTOM - 8;
  const step = (WIDTH - LEFT - RIGHT) / Math.max(days.length, 1);
  for (const fraction of [0, 0.5, 1]) {
    const y = 8 + plotHeight * (1 - fraction);
    chart.append(svg("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: y, y2: y, class: "grid" }));
    chart.append(svg("text", { x: LEFT - 4, y: y + 4, class: "axis", "text-anchor": "end" }, format(top * fraction)));
  }
  days.forEach((day, index) => {
    let base = 8 + plotHeight;
    series.forEach((s, n) => {
      const value = s.values.get(day) ?? 0;
      if (!value) return;
      const height = (value / top) * plotHeight;
      base -= height;
      const bar = svg("rect", {
        x: LEFT + index * step + step * 0.15, y: base, width: step * 0.7, height,
        class: `bar series-${n % 6}`,
      });
      bar.append(svg("title", {}, `${day} ${s.name}: ${format(value)}`));
      chart.append(bar);
    });
    const every = Math.ceil(days.length / 5);
    if ((days.length - 1 - index) % every === 0) {
      chart.append(svg("text", {
        x: LEFT + index * step + step / 2, y: HEIGHT - 6, class: "axis", "text-anchor": "middle",
      }, day.slice(5)));
    }
  });
  return chart;
}

// The legend: one swatch per series.
export function legend(series) {
  const list = document.createElement("ul");
  list.className = "legend";
  series.forEach((s, n) => {
    const item = document.createElement("li");
    const swatch = svg("svg", { width: 12, height: 12, viewBox: "0 0 12 12" });
    swatch.append(svg("rect", { width: 12, height: 12, class: `bar series-${n % 6}` }));
    item.append(swatch, document.createTextNode(` ${s.name}`));
    list.append(item);
  });
  return list;
}
