import { createHash, timingSafeEqual } from 'node:crypto';
import { randomToken } from '../../domain/ids.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { ApiError } from '../../domain/errors.ts';
import type { Integration } from '../integrations/integration.service.ts';
import { issueToken, revokeTokenIfActive, type IssuedToken } from '../tokens/token.service.ts';
import {
  consumeAuthorizationCode,
  insertAuthorizationCode,
  recordIssuedToken,
  selectAuthorizationCode,
  type AuthorizationCodeRow,
} from './authorization-code.repository.ts';

// Authorization codes of the connect flow (spec 5.2): 256 random bits, stored as SHA-256,
// valid ten minutes, single use, bound to the integration, redirect URI, user, program and
// PKCE challenge. Trading one for a token is a single transaction.

export const CODE_LIFETIME_MS = 10 * 60_000;

/** What the user agreed to; the code carries it to the token endpoint. */
export interface AuthorizationGrant {
  integration: string;
  redirectUri: string;
  userId: string;
  programId: string;
  /** PKCE S256 challenge, when the tool sent one. */
  codeChallenge: string | null;
}

export interface CodeExchange {
  code: string;
  /** Checked against the bound redirect URI when the tool sends it. */
  redirectUri?: string;
  /** PKCE: required exactly when the authorization request carried a challenge. */
  codeVerifier?: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();
const hashCode = (code: string) => sha256(code).toString('hex');
const invalidCode = () => new ApiError('bad_request', 'Invalid code');

export async function issueAuthorizationCode(db: Db, grant: AuthorizationGrant, now: Date): Promise<string> {
  const code = randomToken(32); // 256 random bits
  await insertAuthorizationCode(db, {
    code_hash: hashCode(code),
    integration: grant.integration,
    redirect_uri: grant.redirectUri,
    user_id: grant.userId,
    program_id: grant.programId,
    code_challenge: grant.codeChallenge,
    expires_at: new Date(now.getTime() + CODE_LIFETIME_MS).toISOString(),
    used_at: null,
    token_id: null,
    created_at: now.toISOString(),
  });
  return code;
}

/** RFC 7636: BASE64URL(SHA256(verifier)) must equal the challenge; verifiers are 43–128 unreserved characters. */
function verifiesChallenge(challenge: string, verifier: string | undefined): boolean {
  if (verifier === undefined || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const expected = Buffer.from(challenge);
  const actual = Buffer.from(sha256(verifier).toString('base64url'));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

function matchesBinding(row: AuthorizationCodeRow, exchange: CodeExchange): boolean {
  if (exchange.redirectUri !== undefined && exchange.redirectUri !== row.redirect_uri) return false;
  // A verifier for a code issued without a challenge is refused too: otherwise a code obtained
  // without PKCE could be slipped into a client that uses it (a downgrade).
  if (row.code_challenge === null) return exchange.codeVerifier === undefined;
  return verifiesChallenge(row.code_challenge, exchange.codeVerifier);
}

/**
 * Trades a code for a connect token of the code's program. Any failure is "Invalid code".
 * A code that was already used revokes the token it bought: it leaked, or is being replayed.
 */
export async function exchangeAuthorizationCode(db: Db, integration: Integration, exchange: CodeExchange, now: Date): Promise<IssuedToken> {
  const codeHash = hashCode(exchange.code);
  const token = await inTransaction(db, async (tx) => {
    if (!(await consumeAuthorizationCode(tx, codeHash, integration.name, now.toISOString()))) {
      // Unknown, expired, another integration's, or used before. On PostgreSQL a concurrent
      // exchange of the same code waits here for the first to commit, then lands in this branch.
      const row = await selectAuthorizationCode(tx, codeHash);
      if (row?.used_at != null && row.token_id !== null) await revokeTokenIfActive(tx, row.token_id, () => now);
      return null; // commit: the revocation must stick although the request fails
    }
    const row = (await selectAuthorizationCode(tx, codeHash))!;
    // Throwing rolls the consumption back, so a wrong guess by whoever holds a stolen code
    // does not burn the code for the tool it was issued to.
    if (!matchesBinding(row, exchange)) throw invalidCode();
    const issued = await issueToken(tx, {
      programId: row.program_id,
      name: `${integration.displayName} connection`,
      kind: 'connect',
      integration: integration.name,
      createdByUserId: row.user_id,
    }, () => now);
    await recordIssuedToken(tx, codeHash, issued.id);
    return issued;
  });
  if (!token) throw invalidCode();
  return token;
}
