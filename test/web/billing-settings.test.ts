// The dashboard's Billing section (issue 32 item 4): one card per provider with the URL to paste,
// the events to select, the secret field, the state ("connected since", "last event received"),
// a test hint and Disconnect — connected in one step, refused with the reason beside the field,
// only by the program's owner and with the form's CSRF token.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession } from '../helpers/browser-session.ts';
import { fixture, postPaddleEvent, providerId } from '../helpers/billing-providers.ts';
import { BILLING_PROVIDERS } from '../../src/modules/billing/providers/index.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer({ worker: false, siteUrl: 'http://tandem.test' });
});
after(() => t.close());

const PADDLE_SECRET = 'pdl_ntfset_01hv8x2aqs8t6gdn1xqk2f7b1w_Av4U6W2GMu5Kx3j6';
const card = (page: string, provider: string) => new RegExp(`<details class="billing-provider" id="billing-${provider}"[^>]*>([\\s\\S]*?)</details>`).exec(page)?.[0] ?? '';

it('each provider has its card; Paddle connects in one step, lists its events, and disconnects', async () => {
  const merchant = await BrowserSession.signUp(t.url);
  const program = await merchant.createProgram({ name: 'Acme' });
  let page = await merchant.page(`${program.base}/settings`);
  for (const provider of BILLING_PROVIDERS) {
    const html = card(page, provider.name);
    assert.ok(html.includes(`<code>http://tandem.test/api/billing/${provider.name}/${program.id}</code>`), `${provider.name}: the URL to paste`);
    for (const event of provider.setup.events) assert.ok(html.includes(`<code>${event}</code>`), `${provider.name}: ${event} to select`);
    assert.match(html, /Not connected/);
    assert.match(html, /Send a test:/);
    assert.doesNotMatch(html, / open>/, 'a provider not connected is folded');
  }

  // A secret of another provider's shape: refused beside the field, the card open, nothing saved.
  const bad = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/billing/paddle`, { secret: 'whsec_0123456789abcdef' });
  assert.equal(bad.status, 422);
  assert.match(card(bad.text, 'paddle'), / open>/);
  assert.match(card(bad.text, 'paddle'), /Must be a Paddle notification secret key/);
  assert.match(card(await merchant.page(`${program.base}/settings`), 'paddle'), /Not connected/);

  const saved = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/billing/paddle`, { secret: PADDLE_SECRET });
  assert.equal(saved.status, 303);
  assert.equal(saved.location, `${program.base}/settings?done=billing-saved#billing-paddle`);
  page = await merchant.page(`${program.base}/settings`);
  assert.match(card(page, 'paddle'), /Connected since .* · no event received yet/);
  assert.ok(!page.includes(PADDLE_SECRET), 'the secret is never shown again');

  // Paddle's next event: the card says when, and the table lists it with its provider and outcome.
  const event = fixture('paddle', 'customer.created');
  event.event_id = providerId('evt');
  assert.equal((await postPaddleEvent(t.url, program.id, event, PADDLE_SECRET)).status, 200);
  page = await merchant.page(`${program.base}/settings`);
  assert.match(card(page, 'paddle'), /last event received/);
  assert.match(page, new RegExp(`<td>Paddle</td><td><code>customer.created</code><br><span class="muted">${event.event_id}</span></td><td>ignored</td>`));

  const off = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/billing/paddle/disconnect`, {});
  assert.equal(off.status, 303);
  assert.match(card(await merchant.page(`${program.base}/settings`), 'paddle'), /Not connected/);
  assert.equal((await postPaddleEvent(t.url, program.id, { ...event, event_id: providerId('evt') }, PADDLE_SECRET)).status, 400, 'disconnected: its events are refused');
});

it("another merchant, a form without its CSRF token and a provider there is not: refused, nothing saved", async () => {
  const owner = await BrowserSession.signUp(t.url);
  const program = await owner.createProgram({ name: 'Mine' });
  const other = await BrowserSession.signUp(t.url);
  await other.createProgram({ name: 'Theirs' });
  const intruder = await other.submit('/dashboard', `${program.base}/settings/billing/paddle`, { secret: PADDLE_SECRET });
  assert.ok(intruder.status === 404 || intruder.status === 403, `another merchant: ${intruder.status}`);
  const noCsrf = await owner.post(`${program.base}/settings/billing/paddle`, { secret: PADDLE_SECRET });
  assert.equal(noCsrf.status, 403);
  const unknown = await owner.submit(`${program.base}/settings`, `${program.base}/settings/billing/paypal`, { secret: PADDLE_SECRET });
  assert.equal(unknown.status, 404);
  assert.match(card(await owner.page(`${program.base}/settings`), 'paddle'), /Not connected/);
});
