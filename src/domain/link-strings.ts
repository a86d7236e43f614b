import { randomBytes } from 'node:crypto';

/** A readable, unguessable link string such as `jane-k3f9x2qa`. */
export function generateLinkString(seed: string): string {
  const slug = seed
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '') // drop the accents NFKD split off: Zoë → zoe, not zo-e
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .toLowerCase()
    .slice(0, 40);
  const suffix = randomBytes(6).toString('base64url').replace(/[^A-Za-z0-9]/g, 'x').toLowerCase().slice(0, 8);
  return slug ? `${slug}-${suffix}` : suffix;
}
