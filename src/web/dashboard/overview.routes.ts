import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { getDailyActivity, getProgramTotals } from '../../modules/reports/overview.service.ts';
import { html } from '../html.ts';
import { currentProgram, doneFlash, sendPage } from './dashboard-page.ts';
import { formatConversion, formatCount, formatMinor } from './format.ts';
import { readQuery } from './forms.ts';
import { renderSalesChart } from './sales-chart.ts';

const PERIODS = [30, 90] as const;

export const overviewRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock }) => {
  app.get('/', async (request, reply) => {
    const { program, context, base } = currentProgram(request);
    const days = PERIODS.find((p) => String(p) === readQuery(request).days) ?? 30;
    const [totals, daily] = await Promise.all([getProgramTotals(db, context), getDailyActivity(db, context, days, clock())]);
    const stat = (key: string, label: string, value: string, href?: string) =>
      html`<div class="stat"><div class="label">${href ? html`<a href="${href}">${label}</a>` : label}</div><div class="value" data-stat="${key}">${value}</div></div>`;

    const body = html`
      <div class="page-head"><h1>${program.name}</h1><span class="muted">${program.domain} · ${program.currency}</span></div>
      <section aria-label="Totals" class="grid totals">
        ${stat('affiliates', 'Affiliates', formatCount(totals.affiliates), `${base}/affiliates`)}
        ${stat('clicks', 'Clicks', formatCount(totals.clicks))}
        ${stat('referrals', 'Referrals', formatCount(totals.referrals), `${base}/referrals`)}
        ${stat('conversion', 'Conversion (referrals ÷ clicks)', formatConversion(totals.referrals, totals.clicks))}
        ${stat('sales', 'Sales', formatCount(totals.sales.count), `${base}/sales`)}
        ${stat('revenue', 'Revenue', formatMinor(totals.sales.revenue, program.currency))}
        ${stat('commission', 'Commission', formatMinor(totals.sales.commission, program.currency))}
      </section>
      ${totals.affiliates === 0
        ? html`<section class="card" aria-labelledby="next-steps"><h2 id="next-steps">Get started</h2><ol>
            <li><a href="${base}/affiliates/new">Add your first affiliate</a>: they get a link such as <code>https://${program.domain}/?${program.referralParam}=jane</code>.</li>
            <li><a href="${base}/settings#tracking">Add the tracking script</a> to your site: it counts clicks on affiliate links and remembers who referred each visitor.</li>
            <li><a href="${base}/keys">Create an API key</a> so your site records referrals and sales, or <a href="${base}/apps">connect Zapier, n8n or Make</a>.</li>
            <li>Optionally, <a href="${base}/coupons">create a coupon</a> and give affiliates their own promotional codes.</li>
          </ol></section>`
        : ''}
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
