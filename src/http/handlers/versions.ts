import { parseTimestamp } from '../../domain/timestamps';
import { requireUserType } from '../../domain/users';
import { ApiError, errors } from '../../errors';
import type { Handler } from '../context';
import { recordKey } from '../record';
import { shape } from '../record';

/**
 * docs/api.md#versionsentity /versions/entity: the record as it was at `timestamp` (the spec's timestamp format or
 * ISO 8601), by `id` or, in the older variant, `uuid`. Before the record existed, or once it was
 * deleted, 310. Changes whose snapshot the worker has not recorded yet count too (docs/versions.md).
 */
export const entityAt: Handler = async (ctx) => {
  requireUserType(ctx.params.require('type_name'));
  const { key, attribute, text } = recordKey(ctx, false);
  const raw = ctx.params.require('timestamp');
  const at = parseTimestamp(raw);
  if (!at) throw errors.invalidArgument('timestamp', 'must be a timestamp such as 2026-01-31 12:00:00.000000 +0000 (or ISO 8601, 2026-01-31T12:00:00Z)');
  const found = await ctx.services.versions.at(ctx.app.id, key as { id: number } | { uuid: string }, at);
  if (!found) {
    throw new ApiError('recordNotFound', `no user record with ${attribute} ${JSON.stringify(text)} existed at ${raw.slice(0, 40)}`, {
      extra: { argument_name: attribute },
    });
  }
  return { result: shape(ctx, found) };
};
