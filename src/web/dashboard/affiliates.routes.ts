import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { assertValidBody } from '../../http/validation.ts';
import { CreateAffiliateBody, UpdateAffiliateBody, type Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import { countAffiliatesMatching, createAffiliate, getAffiliatePage, getAffiliateProfile, getApprovalQueue, updateAffiliate, type AffiliateListFilter } from '../../modules/affiliates/affiliate.service.ts';
import { AFFILIATES_CSV_ROWS, exportAffiliatesCsv } from '../../modules/affiliates/affiliate-export.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { millionthsToRate } from '../../domain/commission.ts';
import { CreateLinkBody } from '../../modules/affiliates/link.schema.ts';
import { createLink, getAffiliateLinks } from '../../modules/affiliates/link.service.ts';
import { getPromotionalCodePage } from '../../modules/coupons/promotional-code.service.ts';
import { getReferralPage } from '../../modules/referrals/referral.service.ts';
import { getSalePage } from '../../modules/sales/sale.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { getLedgerBalance } from '../../modules/ledger/commission.service.ts';
import { getPayoutPage } from '../../modules/payouts/payout.service.ts';
import { payoutTable } from './payouts.routes.ts';
import { csrfField, postButton } from '../layout.ts';
import { currentProgram, doneFlash, listPage, pager, redirectDone, requestedPage, sendPage, type DashboardProgram } from './dashboard-page.ts';
import { formatAmount, formatConversion, formatCount, formatRate, formatTime, statusBadge } from './format.ts';
import { apiBody, formErrorsOf, noErrors, optionalNumber, optionalText, readForm, readQuery, selectField, textField, type FormErrors, type FormValues, errorFlash } from './forms.ts';
import { affiliateChoices, choiceLabel } from './affiliate-field.ts';
import { referralTable } from './referrals.routes.ts';
import { saleTable } from './sales.routes.ts';

// Affiliates: search and list, create, the detail page (links, referrals, sales, codes), edit,
// deactivate. Creating goes through createAffiliate, as POST /api/v1/affiliates does, so the
// affiliate gets its link and the affiliate.created event.

const RECENT = 20;

const DONE = {
  created: 'Affiliate created. Share their link, or give them a promotional code.',
  updated: 'Changes saved.',
  deactivated: 'Affiliate deactivated.',
  activated: 'Affiliate reactivated.',
  'link-created': 'Link added.',
  approved: 'Sign-up approved: the affiliate is active and has been e-mailed their link.',
  rejected: 'Sign-up rejected: the affiliate stays inactive.',
};

/** How many waiting sign-ups the queue shows at once (oldest first). */
const QUEUE_SHOWN = 50;

/** Affiliates as a table, the key columns first (they stay in view on a phone). */
function affiliateRows(affiliates: Affiliate[], base: string, currency: string): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Affiliates" tabindex="0"><table>
    <thead><tr><th scope="col">Name</th><th scope="col" class="num">Commission earned</th><th scope="col">Status</th><th scope="col" class="num">Referrals</th><th scope="col">Link</th><th scope="col">E-mail</th><th scope="col">Joined</th></tr></thead>
    <tbody>${affiliates.map(
      (a) => html`<tr>
        <td><a href="${base}/affiliates/${a.id}">${a.firstName} ${a.lastName}</a></td>
        <td class="num">${formatAmount(a.totalCommissionEarned, currency)}</td>
        <td>${statusBadge(a.status === 'active')}</td>
        <td class="num">${a.numberOfReferredUsers}</td>
        <td><code>${a.link}</code></td><td>${a.email}</td>
        <td>${formatTime(a.createdAt)}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}

const SORTS: Record<string, [label: string, order: PageOrder]> = {
  newest: ['Newest first', { column: 'created_at', direction: 'desc' }],
  oldest: ['Oldest first', { column: 'created_at', direction: 'asc' }],
  'commission-desc': ['Commission earned, highest first', { column: 'total_commission_earned', direction: 'desc' }],
};

/** The list's filters from the query string: search text, status, order. */
function readAffiliateList(request: FastifyRequest) {
  const query = readQuery(request);
  const q = (query.q ?? '').trim().slice(0, 200);
  const status = query.status === 'active' || query.status === 'inactive' ? query.status : undefined;
  const sort = query.sort !== undefined && query.sort in SORTS ? query.sort : 'newest';
  const filter: AffiliateListFilter = { ...(q ? { search: q } : {}), ...(status ? { status } : {}) };
  return { q, status, sort, order: SORTS[sort]![1], filter, values: { q: q || undefined, status, sort: sort === 'newest' ? undefined : sort } };
}

function createFields(values: FormValues, errors: FormErrors, defaultRate: number): SafeHtml {
  return html`<div class="form-grid">
    ${textField({ label: 'First name', name: 'firstName', value: values.firstName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Last name', name: 'lastName', value: values.lastName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Commission rate (%)', name: 'commissionRate', type: 'number', value: values.commissionRate, help: `Empty: the program's default, ${formatRate(defaultRate)}.`, attrs: html`min="0" max="100" step="any" inputmode="decimal"` }, errors)}
    ${textField({ label: 'Link', name: 'affiliateLink', value: values.affiliateLink, help: 'Optional: letters, digits and hyphens, such as jane. Empty: generated from the first name.', autocomplete: 'off' }, errors)}
    ${textField({ label: 'Payout e-mail', name: 'payoutEmail', type: 'email', value: values.payoutEmail, help: 'Empty: the e-mail above.', autocomplete: 'off' }, errors)}
    ${textField({ label: 'Payment method', name: 'paymentMethod', value: values.paymentMethod, help: 'Such as paypal or bank transfer. Empty: none yet.', autocomplete: 'off' }, errors)}
  </div>`;
}

function editFields(values: FormValues, errors: FormErrors, defaultRate: number): SafeHtml {
  return html`<div class="form-grid">
    ${textField({ label: 'First name', name: 'firstName', value: values.firstName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Last name', name: 'lastName', value: values.lastName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Commission rate (%)', name: 'commissionRate', type: 'number', value: values.commissionRate, help: `Empty: the program's default, ${formatRate(defaultRate)}.`, attrs: html`min="0" max="100" step="any" inputmode="decimal"` }, errors)}
    ${textField({ label: 'Payout e-mail', name: 'payoutEmail', type: 'email', value: values.payoutEmail, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Payment method', name: 'paymentMethod', value: values.paymentMethod, required: true, autocomplete: 'off' }, errors)}
    ${selectField({ label: 'Status', name: 'status', value: values.status, options: [['active', 'Active'], ['inactive', 'Inactive']], help: 'Inactive affiliates keep their history.' }, errors)}
  </div>`;
}

/** The form's text as the API's create body; the schema then checks it as the API would. */
function createBodyOf(form: FormValues): CreateAffiliateBody {
  const body = {
    firstName: form.firstName ?? '',
    lastName: form.lastName ?? '',
    email: form.email ?? '',
    commissionRate: optionalNumber(form.commissionRate),
    affiliateLink: optionalText(form.affiliateLink),
    payoutEmail: optionalText(form.payoutEmail),
    paymentMethod: optionalText(form.paymentMethod),
  };
  return apiBody(CreateAffiliateBody, body);
}

/** The edit form as UpdateAffiliateBody, checked against its schema (as the API's route does). */
function updateBodyOf(form: FormValues): UpdateAffiliateBody {
  // Unparseable text is passed on as is, so the schema check names the field.
  const rate = (optionalNumber(form.commissionRate) ?? null) as number | null;
  const body = {
    firstName: form.firstName ?? '',
    lastName: form.lastName ?? '',
    commissionRate: rate,
    payoutEmail: form.payoutEmail ?? '',
    paymentMethod: form.paymentMethod ?? '',
    status: form.status ?? '',
  };
  assertValidBody(UpdateAffiliateBody, body);
  return body;
}

export const affiliateRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  const defaultRate = (p: DashboardProgram) => millionthsToRate(p.context.defaultCommissionRate);

  app.get('/affiliates', async (request, reply) => {
    const { context, base, program } = currentProgram(request);
    const { q, status, sort, order, filter, values } = readAffiliateList(request);
    const page = requestedPage(request, order);
    const [found, count] = await Promise.all([getAffiliatePage(db, context, page, filter), countAffiliatesMatching(db, context, filter)]);
    const list = listPage(found, page, `${base}/affiliates`, values);
    const filtered = q !== '' || status !== undefined;
    const qs = new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    const queue = await getApprovalQueue(db, context, QUEUE_SHOWN);
    const body = html`
      <div class="page-head"><h1>Affiliates</h1><a class="button" href="${base}/affiliates/new">New affiliate</a></div>
      ${queue.count > 0
        ? html`<section class="card" aria-labelledby="approval-queue">
            <h2 id="approval-queue">Waiting for approval <span class="badge" data-stat="pending-signups">${queue.count}</span></h2>
            <p class="muted">Sign-ups from your portal. Approving makes the affiliate active and e-mails them their link.${queue.count > QUEUE_SHOWN ? ` The oldest ${QUEUE_SHOWN} are shown.` : ''}</p>
            <div class="table-wrap" role="region" aria-label="Waiting for approval" tabindex="0"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">E-mail</th><th scope="col">Signed up</th><th scope="col"><span class="visually-hidden">Decision</span></th></tr></thead>
              <tbody>${queue.signUps.map(
                (a) => html`<tr>
                  <td><a href="${base}/affiliates/${a.id}">${a.firstName} ${a.lastName}</a></td>
                  <td>${a.email}</td>
                  <td>${formatTime(a.createdAt)}</td>
                  <td>${postButton(request.session!, `${base}/affiliates/${a.id}/approval`, 'Approve', { className: 'small', ariaLabel: `Approve ${a.firstName} ${a.lastName}`, fields: html`<input type="hidden" name="approval" value="approved">` })}
                    ${postButton(request.session!, `${base}/affiliates/${a.id}/approval`, 'Reject', { className: 'danger small', ariaLabel: `Reject ${a.firstName} ${a.lastName}`, fields: html`<input type="hidden" name="approval" value="rejected">` })}</td>
                </tr>`,
              )}</tbody>
            </table></div>
          </section>`
        : ''}
      <form class="filters" method="get" action="${base}/affiliates" role="search" aria-label="Filter affiliates">
        ${textField({ label: 'Name or e-mail', name: 'q', type: 'search', value: q }, noErrors)}
        ${selectField({ label: 'Status', name: 'status', value: status ?? '', options: [['', 'Any'], ['active', 'Active'], ['inactive', 'Inactive']] }, noErrors)}
        ${selectField({ label: 'Sort by', name: 'sort', value: sort, options: Object.entries(SORTS).map(([value, [label]]) => [value, label]) }, noErrors)}
        <button type="submit" class="secondary">Apply</button>
        ${filtered || sort !== 'newest' ? html`<a href="${base}/affiliates">Show all</a>` : ''}
      </form>
      ${count > 0
        ? html`<p class="totals"><strong>${formatCount(count)} affiliate${count === 1 ? '' : 's'}</strong>${filtered ? ' match these filters' : ''} · <a href="${base}/affiliates.csv${qs ? `?${qs}` : ''}" download>Download CSV${count > AFFILIATES_CSV_ROWS ? ` (the first ${formatCount(AFFILIATES_CSV_ROWS)})` : ''}</a></p>`
        : ''}
      ${list.items.length === 0
        ? html`<div class="empty">${filtered
            ? html`<p>No affiliate matches these filters.</p>`
            : html`<p><strong>No affiliates yet.</strong></p>
                <p>Affiliates promote ${program.name} with their own link and earn a commission on the sales they bring.
                <a href="${base}/affiliates/new">Add the first one</a>, or let your site sign them up with <code>POST /api/v1/affiliates</code>.</p>`}</div>`
        : affiliateRows(list.items, base, program.currency)}
      ${pager(list)}`;
    return sendPage(db, request, reply, { title: 'Affiliates', active: 'affiliates', body, flash: doneFlash(request, DONE) });
  });

  // The list as CSV (what the filters show, in their order; formula-safe cells).
  app.get('/affiliates.csv', async (request, reply) => {
    const { context } = currentProgram(request);
    const { order, filter } = readAffiliateList(request);
    const csv = await exportAffiliatesCsv(db, context, filter, order);
    return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="affiliates-${context.clock().toISOString().slice(0, 10)}.csv"`).send(csv);
  });

  function newPage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
    const dashboard = currentProgram(request);
    const body = html`
      <div class="page-head"><h1>New affiliate</h1></div>
      <form class="card" method="post" action="${dashboard.base}/affiliates" novalidate>
        ${csrfField(request.session!)}
        ${createFields(values, errors, defaultRate(dashboard))}
        <div class="actions"><button type="submit">Create affiliate</button> <a href="${dashboard.base}/affiliates">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, {
      title: 'New affiliate',
      active: 'affiliates',
      body,
      status: errors.status,
      flash: errorFlash(errors),
    });
  }

  // The suggestions of an affiliate field as a name is typed (dashboard.js, affiliate-field.ts):
  // up to 50 active affiliates whose name or e-mail contains q, newest first.
  app.get('/affiliates/choices', async (request, reply) => {
    const { context } = currentProgram(request);
    const { rows } = await affiliateChoices(db, context, readQuery(request).q);
    return reply.header('cache-control', 'no-store').send(rows.map((a) => ({ value: a.email, label: choiceLabel(a) })));
  });

  app.get('/affiliates/new', (request, reply) => newPage(request, reply));

  app.post('/affiliates', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    try {
      const affiliate = await createAffiliate(db, context, createBodyOf(form));
      return redirectDone(reply, `${base}/affiliates/${affiliate.id}`, 'created');
    } catch (error) {
      return newPage(request, reply, form, formErrorsOf(error));
    }
  });

  async function detailPage(request: FastifyRequest, reply: FastifyReply, linkValue = '', linkErrors: FormErrors = noErrors) {
    const { context, base, program } = currentProgram(request);
    const { affiliateId } = request.params as { affiliateId: string };
    const affiliate = await getAffiliateProfile(db, context, affiliateId);
    const [links, referrals, sales, codes, balance, payouts] = await Promise.all([
      getAffiliateLinks(db, context, affiliate),
      getReferralPage(db, context, { affiliateId }, { limit: RECENT }),
      getSalePage(db, context, { affiliateId }, { limit: RECENT }),
      getPromotionalCodePage(db, context, { affiliateId }, { limit: RECENT }),
      getLedgerBalance(db, context, affiliateId),
      getPayoutPage(db, context, { affiliateId }, { limit: RECENT }),
    ]);
    const money = (amount: number) => formatAmount(amount, program.currency);
    const name = `${affiliate.firstName} ${affiliate.lastName}`;
    const active = affiliate.status === 'active';
    const more = (page: { next?: unknown }, href: string, label: string) => (page.next !== undefined ? html`<p><a href="${href}">${label}</a></p>` : '');

    const body = html`
      <div class="page-head">
        <h1>${name}</h1>
        <div class="actions">
          <a class="button secondary" href="${base}/affiliates/${affiliate.id}/edit">Edit</a>
          <form method="post" action="${base}/affiliates/${affiliate.id}/status" class="inline"${active ? html` data-confirm="Deactivate ${affiliate.firstName} ${affiliate.lastName}? Their links and codes stop crediting them."` : ''}>
            ${csrfField(request.session!)}<input type="hidden" name="status" value="${active ? 'inactive' : 'active'}">
            <button type="submit" class="${active ? 'danger' : 'secondary'}">${active ? 'Deactivate' : 'Reactivate'}</button>
          </form>
        </div>
      </div>
      <section class="card" aria-labelledby="profile"><h2 id="profile" class="visually-hidden">Profile</h2>
        <dl class="details">
          <dt>Status</dt><dd>${statusBadge(active)}</dd>
          <dt>E-mail</dt><dd>${affiliate.email}</dd>
          <dt>Commission rate</dt><dd>${formatRate(affiliate.commissionRate)}${affiliate.ownCommissionRate === null ? html` <span class="muted">(program default)</span>` : ''}</dd>
          <dt>Commission earned</dt><dd data-stat="earned">${money(affiliate.totalCommissionEarned)} <span class="muted">(all time, net of refunds)</span></dd>
          <dt>Clicks</dt><dd data-stat="clicks">${formatCount(affiliate.numberOfClicks)}</dd>
          <dt>Referred customers</dt><dd data-stat="referrals">${formatCount(affiliate.numberOfReferredUsers)}</dd>
          <dt>Conversion rate</dt><dd><span data-stat="conversion">${formatConversion(affiliate.numberOfReferredUsers, affiliate.numberOfClicks)}</span> <span class="muted">(referred customers ÷ clicks)</span></dd>
          <dt>Payout</dt><dd>${affiliate.payoutEmail} · ${affiliate.paymentMethod}</dd>
          <dt>Joined</dt><dd>${formatTime(affiliate.createdAt)}</dd>
          <dt>Id</dt><dd><code>${affiliate.id}</code></dd>
        </dl>
      </section>

      <section class="card" aria-labelledby="balance"><h2 id="balance">Commission balance</h2>
        <dl class="details">
          <dt>In the hold</dt><dd data-stat="pending">${money(balance.pending)}</dd>
          <dt>Due</dt><dd data-stat="due">${money(balance.due)}${balance.due !== balance.dueOutsidePayouts ? html` <span class="muted">(${money(balance.due - balance.dueOutsidePayouts)} in a pending payout)</span>` : ''}</dd>
          <dt>Paid</dt><dd data-stat="paid">${money(balance.paid)}</dd>
          ${balance.dueOutsidePayouts < 0 ? html`<dt>Negative balance carried</dt><dd data-stat="carried">${money(balance.dueOutsidePayouts)} <span class="muted">(refunds after payment; taken off the next payout)</span></dd>` : ''}
        </dl>
        <p><a href="${base}/payouts">Payouts →</a></p>
      </section>

      <h2 id="links">Links</h2>
      <div class="table-wrap" role="region" aria-label="Links" tabindex="0"><table aria-labelledby="links">
        <thead><tr><th scope="col">Link</th><th scope="col">URL</th><th scope="col" class="num">Clicks</th><th scope="col" class="num">Referrals</th><th scope="col" class="num">Sales</th><th scope="col" class="num">Revenue</th></tr></thead>
        <tbody>${links.map(
          (l) => html`<tr><td><code>${l.link}</code>${l.link === affiliate.link ? html` <span class="badge">own link</span>` : ''}</td>
            <td>${l.fullURLs.map((u) => html`<a href="${u.fullUrl}" rel="noreferrer">${u.fullUrl}</a><br>`)}</td>
            <td class="num">${formatCount(l.clicks)}</td><td class="num">${l.referrals}</td><td class="num">${l.sales}</td><td class="num">${formatAmount(l.totalRevenue, program.currency)}</td></tr>`,
        )}</tbody>
      </table></div>
      <form class="filters" method="post" action="${base}/affiliates/${affiliate.id}/links" novalidate>
        ${csrfField(request.session!)}
        ${textField({ label: 'Another link', name: 'link', value: linkValue, help: 'Letters, digits and hyphens. Empty: generated.', autocomplete: 'off' }, linkErrors)}
        <button type="submit" class="secondary">Add link</button>
      </form>

      <h2>Referrals</h2>
      ${referrals.items.length === 0 ? html`<p class="empty">No referred customers yet.</p>` : referralTable(referrals.items, null, base)}
      ${more(referrals, `${base}/referrals?affiliate=${affiliate.id}`, 'All referrals of this affiliate →')}

      <h2>Sales</h2>
      ${sales.items.length === 0 ? html`<p class="empty">No sales yet.</p>` : saleTable(sales.items, null, base, program.currency)}
      <p><a href="${base}/sales?affiliate=${affiliate.id}">${sales.next !== undefined ? 'All sales of this affiliate →' : 'Filter sales by date →'}</a></p>

      <h2>Payouts</h2>
      ${payouts.items.length === 0 ? html`<p class="empty">No payouts yet.</p>` : payoutTable(payouts.items, base, false)}

      <h2>Promotional codes</h2>
      ${codes.items.length === 0
        ? html`<p class="empty">No codes assigned. <a href="${base}/coupons">Assign one on Coupons &amp; codes</a>.</p>`
        : html`<div class="table-wrap" role="region" aria-label="Promotional codes" tabindex="0"><table><thead><tr><th scope="col">Code</th><th scope="col">Coupon</th><th scope="col">Status</th><th scope="col" class="num">Redeemed</th></tr></thead>
            <tbody>${codes.items.map((c) => html`<tr><td><a href="${base}/coupons/codes/${c.id}"><code>${c.code}</code></a></td><td>${c.coupon.name}</td><td>${statusBadge(c.active)}</td><td class="num">${c.timesRedeemed}${c.maxRedemptions === null ? '' : ` / ${c.maxRedemptions}`}</td></tr>`)}</tbody></table></div>`}`;
    return sendPage(db, request, reply, {
      title: name,
      active: 'affiliates',
      body,
      status: linkErrors.status,
      flash: linkErrors.message ? { kind: 'error', text: linkErrors.message } : doneFlash(request, DONE),
    });
  }

  app.get('/affiliates/:affiliateId', (request, reply) => detailPage(request, reply));

  async function editPage(request: FastifyRequest, reply: FastifyReply, values?: FormValues, errors: FormErrors = noErrors) {
    const dashboard = currentProgram(request);
    const { affiliateId } = request.params as { affiliateId: string };
    const affiliate = await getAffiliateProfile(db, dashboard.context, affiliateId);
    const name = `${affiliate.firstName} ${affiliate.lastName}`;
    const shown = values ?? {
      firstName: affiliate.firstName,
      lastName: affiliate.lastName,
      commissionRate: affiliate.ownCommissionRate === null ? '' : String(affiliate.ownCommissionRate),
      payoutEmail: affiliate.payoutEmail,
      paymentMethod: affiliate.paymentMethod,
      status: affiliate.status,
    };
    const body = html`
      <div class="page-head"><h1>Edit ${name}</h1></div>
      <form class="card" method="post" action="${dashboard.base}/affiliates/${affiliate.id}" novalidate>
        ${csrfField(request.session!)}
        <p class="muted">E-mail: ${affiliate.email} (it identifies the affiliate and cannot change).</p>
        ${editFields(shown, errors, defaultRate(dashboard))}
        <div class="actions"><button type="submit">Save changes</button> <a href="${dashboard.base}/affiliates/${affiliate.id}">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, {
      title: `Edit ${name}`,
      active: 'affiliates',
      body,
      status: errors.status,
      flash: errorFlash(errors),
    });
  }

  app.get('/affiliates/:affiliateId/edit', (request, reply) => editPage(request, reply));

  app.post('/affiliates/:affiliateId', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { affiliateId } = request.params as { affiliateId: string };
    const form = readForm(request);
    try {
      await updateAffiliate(db, context, affiliateId, updateBodyOf(form));
      return redirectDone(reply, `${base}/affiliates/${affiliateId}`, 'updated');
    } catch (error) {
      return editPage(request, reply, form, formErrorsOf(error));
    }
  });

  app.post('/affiliates/:affiliateId/approval', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { affiliateId } = request.params as { affiliateId: string };
    const approval = readForm(request).approval === 'approved' ? 'approved' : 'rejected';
    await updateAffiliate(db, context, affiliateId, { approval });
    return redirectDone(reply, `${base}/affiliates`, approval);
  });

  app.post('/affiliates/:affiliateId/status', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { affiliateId } = request.params as { affiliateId: string };
    const status = readForm(request).status === 'active' ? 'active' : 'inactive';
    await updateAffiliate(db, context, affiliateId, { status });
    return redirectDone(reply, `${base}/affiliates/${affiliateId}`, status === 'active' ? 'activated' : 'deactivated');
  });

  app.post('/affiliates/:affiliateId/links', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { affiliateId } = request.params as { affiliateId: string };
    const form = readForm(request);
    try {
      const body = { affiliateId, ...(optionalText(form.link) === undefined ? {} : { link: optionalText(form.link) }) };
      assertValidBody(CreateLinkBody, body);
      await createLink(db, context, body);
      return redirectDone(reply, `${base}/affiliates/${affiliateId}`, 'link-created');
    } catch (error) {
      return detailPage(request, reply, form.link, formErrorsOf(error));
    }
  });
};
