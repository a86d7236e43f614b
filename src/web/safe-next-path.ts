// Where login sends a browser back to (the `next` of /login and /signup, account.routes.ts).

const LOCAL = 'http://tandem.invalid';

function hasControlOrBackslash(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x5c) return true;
  }
  return false;
}

/**
 * A path on this site to return to after login; anything else becomes /dashboard. The value is
 * resolved the way a browser would and must stay on the same origin: control characters
 * (browsers drop tabs and newlines, so `/\t/evil.example` is `//evil.example`), backslashes
 * (read as slashes) and paths that normalise to `//host` (`/.//evil.example`) are refused.
 */
export function safeNextPath(next: unknown): string {
  if (typeof next !== 'string' || next.length > 2000 || !next.startsWith('/') || hasControlOrBackslash(next)) return '/dashboard';
  let url: URL;
  try {
    url = new URL(next, LOCAL);
  } catch {
    return '/dashboard';
  }
  const path = url.pathname + url.search + url.hash;
  return url.origin === LOCAL && !path.startsWith('//') ? path : '/dashboard';
}
