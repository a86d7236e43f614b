import { createHash } from 'node:crypto';
import { systemClock, toIso, type Clock } from '../../domain/clock.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { conflict, invalidField, notFound } from '../../domain/errors.ts';
import { deleteIntegration, insertIntegration, selectIntegration, selectIntegrations, type IntegrationRow } from './integration.repository.ts';

// The automation tools (Zapier, n8n, Make, …) the operator allows to use the connect flow.
// A redirect URI is trusted only if it equals one registered here, character for character.

export interface Integration {
  /** Used in the connect URLs: /connect/{name}/… and /api/{name}/token. */
  name: string;
  displayName: string;
  redirectUris: string[];
  clientId: string | null;
  /** The secret itself is stored only as a hash and never shown again. */
  hasClientSecret: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface IntegrationInput {
  name: string;
  displayName?: string;
  redirectUris: string[];
  clientId?: string | null;
  clientSecret?: string | null;
}

const NAME = /^[a-z0-9-]{1,50}$/;
const MAX_REDIRECT_URIS = 20;

function toIntegration(row: IntegrationRow): Integration {
  return {
    name: row.name,
    displayName: row.display_name,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    clientId: row.client_id,
    hasClientSecret: row.client_secret_hash !== null,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function validateName(name: string): string {
  if (!NAME.test(name)) throw invalidField('#/name', 'must be 1 to 50 lowercase letters, digits or hyphens');
  // /api/v1/… is the API itself; /api/{name}/token must never shadow a version prefix.
  if (/^v\d+$/.test(name)) throw invalidField('#/name', 'is reserved for API versions');
  return name;
}

/** Absolute http(s) URLs without fragment, credentials or whitespace, kept exactly as typed. */
function validateRedirectUris(uris: string[]): string[] {
  const unique = [...new Set(uris)];
  if (unique.length < 1) throw invalidField('#/redirectUris', 'must hold at least one redirect URI');
  if (unique.length > MAX_REDIRECT_URIS) throw invalidField('#/redirectUris', `must hold at most ${MAX_REDIRECT_URIS} redirect URIs`);
  unique.forEach((uri, i) => {
    const pointer = `#/redirectUris/${i}`;
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw invalidField(pointer, `must be an absolute URL, got "${uri}"`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidField(pointer, 'must be an https:// or http:// URL');
    // The code and state are appended to the query; a fragment would swallow them.
    if (uri.includes('#')) throw invalidField(pointer, 'must not contain a fragment (#)');
    if (url.username || url.password) throw invalidField(pointer, 'must not contain credentials');
    if (/[\s\p{Cc}]/u.test(uri) || uri.length > 2000) throw invalidField(pointer, 'must be at most 2000 characters without spaces');
  });
  return unique;
}

function validateText(pointer: string, value: string, max: number): string {
  const text = value.trim();
  if (text.length < 1 || text.length > max) throw invalidField(pointer, `must be 1 to ${max} characters`);
  return text;
}

export async function listIntegrations(db: Db): Promise<Integration[]> {
  return (await selectIntegrations(db)).map(toIntegration);
}

/** The integration with this name, or undefined (names from URLs are checked before any query). */
export async function findIntegration(db: Db, name: string): Promise<Integration | undefined> {
  if (!NAME.test(name)) return undefined;
  const row = await selectIntegration(db, name);
  return row && toIntegration(row);
}

export async function addIntegration(db: Db, input: IntegrationInput, clock: Clock = systemClock): Promise<Integration> {
  const name = validateName(input.name);
  const clientId = input.clientId ? validateText('#/clientId', input.clientId, 200) : null;
  if (input.clientSecret && !clientId) throw invalidField('#/clientId', 'is required with a client secret');
  const now = clock().toISOString();
  const row: IntegrationRow = {
    name,
    display_name: validateText('#/displayName', input.displayName ?? name, 100),
    redirect_uris: JSON.stringify(validateRedirectUris(input.redirectUris)),
    client_id: clientId,
    client_secret_hash: input.clientSecret ? hashClientSecret(input.clientSecret) : null,
    created_at: now,
    updated_at: now,
  };
  try {
    await insertIntegration(db, row);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`An integration named "${name}" already exists.`);
    throw error;
  }
  return toIntegration(row);
}

/**
 * Stops new connections through this integration and drops its pending codes. Tokens it
 * already issued keep working until the user (Connected apps) or the operator revokes them.
 */
export async function removeIntegration(db: Db, name: string): Promise<void> {
  const removed = await inTransaction(db, (tx) => deleteIntegration(tx, name));
  if (!removed) throw notFound(`Integration "${name}"`);
}
