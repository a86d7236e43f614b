// A program's portal lives at {SITE_URL}/portal/{slug}: lowercase letters, digits and single
// hyphens, 1 to 64 characters, unique among programs.

export const PORTAL_SLUG = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}$/;

/** The slug a name suggests: "Acme Outdoor GmbH" → "acme-outdoor-gmbh" (accents dropped); "program" when nothing is left. */
export function slugFrom(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 56)
    .replace(/-+$/, '');
  return slug || 'program';
}

/** The n-th candidate for a slug already taken: acme, acme-2, acme-3… */
export function slugCandidate(base: string, n: number): string {
  return n <= 1 ? base : `${base}-${n}`;
}
