import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Db } from '../../src/db/transaction.ts';
import { commissionTakenBack } from '../../src/domain/commission.ts';
import { toIso } from '../../src/domain/clock.ts';
import { ledgerBalance } from '../../src/modules/ledger/ledger.repository.ts';

// Every stored counter of a program, compared with a recount from the rows it summarises:
// what any mix of sales, edits, refunds and deletes must leave exact. Clicks are recounted
// from both the raw rows (so not after a purge) and the daily counts.

type Row = Record<string, unknown>;

/** Rows as comparable plain values: every number as a JS number, sorted by id. */
function plain(rows: Row[]): Row[] {
  return rows
    .map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, key === 'id' ? String(value) : Number(value ?? 0)])))
    .sort((a, b) => String(a.id).localeCompare(String(b.id)));
}

export async function assertCountersMatchRows(db: Db, programId: string): Promise<void> {
  const affiliates = await db
    .selectFrom('affiliates as a')
    .select(['a.id', 'a.number_of_referred_users as referred', 'a.total_commission_earned as commission', 'a.number_of_clicks as clicks'])
    .select(['a.number_of_sales as sales', 'a.total_sales_amount as amount', 'a.total_refunded_amount as refunded'])
    .select((eb) => [
      eb.selectFrom('clicks as c').select(eb.fn.countAll().as('n')).whereRef('c.affiliate_id', '=', 'a.id').as('recounted_clicks'),
      eb.selectFrom('click_days as d').select(sql<number>`coalesce(sum(d.clicks), 0)`.as('n')).whereRef('d.affiliate_id', '=', 'a.id').as('daily_clicks'),
      eb.selectFrom('referrals as r').select(eb.fn.countAll().as('n')).whereRef('r.affiliate_id', '=', 'a.id').as('recounted_referred'),
      eb.selectFrom('sales as s').select(sql<number>`coalesce(sum(s.commission - s.refunded_commission), 0)`.as('c')).whereRef('s.affiliate_id', '=', 'a.id').as('recounted_commission'),
      eb.selectFrom('sales as s').select(eb.fn.countAll().as('n')).whereRef('s.affiliate_id', '=', 'a.id').as('recounted_sales'),
      eb.selectFrom('sales as s').select(sql<number>`coalesce(sum(s.total_earned), 0)`.as('t')).whereRef('s.affiliate_id', '=', 'a.id').as('recounted_amount'),
      eb.selectFrom('sales as s').select(sql<number>`coalesce(sum(s.refunded_amount), 0)`.as('r')).whereRef('s.affiliate_id', '=', 'a.id').as('recounted_refunded'),
    ])
    .where('a.program_id', '=', programId)
    .execute();
  for (const a of plain(affiliates)) {
    assert.deepEqual(
      { referred: a.referred, commission: a.commission, clicks: a.clicks, dailyClicks: a.clicks, sales: a.sales, amount: a.amount, refunded: a.refunded },
      {
        referred: a.recounted_referred, commission: a.recounted_commission, clicks: a.recounted_clicks, dailyClicks: a.daily_clicks,
        sales: a.recounted_sales, amount: a.recounted_amount, refunded: a.recounted_refunded,
      },
      `affiliate ${a.id}`,
    );
  }

  const links = await db
    .selectFrom('affiliate_links as l')
    .select(['l.id', 'l.referrals', 'l.sales', 'l.total_revenue as revenue', 'l.clicks'])
    .select((eb) => [
      eb.selectFrom('clicks as c').select(eb.fn.countAll().as('n')).whereRef('c.link_id', '=', 'l.id').as('recounted_clicks'),
      eb.selectFrom('click_days as d').select(sql<number>`coalesce(sum(d.clicks), 0)`.as('n')).whereRef('d.link_id', '=', 'l.id').as('daily_clicks'),
      eb.selectFrom('referrals as r').select(eb.fn.countAll().as('n')).whereRef('r.link_id', '=', 'l.id').as('recounted_referrals'),
      eb.selectFrom('sales as s').select(eb.fn.countAll().as('n')).whereRef('s.link_id', '=', 'l.id').as('recounted_sales'),
      eb.selectFrom('sales as s').select(sql<number>`coalesce(sum(s.total_earned - s.refunded_amount), 0)`.as('r')).whereRef('s.link_id', '=', 'l.id').as('recounted_revenue'),
    ])
    .where('l.program_id', '=', programId)
    .execute();
  for (const l of plain(links)) {
    assert.deepEqual(
      { referrals: l.referrals, sales: l.sales, revenue: l.revenue, clicks: l.clicks, dailyClicks: l.clicks },
      { referrals: l.recounted_referrals, sales: l.recounted_sales, revenue: l.recounted_revenue, clicks: l.recounted_clicks, dailyClicks: l.daily_clicks },
      `link ${l.id}`,
    );
  }

  const sales = await db
    .selectFrom('sales as s')
    .select(['s.id', 's.refunded_amount as refunded', 's.refunded_commission as refunded_commission', 's.total_earned as total', 's.commission'])
    .select((eb) => [
      eb.selectFrom('sale_refunds as f').select(sql<number>`coalesce(sum(f.amount), 0)`.as('a')).whereRef('f.sale_id', '=', 's.id').as('recounted_refunded'),
    ])
    .where('s.program_id', '=', programId)
    .execute();
  for (const s of plain(sales)) {
    // The commission taken back is the refunded share of the sale's current commission (an edit
    // after a refund re-proportions it; each refund row keeps what it took back at the time).
    assert.deepEqual(
      { refunded: s.refunded, refunded_commission: s.refunded_commission },
      { refunded: s.recounted_refunded, refunded_commission: commissionTakenBack(s.commission as number, s.refunded as number, s.total as number) },
      `sale ${s.id}`,
    );
    assert.ok((s.refunded as number) <= (s.total as number), `sale ${s.id} refunded no more than it earned`);
    assert.ok((s.refunded_commission as number) <= (s.commission as number), `sale ${s.id} took back no more commission than it paid`);
  }

  // The program's sale_days: per UTC day of the sale and shard (the first hex digit of the
  // affiliate's id), the count, amounts, refunds and net commission of its sales.
  const recounted = new Map<string, { sales: number; amount: number; refunded: number; commission: number }>();
  const saleRows = await db.selectFrom('sales').select(['affiliate_id', 'created_at', 'total_earned', 'refunded_amount', 'commission', 'refunded_commission']).where('program_id', '=', programId).execute();
  for (const s of saleRows) {
    const key = `${toIso(s.created_at).slice(0, 10)} ${s.affiliate_id.slice(0, 1)}`;
    const day = recounted.get(key) ?? { sales: 0, amount: 0, refunded: 0, commission: 0 };
    day.sales += 1;
    day.amount += Number(s.total_earned);
    day.refunded += Number(s.refunded_amount);
    day.commission += Number(s.commission) - Number(s.refunded_commission);
    recounted.set(key, day);
  }
  const kept = await db.selectFrom('sale_days').select(['day', 'shard', 'sales', 'amount', 'refunded', 'commission']).where('program_id', '=', programId).execute();
  const keptByKey = new Map(
    kept
      .map((row) => [`${row.day} ${row.shard}`, { sales: Number(row.sales), amount: Number(row.amount), refunded: Number(row.refunded), commission: Number(row.commission) }] as const)
      .filter(([, row]) => row.sales !== 0 || row.amount !== 0 || row.refunded !== 0 || row.commission !== 0),
  );
  assert.deepEqual(Object.fromEntries([...keptByKey].sort()), Object.fromEntries([...recounted].sort()), 'sale_days equal the sales recounted by day and shard');
  await assertAffiliateCountsMatchRows(db, programId);
}

/**
 * The program's affiliate_counts: per shard (the first hex digit of the affiliate's id) and
 * status, how many affiliates there are; rows moved down to 0 are the same as no row.
 */
export async function assertAffiliateCountsMatchRows(db: Db, programId: string): Promise<void> {
  const recounted = new Map<string, number>();
  for (const a of await db.selectFrom('affiliates').select(['id', 'status']).where('program_id', '=', programId).execute()) {
    const key = `${a.id.slice(0, 1)} ${a.status}`;
    recounted.set(key, (recounted.get(key) ?? 0) + 1);
  }
  const kept = await db.selectFrom('affiliate_counts').select(['shard', 'status', 'affiliates']).where('program_id', '=', programId).execute();
  const keptByKey = kept.map((row) => [`${row.shard} ${row.status}`, Number(row.affiliates)] as const).filter(([, n]) => n !== 0);
  assert.deepEqual(Object.fromEntries(keptByKey.sort()), Object.fromEntries([...recounted].sort()), 'affiliate_counts equal the affiliates recounted by shard and status');

  // affiliate_counter_totals: what the affiliates' referral and click counters add up to, per shard.
  const counters = new Map<string, { referrals: number; clicks: number }>();
  for (const a of await db.selectFrom('affiliates').select(['id', 'number_of_referred_users', 'number_of_clicks']).where('program_id', '=', programId).execute()) {
    const shard = counters.get(a.id.slice(0, 1)) ?? { referrals: 0, clicks: 0 };
    shard.referrals += Number(a.number_of_referred_users);
    shard.clicks += Number(a.number_of_clicks);
    counters.set(a.id.slice(0, 1), shard);
  }
  const totals = await db.selectFrom('affiliate_counter_totals').select(['shard', 'referrals', 'clicks']).where('program_id', '=', programId).execute();
  const nonZero = (entries: [string, { referrals: number; clicks: number }][]) => Object.fromEntries(entries.filter(([, t]) => t.referrals !== 0 || t.clicks !== 0).sort());
  assert.deepEqual(
    nonZero(totals.map((row) => [row.shard, { referrals: Number(row.referrals), clicks: Number(row.clicks) }])),
    nonZero([...counters]),
    "affiliate_counter_totals equal the affiliates' counters summed by shard",
  );
}

/**
 * The ledger's invariants (CONTRACT "Commission plans and the ledger", "Payouts"): a sale's
 * entries add up to its net commission (a voided sale's to 0); an affiliate's to its
 * totalCommissionEarned; a pending or paid payout holds entries adding up to its frozen amount
 * (a failed one none); paid entries are exactly the entries of paid payouts.
 */
export async function assertLedgerMatchesCounters(db: Db, programId: string): Promise<void> {
  const entries = await db.selectFrom('commission_entries').select(['id', 'affiliate_id', 'sale_id', 'payout_id', 'amount', 'paid_at', 'due_at', 'held_by']).where('program_id', '=', programId).execute();
  const sumBy = (key: (e: (typeof entries)[number]) => string | null) => {
    const sums = new Map<string, { amount: number; count: number }>();
    for (const e of entries) {
      const k = key(e);
      if (k === null) continue;
      const s = sums.get(k) ?? { amount: 0, count: 0 };
      s.amount += Number(e.amount);
      s.count += 1;
      sums.set(k, s);
    }
    return sums;
  };

  const bySale = sumBy((e) => (e.sale_id === null ? null : String(e.sale_id)));
  const sales = await db.selectFrom('sales').select(['id', 'commission', 'refunded_commission']).where('program_id', '=', programId).execute();
  const saleIds = new Set(sales.map((s) => String(s.id)));
  for (const s of sales) {
    assert.equal(bySale.get(String(s.id))?.amount ?? 0, Number(s.commission) - Number(s.refunded_commission), `sale ${s.id}: its entries add up to its net commission`);
    assert.ok(bySale.has(String(s.id)), `sale ${s.id} has its sale entry`);
  }
  for (const [saleId, s] of bySale) if (!saleIds.has(saleId)) assert.equal(s.amount, 0, `voided sale ${saleId}: its entries add up to 0`);

  const byAffiliate = sumBy((e) => e.affiliate_id);
  const affiliates = await db.selectFrom('affiliates').select(['id', 'total_commission_earned']).where('program_id', '=', programId).execute();
  for (const a of affiliates) {
    assert.equal(byAffiliate.get(a.id)?.amount ?? 0, Number(a.total_commission_earned), `affiliate ${a.id}: its entries add up to totalCommissionEarned`);
  }

  const byPayout = sumBy((e) => e.payout_id);
  const payouts = await db.selectFrom('payouts').select(['id', 'amount', 'entry_count', 'status', 'affiliate_id']).where('program_id', '=', programId).execute();
  const payoutIds = new Set(payouts.map((p) => p.id));
  for (const p of payouts) {
    const held = byPayout.get(p.id) ?? { amount: 0, count: 0 };
    if (p.status === 'failed') {
      assert.equal(held.count, 0, `failed payout ${p.id} holds no entries`);
    } else {
      assert.deepEqual([held.amount, held.count], [Number(p.amount), Number(p.entry_count)], `payout ${p.id}: its entries add up to its frozen amount`);
      assert.ok(Number(p.amount) > 0, `payout ${p.id} pays a positive amount`);
    }
  }
  const paidPayouts = new Set(payouts.filter((p) => p.status === 'paid').map((p) => p.id));
  for (const e of entries) {
    if (e.payout_id !== null) assert.ok(payoutIds.has(e.payout_id), `entry ${e.id} is in a payout that exists`);
    assert.equal(e.paid_at !== null, e.payout_id !== null && paidPayouts.has(e.payout_id), `entry ${e.id} is paid exactly when its payout is`);
  }

  // The balances the portal, the affiliate page and the payouts page show (read from the unpaid
  // entries and the kept totals) equal the sums of every entry, for the program and each affiliate.
  const now = new Date().toISOString();
  const balanceOf = (own: typeof entries, at = now) => {
    const sum = (keep: (e: (typeof entries)[number]) => boolean) => own.filter(keep).reduce((total, e) => total + Number(e.amount), 0);
    const unpaid = (e: (typeof entries)[number]) => e.paid_at === null;
    const dueNow = (e: (typeof entries)[number]) => unpaid(e) && e.held_by === null && toIso(e.due_at) <= at;
    return {
      pending: sum((e) => unpaid(e) && (e.held_by !== null || toIso(e.due_at) > at)),
      held: sum((e) => unpaid(e) && e.held_by !== null),
      due: sum(dueNow),
      dueOutsidePayouts: sum((e) => dueNow(e) && e.payout_id === null),
      paid: sum((e) => e.paid_at !== null),
    };
  };
  // The program's balance is read from unpaid_days, split at `now` within today by today's
  // entries: it must hold at any instant, at an entry's due time, just before it, and at the
  // start and end of its day.
  const instants = new Set<string>();
  for (const e of entries.slice(0, 25)) {
    const due = Date.parse(toIso(e.due_at));
    const dayStart = Date.parse(`${toIso(e.due_at).slice(0, 10)}T00:00:00.000Z`);
    for (const t of [due, due - 1, dayStart, dayStart - 1, dayStart + 86_400_000 - 1]) instants.add(new Date(t).toISOString());
  }
  for (const at of instants) assert.deepEqual(await ledgerBalance(db, programId, at), balanceOf(entries, at), `the program balance at ${at} equals the sums of its entries`);
  // unpaid_days holds the unpaid entries' sums by due day, shard, hold and payout.
  const kept = new Map<string, number>();
  for (const row of await db.selectFrom('unpaid_days').selectAll().where('program_id', '=', programId).execute()) {
    if (Number(row.amount) !== 0) kept.set(`${row.due_day} ${row.shard} ${row.held} ${row.in_payout}`, Number(row.amount));
  }
  const recounted = new Map<string, number>();
  for (const e of entries.filter((entry) => entry.paid_at === null)) {
    const key = `${toIso(e.due_at).slice(0, 10)} ${e.affiliate_id.slice(0, 1)} ${e.held_by === null ? 0 : 1} ${e.payout_id === null ? 0 : 1}`;
    recounted.set(key, (recounted.get(key) ?? 0) + Number(e.amount));
  }
  for (const [key, amount] of recounted) if (amount === 0) recounted.delete(key);
  assert.deepEqual(Object.fromEntries([...kept].sort()), Object.fromEntries([...recounted].sort()), 'unpaid_days equals the unpaid entries summed by due day, shard, hold and payout');
  assert.deepEqual(await ledgerBalance(db, programId, now), balanceOf(entries), 'the program balance equals the sums of its entries');
  for (const a of affiliates) {
    assert.deepEqual(await ledgerBalance(db, programId, now, a.id), balanceOf(entries.filter((e) => e.affiliate_id === a.id)), `affiliate ${a.id}: its balance equals the sums of its entries`);
  }
}
