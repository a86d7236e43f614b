import { createHash } from 'node:crypto';
import type { Db } from '../db/transaction.ts';

// The session store: a row per logged-in browser, keyed by the SHA-256 of the cookie's random id
// (the database never holds the id itself), with its user, the secret its forms' CSRF tokens are
// derived from, and when it expires. Rows are written only at login; session.ts decides when.

/** A logged-in browser's session. `csrfSecret` makes it a CSRF binding (csrf.ts) for its forms. */
export interface WebSession {
  idHash: string;
  csrfSecret: string;
  user: { id: string; email: string } | null;
}

/** What the database keeps of a session cookie's id. */
export const sessionIdHash = (id: string): string => createHash('sha256').update(id).digest('hex');

/** The unexpired session of the cookie id `id`, with its user's e-mail; null when there is none. */
export async function findSession(db: Db, id: string, now: Date): Promise<WebSession | null> {
  const row = await db
    .selectFrom('sessions as s')
    .leftJoin('users as u', 'u.id', 's.user_id')
    .select(['s.id_hash', 's.csrf_secret', 's.user_id', 'u.email'])
    .where('s.id_hash', '=', sessionIdHash(id))
    .where('s.expires_at', '>', now.toISOString())
    .executeTakeFirst();
  if (!row) return null;
  return {
    idHash: row.id_hash,
    csrfSecret: row.csrf_secret,
    user: row.user_id && row.email ? { id: row.user_id, email: row.email } : null,
  };
}

/** Stores a new session of a user, from `now` until `expiresAt`. */
export async function insertSession(db: Db, session: WebSession & { user: NonNullable<WebSession['user']> }, now: Date, expiresAt: Date): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id_hash: session.idHash,
      user_id: session.user.id,
      csrf_secret: session.csrfSecret,
      created_at: now.toISOString(),
      expires_at: expiresAt.toISOString(),
    })
    .execute();
}

/** Ends a session: its cookie no longer logs anyone in. */
export async function deleteSession(db: Db, session: WebSession): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', session.idHash).execute();
}
