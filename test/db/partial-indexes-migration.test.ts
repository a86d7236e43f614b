// The partial-indexes migration (issue 22): indexes over columns that are null on most new rows
// keep only the rows with a value, on both dialects, and the lookups that need them still use
// them; down restores the full indexes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import * as partialIndexes from '../../src/db/migrations/2026-11-28T0100-partial-indexes.ts';
import { dialectOf } from '../../src/db/dialect.ts';
import type { Db } from '../../src/db/transaction.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

const INDEXES = ['events_sequence', 'events_program_sequence', 'commission_entries_payout', 'sales_invoice_key', 'sales_promotional_code'];

/** Each index's definition as the database reports it. */
async function definitions(db: Db): Promise<Map<string, string>> {
  const rows =
    dialectOf(db) === 'postgres'
      ? (await sql<{ name: string; definition: string }>`select indexname as name, indexdef as definition from pg_indexes where indexname in (${sql.join(INDEXES)})`.execute(db)).rows
      : (await sql<{ name: string; definition: string }>`select name, sql as definition from sqlite_master where type = 'index' and name in (${sql.join(INDEXES)})`.execute(db)).rows;
  return new Map(rows.map((row) => [row.name, row.definition.toLowerCase()]));
}

/** The plan of a query, as text: it names the index it uses. */
async function plan(db: Db, query: ReturnType<typeof sql>): Promise<string> {
  if (dialectOf(db) === 'postgres') {
    // The test tables are tiny: without this the planner rightly prefers reading the table.
    await sql`set enable_seqscan = off`.execute(db);
    const rows = (await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(db)).rows;
    await sql`reset enable_seqscan`.execute(db);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  }
  return (await sql<{ detail: string }>`explain query plan ${query}`.execute(db)).rows.map((row) => row.detail).join('\n');
}

describe('the partial-indexes migration', () => {
  it('keeps only rows with a value in each index, which the lookups still use; down restores the full indexes', async () => {
    const db = migrated();
    const after = await definitions(db);
    assert.equal(after.size, INDEXES.length);
    for (const [name, definition] of after) assert.match(definition, /where .*is not null/, `${name} is partial`);
    assert.match(after.get('events_sequence')!, /unique/);
    assert.match(after.get('sales_invoice_key')!, /unique/);

    const programId = '00000000-0000-4000-8000-000000000001';
    assert.match(await plan(db, sql`select id from events where sequence > ${5} order by sequence limit 10`), /events_sequence/);
    assert.match(await plan(db, sql`select id from events where program_id = ${programId} and sequence > ${5} order by sequence`), /events_program_sequence/);
    assert.match(await plan(db, sql`select id from sales where program_id = ${programId} and invoice_key = ${'in_1'}`), /sales_invoice_key/);
    assert.match(await plan(db, sql`select id from commission_entries where payout_id = ${programId}`), /commission_entries_payout/);
    assert.match(await plan(db, sql`select id from sales where promotional_code_id = ${programId}`), /sales_promotional_code/);

    await partialIndexes.down(db as unknown as Kysely<unknown>);
    for (const [name, definition] of await definitions(db)) assert.doesNotMatch(definition, /where/, `${name} is full again`);
    await partialIndexes.up(db as unknown as Kysely<unknown>);
  });
});
