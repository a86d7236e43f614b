// The overview's "Get started" checklist (issue 21 item 8): each step ticks itself when what it
// asks for exists — a key, an affiliate, a sale, a click, an app or Stripe — and the test
// sale's command carries the instance's URL and the key's prefix, and works as given.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession } from '../helpers/browser-session.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer({ worker: false, siteUrl: 'http://tandem.test' });
});
after(() => t.close());

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const progress = (page: string) => /Get started <span class="muted">(\d) of 6 done<\/span>/.exec(page)?.[1];
const isDone = (page: string, title: string) => new RegExp(`<li class="done"><span class="tick" aria-hidden="true">✓</span><div><strong>${title}</strong>`).test(page);

it('ticks each step as it happens, then goes away', async () => {
  const merchant = await BrowserSession.signUp(t.url);
  const program = await merchant.createProgram({ name: 'Acme', domain: 'acme.example', commissionRate: '20' });
  let page = await merchant.page(program.base);
  assert.equal(progress(page), '1');
  assert.ok(isDone(page, 'Create your program'));
  assert.ok(!isDone(page, 'Create an API key'));
  assert.match(page, /<h2 id="all-time-heading">All time<\/h2>/);
  assert.match(page, /Sales, commission and clicks, last 30 days/);

  const { token } = await merchant.createApiKey(program.base, 'site');
  page = await merchant.page(program.base);
  assert.equal(progress(page), '2');
  assert.ok(isDone(page, 'Create an API key'));
  const command = /<pre class="secret" id="checklist-curl">([^<]+)<\/pre>/.exec(page)?.[1]?.replace(/&quot;/g, '"').replace(/&#39;/g, "'");
  assert.ok(command, 'the test sale command');
  assert.match(command, /^curl http:\/\/tandem\.test\/api\/v1\/sales \\/);
  const shown = /Bearer (tdm_[\w-]+)…/.exec(command)?.[1] ?? '';
  assert.ok(shown.length >= 8 && token.startsWith(shown), `the key's prefix in ${command}`);
  assert.ok(!command.includes(token), 'never the key itself');

  const affiliate = await merchant.submit(`${program.base}/affiliates/new`, `${program.base}/affiliates`, { firstName: 'Jane', lastName: 'Doe', email: 'jane@example.com', affiliateLink: 'jane' });
  assert.equal(affiliate.status, 303);
  page = await merchant.page(program.base);
  assert.equal(progress(page), '3');
  const sale = /-d '([^']+)'/.exec(/<pre class="secret" id="checklist-curl">([^<]+)<\/pre>/.exec(page)![1]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'"))![1]!;
  assert.equal(JSON.parse(sale).referralId, 'jane', "the command names the affiliate's link");

  // The command as a user runs it, with the full key: it records the sale.
  const res = await fetch(`${t.url}/api/v1/sales`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: sale });
  assert.equal(res.status, 201, await res.text());
  page = await merchant.page(program.base);
  assert.equal(progress(page), '4');
  assert.ok(isDone(page, 'Record a test sale'));

  const click = await fetch(`${t.url}/api/track/click?programId=${program.id}`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'user-agent': BROWSER, origin: 'https://acme.example' },
    body: JSON.stringify({ url: 'https://acme.example/?ref=jane' }),
  });
  assert.ok(click.status < 300, `click: ${click.status} ${await click.text()}`);
  page = await merchant.page(program.base);
  assert.equal(progress(page), '5');
  assert.ok(isDone(page, 'Add the tracking tag'));

  const stripe = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/billing/stripe`, { secret: 'whsec_0123456789abcdefghijklmnopqrstuv' });
  assert.ok(stripe.status === 303, `stripe: ${stripe.status} ${stripe.text.slice(0, 300)}`);
  page = await merchant.page(program.base);
  assert.equal(progress(page), undefined, 'all done: the checklist is gone');
  assert.doesNotMatch(page, /checklist-heading/);
});
