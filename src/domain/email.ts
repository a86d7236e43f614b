/** An e-mail as stored (trimmed) and as compared (its key, ignoring letter case): CONTRACT "E-mails". */
export function normaliseEmail(email: string): { email: string; key: string } {
  const trimmed = email.trim();
  return { email: trimmed, key: trimmed.toLowerCase() };
}
