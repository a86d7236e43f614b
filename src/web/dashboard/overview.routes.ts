import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { getDailyActivity, getProgramTotals } from '../../modules/reports/overview.service.ts';
import { html } from '../html.ts';
import { currentProgram, doneFlash, sendPage } from './dashboard-page.ts';
import { formatConversion, formatCount, formatMinor } from './format.ts';
import { readQuery } from './forms.ts';
import { renderSalesChart } from './sales-chart.ts';
import { renderChecklist } from './checklist.ts';
import { getStartChecklist } from '../../modules/reports/getting-started.service.ts';

const PERIODS = [30, 90] as const;

export const overviewRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock, config }) => {
  app.get('/', async (request, reply) => {
    const { program, context, base } = currentProgram(request);
    const days = PERIODS.find((p) => String(p) === readQuery(request).days) ?? 30;
    const [totals, daily] = await Promise.all([getProgramTotals(db, context), getDailyActivity(db, context, days, clock())]);
    const checklist = await getStartChecklist(db, context, totals);
    const stat = (key: string, label: string, value: string, href?: string) =>
      html`<div class="stat"><div class="label">${href ? html`<a href="${href}">${label}</a>` : label}</div><div class="value" data-stat="${key}">${value}</div></div>`;

    const body = html`
      <div class="page-head"><h1>${program.name}</h1><span class="muted">${program.domain} · ${program.currency}</span></div>
      ${renderChecklist(checklist, base, config.siteUrl)}
      <section aria-labelledby="all-time-heading">
        <h2 id="all-time-heading">All time</h2>
        <div class="grid totals">
          ${stat('affiliates', 'Affiliates', formatCount(totals.affiliates), `${base}/affiliates`)}
          ${stat('clicks', 'Clicks', formatCount(totals.clicks))}
          ${stat('referrals', 'Referrals', formatCount(totals.referrals), `${base}/referrals`)}
          ${stat('conversion', 'Conversion (referrals ÷ clicks)', formatConversion(totals.referrals, totals.clicks))}
          ${stat('sales', 'Sales', formatCount(totals.sales.count), `${base}/sales`)}
          ${stat('revenue', 'Revenue (after refunds)', formatMinor(totals.sales.revenue, program.currency))}
          ${stat('commission', 'Commission (after refunds)', formatMinor(totals.sales.commission, program.currency))}
        </div>
      </section>
      <section class="card" aria-labelledby="chart-heading">
        <div class="page-head">
          <h2 id="chart-heading">Sales, commission and clicks, last ${days} days</h2>
          <nav class="segmented" aria-label="Period">${PERIODS.map((p) => html`<a href="${base}?days=${p}"${p === days ? html` aria-current="true"` : ''}>${p} days</a>`)}</nav>
        </div>
        ${renderSalesChart(daily, program.currency)}
      </section>`;
    return sendPage(db, request, reply, {
      title: 'Overview',
      active: 'overview',
      body,
      flash: doneFlash(request, { 'program-created': 'Program created. Next: add affiliates, or create an API key so your site can record referrals and sales.' }),
    });
  });
};
