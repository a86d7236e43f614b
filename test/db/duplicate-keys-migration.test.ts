// Upgrading a database that already holds duplicate invoices and customer ids (recorded before
// the "recorded once" rule): the migration must not fail, the first of each duplicate holds the
// key, and the rule holds for new rows afterwards.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as duplicateKeys from '../../src/db/migrations/2026-11-23T0400-duplicate-keys.ts';
import { newId } from '../../src/domain/ids.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createReferral } from '../../src/modules/referrals/referral.service.ts';
import { createSale } from '../../src/modules/sales/sale.service.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the duplicate-keys migration over old duplicates', () => {
  it('gives each key to the first of its duplicates, and the rule holds afterwards', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const affiliate = await createAffiliate(db, program, { firstName: 'Ada', lastName: 'Old', email: 'ada@example.com' });
    const referral = await createReferral(db, program, { name: 'Carl', email: 'carl@example.com', referredUserExternalId: 'cus_1', affiliateId: affiliate.id });
    const sale = await createSale(db, program, { referralId: referral.id, totalEarned: 10, externalInvoiceId: 'in_1' });

    // Back to the schema before the rule, and store what it allowed: a second sale of the same
    // invoice and a second referral with the same customer id, both recorded later.
    await duplicateKeys.down(db as unknown as Kysely<unknown>);
    const later = new Date(Date.now() + 60_000).toISOString();
    const { id: _saleId, ...saleRow } = (await db.selectFrom('sales').selectAll().where('id', '=', sale.id).executeTakeFirstOrThrow()) as Record<string, unknown>;
    await db.insertInto('sales').values({ ...saleRow, created_at: later } as never).execute();
    const referralRow = (await db.selectFrom('referrals').selectAll().where('id', '=', referral.id).executeTakeFirstOrThrow()) as Record<string, unknown>;
    const copyId = newId();
    await db.insertInto('referrals').values({ ...referralRow, id: copyId, email: 'carl2@example.com', email_key: 'carl2@example.com', created_at: later } as never).execute();

    await duplicateKeys.up(db as unknown as Kysely<unknown>);
    const sales = await db.selectFrom('sales').select(['id', 'invoice_key']).where('program_id', '=', program.id).orderBy('id').execute();
    assert.deepEqual(sales.map((s) => s.invoice_key), ['in_1', null]);
    assert.equal(Number(sales[0]!.id), sale.id);
    const referrals = await db.selectFrom('referrals').select(['id', 'external_id_key']).where('program_id', '=', program.id).execute();
    assert.deepEqual(Object.fromEntries(referrals.map((r) => [r.id, r.external_id_key])), { [referral.id]: 'cus_1', [copyId]: null });

    await assert.rejects(createSale(db, program, { referralId: referral.id, totalEarned: 10, externalInvoiceId: 'in_1' }), (error: { code?: string; existingId?: number }) => error.code === 'duplicate_sale' && error.existingId === sale.id);
    await assert.rejects(
      createReferral(db, program, { name: 'Dan', email: 'dan@example.com', referredUserExternalId: 'cus_1', affiliateId: affiliate.id }),
      (error: { code?: string; existingId?: string }) => error.code === 'duplicate_referral' && error.existingId === referral.id,
    );
  });
});
