/**
 * The next round of programs to serve: up to `limit` ids in id order after `after`, then, when
 * that reaches the end, on from the first, up to `after` itself (so none comes twice). `list`
 * reads the programs with work from a starting id (null: from the first). Fan-out and claims
 * both go round this way, each from where its previous pass stopped.
 */
export async function nextRound(after: string | null, limit: number, list: (after: string | null, limit: number) => Promise<string[]>): Promise<string[]> {
  const rest = await list(after, limit);
  if (rest.length === limit || after === null) return rest;
  const wrapped = await list(null, limit - rest.length);
  return [...rest, ...wrapped.filter((id) => id <= after)];
}
