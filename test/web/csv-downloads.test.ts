// CSV downloads through the real server (issue 29 item 8): the dashboard's affiliates and sales
// lists and the payout files, byte for byte. A name like `Ann;=1+1;` is quoted and carries a '
// before every formula start, so a spreadsheet that splits at `;` (or a tab, or `|`) runs
// nothing; a payout file still carries the recipient and the amount exactly as the provider
// needs them, a leading + or - included.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession } from '../helpers/browser-session.ts';

let t: TestServer;
let merchant: BrowserSession;
let base: string;
let api: ApiClient;
let ann: any;
let payoutId: string;
let saleId: number;
const suffix = `${process.pid}-${Date.now()}`;
const annEmail = `+ann-${suffix}@example.com`;
const annPayoutEmail = `-ann.pay-${suffix}@example.com`;

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  const program = await merchant.createProgram({ name: 'Acme;=1+1', commissionRate: '20' });
  base = program.base;
  await updateProgramSettings(rawDb(t), program.id, { holdDays: 0 });
  const { token } = await issueToken(rawDb(t), { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
  const made = await api.post('/affiliates', { firstName: 'Ann;=1+1;', lastName: 'Lee|@SUM(1)', email: annEmail, payoutEmail: annPayoutEmail, paymentMethod: 'x,-1', affiliateLink: 'ann' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  ann = made.body;
  const sale = await api.post('/sales', { referralId: ann.id, name: 'Bob;-2+3', email: `bob-${suffix}@example.com`, totalEarned: 100 });
  assert.equal(sale.status, 201, JSON.stringify(sale.body));
  saleId = sale.body.id;
  const run = await api.post('/payouts', {});
  assert.equal(run.status, 201, JSON.stringify(run.body));
  payoutId = run.body[0].id;
});
after(() => t?.close());

/** The line of a CSV download that starts with `start`. */
function lineOf(csv: string, start: string): string {
  const line = csv.split('\r\n').find((l) => l.startsWith(start));
  assert.ok(line, `a line starting with ${start} in\n${csv}`);
  return line;
}

it("the affiliates CSV quotes and neutralises a name made for a ';'-locale spreadsheet", async () => {
  const csv = await merchant.get(`${base}/affiliates.csv`);
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  const line = lineOf(csv.text, ann.id);
  // Every cell of people's text is text in a spreadsheet: the e-mail addresses too.
  assert.equal(line, `${ann.id},"Ann;'=1+1;","Lee|'@SUM(1)",'${annEmail},ann,active,approved,,1,0,USD,20.00,'${annPayoutEmail},"x,'-1",${ann.createdAt}`);
});

it('the sales CSV does the same for a customer name', async () => {
  const csv = await merchant.get(`${base}/sales.csv`);
  assert.equal(csv.status, 200);
  assert.ok(lineOf(csv.text, `${saleId},`).includes(`,"Bob;'-2+3",bob-${suffix}@example.com,${ann.id},"Ann;'=1+1; Lee|'@SUM(1)",'${annEmail},USD,100.00,`), csv.text);
});

it('payout files keep the recipient and amount exact and neutralise the text around them', async () => {
  const paypal = await api.request('GET', '/payouts/export?format=paypal');
  assert.equal(paypal.status, 200);
  assert.equal(paypal.body, `${annPayoutEmail},20.00,USD,${payoutId.replace(/-/g, '').slice(0, 30)},"Affiliate commission from Acme;'=1+1",PAYPAL\r\n`);
  const wise = await api.request('GET', '/payouts/export?format=wise');
  assert.equal(
    wise.body,
    `name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency\r\n"Ann;'=1+1; Lee|'@SUM(1)",${annPayoutEmail},TDM-${payoutId.replace(/-/g, '').slice(0, 8)},PERSON,USD,20.00,USD,USD\r\n`,
  );
  // Marked paid with the merchant's own words: method and reference are text.
  const paid = await api.put('/payouts', { payoutId, status: 'paid', method: '+PayPal;=1', reference: 'r|-1' });
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  const csv = await api.request('GET', '/payouts/export?format=csv&status=paid');
  assert.equal(
    lineOf(csv.body, payoutId),
    `${payoutId},${ann.id},"Ann;'=1+1;","Lee|'@SUM(1)",${annEmail},${annPayoutEmail},"x,'-1",20.00,USD,paid,1,${paid.body.createdAt},${paid.body.paidAt},"'+PayPal;'=1","r|'-1"`,
  );
});
