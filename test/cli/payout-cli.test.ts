// `tandem program update` (the commission plan, the portal and what `program create` sets) and
// `tandem payout run`, run as operators run them: ./bin/tandem in a child process over a
// SQLite file (CONTRACT.md "Operator command line").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testDialect } from '../helpers/test-database.ts';
import { runTandem } from '../helpers/cli.ts';
import { openDatabase } from '../../src/db/database.ts';
import { getProgram, toProgramContext } from '../../src/modules/programs/program.service.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale } from '../../src/modules/sales/sale.service.ts';
import { systemClock } from '../../src/domain/clock.ts';

describe('tandem program update and payout run', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only (it makes its own SQLite files)' }, () => {
  let dir: string;
  let env: Record<string, string>;
  let programId: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tandem-payout-cli-'));
    env = { DATABASE_URL: `sqlite:${join(dir, 'x.db')}` };
    assert.equal((await runTandem(['user', 'create', '--email', 'owner@example.com', '--password', 'a long password'], env)).code, 0);
    const program = await runTandem(['program', 'create', '--owner', 'owner@example.com', '--name', 'Acme', '--domain', 'acme.example.com', '--json'], env);
    programId = program.json.id;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('program update changes the plan it names and keeps every other setting', async () => {
    const run = await runTandem(
      ['program', 'update', '--program', programId, '--commission-type', 'flat', '--commission-amount', '7.5', '--duration-months', '12', '--max-sales-per-customer', '3', '--hold-days', '0', '--minimum-payout', '10', '--json'],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.json.commission, { type: 'flat', rate: 20, amount: 7.5, durationMonths: 12, maxSalesPerCustomer: 3, holdDays: 0, minimumPayout: 10 });
    assert.equal(run.json.name, 'Acme');
    const back = await runTandem(['program', 'update', '--program', programId, '--duration-months', 'none', '--name', 'Acme Partners'], env);
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, /pays 7.5 USD per sale forever, first 3 sales; hold 0 days; minimum payout 10 USD/);
    const portal = await runTandem(['program', 'update', '--program', programId, '--portal-slug', 'acme-partners', '--portal-signup', 'open', '--json'], env);
    assert.equal(portal.code, 0, portal.stderr);
    assert.deepEqual(portal.json.portal, { slug: 'acme-partners', signup: 'open', color: '#3b5bdb', terms: '', linksAllowed: false });
    const stripe = await runTandem(['program', 'update', '--program', programId, '--stripe-webhook-secret', 'whsec_cliSecret12345678'], env);
    assert.equal(stripe.code, 0, stripe.stderr);
    assert.ok(!stripe.stdout.includes('cliSecret'), 'the secret is never printed');
    const badStripe = await runTandem(['program', 'update', '--program', programId, '--stripe-webhook-secret', 'sk_live_x'], env);
    assert.equal(badStripe.code, 1);
    assert.match(badStripe.stderr, /stripeWebhookSecret must be a Stripe webhook signing secret/);
    const badSignup = await runTandem(['program', 'update', '--program', programId, '--portal-signup', 'everyone'], env);
    assert.equal(badSignup.code, 2, 'a value outside the flag\'s choices is a usage error');
    assert.match(badSignup.stderr, /--portal-signup must be one of open, approval, invite, not "everyone"/);
  });

  it('refuses a bad value with a one-line reason and changes nothing', async () => {
    // 1: a value the program's rules refuse; 2: a flag value that is malformed, or no setting at all.
    for (const [args, reason, code] of [
      [['--hold-days', '400'], /commission\/holdDays must be a whole number of days from 0 to 365/, 1],
      [['--duration-months', 'soon'], /--duration-months must be a number/, 2],
      [['--commission-type', 'tiered'], /--commission-type must be one of percentage, flat, not "tiered"/, 2],
      [[], /name at least one setting/, 2],
    ] as const) {
      const run = await runTandem(['program', 'update', '--program', programId, ...args], env);
      assert.equal(run.code, code, run.stdout);
      assert.equal(run.stderr.trimEnd().split('\n').length, 1, run.stderr);
      assert.match(run.stderr, reason);
    }
    const missing = await runTandem(['program', 'update', '--program', '00000000-0000-4000-8000-000000000000', '--hold-days', '1'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Program not found|not found/i);
    const still = await runTandem(['program', 'update', '--program', programId, '--hold-days', '0', '--json'], env);
    assert.equal(still.json.commission.durationMonths, null);
  });

  it('payout run makes one payout per affiliate owed, then nothing', async () => {
    const database = openDatabase({ databaseUrl: env.DATABASE_URL! });
    try {
      const program = toProgramContext(await getProgram(database.db, programId), systemClock);
      const ann = await createAffiliate(database.db, program, { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' });
      const bob = await createAffiliate(database.db, program, { firstName: 'Bob', lastName: 'Ray', email: 'bob@example.com' });
      for (const n of [1, 2]) await createSale(database.db, program, { referralId: ann.id, email: `c${n}@example.org`, name: 'C', totalEarned: 100 });
      await createSale(database.db, program, { referralId: bob.id, email: 'd@example.org', name: 'D', totalEarned: 100 }); // 7.50: under the minimum of 10
    } finally {
      await database.close();
    }
    const run = await runTandem(['payout', 'run', '--program', programId, '--json'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.json.payouts.map((p: any) => [p.affiliate.email, p.amount, p.entryCount, p.status]), [['ann@example.com', 15, 2, 'pending']]);
    const text = await runTandem(['payout', 'run', '--program', programId], env);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /nothing to pay/);
    const bad = await runTandem(['payout', 'run', '--program', 'nope'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--program must be a program id/);
  });
});
