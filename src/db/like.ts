/** A LIKE pattern (with `escape '\'`) matching `text` anywhere, its own wildcards escaped; lower-cased, for lower(column). */
export function likeContains(text: string): string {
  return `%${text.trim().toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
