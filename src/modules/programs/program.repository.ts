import type { Selectable, Updateable } from 'kysely';
import type { ProgramsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';

// All SQL of programs/: the `programs` table is written here only (the Stripe signing secret
// the billing module saves included); every read of a program by id, owner or portal slug.

export type ProgramRow = Selectable<ProgramsTable>;

export async function insertProgram(db: Db, row: ProgramRow): Promise<void> {
  await db.insertInto('programs').values(row).execute();
}

/** The portal slugs in use that are `base` or start with `base-` (a new program's slug avoids them). */
export async function findSlugsLike(db: Db, base: string): Promise<string[]> {
  const rows = await db.selectFrom('programs').select('portal_slug').where((eb) => eb.or([eb('portal_slug', '=', base), eb('portal_slug', 'like', `${base}-%`)])).execute();
  return rows.map((r) => r.portal_slug);
}

export function findProgramRow(db: Db, programId: string): Promise<ProgramRow | undefined> {
  return db.selectFrom('programs').selectAll().where('id', '=', programId).executeTakeFirst();
}

/** Every program with its owner's e-mail, or the one owner's, oldest first. */
export function listProgramRowsWithOwner(db: Db, filter: { ownerUserId?: string }): Promise<(ProgramRow & { owner_email: string })[]> {
  let query = db.selectFrom('programs as p').innerJoin('users as u', 'u.id', 'p.owner_user_id').selectAll('p').select('u.email as owner_email');
  if (filter.ownerUserId !== undefined) query = query.where('p.owner_user_id', '=', filter.ownerUserId);
  // Test sides are their live programs' (test mode): never listed as programs of their own.
  return query.where('p.live_program_id', 'is', null).orderBy('p.created_at').orderBy('p.id').execute();
}

/** The programs a user owns, oldest first. */
export function listUserProgramRows(db: Db, userId: string): Promise<ProgramRow[]> {
  return db.selectFrom('programs').selectAll().where('owner_user_id', '=', userId).where('live_program_id', 'is', null).orderBy('created_at').orderBy('id').execute();
}

/** The test side of a live program, if it has one yet. */
export function findTestSideRow(db: Db, liveProgramId: string): Promise<ProgramRow | undefined> {
  return db.selectFrom('programs').selectAll().where('live_program_id', '=', liveProgramId).executeTakeFirst();
}

export function findProgramRowBySlug(db: Db, slug: string): Promise<ProgramRow | undefined> {
  return db.selectFrom('programs').selectAll().where('portal_slug', '=', slug).executeTakeFirst();
}

export function findUserProgramRow(db: Db, userId: string, programId: string): Promise<ProgramRow | undefined> {
  return db.selectFrom('programs').selectAll().where('id', '=', programId).where('owner_user_id', '=', userId).executeTakeFirst();
}

/** Whether any stored amount is in the program's currency (sales, the ledger, payouts, codes' minimum amounts). */
export async function hasAmountsInCurrency(db: Db, programId: string): Promise<boolean> {
  const sale = await db.selectFrom('sales').select('id').where('program_id', '=', programId).limit(1).executeTakeFirst();
  if (sale) return true;
  const entry = await db.selectFrom('commission_entries').select('id').where('program_id', '=', programId).limit(1).executeTakeFirst();
  if (entry) return true;
  const code = await db
    .selectFrom('promotional_codes')
    .select('id')
    .where('program_id', '=', programId)
    .where('minimum_amount', 'is not', null)
    .limit(1)
    .executeTakeFirst();
  return code !== undefined;
}

export async function updateUserProgramRow(tx: Tx, userId: string, programId: string, changes: Updateable<ProgramsTable>): Promise<void> {
  await tx.updateTable('programs').set(changes).where('id', '=', programId).where('owner_user_id', '=', userId).execute();
}

