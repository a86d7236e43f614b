import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Test mode (issue 33): a program's test side is a program of its own, linked to its live program
// by live_program_id (null on a live program). Everything Tandem keeps is scoped by program, so
// every query that isolates one program from another isolates the test side from the live one
// already: no query needs a `livemode` condition, and none can forget one. At most one test side
// per live program (a unique index); it goes with its live program.
export async function up(db: Kysely<unknown>): Promise<void> {
  const uuid = dialectOf(db) === 'postgres' ? sql`uuid` : sql`text`;
  await db.schema.alterTable('programs').addColumn('live_program_id', uuid, (c) => c.references('programs.id').onDelete('cascade')).execute();
  await db.schema.createIndex('programs_live_program').unique().on('programs').column('live_program_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from programs where live_program_id is not null`.execute(db);
  await db.schema.dropIndex('programs_live_program').execute();
  await db.schema.alterTable('programs').dropColumn('live_program_id').execute();
}
