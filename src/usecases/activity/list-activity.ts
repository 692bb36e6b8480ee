import { cursorOf, MAX_ACTIVITY_PAGE } from '../../domain/activity';
import type { ActivityEntry, ActivityQuery, EventStore } from '../../domain/storage/events';

/** One page of an account's activity, newest first, and where the next page begins (none after the last). */
export interface ActivityPage { entries: ActivityEntry[]; nextCursor?: string }

/**
 * docs/activity.md: what happened to an account, newest first (its events, and its failed sign-ins
 * per reason and minute), narrowed to some types and a time range; a page continues after the last
 * entry of the one before (its cursor), so entries written meanwhile never shift it.
 */
export async function listActivity(deps: { events: Pick<EventStore, 'activity'> }, query: ActivityQuery): Promise<ActivityPage> {
  const limit = Math.min(MAX_ACTIVITY_PAGE, Math.max(1, query.limit));
  const found = await deps.events.activity({ ...query, limit: limit + 1 });
  const entries = found.slice(0, limit);
  return { entries, ...(found.length > limit && { nextCursor: cursorOf(entries[entries.length - 1]) }) };
}
