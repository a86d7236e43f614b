import { createHmac } from 'node:crypto';
import { randomToken } from '../../domain/ids.ts';

// Standard Webhooks (standardwebhooks.com): the secret is `whsec_` + base64 of the key; the
// signature is `v1,` + base64 HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`.

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: 256 random bits. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + Buffer.from(randomToken(32), 'base64url').toString('base64');
}

/** The `webhook-signature` header value for one message. */
export function signatureHeader(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}
