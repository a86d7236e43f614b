// Billing connections (issue 32): a program connects a provider by its secret — from the command
// line (`tandem billing connect|list|disconnect`) or the Stripe field of the dashboard and of
// `tandem program update` — kept sealed in one table and never shown again. The provider's events
// are verified with it and each sets the connection's last event; once disconnected, its events
// are refused and nothing is recorded. The migration moves the Stripe secret a program kept in
// its own row into that table.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import * as billingConnections from '../../src/db/migrations/2026-12-05T0600-billing-connections.ts';
import { dialectOf } from '../../src/db/dialect.ts';
import * as billingProviders from '../../src/db/migrations/2026-12-06T0600-billing-providers.ts';
import { runTandem } from '../helpers/cli.ts';
import { postStripeEvent, stripeEvent, stripeId } from '../helpers/stripe-events.ts';
import { fixture, postPaddleEvent, providerId } from '../helpers/billing-providers.ts';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';

const SECRET = 'whsec_connectionsTestSecret12345';

describe('billing connections from the command line', () => {
  let t: TestServer;
  let shop: ApiClient;
  let other: ApiClient;
  let env: Record<string, string>;

  before(async () => {
    t = await startTestServer();
    shop = await t.createTenant({ name: 'Shop' });
    other = await t.createTenant({ name: 'Other' });
    env = { DATABASE_URL: t.config.databaseUrl, SITE_URL: 'http://tandem.test' };
  });
  after(() => t.close());

  const tandem = (...args: string[]) => runTandem(args, env);
  const customerCreated = () => stripeEvent('customer.created', { id: stripeId('cus'), object: 'customer', email: 'carl@customers.example', name: 'Carl', metadata: {} });

  it('refuses a secret not shaped as the provider issues it, and a provider Tandem does not have, saving nothing', async () => {
    const bad = await tandem('billing', 'connect', '--program', shop.programId, '--provider', 'stripe', '--secret', 'sk_live_not_a_signing_secret');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--secret must be a Stripe webhook signing secret \(whsec_…\)/);
    const unknown = await tandem('billing', 'connect', '--program', shop.programId, '--provider', 'braintree', '--secret', SECRET);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /--provider must be one of stripe/);
    assert.deepEqual((await tandem('billing', 'list', '--program', shop.programId, '--json')).json.connections, []);
    assert.equal((await postStripeEvent(t.url, shop.programId, customerCreated(), SECRET)).status, 400, 'not connected: refused');
  });

  it('connects, lists the last event received, and disconnects; the secret is never printed nor stored as given', async () => {
    const connect = await tandem('billing', 'connect', '--program', shop.programId, '--provider', 'stripe', '--secret', SECRET, '--json');
    assert.equal(connect.code, 0, connect.stderr);
    assert.equal(connect.json.receiver, `http://tandem.test/api/billing/stripe/${shop.programId}`);
    assert.ok(!connect.stdout.includes(SECRET.slice(6)), 'the secret is not printed');
    const stored = await rawDb(t).selectFrom('billing_connections').selectAll().where('program_id', '=', shop.programId).execute();
    assert.equal(stored.length, 1);
    assert.ok(!stored[0]!.secret_sealed.includes(SECRET.slice(6)), 'stored sealed');

    const listed = await tandem('billing', 'list', '--program', shop.programId, '--json');
    assert.deepEqual(listed.json.connections.map((c: any) => [c.provider, c.mode, c.lastEventAt]), [['stripe', 'live', null]]);
    const table = await tandem('billing', 'list', '--program', shop.programId);
    assert.match(table.stdout, /stripe\s+live\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+never\s+http:\/\/tandem\.test\/api\/billing\/stripe\//);
    assert.ok(!table.stdout.includes(SECRET.slice(6)));

    const event = customerCreated();
    assert.equal((await postStripeEvent(t.url, shop.programId, event, SECRET)).status, 200);
    const [received] = (await shop.get('/billing-events')).body;
    assert.equal(received.id, event.id);
    const after = (await tandem('billing', 'list', '--program', shop.programId, '--json')).json.connections[0];
    assert.equal(after.lastEventAt, received.receivedAt, "the last event is the event's arrival");
    assert.deepEqual((await tandem('billing', 'list', '--program', other.programId, '--json')).json.connections, [], "another program's list holds none of it");

    const disconnect = await tandem('billing', 'disconnect', '--program', shop.programId, '--provider', 'stripe');
    assert.equal(disconnect.code, 0, disconnect.stderr);
    assert.match(disconnect.stdout, /disconnected Stripe from program "Shop"/);
    assert.match((await tandem('billing', 'disconnect', '--program', shop.programId, '--provider', 'stripe')).stdout, /was not connected .*nothing changed/);
    const refused = await postStripeEvent(t.url, shop.programId, customerCreated(), SECRET);
    assert.equal(refused.status, 400);
    assert.match(refused.body.detail, /Stripe is not connected to this program/);
    assert.equal((await shop.get('/billing-events')).body.length, 1, 'nothing recorded once disconnected');
  });

  it('connects every provider by its own secret, each checked for its shape; the list holds one row each; a Paddle event verifies with the secret given', async () => {
    const secrets: Record<string, string> = {
      paddle: 'pdl_ntfset_01hv8x2aqs8t6gdn1xqk2f7b1w_Av4U6W2GMu5Kx3j6',
      lemonsqueezy: 'lemon-cli-secret',
      polar: 'polar_whs_cliSecret0123456789',
      chargebee: 'tandem:cli-password-1',
    };
    const refused = await tandem('billing', 'connect', '--program', other.programId, '--provider', 'chargebee', '--secret', 'no-colon-password');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /--secret must be the webhook's basic authentication as user:password/);
    for (const [provider, secret] of Object.entries(secrets)) {
      const connected = await tandem('billing', 'connect', '--program', other.programId, '--provider', provider, '--secret', secret, '--json');
      assert.equal(connected.code, 0, connected.stderr);
      assert.equal(connected.json.receiver, `http://tandem.test/api/billing/${provider}/${other.programId}`);
    }
    const listed = await tandem('billing', 'list', '--program', other.programId, '--json');
    assert.deepEqual(listed.json.connections.map((c: any) => c.provider), ['chargebee', 'lemonsqueezy', 'paddle', 'polar']);
    const event = fixture('paddle', 'customer.created');
    event.event_id = providerId('evt');
    assert.equal((await postPaddleEvent(t.url, other.programId, event, secrets.paddle!)).status, 200);
    assert.equal((await postPaddleEvent(t.url, other.programId, { ...event, event_id: providerId('evt') }, secrets.lemonsqueezy!)).status, 400, "another provider's secret is not Paddle's");
    for (const provider of Object.keys(secrets)) assert.equal((await tandem('billing', 'disconnect', '--program', other.programId, '--provider', provider)).code, 0);
  });

  it('a secret saved again replaces the first: events signed with the old one are refused', async () => {
    const second = 'whsec_connectionsTestSecretTwo999';
    for (const secret of [SECRET, second]) assert.equal((await tandem('billing', 'connect', '--program', other.programId, '--provider', 'stripe', '--secret', secret)).code, 0);
    assert.equal((await postStripeEvent(t.url, other.programId, customerCreated(), SECRET)).status, 400);
    assert.equal((await postStripeEvent(t.url, other.programId, customerCreated(), second)).status, 200);
    assert.equal((await tandem('billing', 'list', '--program', other.programId, '--json')).json.connections.length, 1);
  });
});

describe('the billing-connections migration', () => {
  const migrated = useMigratedDatabase();

  it("moves a program's Stripe secret, with its newest event's time, into the table; down moves it back", async () => {
    const db = migrated() as unknown as Kysely<any>;
    const program = await seedProgram(migrated());
    await seedProgramNamed(db, 'Bare');
    await billingConnections.down(db);
    await db.updateTable('programs').set({ stripe_secret_sealed: 'sealed-secret-as-stored' }).where('id', '=', program.id).execute();
    for (const [id, at] of [['evt_1', '2026-11-01T10:00:00.000Z'], ['evt_2', '2026-11-03T09:00:00.000Z']]) {
      await db.insertInto('billing_events').values({ program_id: program.id, id, provider: 'stripe', type: 'invoice.paid', created_at: at, outcome: 'ignored', reason: 'r', referral_id: null, sale_id: null, waiting: null, customer_id: null }).execute();
    }
    await billingConnections.up(db);
    const rows = await db.selectFrom('billing_connections').selectAll().execute();
    assert.deepEqual(
      rows.map((r: any) => [r.program_id, r.provider, r.mode, r.secret_sealed, new Date(r.last_event_at).toISOString()]),
      [[program.id, 'stripe', 'live', 'sealed-secret-as-stored', '2026-11-03T09:00:00.000Z']],
      'only the program with a secret has a connection',
    );
    const columns = await sql<{ name: string }>`select * from programs`.execute(db);
    assert.ok(!Object.keys(columns.rows[0] ?? {}).includes('stripe_secret_sealed'), 'the column is gone');
    await billingConnections.down(db);
    const back = await db.selectFrom('programs').select(['id', 'stripe_secret_sealed']).orderBy('name').execute();
    assert.deepEqual(back.map((r: any) => r.stripe_secret_sealed).sort(), ['sealed-secret-as-stored', null].sort());
    await billingConnections.up(db);
  });
});

describe('the billing-providers migration', () => {
  const migrated = useMigratedDatabase();

  it("keys billing events by program, provider and id, keeping every row and index; down keys them as before", async () => {
    const db = migrated() as unknown as Kysely<any>;
    const program = await seedProgram(migrated());
    await billingProviders.down(db);
    const event = (id: string, provider: string, outcome = 'ignored') => ({ program_id: program.id, id, provider, type: 'invoice.paid', created_at: '2026-11-01T10:00:00.000Z', outcome, reason: 'r', referral_id: null, sale_id: null, waiting: outcome === 'waiting' ? '{}' : null, customer_id: outcome === 'waiting' ? 'cus_1' : null });
    await db.insertInto('billing_events').values([event('evt_1', 'stripe'), event('evt_2', 'stripe', 'waiting')]).execute();
    await assert.rejects(db.insertInto('billing_events').values(event('evt_1', 'paddle')).execute(), 'before: one id per program');
    await billingProviders.up(db);
    assert.deepEqual((await db.selectFrom('billing_events').select(['id', 'outcome']).orderBy('id').execute()).map((r: any) => [r.id, r.outcome]), [['evt_1', 'ignored'], ['evt_2', 'waiting']]);
    await db.insertInto('billing_events').values({ ...event('evt_1', 'paddle'), created_at: '2026-11-02T10:00:00.000Z' }).execute();
    await assert.rejects(db.insertInto('billing_events').values(event('evt_1', 'paddle')).execute(), 'after: one id per program and provider');
    await db.insertInto('billing_customers').values({ program_id: program.id, provider: 'paddle', id: 'ctm_1', email: 'pat@example.org', name: null, since: null, seen_at: '2026-11-01T10:00:00.000Z' }).execute();
    const indexes = async () =>
      (await sql<{ name: string }>`${sql.raw(dialectOf(db) === 'postgres' ? "select indexname as name from pg_indexes where tablename = 'billing_events'" : "select name from sqlite_master where type = 'index' and tbl_name = 'billing_events' and sql is not null")}`.execute(db)).rows.map((r) => r.name).filter((n) => !n.endsWith('_pk')).sort();
    assert.deepEqual(await indexes(), ['billing_events_age', 'billing_events_received', 'billing_events_waiting', 'billing_events_waiting_since']);
    await billingProviders.down(db);
    assert.deepEqual((await db.selectFrom('billing_events').select(['id', 'provider']).orderBy('id').execute()).map((r: any) => [r.id, r.provider]), [['evt_1', 'stripe'], ['evt_2', 'stripe']], 'down keeps the older of two events sharing an id');
    assert.deepEqual(await indexes(), ['billing_events_age', 'billing_events_received', 'billing_events_waiting', 'billing_events_waiting_since']);
    await billingProviders.up(db);
  });
});

/** A second program of the seeded owner, a copy of the first under another name. */
async function seedProgramNamed(db: Kysely<any>, name: string): Promise<string> {
  const owner = await db.selectFrom('users').select('id').executeTakeFirstOrThrow();
  const row = await db.selectFrom('programs').selectAll().executeTakeFirstOrThrow();
  const id = crypto.randomUUID();
  await db.insertInto('programs').values({ ...row, id, name, portal_slug: `${row.portal_slug}-${name.toLowerCase()}`, owner_user_id: owner.id }).execute();
  return id;
}
