// A small, dependency-free SVG line chart for the bench report: categorical x (one tick per run
// size), linear y from 0, one polyline per series, a legend. Missing values break the line.

export interface ChartSeries {
  name: string;
  /** One value per x label; undefined or NaN = not measured at that size. */
  values: ReadonlyArray<number | undefined>;
  /** Dashed lines mark baselines, solid lines ours. */
  dashed?: boolean;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  xLabels: readonly string[];
  series: readonly ChartSeries[];
  /** Optional horizontal target line. */
  target?: { value: number; label: string };
}

const WIDTH = 840;
const HEIGHT = 420;
const MARGIN = { left: 70, right: 300, top: 40, bottom: 60 };
const COLOURS = ['#1b6ac9', '#d1495b', '#2a9d8f', '#e9a03b', '#6a4c93', '#4d4d4d', '#8ab17d'];

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A "nice" upper bound for the axis: 1, 2 or 5 × 10^k at or above `max`. */
export function niceCeiling(max: number): number {
  if (!Number.isFinite(max) || max <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= max) return step * magnitude;
  return 10 * magnitude;
}

function measured(value: number | undefined): value is number {
  return value !== undefined && Number.isFinite(value);
}

export function renderLineChart(chart: LineChart): string {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const all = chart.series.flatMap((s) => s.values.filter(measured));
  const yMax = niceCeiling(Math.max(...all, chart.target?.value ?? 0, 0));
  const x = (i: number): number => MARGIN.left + (chart.xLabels.length <= 1 ? plotWidth / 2 : (i * plotWidth) / (chart.xLabels.length - 1));
  const y = (v: number): number => MARGIN.top + plotHeight - (v / yMax) * plotHeight;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(chart.title)}</text>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotHeight}" x2="${MARGIN.left + plotWidth}" y2="${MARGIN.top + plotHeight}" stroke="black"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotHeight}" stroke="black"/>`,
  ];
  for (let tick = 0; tick <= 5; tick++) {
    const value = (yMax * tick) / 5;
    parts.push(`<line x1="${MARGIN.left - 4}" y1="${y(value)}" x2="${MARGIN.left + plotWidth}" y2="${y(value)}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${MARGIN.left - 8}" y="${y(value) + 4}" text-anchor="end">${Number(value.toPrecision(3))}</text>`);
  }
  chart.xLabels.forEach((label, i) => {
    parts.push(`<text x="${x(i)}" y="${MARGIN.top + plotHeight + 18}" text-anchor="middle">${escapeXml(label)}</text>`);
  });
  parts.push(`<text x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 16}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`);
  parts.push(`<text transform="translate(18 ${MARGIN.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${escapeXml(chart.yLabel)}</text>`);
  if (chart.target) {
    const ty = y(chart.target.value);
    parts.push(`<line x1="${MARGIN.left}" y1="${ty}" x2="${MARGIN.left + plotWidth}" y2="${ty}" stroke="#999" stroke-dasharray="2 4"/>`);
    parts.push(`<text x="${MARGIN.left + plotWidth - 4}" y="${ty - 4}" text-anchor="end" fill="#666">${escapeXml(chart.target.label)}</text>`);
  }
  chart.series.forEach((series, index) => {
    const colour = COLOURS[index % COLOURS.length] ?? 'black';
    const dash = series.dashed ? ' stroke-dasharray="6 4"' : '';
    // Consecutive measured points form one polyline; a gap starts a new one.
    let run: string[] = [];
    const flush = (): void => {
      if (run.length > 1) parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="2"${dash} points="${run.join(' ')}"/>`);
      run = [];
    };
    series.values.forEach((value, i) => {
      if (!measured(value)) return flush();
      run.push(`${x(i)},${y(value)}`);
      parts.push(`<circle cx="${x(i)}" cy="${y(value)}" r="3.5" fill="${colour}"><title>${escapeXml(`${series.name}: ${value}`)}</title></circle>`);
    });
    flush();
    const ly = MARGIN.top + 10 + index * 20;
    const lx = MARGIN.left + plotWidth + 16;
    parts.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${colour}" stroke-width="2"${dash}/>`);
    parts.push(`<text x="${lx + 30}" y="${ly + 4}">${escapeXml(series.name)}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
