import { sql, type Kysely } from 'kysely';
import { slugCandidate, slugFrom } from '../../domain/portal-slug.ts';

// The affiliate portal's settings per program (issue 19): its slug ({SITE_URL}/portal/{slug},
// unique, from the program's name), the sign-up policy (open, approval — the default — or
// invite), a colour, the terms an affiliate accepts at sign-up, and whether affiliates may add
// links; and each affiliate's approval (pending, approved, rejected; affiliates made by the
// API or the dashboard are approved).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('programs').addColumn('portal_slug', 'text').execute();
  await db.schema.alterTable('programs').addColumn('portal_signup', 'text', (c) => c.notNull().defaultTo('approval')).execute();
  await db.schema.alterTable('programs').addColumn('portal_color', 'text', (c) => c.notNull().defaultTo('#3b5bdb')).execute();
  await db.schema.alterTable('programs').addColumn('portal_terms', 'text', (c) => c.notNull().defaultTo('')).execute();
  await db.schema.alterTable('programs').addColumn('portal_links_allowed', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('affiliates').addColumn('approval', 'text', (c) => c.notNull().defaultTo('approved')).execute();

  // Every program gets its slug, oldest first: acme, acme-2…
  const programs = await sql<{ id: string; name: string }>`select id, name from programs order by created_at, id`.execute(db);
  const taken = new Set<string>();
  for (const program of programs.rows) {
    const base = slugFrom(program.name);
    let n = 1;
    while (taken.has(slugCandidate(base, n))) n++;
    const slug = slugCandidate(base, n);
    taken.add(slug);
    await sql`update programs set portal_slug = ${slug} where id = ${program.id}`.execute(db);
  }
  await db.schema.createIndex('programs_portal_slug').unique().on('programs').column('portal_slug').execute();
  // The approval queue: an affiliate's pending sign-ups by program.
  await db.schema.createIndex('affiliates_approval').on('affiliates').columns(['program_id', 'approval', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('affiliates_approval').execute();
  await db.schema.dropIndex('programs_portal_slug').execute();
  await db.schema.alterTable('affiliates').dropColumn('approval').execute();
  for (const column of ['portal_links_allowed', 'portal_terms', 'portal_color', 'portal_signup', 'portal_slug']) {
    await db.schema.alterTable('programs').dropColumn(column).execute();
  }
}
