// Upgrading a database made before portal generations (issue 29 item 12): a session an
// affiliate held when it was deactivated, before the upgrade, does not come back when the
// affiliate is reactivated after it; an active affiliate's session keeps working.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import * as generation from '../../src/db/migrations/2026-11-30T0100-portal-access-generation.ts';
import { createAffiliate, updateAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { portalSessionAffiliate } from '../../src/modules/portal/portal-login.service.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('the portal generation migration over stored sessions', () => {
  it('starts inactive affiliates one generation on, so their old sessions stay ended', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const active = await createAffiliate(db, program, { firstName: 'Ann', lastName: 'Active', email: 'ann@example.com' });
    const inactive = await createAffiliate(db, program, { firstName: 'Ian', lastName: 'Inactive', email: 'ian@example.com' });

    await generation.down(db as unknown as Kysely<unknown>);
    // What the previous version stored: a deactivation that left the session row, as it did.
    await db.updateTable('affiliates').set({ status: 'inactive' }).where('id', '=', inactive.id).execute();
    const now = new Date();
    for (const [id, affiliate] of [['session-of-ann', active], ['session-of-ian', inactive]] as const) {
      await (db as unknown as Kysely<any>)
        .insertInto('portal_sessions')
        .values({ id_hash: sha256(id), program_id: program.id, affiliate_id: affiliate.id, created_at: now.toISOString(), expires_at: new Date(now.getTime() + 86_400_000).toISOString() })
        .execute();
    }
    await generation.up(db as unknown as Kysely<unknown>);

    const generations = await db.selectFrom('affiliates').select(['first_name', 'portal_generation']).orderBy('first_name').execute();
    assert.deepEqual(generations.map((a) => [a.first_name, Number(a.portal_generation)]), [['Ann', 0], ['Ian', 1]]);
    assert.equal((await portalSessionAffiliate(db, program, 'session-of-ann'))?.id, active.id);
    await updateAffiliate(db, program, inactive.id, { status: 'active' });
    assert.equal(await portalSessionAffiliate(db, program, 'session-of-ian'), undefined, 'reactivated after the upgrade: the old session stays ended');
  });
});
