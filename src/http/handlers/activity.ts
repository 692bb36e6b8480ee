import { ActivityQueryError, activityQuery, renderActivityEntry, type ActivityFilters } from '../../domain/activity';
import { requireUserType } from '../../domain/users';
import { errors } from '../../errors';
import { listActivity } from '../../usecases/activity/list-activity';
import type { Handler } from '../context';
import { identifyRecord } from '../record';

/** The parameter each argument of a listing comes from. */
const PARAMETER: Record<ActivityQueryError['field'], string> = { types: 'types', cursor: 'cursor', since: 'since', until: 'until', limit: 'max_results' };


/**
 * /entity.activity (docs/activity.md): one record's activity, newest first, one page; `types`,
 * `since` and `until` narrow it, `cursor` (the `next_cursor` of a page) continues it.
 */
export const entityActivity: Handler = async (ctx) => {
  const p = ctx.params;
  if (p.get('type_name') !== undefined) requireUserType(p.require('type_name'));
  const filters: ActivityFilters = { types: p.get('types'), cursor: p.get('cursor'), since: p.get('since'), until: p.get('until'), limit: p.get('max_results') };
  let query;
  try {
    query = activityQuery(filters);
  } catch (e) {
    if (e instanceof ActivityQueryError) throw errors.invalidArgument(PARAMETER[e.field], e.message);
    throw e;
  }
  const record = await identifyRecord(ctx);
  const page = await listActivity({ events: ctx.services.db.events }, { applicationId: ctx.app.id, accountId: record.id, ...query });
  return { id: record.id, uuid: record.uuid, results: page.entries.map(renderActivityEntry), next_cursor: page.nextCursor ?? null };
};
