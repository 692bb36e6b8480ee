import type { Actor, EventType, Subject } from '../../domain/events';
import { EVENT_TYPES } from '../../domain/events';
import type { AuditEntry, AuditQuery } from '../../domain/storage/audit';
import { formatTimestamp } from '../../domain/timestamps';
import { errors } from '../../errors';
import { listAudit, MAX_AUDIT_PAGE } from '../../usecases/audit/list-audit';
import type { Handler, RequestContext } from '../context';

const DIGITS = /^[1-9]\d{0,18}$/;
const SUBJECT_KINDS: readonly Subject['kind'][] = ['record', 'client', 'setting', 'provider', 'flow', 'application'];
const ACTOR_KINDS: readonly Actor['kind'][] = ['client', 'operator', 'account', 'system'];

/** `type`: one event type, or every type beginning with a prefix ending in `.` (`client.`). */
function eventType(ctx: RequestContext): string | undefined {
  const type = ctx.params.get('type');
  if (type === undefined) return undefined;
  const known = (EVENT_TYPES as readonly string[]).includes(type) || (type.endsWith('.') && EVENT_TYPES.some((t) => t.startsWith(type)));
  if (!known) {
    const families = [...new Set(EVENT_TYPES.map((t) => `${t.split('.')[0]}.`))];
    throw errors.invalidArgument('type', `is not an event type; use one such as client.secret_reset, or a family: ${families.join(', ')}`);
  }
  return type;
}

/** `actor`: a kind (`operator`), or a kind and who (`client:<client_id>`, `operator:<name>`, `account:<record id>`). */
function actor(ctx: RequestContext): AuditQuery['actor'] {
  const raw = ctx.params.get('actor');
  if (raw === undefined) return undefined;
  const [kind, ...rest] = raw.split(':');
  if (!(ACTOR_KINDS as readonly string[]).includes(kind) || (kind === 'system' && rest.length > 0)) {
    throw errors.invalidArgument('actor', 'must be client, operator, account or system, optionally followed by :who (client:<client_id>, operator:<name>, account:<record id>)');
  }
  return { kind: kind as Actor['kind'], ...(rest.length > 0 && { id: rest.join(':') }) };
}

/** `subject`: what was changed, as kind:id (`record:42`, `client:<client_id>`, `setting:<key>`). */
function subject(ctx: RequestContext): Subject | undefined {
  const raw = ctx.params.get('subject');
  if (raw === undefined) return undefined;
  const at = raw.indexOf(':');
  const kind = raw.slice(0, Math.max(0, at));
  if (at < 1 || !(SUBJECT_KINDS as readonly string[]).includes(kind) || at === raw.length - 1) {
    throw errors.invalidArgument('subject', `must be kind:id with a kind of ${SUBJECT_KINDS.join(', ')}, such as record:42`);
  }
  return { kind: kind as Subject['kind'], id: raw.slice(at + 1) };
}

/** A time bound: ISO 8601 with a time zone (`2026-11-25T10:00:00Z`). */
function time(ctx: RequestContext, name: string): Date | undefined {
  const raw = ctx.params.get(name);
  if (raw === undefined) return undefined;
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? new Date(raw) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw errors.invalidArgument(name, 'must be an ISO 8601 time with its zone, such as 2026-11-25T10:00:00Z');
  return at;
}

function limit(ctx: RequestContext): number {
  const raw = ctx.params.get('max_results');
  if (raw === undefined) return 100;
  if (!DIGITS.test(raw) || Number(raw) > MAX_AUDIT_PAGE) throw errors.invalidArgument('max_results', `must be a whole number from 1 to ${MAX_AUDIT_PAGE}`);
  return Number(raw);
}

function before(ctx: RequestContext): string | undefined {
  const raw = ctx.params.get('before');
  if (raw !== undefined && !DIGITS.test(raw)) throw errors.invalidArgument('before', 'must be the `next` of a previous page (a whole number)');
  return raw;
}

/** How the API shows who acted: the kind, and the client_id, operator name or record id. */
function shownActor(a: Actor): Record<string, unknown> {
  switch (a.kind) {
    case 'client': return { kind: a.kind, client_id: a.clientId };
    case 'operator': return { kind: a.kind, name: a.name };
    case 'account': return { kind: a.kind, record_id: a.accountId, ...(a.clientId !== undefined && { client_id: a.clientId }) };
    case 'system': return { kind: a.kind };
  }
}

/** An entry as the API shows it. */
export const shownEntry = (e: AuditEntry) => ({
  id: e.id, occurred_at: formatTimestamp(e.occurredAt), type: e.type satisfies EventType, version: e.version, actor: shownActor(e.actor),
  subject: e.subject, data: e.data, address: e.address ?? null, request_id: e.requestId ?? null,
});

/** /audit/list: the application's audit log, newest first, one page. */
export const listAuditEntries: Handler = async (ctx) => {
  const since = time(ctx, 'since');
  const until = time(ctx, 'until');
  if (since && until && since >= until) throw errors.invalidArgument('until', 'must be later than since');
  const page = await listAudit({ audit: ctx.services.db.audit }, {
    applicationId: ctx.app.id, limit: limit(ctx), before: before(ctx), type: eventType(ctx), actor: actor(ctx), subject: subject(ctx), since, until,
  });
  return { results: page.entries.map(shownEntry), next: page.next ?? null };
};
