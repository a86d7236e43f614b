// Test mode (issue 33 item 3): a program saves a test secret per provider; an event verified with
// it goes to the program's test side only (where test keys read it), one verified with the live
// secret to the live side only, and one whose own mark (Stripe `livemode`, Lemon Squeezy
// `meta.test_mode`) disagrees with its secret is refused — applied to neither side — and listed,
// on both dialects.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { billingProviderOf, connectBilling } from '../../src/modules/billing/billing.service.ts';
import { openTestSide } from '../../src/modules/programs/program.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { postStripeEvent, stripeEvent, stripeId } from '../helpers/stripe-events.ts';
import { fixture, postLemonSqueezyEvent, postPaddleEvent, providerId } from '../helpers/billing-providers.ts';
import { runTandem } from '../helpers/cli.ts';

let t: TestServer;
let live: ApiClient;
let test: ApiClient;
let liveAffiliate: { id: string; link: string };
let testAffiliate: { id: string; link: string };
const SECRETS = { live: 'whsec_liveSideSecret0001', test: 'whsec_testSideSecret0001' };

before(async () => {
  t = await startTestServer();
  live = await t.createTenant({ name: 'Sides' });
  const side = await openTestSide(rawDb(t), live.programId);
  test = apiClient(t.url, (await issueToken(rawDb(t), { programId: side.id, name: 'test', kind: 'api_key' })).token, side.id);
  const stripe = billingProviderOf('stripe');
  await connectBilling(rawDb(t), live.programId, stripe, SECRETS.live, new Date().toISOString());
  await connectBilling(rawDb(t), live.programId, stripe, SECRETS.test, new Date().toISOString(), '#/secret', 'test');
  // The same link string on both sides: which side an event lands on decides whose affiliate it credits.
  liveAffiliate = (await live.post('/affiliates', { firstName: 'Live', lastName: 'Jane', email: 'jane@sides.example' })).body;
  testAffiliate = (await test.post('/affiliates', { firstName: 'Test', lastName: 'Jane', email: 'jane@sides.example' })).body;
});
after(() => t.close());

const customer = (livemode: boolean, ref: string) => ({ ...stripeEvent('customer.created', { id: stripeId('cus'), object: 'customer', email: `${stripeId('c')}@buyers.example`, name: 'Buyer', metadata: { tandem_referral: ref } }), livemode });

describe("providers' test events", () => {
  it("Stripe: a test event signed with the test secret goes to the test side only; a live one to the live side only", async () => {
    const testEvent = customer(false, testAffiliate.id);
    assert.equal((await postStripeEvent(t.url, live.programId, testEvent, SECRETS.test)).status, 200);
    const liveEvent = customer(true, liveAffiliate.id);
    assert.equal((await postStripeEvent(t.url, live.programId, liveEvent, SECRETS.live)).status, 200);
    const [testEvents, liveEvents] = [(await test.get('/billing-events')).body as any[], (await live.get('/billing-events')).body as any[]];
    assert.ok(testEvents.some((e) => e.id === testEvent.id) && !testEvents.some((e) => e.id === liveEvent.id));
    assert.ok(liveEvents.some((e) => e.id === liveEvent.id) && !liveEvents.some((e) => e.id === testEvent.id));
    const testCustomer = (testEvent.data.object as { id: string }).id;
    assert.equal((await test.get(`/referrals?externalId=${testCustomer}`)).body[0].affiliateId, testAffiliate.id);
    assert.deepEqual((await live.get(`/referrals?externalId=${testCustomer}`)).body, [], 'no live referral of a test customer');
    const connections = await rawDb(t).selectFrom('billing_connections').select(['mode', 'last_event_at']).where('program_id', '=', live.programId).orderBy('mode').execute();
    assert.deepEqual(connections.map((c) => [c.mode, c.last_event_at !== null]), [['live', true], ['test', true]]);
  });

  it('an event whose mark and secret disagree is refused and listed on the secret’s side, recording nothing else', async () => {
    const liveSignedTest = customer(false, liveAffiliate.id);
    const refused = await postStripeEvent(t.url, live.programId, liveSignedTest, SECRETS.live);
    assert.equal(refused.status, 200);
    const listed = ((await live.get('/billing-events')).body as any[]).find((e) => e.id === liveSignedTest.id);
    assert.deepEqual(
      [listed.outcome, listed.reason],
      ['ignored', "refused: a test event signed with the program's live secret belongs to neither side (save the test secret for test events)"],
    );
    assert.deepEqual((await live.get(`/referrals?externalId=${(liveSignedTest.data.object as { id: string }).id}`)).body, []);
    const testSignedLive = customer(true, testAffiliate.id);
    assert.equal((await postStripeEvent(t.url, live.programId, testSignedLive, SECRETS.test)).status, 200);
    assert.ok(((await test.get('/billing-events')).body as any[]).some((e) => e.id === testSignedLive.id && e.outcome === 'ignored'));
    assert.deepEqual((await test.get(`/referrals?externalId=${(testSignedLive.data.object as { id: string }).id}`)).body, []);
  });

  it('Paddle (sandbox: only the secret tells) and Lemon Squeezy (meta.test_mode) route the same way', async () => {
    const paddle = billingProviderOf('paddle');
    const [paddleLive, paddleTest] = ['pdl_ntfset_01hvlive000000000000000000_LiveKey1', 'pdl_ntfset_01hvtest000000000000000000_TestKey1'];
    await connectBilling(rawDb(t), live.programId, paddle, paddleLive, new Date().toISOString());
    await connectBilling(rawDb(t), live.programId, paddle, paddleTest, new Date().toISOString(), '#/secret', 'test');
    const sandbox = fixture('paddle', 'customer.created');
    sandbox.event_id = providerId('evt');
    Object.assign(sandbox.data, { id: providerId('ctm'), email: 'sandbox@buyers.example', custom_data: { tandem_referral: testAffiliate.id } });
    assert.equal((await postPaddleEvent(t.url, live.programId, sandbox, paddleTest)).status, 200);
    assert.equal((await test.get(`/referrals?externalId=${sandbox.data.id}`)).body[0].affiliateId, testAffiliate.id);
    assert.deepEqual((await live.get(`/referrals?externalId=${sandbox.data.id}`)).body, []);

    const lemon = billingProviderOf('lemonsqueezy');
    await connectBilling(rawDb(t), live.programId, lemon, 'lemon-live-secret', new Date().toISOString());
    await connectBilling(rawDb(t), live.programId, lemon, 'lemon-test-secret', new Date().toISOString(), '#/secret', 'test');
    const order = fixture('lemonsqueezy', 'order_created');
    order.meta.test_mode = true;
    order.meta.custom_data = { tandem_referral: testAffiliate.id };
    Object.assign(order.data, { id: '880001' });
    Object.assign(order.data.attributes, { customer_id: 880001, user_email: 'lemon@buyers.example' });
    assert.equal((await postLemonSqueezyEvent(t.url, live.programId, order, 'lemon-test-secret')).status, 200);
    assert.deepEqual(((await test.get('/sales')).body as any[]).map((s) => s.externalInvoiceId), ['orders/880001']);
    assert.equal(((await live.get('/sales')).body as any[]).length, 0);
    assert.equal((await postLemonSqueezyEvent(t.url, live.programId, { ...order, data: { ...order.data, id: '880002' } }, 'lemon-live-secret')).status, 200);
    assert.equal(((await live.get('/sales')).body as any[]).length, 0, 'a test_mode order signed with the live secret is refused');
    assert.match(((await live.get('/billing-events')).body as any[]).find((e) => e.provider === 'lemonsqueezy').reason, /^refused: a test event/);
  });

  it('`tandem billing connect --test` saves the test secret; list shows both sides; disconnect --test forgets only it', async () => {
    const other = await t.createTenant({ name: 'Cli sides' });
    const env = { DATABASE_URL: t.config.databaseUrl, SITE_URL: 'http://tandem.test' };
    assert.equal((await runTandem(['billing', 'connect', '--program', other.programId, '--provider', 'stripe', '--secret', 'whsec_cliLiveSecret001'], env)).code, 0);
    const made = await runTandem(['billing', 'connect', '--program', other.programId, '--provider', 'stripe', '--secret', 'whsec_cliTestSecret001', '--test', '--json'], env);
    assert.equal(made.code, 0, made.stderr);
    assert.equal(made.json.mode, 'test');
    assert.deepEqual((await runTandem(['billing', 'list', '--program', other.programId, '--json'], env)).json.connections.map((c: any) => c.mode), ['live', 'test']);
    assert.equal((await runTandem(['billing', 'disconnect', '--program', other.programId, '--provider', 'stripe', '--test'], env)).code, 0);
    assert.deepEqual((await runTandem(['billing', 'list', '--program', other.programId, '--json'], env)).json.connections.map((c: any) => c.mode), ['live']);
  });
});
