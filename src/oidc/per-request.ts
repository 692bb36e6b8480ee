/**
 * What one provider request reads once (an API, an account's permissions, a member's organization
 * claims): the provider asks for a resource's server, then for its token's claims, in one request;
 * both answer from the same read, so what the check found is what the token says.
 */
export function perRequest<T>() {
  const read = new WeakMap<object, Map<string, Promise<T>>>();
  return (ctx: object, key: string, work: () => Promise<T>): Promise<T> => {
    const held = read.get(ctx) ?? new Map<string, Promise<T>>();
    read.set(ctx, held);
    if (!held.has(key)) held.set(key, work());
    return held.get(key)!;
  };
}
