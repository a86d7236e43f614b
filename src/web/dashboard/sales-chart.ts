import { fromMinorUnits } from '../../domain/money.ts';
import type { DailySales } from '../../modules/sales/sale.repository.ts';
import { html, type SafeHtml } from '../html.ts';
import { formatCount, formatMinor } from './format.ts';

// Daily revenue and commission as an inline SVG bar chart: no script, nothing from a CDN,
// colours from the stylesheet (the CSP allows no inline styles). Screen readers get the
// chart's summary as its accessible name and a table of the days with sales.

const WIDTH = 720;
const HEIGHT = 240;
const PAD = { top: 12, right: 8, bottom: 26, left: 64 };
const GRID_LINES = 4;

/** The smallest 1, 2, 2.5 or 5 × 10ⁿ at or above the value: a step the axis can read in. */
function niceStep(value: number): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

const dayLabel = new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
const labelOfDay = (day: string) => dayLabel.format(new Date(`${day}T00:00:00Z`));

function compactAmount(amount: number, currency: string): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency, notation: 'compact', minimumFractionDigits: 0, maximumFractionDigits: 2 }).format(amount);
}

export function renderSalesChart(days: DailySales[], currency: string): SafeHtml {
  const totals = days.reduce((t, d) => ({ count: t.count + d.count, revenue: t.revenue + d.revenue, commission: t.commission + d.commission }), { count: 0, revenue: 0, commission: 0 });
  const withSales = days.filter((d) => d.count > 0);
  const best = withSales.reduce<DailySales | undefined>((b, d) => (b === undefined || d.revenue > b.revenue ? d : b), undefined);
  const first = days[0]?.day ?? '';
  const last = days[days.length - 1]?.day ?? '';
  const summary = totals.count === 0
    ? `No sales from ${labelOfDay(first)} to ${labelOfDay(last)}.`
    : `${formatCount(totals.count)} sales from ${labelOfDay(first)} to ${labelOfDay(last)}: revenue ${formatMinor(totals.revenue, currency)}, commission ${formatMinor(totals.commission, currency)}.` +
      (best ? ` Best day ${labelOfDay(best.day)} with ${formatMinor(best.revenue, currency)}.` : '');

  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const step = niceStep(fromMinorUnits(Math.max(0, ...days.map((d) => d.revenue)), currency) / GRID_LINES);
  const top = step * GRID_LINES;
  const y = (minor: number) => PAD.top + plotHeight - (fromMinorUnits(minor, currency) / top) * plotHeight;
  const slot = plotWidth / Math.max(1, days.length);
  const labelEvery = days.length > 45 ? 15 : 7;
  const round = (n: number) => Math.round(n * 10) / 10;

  const grid = Array.from({ length: GRID_LINES + 1 }, (_, i) => {
    const value = step * i;
    const lineY = round(PAD.top + plotHeight - (plotHeight / GRID_LINES) * i);
    return html`<line class="grid-line" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${lineY}" y2="${lineY}"/><text class="axis-label" x="${PAD.left - 6}" y="${lineY + 4}" text-anchor="end">${compactAmount(value, currency)}</text>`;
  });

  const bars = days.map((d, i) => {
    const x = PAD.left + i * slot;
    // Counted back from today, so the newest day always has its label and none overlap.
    const label = (days.length - 1 - i) % labelEvery === 0
      ? html`<text class="axis-label" x="${round(x + slot / 2)}" y="${HEIGHT - 8}" text-anchor="${i === days.length - 1 ? 'end' : 'middle'}">${labelOfDay(d.day)}</text>`
      : '';
    if (d.count === 0) return label;
    const revenueTop = round(y(d.revenue));
    const commissionTop = round(y(d.commission));
    const base = PAD.top + plotHeight;
    return html`<g><title>${labelOfDay(d.day)}: revenue ${formatMinor(d.revenue, currency)}, commission ${formatMinor(d.commission, currency)}</title>
      <rect class="bar-revenue" x="${round(x + slot * 0.1)}" y="${revenueTop}" width="${round(slot * 0.8)}" height="${round(Math.max(1, base - revenueTop))}"/>
      ${d.commission > 0 ? html`<rect class="bar-commission" x="${round(x + slot * 0.25)}" y="${commissionTop}" width="${round(slot * 0.5)}" height="${round(Math.max(1, base - commissionTop))}"/>` : ''}
    </g>${label}`;
  });

  return html`<figure class="chart">
    <div class="legend" aria-hidden="true"><span class="revenue">Revenue</span><span class="commission">Commission</span></div>
    <div class="chart-scroll"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-title chart-desc" focusable="false">
      <title id="chart-title">Daily revenue and commission</title>
      <desc id="chart-desc">${summary}</desc>
      ${grid}
      ${bars}
    </svg></div>
    <figcaption class="muted">${summary} Days are UTC.</figcaption>
    ${withSales.length > 0
      ? html`<details><summary>Daily figures</summary>
          <div class="table-wrap"><table>
            <caption class="visually-hidden">Revenue and commission per day with sales</caption>
            <thead><tr><th scope="col">Day (UTC)</th><th scope="col" class="num">Sales</th><th scope="col" class="num">Revenue</th><th scope="col" class="num">Commission</th></tr></thead>
            <tbody>${withSales.map((d) => html`<tr><th scope="row">${d.day}</th><td class="num">${formatCount(d.count)}</td><td class="num">${formatMinor(d.revenue, currency)}</td><td class="num">${formatMinor(d.commission, currency)}</td></tr>`)}</tbody>
          </table></div>
          <p class="muted">Days not listed had no sales.</p>
        </details>`
      : ''}
  </figure>`;
}
