// The dashboard's Webhooks page over real HTTP: a signed-in browser stand-in adds endpoints
// with the form, the real delivery worker sends to real receivers on 127.0.0.1, and the pages
// show what happened. State is checked in the database and at the receivers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { apiClient, rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { nextLink, type WebResponse } from '../helpers/web-client.ts';

let test: TestServer;
let owner: BrowserSession;
let stranger: BrowserSession;
/** The owner's program under test, another of the owner's programs, and the stranger's own. */
let program: { id: string; base: string };
let otherProgram: { id: string; base: string };
let strangerProgram: { id: string; base: string };
const receivers: WebhookReceiver[] = [];

const db = () => rawDb(test);

async function receiver(status = 200, body = 'ok'): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver();
  r.respondWith(status, body);
  receivers.push(r);
  return r;
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** Posts the add form as a browser does: one `events` field per checked box. */
async function addEndpoint(base: string, url: string, events: string[], session = owner): Promise<WebResponse> {
  const csrf = await session.csrf(`${base}/webhooks`);
  const pairs = [['_csrf', csrf], ['url', url], ...events.map((e) => ['events', e])];
  // WebClient takes a record, but URLSearchParams (which encodes it) takes pairs too: the only way to repeat a field.
  return session.post(`${base}/webhooks`, pairs as unknown as Record<string, string>);
}

/** Adds an endpoint with the form; returns its id and the secret the response showed. */
async function createEndpoint(url: string, events = ['*'], base = program.base): Promise<{ id: string; secret: string; page: string }> {
  const response = await addEndpoint(base, url, events);
  assert.equal(response.status, 200, response.text.slice(0, 800));
  const secret = /id="new-secret">([^<]+)</.exec(response.text)?.[1];
  assert.ok(secret, 'the secret is shown');
  const row = await db().selectFrom('webhooks').select('id').where('url', '=', new URL(url).toString()).orderBy('created_at', 'desc').executeTakeFirstOrThrow();
  return { id: row.id, secret, page: response.text };
}

const webhookPath = (id: string, base = program.base) => `${base}/webhooks/${id}`;

async function sendTest(id: string): Promise<WebResponse> {
  const response = await owner.submit(webhookPath(id), `${webhookPath(id)}/test`, {});
  assert.equal(response.status, 303, response.text.slice(0, 500));
  return response;
}

function deliveries(webhookId: string) {
  return db().selectFrom('webhook_deliveries').select(['id', 'event_id', 'state', 'attempts', 'updated_at']).where('webhook_id', '=', webhookId).orderBy('id').execute();
}

function attemptCount(webhookId: string): Promise<number> {
  return db().selectFrom('webhook_attempts').select('id').where('webhook_id', '=', webhookId).execute().then((rows) => rows.length);
}

async function waitForStates(webhookId: string, count: number, state: string, what: string) {
  await waitUntil(async () => (await deliveries(webhookId)).filter((d) => d.state === state).length === count, what);
}

/** The list page's row of one endpoint. */
function rowOf(page: string, id: string): string {
  const row = new RegExp(`<tr data-webhook="${id}"[\\s\\S]*?</tr>`).exec(page)?.[0];
  assert.ok(row, `the list has a row for ${id}`);
  return row;
}

const attemptRows = (page: string) => [...page.matchAll(/<tr data-attempt="(\d+)">([\s\S]*?)<\/tr>/g)].map((m) => ({ id: m[1]!, html: m[2]! }));

/** The datetime-local value the page's form would send, in UTC. */
const dateTimeInput = (ms: number) => new Date(ms).toISOString().slice(0, 16);

before(async () => {
  test = await startTestServer({ webhookAllowPrivateUrls: true, webhookRetrySchedule: [100, 100] });
  owner = await BrowserSession.signUp(test.url, uniqueEmail('owner'));
  stranger = await BrowserSession.signUp(test.url, uniqueEmail('stranger'));
  program = await owner.createProgram({ name: 'Hooked Shop', domain: 'hooked.example' });
  otherProgram = await owner.createProgram({ name: 'Second Shop', domain: 'second.example' });
  strangerProgram = await stranger.createProgram({ name: 'Stranger Shop', domain: 'stranger.example' });
});

after(async () => {
  await test?.close();
  for (const r of receivers) await r.close();
});

describe('dashboard: webhooks', () => {
  it('adds an endpoint with the form and shows its signing secret once', async () => {
    const empty = await owner.page(`${otherProgram.base}/webhooks`);
    assert.match(empty, /No webhooks yet/);
    assert.match(empty, /<a href="[^"]+\/webhooks" aria-current="page">Webhooks<\/a>/, 'the navigation has the tab');

    const hooks = await receiver();
    const url = `${hooks.url}/orders?source=tandem&kind=sales`;
    const response = await addEndpoint(otherProgram.base, url, ['sale.created', 'referral.created']);
    assert.equal(response.status, 200, response.text.slice(0, 800));
    assert.match(response.text, /Endpoint added/);
    const secret = /id="new-secret">([^<]+)</.exec(response.text)?.[1] ?? '';
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.match(response.text, /data-copy="new-secret"/, 'with a Copy button');
    assert.match(response.text, /<script src="\/assets\/dashboard\.js" defer><\/script>/);

    const row = await db().selectFrom('webhooks').selectAll().where('program_id', '=', otherProgram.id).executeTakeFirstOrThrow();
    assert.equal(row.secret, secret, 'the secret shown is the one deliveries are signed with');
    assert.equal(row.url, url);
    assert.deepEqual(JSON.parse(row.events), ['sale.created', 'referral.created']);
    assert.equal(row.token_id, null);

    const list = await owner.page(`${otherProgram.base}/webhooks`);
    assert.ok(!list.includes(secret), 'a reload never shows the secret again');
    assert.doesNotMatch(list, /new-secret/);
    assert.ok(!(await owner.page(webhookPath(row.id, otherProgram.base))).includes(secret), 'nor does the detail page');
    const listed = rowOf(list, row.id);
    assert.ok(listed.includes('/orders?source=tandem&amp;kind=sales'), 'the URL, escaped');
    assert.match(listed, /<code>sale\.created<\/code>[\s\S]*<code>referral\.created<\/code>/);
    assert.match(listed, /<span class="badge ok">Enabled<\/span>/);
    assert.match(listed, /data-count="pending">0</);
    assert.match(listed, /data-count="failed">0</);
  });

  it('shows refused URLs and missing event types beside the fields, and stores nothing', async () => {
    const count = async () => (await db().selectFrom('webhooks').select('id').where('program_id', '=', program.id).execute()).length;
    const before = await count();
    const base = program.base;

    const ftp = await addEndpoint(base, 'ftp://127.0.0.1/x', ['*']);
    assert.equal(ftp.status, 422);
    assert.match(ftp.text, /id="f-url-error">Must use http or https\.</);
    assert.match(ftp.text, /value="ftp:\/\/127\.0\.0\.1\/x"/, 'what was typed is kept');
    assert.match(ftp.text, /aria-invalid="true"/);
    assert.match(ftp.text, /class="flash error"/);

    const credentials = await addEndpoint(base, 'https://user:pw@example.com/x', ['*']);
    assert.equal(credentials.status, 422);
    assert.match(credentials.text, /id="f-url-error">Must not carry a user name or password\.</);

    const none = await addEndpoint(base, 'http://127.0.0.1:9/none', []);
    assert.equal(none.status, 422);
    assert.match(none.text, /id="f-events-error">Choose “All events” or at least one event type\.</);
    assert.doesNotMatch(none.text, /id="f-url-error"/);

    const both = await addEndpoint(base, '', ['*', 'sale.created']);
    assert.equal(both.status, 422);
    assert.match(both.text, /id="f-url-error">Is required\.</);
    assert.match(both.text, /id="f-events-error">Choose “All events” or some event types, not both\.</);
    assert.match(both.text, /value="sale\.created" checked/, 'the boxes stay checked');

    const unknown = await addEndpoint(base, 'http://127.0.0.1:9/unknown', ['sale.exploded']);
    assert.equal(unknown.status, 422);
    assert.match(unknown.text, /id="f-events-error">Not an event type: sale\.exploded\.</);

    assert.equal(await count(), before);
  });

  it('refuses a URL the program already has, beside the field', async () => {
    const hooks = await receiver();
    const { id } = await createEndpoint(`${hooks.url}/twice`, ['sale.created']);
    const count = async () => (await db().selectFrom('webhooks').select('id').where('program_id', '=', program.id).execute()).length;
    const before = await count();
    const again = await addEndpoint(program.base, `${hooks.url}/twice`, ['*']);
    assert.equal(again.status, 409);
    assert.match(again.text, /id="f-url-error">This program already sends events to this URL \(see it in the list above\)\. To change its event types, delete it and add it again\.</);
    assert.match(again.text, /class="flash error"[^>]*>Check the highlighted fields\.</);
    assert.doesNotMatch(again.text, /new-secret/);
    assert.equal(await count(), before, 'nothing stored');
    // Another program of the same owner may send to the same URL.
    const elsewhere = await addEndpoint(otherProgram.base, `${hooks.url}/twice`, ['*']);
    assert.equal(elsewhere.status, 200, elsewhere.text.slice(0, 500));
    assert.equal((await owner.submit(`${program.base}/webhooks`, `${webhookPath(id)}/delete`, { confirmed: 'yes' })).status, 303);
  });

  it('sends a test event: the receiver gets it signed, and the detail page shows the attempt', async () => {
    const hooks = await receiver(200, 'thanks, got it');
    const { id, secret } = await createEndpoint(`${hooks.url}/test-event`);
    const sent = await sendTest(id);
    assert.equal(sent.location, `${webhookPath(id)}?done=test-sent`);

    await hooks.waitFor((r) => r.some((d) => d.json?.type === 'webhook.test' && d.json.data.webhookId === id), 5000, 'the test event');
    const delivery = hooks.received.find((d) => d.json.data.webhookId === id)!;
    const headers = { 'webhook-id': delivery.headers['webhook-id']!, 'webhook-timestamp': delivery.headers['webhook-timestamp']!, 'webhook-signature': delivery.headers['webhook-signature']! };
    assert.deepEqual(new Webhook(secret).verify(delivery.body, headers), delivery.json, 'signed with the secret the page showed');

    await waitUntil(async () => (await attemptCount(id)) === 1, 'the attempt to be recorded');
    const page = await owner.page(sent.location!);
    assert.match(page, /Test event queued/);
    const rows = attemptRows(page);
    assert.equal(rows.length, 1);
    const [attempt] = rows;
    assert.match(attempt!.html, /<code>webhook\.test<\/code>/);
    assert.ok(attempt!.html.includes(`<code class="muted">${delivery.json.id}</code>`), 'the event id');
    assert.match(attempt!.html, /<span class="badge ok">HTTP 200<\/span>/);
    assert.match(attempt!.html, /<pre class="excerpt">thanks, got it<\/pre>/);
    assert.match(attempt!.html, /<td class="num">\d[\d,]* ms<\/td>/);
    assert.match(attempt!.html, /<time datetime="\d{4}-\d{2}-\d{2}T[\d:.]+Z">\d{4}-\d{2}-\d{2}<br>\d{2}:\d{2}:\d{2} UTC<\/time>/);
    assert.match(attempt!.html, /Delivered/);
    assert.equal(hooks.received.length, 1, 'sent to this endpoint only once');
  });

  it('answers dashboard.js with JSON: the test event queued, then its outcome; never another program\'s', async () => {
    const hooks = await receiver(200, 'json please');
    const { id } = await createEndpoint(`${hooks.url}/json-test`);
    const csrf = await owner.csrf(webhookPath(id));
    const sent = await owner.request('POST', `${webhookPath(id)}/test`, new URLSearchParams({ _csrf: csrf }).toString());
    assert.equal(sent.status, 303, 'a form post without Accept: application/json still redirects');
    const asked = await fetch(new URL(`${webhookPath(id)}/test`, test.url), {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', cookie: `tandem_session=${owner.cookie('tandem_session')}` },
      body: new URLSearchParams({ _csrf: csrf }).toString(),
    });
    assert.equal(asked.status, 200);
    const { eventId, result } = (await asked.json()) as { eventId: string; result: string };
    assert.match(eventId, /^evt_/);
    assert.equal(result, `${webhookPath(id)}/test/${eventId}`);
    let outcome: any;
    await waitUntil(async () => {
      outcome = JSON.parse((await owner.get(result)).text);
      return outcome.state === 'delivered';
    }, 'the test event to be delivered');
    assert.deepEqual(Object.keys(outcome).sort(), ['attempts', 'lastAttempt', 'nextAttemptAt', 'state', 'worker']);
    assert.equal(outcome.lastAttempt.statusCode, 200);
    assert.equal(outcome.lastAttempt.responseExcerpt, 'json please');
    assert.equal(outcome.worker, true);
    // Without the CSRF token: refused, nothing queued.
    const forged = await fetch(new URL(`${webhookPath(id)}/test`, test.url), { method: 'POST', headers: { accept: 'application/json', cookie: `tandem_session=${owner.cookie('tandem_session')}` } });
    assert.equal(forged.status, 403);
    // Another program's view of it, an unknown event, an event of another endpoint: 404.
    const other = await createEndpoint(`${hooks.url}/json-other`);
    assert.equal((await stranger.get(`${webhookPath(id, strangerProgram.base)}/test/${eventId}`)).status, 404);
    assert.equal((await owner.get(`${webhookPath(id, otherProgram.base)}/test/${eventId}`)).status, 404);
    assert.equal((await owner.get(`${webhookPath(id)}/test/evt_nope`)).status, 404);
    assert.equal((await owner.get(`${webhookPath(other.id)}/test/${eventId}`)).status, 404);
    assert.equal((await owner.get(`${webhookPath(id)}/test/${encodeURIComponent("'; drop table x")}`)).status, 404);
  });

  it("shows a failing endpoint's attempts with their HTTP status and excerpt, or the connection error", async () => {
    const failing = await receiver(500, 'upstream exploded');
    const { id } = await createEndpoint(`${failing.url}/failing`);
    await sendTest(id);
    // One attempt and two retries on this server's schedule, then the delivery gives up.
    await waitForStates(id, 1, 'failed', 'the delivery to fail for good');
    assert.equal(failing.received.length, 3);
    const page = await owner.page(webhookPath(id));
    const rows = attemptRows(page);
    assert.equal(rows.length, 3);
    for (const row of rows) {
      assert.match(row.html, /<span class="badge bad">HTTP 500<\/span>/);
      assert.match(row.html, /<pre class="excerpt">upstream exploded<\/pre>/);
      assert.match(row.html, /<span class="badge bad">Failed<\/span>/);
    }
    assert.equal((page.match(/name="eventId"/g) ?? []).length, 1, 'one Resend button per event, on its newest attempt');
    assert.match(page, /<span class="badge warn">Failing<\/span> <span class="muted">since <time/);
    assert.match(page, /data-count="failed">1 </);
    const listed = rowOf(await owner.page(`${program.base}/webhooks`), id);
    assert.match(listed, /<span class="badge warn">Failing<\/span> <span class="muted">since <time datetime="[^"]+">/);
    assert.match(listed, /data-count="failed">1</);

    // No answer at all: the error text stands in for the status.
    const down = await receiver();
    await down.pause();
    const unreachable = await createEndpoint(`${down.url}/down`);
    await sendTest(unreachable.id);
    await waitUntil(async () => (await attemptCount(unreachable.id)) >= 1, 'a refused attempt');
    const downRows = attemptRows(await owner.page(webhookPath(unreachable.id)));
    assert.ok(downRows.length >= 1);
    assert.match(downRows.at(-1)!.html, /<span class="badge bad">No response<\/span><br><span class="attempt-error">ECONNREFUSED: [^<]+<\/span>/);
    assert.match(downRows.at(-1)!.html, /<span class="muted">—<\/span>/, 'no excerpt');
    await down.resume();
  });

  it("escapes the receiver's answer and the URL: a <script> excerpt is shown as text", async () => {
    const evil = await receiver(500, `<script>alert("pwned")</script><img src=x onerror=alert(1)>`);
    const url = `${evil.url}/it's&<b>bold</b>`;
    const { id } = await createEndpoint(url);
    const stored = new URL(url).toString();
    assert.ok(stored.includes("'") && stored.includes('&'), 'the stored URL keeps characters that must be escaped');
    await sendTest(id);
    await waitUntil(async () => (await attemptCount(id)) >= 1, 'the attempt');
    const page = await owner.page(webhookPath(id));
    assert.ok(page.includes('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;'), 'the excerpt, escaped');
    assert.ok(!page.includes('<script>alert('), 'no script element from the excerpt');
    assert.ok(!page.includes('<img src=x'), 'no image element from the excerpt');
    assert.ok(page.includes('it&#39;s&amp;%3Cb%3Ebold%3C/b%3E'), 'the URL, escaped');
    assert.ok(rowOf(await owner.page(`${program.base}/webhooks`), id).includes('it&#39;s&amp;%3Cb%3E'));
  });

  it('resends one event, and every delivery that failed since a time; the receiver gets them again', async () => {
    const flaky = await receiver(503, 'busy');
    const { id } = await createEndpoint(`${flaky.url}/flaky`);
    const detail = webhookPath(id);
    await sendTest(id);
    await waitForStates(id, 1, 'failed', 'the first event to fail');
    const [first] = await deliveries(id);
    assert.equal(flaky.received.length, 3);

    // One event, with the Resend button of its row.
    flaky.respondWith(200, 'better now');
    const page = await owner.page(detail);
    assert.ok(page.includes(`name="eventId" value="${first!.event_id}"`), 'the row carries the event id');
    const replayed = await owner.submit(detail, `${detail}/replay`, { eventId: first!.event_id });
    assert.equal(replayed.status, 303, replayed.text.slice(0, 500));
    assert.equal(replayed.location, `${detail}?done=replayed`);
    await flaky.waitFor((r) => r.length === 4, 5000, 'the resent event');
    assert.equal(flaky.received[3]!.headers['webhook-id'], first!.event_id, 'the same event, same id');
    await waitForStates(id, 1, 'delivered', 'the resent event to be delivered');
    assert.match(await owner.page(replayed.location!), /The event is queued to be sent again/);
    // An event this endpoint never had is not found.
    assert.equal((await owner.submit(detail, `${detail}/replay`, { eventId: 'evt_nope' })).status, 404);

    // Two more fail for good; then everything that failed since a time is sent again.
    const since = Date.now() - 60_000;
    flaky.respondWith(503, 'busy again');
    await sendTest(id);
    await sendTest(id);
    await waitForStates(id, 2, 'failed', 'two failed deliveries');
    const failedIds = (await deliveries(id)).filter((d) => d.state === 'failed').map((d) => d.event_id);
    const received = flaky.received.length;
    assert.equal(received, 4 + 6);
    flaky.respondWith(200, 'all good');

    const invalid = await owner.submit(detail, `${detail}/replay-failed`, { since: 'yesterday' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-since-error">Use a date and time/);
    assert.match(invalid.text, /value="yesterday"/);
    const future = await owner.submit(detail, `${detail}/replay-failed`, { since: dateTimeInput(Date.now() + 86_400_000) });
    assert.equal(future.location, `${detail}?count=0&done=resent`);
    assert.match(await owner.page(future.location!), /No delivery failed since then/);
    await sleep(300);
    assert.equal(flaky.received.length, received, 'nothing resent');

    const resent = await owner.submit(detail, `${detail}/replay-failed`, { since: dateTimeInput(since) });
    assert.equal(resent.status, 303, resent.text.slice(0, 500));
    assert.equal(resent.location, `${detail}?count=2&done=resent`);
    assert.match(await owner.page(resent.location!), /2 failed deliveries are queued to be sent again/);
    await flaky.waitFor((r) => failedIds.every((e) => r.slice(received).some((d) => d.headers['webhook-id'] === e)), 5000, 'both failed events again');
    await waitForStates(id, 3, 'delivered', 'every delivery delivered');
    assert.equal(flaky.received.length, received + 2, 'each failed delivery once more, nothing else');
  });

  it('shows a disabled endpoint with its notice, and re-enabling delivers the events queued meanwhile', async () => {
    const dead = await receiver(500, 'down for maintenance');
    const { id } = await createEndpoint(`${dead.url}/dead`);
    // Failing for six days already: the next failed attempt makes the worker disable it.
    await db().updateTable('webhooks').set({ failing_since: new Date(Date.now() - 6 * 86_400_000).toISOString() }).where('id', '=', id).execute();
    await sendTest(id);
    await waitUntil(async () => (await db().selectFrom('webhooks').select('disabled_at').where('id', '=', id).executeTakeFirstOrThrow()).disabled_at !== null, 'the worker to disable it');
    assert.equal(dead.received.length, 1);

    // While disabled, events are queued for it but not sent.
    dead.respondWith(200, 'back up');
    const key = apiClient(test.url, (await owner.createApiKey(program.base)).token, program.id);
    const affiliate = await key.post('/affiliates', { firstName: 'Queued', lastName: 'Meanwhile', email: uniqueEmail('queued') });
    assert.equal(affiliate.status, 201);
    await waitUntil(async () => (await deliveries(id)).length === 2, 'the affiliate.created delivery');
    await sleep(400);
    assert.equal(dead.received.length, 1, 'nothing is sent to a disabled endpoint');

    const list = await owner.page(`${program.base}/webhooks`);
    const listed = rowOf(list, id);
    assert.match(listed, /<span class="badge bad">Disabled<\/span> <span class="muted">at <time datetime="[^"]+">[^<]+<\/time>, after every attempt failed for 5 days<\/span>/);
    assert.match(listed, /data-count="pending">2</);
    assert.match(listed, /Re-enable/);
    assert.doesNotMatch(listed, />Send test</);
    assert.match(list, /One endpoint is disabled<\/strong>: every delivery attempt failed for 5 days/);

    const detail = await owner.page(webhookPath(id));
    assert.match(detail, /<div class="notice bad" role="note">\s*<p><strong>This endpoint was disabled at <time[^>]*>[^<]+<\/time><\/strong> because every delivery attempt to it failed for 5 days \(failing since <time/);
    assert.match(detail, /2 waiting/);
    assert.doesNotMatch(detail, />Send a test event</);

    const enabled = await owner.submit(webhookPath(id), `${webhookPath(id)}/enable`, {});
    assert.equal(enabled.status, 303);
    assert.equal(enabled.location, `${webhookPath(id)}?done=enabled`);
    await dead.waitFor((r) => r.some((d) => d.json?.type === 'affiliate.created' && d.json.data.id === affiliate.body.id) && r.filter((d) => d.json?.type === 'webhook.test').length === 2, 5000, 'the queued events');
    await waitForStates(id, 2, 'delivered', 'both queued deliveries');
    const row = await db().selectFrom('webhooks').select(['disabled_at', 'failing_since']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(row, { disabled_at: null, failing_since: null });
    assert.match(await owner.page(enabled.location!), /Endpoint re-enabled/);
    assert.match(rowOf(await owner.page(`${program.base}/webhooks`), id), /<span class="badge ok">Enabled<\/span>[\s\S]*data-count="pending">0</);
  });

  it('asks before deleting an endpoint, also without JavaScript, then deletes it', async () => {
    const hooks = await receiver();
    const { id } = await createEndpoint(`${hooks.url}/deleted`);
    const exists = async () => (await db().selectFrom('webhooks').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;

    // Both buttons ask in the browser's dialog (dashboard.js, which then sends confirmed=yes).
    const question = `data-confirm="Delete the endpoint ${hooks.url}/deleted\\? It receives no more events\\."`;
    assert.match(await owner.page(webhookPath(id)), new RegExp(`<form method="post" action="${webhookPath(id)}/delete" class="inline" ${question}>`));
    assert.match(rowOf(await owner.page(`${program.base}/webhooks`), id), new RegExp(`action="${webhookPath(id)}/delete" class="inline" ${question}`));

    // Without script the button posts no answer: a page asks, and nothing is deleted.
    for (const fields of [{}, { confirmed: '' }, { confirmed: 'no' }] as Record<string, string>[]) {
      const asked = await owner.submit(webhookPath(id), `${webhookPath(id)}/delete`, fields);
      assert.equal(asked.status, 200, JSON.stringify(fields));
      assert.match(asked.text, /<h1 id="delete-heading">Delete this webhook endpoint\?<\/h1>/);
      assert.match(asked.text, new RegExp(`<form method="post" action="${webhookPath(id)}/delete">[\\s\\S]*<input type="hidden" name="confirmed" value="yes">[\\s\\S]*<button type="submit" class="danger">Delete endpoint</button> <a href="${webhookPath(id)}">Cancel</a>`));
      assert.ok(await exists(), `still there after ${JSON.stringify(fields)}`);
    }
    assert.match(await owner.page(`${webhookPath(id)}/delete`), /Delete this webhook endpoint\?/, 'the same question at its own address');
    assert.equal((await owner.get(`${webhookPath(id, strangerProgram.base)}/delete`)).status, 404);
    assert.equal((await stranger.submit(`${strangerProgram.base}/webhooks`, `${webhookPath(id, strangerProgram.base)}/delete`, { confirmed: 'yes' })).status, 404);
    assert.ok(await exists(), "another user's program cannot delete it");

    // The confirmation page's button sends the answer: deleted.
    const deleted = await owner.submit(`${webhookPath(id)}/delete`, `${webhookPath(id)}/delete`, { confirmed: 'yes' });
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, `${program.base}/webhooks?done=deleted`);
    assert.equal(await db().selectFrom('webhooks').select('id').where('id', '=', id).executeTakeFirst(), undefined);
    const list = await owner.page(deleted.location!);
    assert.match(list, /Endpoint deleted/);
    assert.doesNotMatch(list, new RegExp(id));
    assert.equal((await owner.get(webhookPath(id))).status, 404);
    assert.equal((await owner.submit(`${program.base}/webhooks`, `${webhookPath(id)}/delete`, { confirmed: 'yes' })).status, 404);
    assert.equal((await owner.submit(`${program.base}/webhooks`, `${webhookPath(id)}/delete`, {})).status, 404);
  });

  describe('refusals', () => {
    /** An endpoint with one delivered event, and a disabled one: every action has something to change. */
    let live: { id: string; eventId: string };
    let disabled: string;

    /** What the refused forms would change (other tests' endpoints may still be retrying meanwhile). */
    async function snapshot() {
      const programIds = [program.id, otherProgram.id, strangerProgram.id];
      const ids = [live.id, disabled];
      return {
        webhooks: await db().selectFrom('webhooks').select(['id', 'program_id']).where('program_id', 'in', programIds).orderBy('id').execute(),
        endpoints: await db().selectFrom('webhooks').select(['id', 'url', 'disabled_at', 'failing_since', 'updated_at']).where('id', 'in', ids).orderBy('id').execute(),
        deliveries: await db().selectFrom('webhook_deliveries').select(['id', 'webhook_id', 'event_id', 'state', 'attempts', 'updated_at']).where('webhook_id', 'in', ids).orderBy('id').execute(),
        events: (await db().selectFrom('events').select('id').where('program_id', 'in', programIds).execute()).length,
      };
    }

    before(async () => {
      const hooks = await receiver();
      const created = await createEndpoint(`${hooks.url}/refusals`);
      await sendTest(created.id);
      await waitForStates(created.id, 1, 'delivered', 'the refusals endpoint to get its test event');
      live = { id: created.id, eventId: (await deliveries(created.id))[0]!.event_id };
      disabled = (await createEndpoint(`${hooks.url}/refusals-disabled`)).id;
      await db().updateTable('webhooks').set({ disabled_at: new Date().toISOString(), failing_since: new Date(Date.now() - 5 * 86_400_000).toISOString() }).where('id', '=', disabled).execute();
    });

    const actions = (base: string): [string, Record<string, string>][] => [
      [`${base}/webhooks`, { url: 'http://127.0.0.1:9/forged', events: '*' }],
      [`${base}/webhooks/${live.id}/delete`, {}],
      [`${base}/webhooks/${live.id}/test`, {}],
      [`${base}/webhooks/${disabled}/enable`, {}],
      [`${base}/webhooks/${live.id}/replay`, { eventId: live.eventId }],
      [`${base}/webhooks/${live.id}/replay-failed`, { since: '2020-01-01T00:00' }],
    ];

    it('refuses every form without a valid CSRF token with 403, and changes nothing', async () => {
      const before = await snapshot();
      for (const [action, fields] of actions(program.base)) {
        assert.equal((await owner.post(action, fields)).status, 403, `no token: ${action}`);
        assert.equal((await owner.post(action, { ...fields, _csrf: 'x'.repeat(43) })).status, 403, `wrong token: ${action}`);
        assert.equal((await owner.post(action, { ...fields, _csrf: await stranger.csrf() })).status, 403, `another session's token: ${action}`);
      }
      await sleep(300);
      assert.deepEqual(await snapshot(), before);
    });

    it("answers 404 for another user's program and another program's webhook, and changes nothing", async () => {
      const before = await snapshot();
      for (const path of [`${program.base}/webhooks`, webhookPath(live.id), webhookPath(disabled)]) {
        const response = await stranger.get(path);
        assert.equal(response.status, 404, `GET ${path}`);
        assert.doesNotMatch(response.text, /Hooked Shop|refusals/, 'the page reveals nothing');
      }
      const strangerCsrf = await stranger.csrf();
      for (const [action, fields] of actions(program.base)) {
        assert.equal((await stranger.post(action, { ...fields, _csrf: strangerCsrf })).status, 404, `stranger, owner's program: ${action}`);
      }
      // The webhook id under a program that is not its own: the stranger's, and the owner's other one.
      for (const [action, fields] of actions(strangerProgram.base).slice(1)) {
        assert.equal((await stranger.post(action, { ...fields, _csrf: strangerCsrf })).status, 404, `stranger, own program: ${action}`);
      }
      const ownerCsrf = await owner.csrf();
      for (const [action, fields] of actions(otherProgram.base).slice(1)) {
        assert.equal((await owner.post(action, { ...fields, _csrf: ownerCsrf })).status, 404, `owner, other program: ${action}`);
      }
      assert.equal((await stranger.get(webhookPath(live.id, strangerProgram.base))).status, 404);
      assert.equal((await owner.get(webhookPath(live.id, otherProgram.base))).status, 404);
      assert.equal((await owner.get(`${program.base}/webhooks/not-a-uuid`)).status, 404);
      await sleep(300);
      assert.deepEqual(await snapshot(), before);
      assert.ok(before.endpoints.some((w) => w.id === disabled && w.disabled_at !== null), 'the disabled endpoint stayed disabled');
    });
  });

  it('pages the attempts 50 at a time, newest first', async () => {
    const hooks = await receiver();
    const { id } = await createEndpoint(`${hooks.url}/paged`);
    await sendTest(id);
    await waitForStates(id, 1, 'delivered', 'the test event');
    await waitUntil(async () => (await attemptCount(id)) === 1, 'its attempt');
    const [delivery] = await deliveries(id);
    const start = Date.now() - 3_600_000;
    await db()
      .insertInto('webhook_attempts')
      .values(
        Array.from({ length: 54 }, (_, i) => ({
          delivery_id: delivery!.id,
          webhook_id: id,
          event_id: delivery!.event_id,
          // Two attempts per second: pairs share a time, so the id breaks the tie.
          attempted_at: new Date(start + Math.floor(i / 2) * 1000).toISOString(),
          status_code: 500,
          duration_ms: i,
          response_excerpt: `older attempt ${i}`,
          error: null,
        })),
      )
      .execute();

    const first = await owner.page(webhookPath(id));
    const firstRows = attemptRows(first);
    assert.equal(firstRows.length, 50);
    assert.match(firstRows[0]!.html, /HTTP 200/, 'the newest attempt first');
    const next = nextLink(first);
    assert.ok(next, 'a Next link');
    const second = await owner.page(next);
    const secondRows = attemptRows(second);
    assert.equal(secondRows.length, 5);
    assert.equal(nextLink(second), null);
    assert.match(second, /First page/);
    const all = [...firstRows, ...secondRows];
    assert.equal(new Set(all.map((r) => r.id)).size, 55, 'no attempt twice, none missing');
    const times = all.map((r) => /datetime="([^"]+)"/.exec(r.html)![1]!);
    assert.deepEqual([...times].sort().reverse(), times, 'newest first');
    assert.match(secondRows.at(-1)!.html, /older attempt 0</, 'the oldest last');

    const forged = Buffer.from(JSON.stringify(['2025-01-01T00:00:00.000Z', 'abc'])).toString('base64url');
    assert.equal((await owner.get(`${webhookPath(id)}?cursor=${forged}`)).status, 400, 'a forged cursor is refused (400), not a 500');
  });
});

describe('dashboard: webhooks without WEBHOOK_ALLOW_PRIVATE_URLS', () => {
  // Nothing here reaches any address: refusals come from the URL's form and address literals
  // (no DNS), and the server runs no worker.
  let strict: TestServer;
  let merchant: BrowserSession;
  let shop: { id: string; base: string };

  before(async () => {
    strict = await startTestServer({ webhookAllowPrivateUrls: false, worker: false });
    merchant = await BrowserSession.signUp(strict.url, uniqueEmail('strict'));
    shop = await merchant.createProgram({ name: 'Strict Shop', domain: 'strict.example' });
  });
  after(async () => {
    await strict?.close();
  });

  it('names WEBHOOK_ALLOW_PRIVATE_URLS in the help and beside a refused local or plain-http URL', async () => {
    const page = await merchant.page(`${shop.base}/webhooks`);
    assert.match(page, /id="f-url-help">[^<]*an https URL on a public host\. A receiver on this machine or your network needs WEBHOOK_ALLOW_PRIVATE_URLS=1/);
    for (const url of ['https://127.0.0.1:8443/hooks', 'https://[::1]/hooks', 'https://192.168.1.20/hooks', 'http://receiver.example/hooks']) {
      const refused = await addEndpoint(shop.base, url, ['*'], merchant);
      assert.equal(refused.status, 422, url);
      assert.match(refused.text, /id="f-url-error">[^<]*(private address|Must use https)[^<]*To reach a receiver on this machine or your network[^<]*WEBHOOK_ALLOW_PRIVATE_URLS=1 \(for local development only\)\.</, url);
    }
    const credentials = await addEndpoint(shop.base, 'https://user:pw@receiver.example/x', ['*'], merchant);
    assert.match(credentials.text, /id="f-url-error">Must not carry a user name or password\.</);
    assert.doesNotMatch(credentials.text, /id="f-url-error">[^<]*WEBHOOK_ALLOW_PRIVATE_URLS/, 'a refusal the setting does not lift does not name it');
    assert.equal((await rawDb(strict).selectFrom('webhooks').select('id').execute()).length, 0);
  });
});
