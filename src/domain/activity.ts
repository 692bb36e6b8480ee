import { formatTimestamp } from './timestamps';
import type { EventType } from './events';
import type { ActivityCursor, ActivityEntry, ActivityQuery } from './storage/events';

/**
 * What an account's activity shows (docs/activity.md): what the person did with their account and
 * what was done to it, from the event store, and the failed sign-ins counted per minute. Changes of
 * the record's profile attributes and sign-in bookkeeping (lastLogin) are the record's history,
 * not its activity; every refresh of a token is in the event store, not shown here.
 */
export const ACTIVITY_TYPES = [
  'account.registered', 'account.signed_in', 'account.sign_in_failed', 'account.password_changed', 'account.password_reset_requested', 'account.email_code_requested',
  'account.email_changed', 'account.email_change_undone', 'account.email_verified', 'account.identity_linked', 'account.identity_unlinked',
  'account.second_factor_added', 'account.second_factor_removed', 'account.recovery_codes_renewed',
  'account.passkey_added', 'account.passkey_renamed', 'account.passkey_removed',
  'account.signed_out', 'account.disabled', 'account.enabled', 'account.activity_disowned', 'token.reuse_detected',
  'oidc.grant_given', 'oidc.consent_refused', 'oidc.grant_revoked', 'oidc.logout', 'saml.assertion_issued', 'saml.logout',
  'organization.member_added', 'organization.member_removed', 'organization.member_roles_changed', 'account.roles_changed',
  'scim.user_provisioned', 'scim.user_deactivated', 'scim.user_reactivated', 'scim.user_deprovisioned',
] as const satisfies readonly (EventType | 'account.sign_in_failed')[];
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

/** The most entries one page of activity holds. */
export const MAX_ACTIVITY_PAGE = 200;

/** What of a listing's arguments is not valid, and why (each adapter names the argument its own way). */
export class ActivityQueryError extends Error {
  constructor(readonly field: 'types' | 'cursor' | 'since' | 'until' | 'limit', message: string) {
    super(message);
  }
}

/** A listing's arguments as people write them (the API's parameters, the CLI's options). */
export interface ActivityFilters { types?: string; cursor?: string; since?: string; until?: string; limit?: string }

/** Where the page after `entry` begins, as the API hands it out: `<ms>.<e|f><id>` (opaque to callers). */
export const cursorOf = (entry: Pick<ActivityEntry, 'at' | 'kind' | 'id'>): string => `${entry.at.getTime()}.${entry.kind === 'event' ? 'e' : 'f'}${entry.id}`;

const CURSOR = /^(\d{1,15})\.([ef])([1-9]\d{0,18})$/;

function cursor(raw: string): ActivityCursor {
  const m = CURSOR.exec(raw);
  if (!m) throw new ActivityQueryError('cursor', 'must be the next_cursor of a previous page, as it was given');
  return { at: new Date(Number(m[1])), kind: m[2] === 'e' ? 'event' : 'failures', id: m[3] };
}

function types(raw: string): ActivityType[] {
  const names = raw.split(',').map((t) => t.trim()).filter((t) => t !== '');
  if (names.length === 0 || names.length > ACTIVITY_TYPES.length) throw new ActivityQueryError('types', `must name one or more activity types, separated by commas, such as account.signed_in,account.sign_in_failed`);
  const unknown = names.find((t) => !(ACTIVITY_TYPES as readonly string[]).includes(t));
  if (unknown !== undefined) {
    throw new ActivityQueryError('types', `has ${JSON.stringify(unknown.slice(0, 64))}, which is not an activity type; use any of ${ACTIVITY_TYPES.join(', ')}`);
  }
  return [...new Set(names)] as ActivityType[];
}

/** A time bound: ISO 8601 with its zone (`2026-11-25T10:00:00Z`). */
function time(raw: string, field: 'since' | 'until'): Date {
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? new Date(raw) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw new ActivityQueryError(field, 'must be an ISO 8601 time with its zone, such as 2026-11-25T10:00:00Z');
  return at;
}

/** The query of a listing's arguments (every activity type, 50 entries, unless they say otherwise); ActivityQueryError names the first at fault. */
export function activityQuery(f: ActivityFilters): Omit<ActivityQuery, 'applicationId' | 'accountId'> {
  if (f.limit !== undefined && (!/^[1-9]\d{0,3}$/.test(f.limit) || Number(f.limit) > MAX_ACTIVITY_PAGE)) {
    throw new ActivityQueryError('limit', `must be a whole number from 1 to ${MAX_ACTIVITY_PAGE}`);
  }
  const since = f.since === undefined ? undefined : time(f.since, 'since');
  const until = f.until === undefined ? undefined : time(f.until, 'until');
  if (since && until && since >= until) throw new ActivityQueryError('until', 'must be later than since');
  return {
    types: f.types === undefined ? ACTIVITY_TYPES : types(f.types),
    limit: f.limit === undefined ? 50 : Number(f.limit),
    ...(f.cursor !== undefined && { after: cursor(f.cursor) }),
    ...(since && { since }),
    ...(until && { until }),
  };
}

/** An entry as the API, `gatehouse users:activity` and an export show it: what happened, when, through which client, from where. */
export const renderActivityEntry = (e: ActivityEntry) => ({
  type: e.type, at: formatTimestamp(e.at),
  ...(e.kind === 'event' ? { actor: e.actorKind, ...e.data } : { reason: e.reason, count: e.count, last_at: formatTimestamp(e.lastAt) }),
  client_id: e.clientId ?? null, address: e.address ?? null, user_agent: e.userAgent ?? null,
});
