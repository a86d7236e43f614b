// Mail per recipient is limited (issue 29, item 7): a merchant marking payouts paid again and
// again, or many programs doing it together, cannot use Tandem to fill one inbox with their
// text. Per program and address 5 an hour, per address across programs 20; the payouts
// themselves are marked paid all the same. Sent through a real SMTP server.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { created, uniqueEmail } from '../helpers/fixtures.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { MAIL_LIMIT_PER_ADDRESS, MAIL_LIMIT_PER_PROGRAM } from '../../src/modules/mail/mail.service.ts';

let smtp: SmtpReceiver;
let t: TestServer;

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestServer({ smtpUrl: smtp.url, rateLimitPerMinute: 0 });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

/** An affiliate with the given address in a program paying at once. */
async function affiliateOf(api: ApiClient, email: string): Promise<{ id: string }> {
  await updateProgramSettings(rawDb(t), api.programId, { holdDays: 0 });
  return created(api.post('/affiliates', { firstName: 'Victim', lastName: 'Inbox', email }));
}

/** Sells, runs payouts and marks the payout paid, `times` over: every mark must succeed. */
async function markPaid(api: ApiClient, affiliateId: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    await created(api.post('/sales', { referralId: affiliateId, name: 'C', email: uniqueEmail('c'), totalEarned: 10 }));
    const [payout] = (await api.post('/payouts', {})).body;
    const marked = await api.put('/payouts', { payoutId: payout.id, status: 'paid', reference: 'Your prize is waiting, click here' });
    assert.equal(marked.status, 200, JSON.stringify(marked.body));
  }
}

const queuedTo = async (email: string) =>
  Number((await rawDb(t).selectFrom('mail_outbox').select((eb) => eb.fn.countAll().as('n')).where('to_address', '=', email).executeTakeFirstOrThrow()).n);

describe('mail per recipient', () => {
  it(`one program: ${MAIL_LIMIT_PER_PROGRAM.max} "payout paid" mails an hour to one address; every payout is still marked paid`, async () => {
    const api = await t.createTenant({ commissionRate: 20 });
    const email = uniqueEmail('victim');
    const affiliate = await affiliateOf(api, email);
    await markPaid(api, affiliate.id, MAIL_LIMIT_PER_PROGRAM.max + 3);
    assert.equal(await queuedTo(email), MAIL_LIMIT_PER_PROGRAM.max);
    const paid = (await api.get(`/payouts?affiliateId=${affiliate.id}&status=paid`)).body;
    assert.equal(paid.length, MAIL_LIMIT_PER_PROGRAM.max + 3);
    await smtp.waitFor(() => smtp.received.filter((m) => m.to.includes(email)).length === MAIL_LIMIT_PER_PROGRAM.max, `${MAIL_LIMIT_PER_PROGRAM.max} mails`);
    await sleep(300);
    assert.equal(smtp.received.filter((m) => m.to.includes(email)).length, MAIL_LIMIT_PER_PROGRAM.max);
  });

  it(`many programs: ${MAIL_LIMIT_PER_ADDRESS.max} an hour to one address in all`, async () => {
    const email = uniqueEmail('target');
    const programs = Math.ceil(MAIL_LIMIT_PER_ADDRESS.max / MAIL_LIMIT_PER_PROGRAM.max) + 1;
    for (let p = 0; p < programs; p++) {
      const api = await t.createTenant({ commissionRate: 20 });
      const affiliate = await affiliateOf(api, email.toUpperCase()); // the same inbox, however it is written
      await markPaid(api, affiliate.id, MAIL_LIMIT_PER_PROGRAM.max);
    }
    const queued = Number(
      (await rawDb(t).selectFrom('mail_outbox').select((eb) => eb.fn.countAll().as('n')).where('to_address', 'in', [email, email.toUpperCase()]).executeTakeFirstOrThrow()).n,
    );
    assert.equal(queued, MAIL_LIMIT_PER_ADDRESS.max);
  });
});
