import { fromMinorUnits } from '../../domain/money.ts';
import type { DailyActivity } from '../../modules/reports/overview.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { formatCount, formatMinor } from './format.ts';

// Daily revenue and commission as an inline SVG bar chart, clicks as a line on their own
// scale (right axis): no script, nothing from a CDN, colours from the stylesheet (the CSP
// allows no inline styles). Screen readers get the chart's summary as its accessible name and
// a table of the days with sales or clicks.

const WIDTH = 720;
const HEIGHT = 240;
const PAD = { top: 12, right: 40, bottom: 26, left: 64 };
const GRID_LINES = 4;

/** The smallest 1, 2, 2.5 or 5 × 10ⁿ at or above the value: a step the axis can read in. */
function niceStep(value: number, steps = [1, 2, 2.5, 5, 10]): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of steps) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/** A whole-number step for counts (1, 2, 5, 10, 20…): no "2.5 clicks" on the axis. */
const countStep = (value: number) => Math.max(1, niceStep(value, [1, 2, 5, 10]));

const dayLabel = new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
const labelOfDay = (day: string) => dayLabel.format(new Date(`${day}T00:00:00Z`));

function compactAmount(amount: number, currency: string): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency, notation: 'compact', minimumFractionDigits: 0, maximumFractionDigits: 2 }).format(amount);
}

export function renderSalesChart(days: DailyActivity[], currency: string): SafeHtml {
  const totals = days.reduce((t, d) => ({ count: t.count + d.count, revenue: t.revenue + d.revenue, commission: t.commission + d.commission, clicks: t.clicks + d.clicks }), { count: 0, revenue: 0, commission: 0, clicks: 0 });
  const withSales = days.filter((d) => d.count > 0);
  const listed = days.filter((d) => d.count > 0 || d.clicks > 0);
  const best = withSales.reduce<DailyActivity | undefined>((b, d) => (b === undefined || d.revenue > b.revenue ? d : b), undefined);
  const first = days[0]?.day ?? '';
  const last = days[days.length - 1]?.day ?? '';
  const summary = totals.count === 0
    ? `No sales from ${labelOfDay(first)} to ${labelOfDay(last)}.`
    : `${formatCount(totals.count)} sales from ${labelOfDay(first)} to ${labelOfDay(last)}: revenue ${formatMinor(totals.revenue, currency)}, commission ${formatMinor(totals.commission, currency)}.` +
      (best ? ` Best day ${labelOfDay(best.day)} with ${formatMinor(best.revenue, currency)}.` : '');
  const clicksSummary = totals.clicks === 0 ? 'No clicks.' : `${formatCount(totals.clicks)} ${totals.clicks === 1 ? 'click' : 'clicks'}.`;

  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const step = niceStep(fromMinorUnits(Math.max(0, ...days.map((d) => d.revenue)), currency) / GRID_LINES);
  const top = step * GRID_LINES;
  const y = (minor: number) => PAD.top + plotHeight - (fromMinorUnits(minor, currency) / top) * plotHeight;
  const slot = plotWidth / Math.max(1, days.length);
  const labelEvery = days.length > 45 ? 15 : 7;
  const round = (n: number) => Math.round(n * 10) / 10;
  const clickStep = countStep(Math.max(0, ...days.map((d) => d.clicks)) / GRID_LINES);
  const clickY = (clicks: number) => round(PAD.top + plotHeight - (clicks / (clickStep * GRID_LINES)) * plotHeight);

  const grid = Array.from({ length: GRID_LINES + 1 }, (_, i) => {
    const value = step * i;
    const lineY = round(PAD.top + plotHeight - (plotHeight / GRID_LINES) * i);
    return html`<line class="grid-line" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${lineY}" y2="${lineY}"/><text class="axis-label" x="${PAD.left - 6}" y="${lineY + 4}" text-anchor="end">${compactAmount(value, currency)}</text>${totals.clicks > 0
      ? html`<text class="axis-label axis-clicks" x="${WIDTH - PAD.right + 6}" y="${lineY + 4}" text-anchor="start">${formatCount(clickStep * i)}</text>`
      : ''}`;
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

  // Clicks: a line through every day of the window (zero included), a dot on days with clicks.
  const centre = (i: number) => round(PAD.left + i * slot + slot / 2);
  const clickLine = totals.clicks === 0
    ? ''
    : html`<polyline class="line-clicks" points="${days.map((d, i) => `${centre(i)},${clickY(d.clicks)}`).join(' ')}"/>
      ${days.map((d, i) => (d.clicks > 0 ? html`<circle class="point-clicks" cx="${centre(i)}" cy="${clickY(d.clicks)}" r="3"><title>${labelOfDay(d.day)}: ${formatCount(d.clicks)} ${d.clicks === 1 ? 'click' : 'clicks'}</title></circle>` : ''))}`;

  return html`<figure class="chart">
    <div class="legend" aria-hidden="true"><span class="revenue">Revenue</span><span class="commission">Commission</span><span class="clicks">Clicks (right axis)</span></div>
    <div class="chart-scroll" tabindex="0" role="region" aria-label="Chart, scrolls sideways"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-title chart-desc" focusable="false">
      <title id="chart-title">Daily revenue, commission and clicks</title>
      <desc id="chart-desc">${summary} ${clicksSummary}</desc>
      ${grid}
      ${bars}
      ${clickLine}
    </svg></div>
    <figcaption class="muted">${summary} ${clicksSummary} Days are UTC.</figcaption>
    ${listed.length > 0
      ? html`<details><summary>Daily figures</summary>
          <div class="table-wrap" role="region" aria-label="Days with sales or clicks" tabindex="0"><table>
            <caption class="visually-hidden">Sales, revenue, commission and clicks per day with sales or clicks</caption>
            <thead><tr><th scope="col">Day (UTC)</th><th scope="col" class="num">Sales</th><th scope="col" class="num">Revenue</th><th scope="col" class="num">Commission</th><th scope="col" class="num">Clicks</th></tr></thead>
            <tbody>${listed.map((d) => html`<tr><th scope="row">${d.day}</th><td class="num">${formatCount(d.count)}</td><td class="num">${formatMinor(d.revenue, currency)}</td><td class="num">${formatMinor(d.commission, currency)}</td><td class="num">${formatCount(d.clicks)}</td></tr>`)}</tbody>
          </table></div>
          <p class="muted">Days not listed had no sales and no clicks.</p>
        </details>`
      : ''}
  </figure>`;
}
