// E-mail (issue 19 item 4, first part): messages are queued in the transaction of the change
// that causes them and sent by the worker over a real SMTP server (npm smtp-server on
// 127.0.0.1); a refusing or absent server never fails the request, the message is retried and
// arrives; with no SMTP_URL each message is written to the log in full.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createTcpServer } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createMailTransport } from '../../src/modules/mail/mail-transport.ts';

/** A paid payout of 30.00 for a new affiliate; returns the affiliate's e-mail. */
async function payAnAffiliate(api: ApiClient, t: TestServer): Promise<{ email: string; status: number; ms: number }> {
  await updateProgramSettings(rawDb(t), api.programId, { holdDays: 0 });
  const email = uniqueEmail('paid');
  const affiliate = (await api.post('/affiliates', { firstName: 'Jane <b>', lastName: 'Cooper', email })).body;
  await api.post('/sales', { referralId: affiliate.id, name: 'C', email: uniqueEmail('c'), totalEarned: 150 });
  const [payout] = (await api.post('/payouts', {})).body;
  const started = Date.now();
  const res = await api.put('/payouts', { payoutId: payout.id, status: 'paid', method: 'PayPal', reference: 'PP-77' });
  return { email, status: res.status, ms: Date.now() - started };
}

describe('e-mail through a real SMTP server', () => {
  let smtp: SmtpReceiver;
  let t: TestServer;
  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startTestServer({ smtpUrl: smtp.url, mailFrom: 'Acme Partners <partners@acme.example>', mailRetrySchedule: [300, 300] });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('a payout marked paid sends the affiliate a message, in text and escaped HTML', async () => {
    const api = await t.createTenant({ commissionRate: 20, name: 'Acme' });
    const { email, status } = await payAnAffiliate(api, t);
    assert.equal(status, 200);
    const mail = await smtp.waitFor((m) => m.to.includes(email), 'the payout-paid message');
    assert.equal(mail.from, 'partners@acme.example');
    assert.equal(mail.subject, '"Acme" paid you $30.00');
    assert.match(mail.text, /Hello Jane <b>,\n\nAcme has paid your affiliate commission: \$30\.00 \(PayPal, reference PP-77\)\./);
    assert.ok(mail.html.includes('Hello Jane &#60;b&#62;,'), mail.html);
    assert.ok(!mail.html.includes('<b>'), 'a name is text, not markup');
    // Marked sent once the SMTP server has accepted it: a moment after it arrived there.
    const sentRow = async () => rawDb(t).selectFrom('mail_outbox').selectAll().where('to_address', '=', email).executeTakeFirstOrThrow();
    let row = await sentRow();
    for (let i = 0; i < 40 && row.sent_at === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      row = await sentRow();
    }
    assert.ok(row.sent_at !== null, 'marked sent');
    assert.equal(Number(row.attempts), 0);
  });

  it('a server that refuses at first: the request is not held up, the message is retried and arrives once', async () => {
    const api = await t.createTenant({ commissionRate: 20, name: 'Beta' });
    smtp.refuseNext(1);
    const { email, status } = await payAnAffiliate(api, t);
    assert.equal(status, 200);
    await smtp.waitFor((m) => m.to.includes(email), 'the retried message');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(smtp.received.filter((m) => m.to.includes(email)).length, 1, 'sent once');
    const row = await rawDb(t).selectFrom('mail_outbox').selectAll().where('to_address', '=', email).executeTakeFirstOrThrow();
    assert.equal(Number(row.attempts), 1);
    assert.ok(row.sent_at !== null);
  });

  it('a mail server that is down: the request answers at once, the message is kept with its error and given up after the retries', async () => {
    // A port that accepts nothing: the listener is closed before use.
    const port = await new Promise<number>((resolve) => {
      const probe = createTcpServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    const down = await startTestServer({ smtpUrl: `smtp://tandem:s3cret-pass@127.0.0.1:${port}`, mailRetrySchedule: [100] });
    try {
      const api = await down.createTenant({ commissionRate: 20 });
      const { email, status, ms } = await payAnAffiliate(api, down);
      assert.equal(status, 200);
      assert.ok(ms < 5000, `answered in ${ms} ms`);
      const until = Date.now() + 15_000;
      let row;
      while (Date.now() < until) {
        row = await rawDb(down).selectFrom('mail_outbox').selectAll().where('to_address', '=', email).executeTakeFirst();
        if (row?.failed_at) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(row?.failed_at, 'given up after the last retry');
      assert.equal(Number(row.attempts), 2);
      assert.match(row.last_error ?? '', /ECONNREFUSED|connect/i);
      assert.equal(row.sent_at, null);
      assert.ok(!(row.last_error ?? '').includes('s3cret-pass'), 'the SMTP password is never stored with the error');
    } finally {
      await down.close();
    }
  });

  it('a payout marked failed sends nothing, and nothing is queued when the change rolls back', async () => {
    const api = await t.createTenant({ commissionRate: 20 });
    await updateProgramSettings(rawDb(t), api.programId, { holdDays: 0 });
    const affiliate = (await api.post('/affiliates', { firstName: 'Bo', lastName: 'Ray', email: uniqueEmail('bo') })).body;
    await api.post('/sales', { referralId: affiliate.id, name: 'C', email: uniqueEmail('c'), totalEarned: 100 });
    const [payout] = (await api.post('/payouts', {})).body;
    assert.equal((await api.put('/payouts', { payoutId: payout.id, status: 'failed' })).status, 200);
    assert.equal((await api.put('/payouts', { payoutId: payout.id, status: 'paid' })).status, 409, 'the paid mark rolls back');
    const rows = await rawDb(t).selectFrom('mail_outbox').select('id').where('program_id', '=', api.programId).execute();
    assert.equal(rows.length, 0);
  });
});

describe('e-mail with no SMTP_URL', () => {
  it('writes each message to the log in full', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = pino({ level: 'info' }, sink);
    const transport = await createMailTransport({ smtpUrl: null }, log);
    await transport.send({ from: 'Tandem <no-reply@tandem.test>', to: 'jane@example.com', subject: 'Log in to Acme', text: 'Your link: http://tandem.test/portal/acme/login/abc\n', html: '<p>…</p>' });
    const entry = JSON.parse(lines.join(''));
    assert.equal(entry.mail.to, 'jane@example.com');
    assert.equal(entry.mail.subject, 'Log in to Acme');
    assert.equal(entry.mail.text, 'Your link: http://tandem.test/portal/acme/login/abc\n', 'the whole text, link included, so a local try-out works');
    assert.match(entry.msg, /SMTP_URL is not set/);
  });
});
