// Upgrading a database made before the portal (issue 19): every stored program gets a unique
// portal address from its name, oldest first, and every stored affiliate is approved.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as portal from '../../src/db/migrations/2026-11-26T0300-portal.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the portal migration over stored programs', () => {
  it('gives each program a unique slug from its name and approves every affiliate', async () => {
    const db = migrated();
    const program = await seedProgram(db); // "Old"
    const owner = (await db.selectFrom('programs').select('owner_user_id').where('id', '=', program.id).executeTakeFirstOrThrow()).owner_user_id;
    await createProgram(db, { ownerUserId: owner, name: 'Old', domain: 'old2.example' }, () => new Date(Date.now() + 1000));
    await createProgram(db, { ownerUserId: owner, name: 'Ünïcode Shop!', domain: 'u.example' }, () => new Date(Date.now() + 2000));
    await createAffiliate(db, program, { firstName: 'Ann', lastName: 'Old', email: 'ann@example.com' });

    await portal.down(db as unknown as Kysely<unknown>);
    await portal.up(db as unknown as Kysely<unknown>);

    const rows = await db.selectFrom('programs').select(['name', 'portal_slug', 'portal_signup']).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.name, r.portal_slug, r.portal_signup]), [
      ['Old', 'old', 'approval'],
      ['Old', 'old-2', 'approval'],
      ['Ünïcode Shop!', 'unicode-shop', 'approval'],
    ]);
    const affiliates = await db.selectFrom('affiliates').select(['approval', 'status']).execute();
    assert.deepEqual(affiliates.map((a) => [a.approval, a.status]), [['approved', 'active']]);
    // The slug stays unique after the upgrade: a new program of the same name takes the next one.
    const next = await createProgram(db, { ownerUserId: owner, name: 'Old', domain: 'old3.example' });
    assert.equal(next.portal.slug, 'old-3');
  });
});
