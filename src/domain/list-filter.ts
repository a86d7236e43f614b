/**
 * Whether a list's filter narrows it: some field is set (a blank search narrows nothing, as the
 * repositories read it). Without one, a list's totals come from what is kept (issue 31) instead
 * of from its rows.
 */
export function narrowsList(filter: object): boolean {
  return Object.entries(filter).some(([field, value]) => value !== undefined && !(field === 'search' && String(value).trim() === ''));
}
