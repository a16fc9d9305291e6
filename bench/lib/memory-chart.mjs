// A plain SVG line chart (no library, no external service) of the soak's memory series: panels stacked
// vertically sharing the time axis, each with its own y scale starting at zero, so growth shows as slope.
// One legend above the panels (every panel shows the same runs, in the same colours).

const WIDTH = 760;
const PANEL_HEIGHT = 220;
const MARGIN = { left: 64, right: 16, top: 34, bottom: 44 };
const FONT = 'font-family="system-ui, sans-serif" font-size="12"';
const LEGEND_ROW = 18;

const escapeXml = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Round tick steps (1, 2, 5 × 10^n) giving about `count` ticks up to `max`. */
function ticks(max, count = 5) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const top = Math.ceil(max / step) * step;
  return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step);
}

const label = (value) => (Number.isInteger(value) ? String(value) : value.toFixed(1));

/**
 * @param {{ title: string, xLabel: string, panels: { title: string, unit: string, series: { label: string, color: string, dashed?: boolean, points: [number, number][] }[] }[] }} chart
 * @returns {string} the SVG document
 */
export function memoryChart({ title, xLabel, panels }) {
  const allX = panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x)));
  const xTicks = ticks(Math.max(1, ...allX), 10);
  const xMax = xTicks.at(-1);
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const panelBox = PANEL_HEIGHT + MARGIN.top + MARGIN.bottom;
  const legend = panels[0]?.series ?? [];
  const legendHeight = 8 + legend.length * LEGEND_ROW;
  const out = [];
  legend.forEach((series, i) => {
    const y = 16 + i * LEGEND_ROW;
    const dash = series.dashed ? ' stroke-dasharray="6 4"' : "";
    out.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + 24}" y1="${y - 4}" y2="${y - 4}" stroke="${series.color}" stroke-width="2"${dash}/>`,
      `<text x="${MARGIN.left + 30}" y="${y}" ${FONT}>${escapeXml(series.label)}</text>`,
    );
  });
  panels.forEach((panel, p) => {
    const top = legendHeight + p * panelBox + MARGIN.top;
    const yTicks = ticks(Math.max(0, ...panel.series.flatMap((s) => s.points.map(([, y]) => y))));
    const yMax = yTicks.at(-1);
    const sx = (x) => MARGIN.left + (x / xMax) * plotWidth;
    const sy = (y) => top + PANEL_HEIGHT - (y / yMax) * PANEL_HEIGHT;
    out.push(`<text x="${MARGIN.left}" y="${top - 14}" ${FONT} font-weight="bold">${escapeXml(panel.title)}</text>`);
    for (const y of yTicks) {
      out.push(
        `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${sy(y)}" y2="${sy(y)}" stroke="#e3e3e3"/>`,
        `<text x="${MARGIN.left - 6}" y="${sy(y) + 4}" ${FONT} text-anchor="end">${label(y)}</text>`,
      );
    }
    for (const x of xTicks) {
      out.push(
        `<line x1="${sx(x)}" x2="${sx(x)}" y1="${top + PANEL_HEIGHT}" y2="${top + PANEL_HEIGHT + 4}" stroke="#888"/>`,
        `<text x="${sx(x)}" y="${top + PANEL_HEIGHT + 18}" ${FONT} text-anchor="middle">${label(x)}</text>`,
      );
    }
    out.push(
      `<text x="${MARGIN.left + plotWidth / 2}" y="${top + PANEL_HEIGHT + 34}" ${FONT} text-anchor="middle">${escapeXml(xLabel)}</text>`,
      `<text transform="translate(16 ${top + PANEL_HEIGHT / 2}) rotate(-90)" ${FONT} text-anchor="middle">${escapeXml(panel.unit)}</text>`,
      `<rect x="${MARGIN.left}" y="${top}" width="${plotWidth}" height="${PANEL_HEIGHT}" fill="none" stroke="#888"/>`,
    );
    for (const series of panel.series) {
      if (series.points.length === 0) continue;
      const path = series.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
      const dash = series.dashed ? ' stroke-dasharray="6 4"' : "";
      out.push(`<polyline points="${path}" fill="none" stroke="${series.color}" stroke-width="2"${dash}/>`);
    }
  });
  const height = legendHeight + panels.length * panelBox;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    ...out,
    "</svg>",
    "",
  ].join("\n");
}
