import type { CommissionPlan } from '../../domain/commission.ts';
import type { getLedgerBalance } from '../../modules/ledger/commission.service.ts';
import type { Payout } from '../../modules/payouts/payout.schema.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { pager, type DashboardSession, type ListPage } from './dashboard-page.ts';
import { formatAmount, formatMinor, formatTime } from './format.ts';
import { noErrors, selectField, textField, type FormErrors, type FormValues } from './forms.ts';
import { payoutBadge, payoutTable } from './tables/payouts-table.ts';

// The payouts pages as pure functions of what they show: what the program owes with the list
// of payouts of one status (and the files to download), and a payout's page with its mark form.

export interface PayoutListView {
  base: string;
  session: DashboardSession;
  currency: string;
  plan: Pick<CommissionPlan, 'holdDays' | 'minimumPayout'>;
  balance: Awaited<ReturnType<typeof getLedgerBalance>>;
  status: string;
  statuses: readonly string[];
  list: ListPage<Payout>;
}

export function payoutListBody(v: PayoutListView): SafeHtml {
  const { base, balance, plan, status, list } = v;
  const payouts = list.items;
  const money = (amount: number) => formatAmount(amount, v.currency);
  return html`
      <div class="page-head"><h1>Payouts</h1>
        <form method="post" action="${base}/payouts/run" class="inline">${csrfField(v.session)}<button type="submit">Run payouts</button></form>
      </div>
      <section class="card" aria-labelledby="owed"><h2 id="owed">What the program owes</h2>
        <dl class="details">
          <dt>In the hold</dt><dd data-stat="pending">${money(balance.pending)} <span class="muted">(${plan.holdDays} days for refunds before a commission can be paid)</span></dd>
          <dt>Due, not in a payout</dt><dd data-stat="due-open">${money(balance.dueOutsidePayouts)} <span class="muted">(the next run pays each affiliate's positive balance of at least ${formatMinor(plan.minimumPayout, v.currency)}; a negative one is carried)</span></dd>
          <dt>In pending payouts</dt><dd data-stat="in-payouts">${money(balance.due - balance.dueOutsidePayouts)}</dd>
          <dt>Paid</dt><dd data-stat="paid">${money(balance.paid)}</dd>
        </dl>
      </section>
      <form class="filters" method="get" action="${base}/payouts">
        ${selectField({ label: 'Status', name: 'status', value: status, options: v.statuses.map((s) => [s, s.charAt(0).toUpperCase() + s.slice(1)]) }, noErrors)}
        <button type="submit" class="secondary">Show</button>
      </form>
      ${status === 'pending' && payouts.length > 0
        ? html`<p>Download the pending payouts to upload:
            <a class="button secondary small" href="${base}/payouts/export?format=paypal" download>PayPal file</a>
            <a class="button secondary small" href="${base}/payouts/export?format=wise" download>Wise file</a>
            <a class="button secondary small" href="${base}/payouts/export?format=csv" download>CSV</a></p>`
        : ''}
      ${payouts.length === 0
        ? html`<div class="empty"><p>No ${status} payouts.</p>${status === 'pending' ? html`<p>"Run payouts" makes one for each affiliate whose due commission (past the hold, refunds taken off) is positive and at least the minimum payout.</p>` : ''}</div>`
        : payoutTable(payouts, base, true)}
      ${pager(list)}`;
}

export interface PayoutView {
  base: string;
  session: DashboardSession;
  payout: Payout;
  /** The mark form, as posted when it failed. */
  values: FormValues;
  errors: FormErrors;
}

export const payoutTitle = (payout: Payout) => `Payout to ${payout.affiliate.firstName} ${payout.affiliate.lastName}`;

export function payoutBody(v: PayoutView): SafeHtml {
  const { base, payout, values, errors } = v;
  return html`
      <div class="page-head"><h1>${payoutTitle(payout)}</h1></div>
      <section class="card" aria-labelledby="payout"><h2 id="payout" class="visually-hidden">Payout</h2>
        <dl class="details">
          <dt>Amount</dt><dd>${formatAmount(payout.amount, payout.currency)} <span class="muted">(${payout.entryCount} commission entries, frozen when it was made)</span></dd>
          <dt>Status</dt><dd>${payoutBadge(payout.status)}</dd>
          <dt>Pay to</dt><dd>${payout.affiliate.payoutEmail} · ${payout.affiliate.paymentMethod}</dd>
          <dt>Made</dt><dd>${formatTime(payout.createdAt)}</dd>
          <dt>Paid</dt><dd>${formatTime(payout.paidAt)}</dd>
          <dt>Method · reference</dt><dd>${[payout.method, payout.reference].filter(Boolean).join(' · ') || '—'}</dd>
          <dt>Id</dt><dd><code>${payout.id}</code></dd>
        </dl>
      </section>
      ${payout.status === 'pending'
        ? html`<section class="card" aria-labelledby="mark"><h2 id="mark">Mark it</h2>
            <p class="muted">Paid is final and pays its entries. Failed (a bounced payment) makes its commission due again for the next run.</p>
            <form method="post" action="${base}/payouts/${payout.id}" novalidate>
              ${csrfField(v.session)}
              <div class="form-grid">
                ${selectField({ label: 'Outcome', name: 'status', value: values.status ?? 'paid', options: [['paid', 'Paid'], ['failed', 'Failed']] }, errors)}
                ${textField({ label: 'Paid at (UTC)', name: 'paidAt', type: 'datetime-local', value: values.paidAt, help: 'Empty: now. Only for paid.' }, errors)}
                ${textField({ label: 'Method', name: 'method', value: values.method ?? payout.affiliate.paymentMethod, help: 'PayPal, Wise, bank transfer…', autocomplete: 'off' }, errors)}
                ${textField({ label: 'Reference', name: 'reference', value: values.reference, help: "The payment's id in that system.", autocomplete: 'off' }, errors)}
              </div>
              <div class="actions"><button type="submit">Save</button></div>
            </form>
          </section>`
        : ''}
      <p><a href="${base}/payouts?status=${payout.status}">← All ${payout.status} payouts</a> · <a href="${base}/affiliates/${payout.affiliateId}">${payout.affiliate.firstName} ${payout.affiliate.lastName}</a></p>`;
}
