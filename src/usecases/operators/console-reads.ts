import { passwordFormatOf } from '../../domain/imported-hashes';
import { StatementTimeoutError } from '../../domain/storage/transactions';
import { activityQuery } from '../../domain/activity';
import { auditQuery, type AuditFilters } from '../../domain/audit-query';
import { parseFilter, type Filter } from '../../domain/filter';
import type { HistoryEntry } from '../../domain/history';
import { isFilterText, prefixFilter } from '../../domain/operators';
import { sessionFacts } from '../../domain/session';
import type { Application } from '../../domain/storage/applications';
import type { CredentialKind, StoredCredential } from '../../domain/storage/credentials';
import { browserSessionLimits } from '../account/browser-sessions';
import type { AuditEntry } from '../../domain/storage/audit';
import type { ActivityEntry } from '../../domain/storage/events';
import type { UserRecord } from '../../domain/storage/records';
import { listActivity } from '../activity/list-activity';
import { listAudit } from '../audit/list-audit';
import { recordHistory } from '../records/record-history';
import type { Services } from '../services';

/**
 * What the operators' console reads (docs/console.md): applications, a search of accounts, one
 * account with everything an operator needs to help its person, its history as differences beside
 * its activity, the account as it was at a time, and the audit log. Reads only; never a secret.
 */

/** The applications an operator picks from. */
export const consoleApplications = (deps: Pick<Services, 'db'>): Promise<Application[]> => deps.db.applications.list();

/** The application an operator named, if it exists. */
export const consoleApplication = (deps: Pick<Services, 'db'>, name: string): Promise<Application | undefined> => deps.db.applications.findByName(name);

/** One row of a search: who, and the state an operator looks for first. */
export interface AccountRow { record: UserRecord & { passwordHash: null } }

/** How many accounts a page of the search shows. */
export const SEARCH_PAGE = 25;
/** How far the search counts its matches: past this, it says "more than". */
export const SEARCH_COUNT_CAP = 10_000;
/** How long the count of a search's matches may take beside its page; past it, the page says "more than" what it has seen. */
export const SEARCH_COUNT_MS = 250;

/**
 * The accounts a text finds, one page at a time: a text in the filter language (a comparison or a
 * null test, as /entity.find takes) as it is, any other text as the beginning of an email address,
 * a username or a name (prefixFilter); no text, every account, newest first. FilterError and
 * FilterUseError say what is wrong with a filter; a search the database stops (entity.find's
 * time limit) is a StatementTimeoutError. `total` is how many match: the last page counts itself;
 * before it, a count up to SEARCH_COUNT_CAP (one more: more than that) within SEARCH_COUNT_MS, none
 * when the database stopped it (more than this page shows).
 */
export async function searchAccounts(
  deps: Pick<Services, 'db' | 'entityQueryTimeoutMs'>, command: { app: Application; text: string; page: number },
): Promise<{ rows: AccountRow[]; more: boolean; total?: number }> {
  const text = command.text.trim();
  const filter: Filter | undefined = text === '' ? undefined : isFilterText(text) ? parseFilter(text) : prefixFilter(text);
  const reads = deps.db.lagTolerant;
  const offset = Math.max(0, command.page) * SEARCH_PAGE;
  // one more than a page: whether there is a next one
  const page = await reads.records.searchPage(command.app.id, filter, ['-id'], { limit: SEARCH_PAGE + 1, offset }, deps.entityQueryTimeoutMs);
  // the last page counts itself; before it, a count of its own, bounded in rows and in time: one the database
  // stops leaves the page without it (at least `offset + SEARCH_PAGE + 1` match), never without its accounts
  const total = page.length <= SEARCH_PAGE ? offset + page.length
    : await reads.records.count(command.app.id, filter, Math.min(deps.entityQueryTimeoutMs, SEARCH_COUNT_MS), SEARCH_COUNT_CAP)
      .catch((e: unknown) => (e instanceof StatementTimeoutError ? undefined : Promise.reject(e)));
  const records = await reads.records.findByIds(command.app.id, page.slice(0, SEARCH_PAGE).map((r) => r.id));
  return { rows: records.map((record) => ({ record: { ...record, passwordHash: null } })), more: page.length > SEARCH_PAGE, ...(total !== undefined && { total }) };
}

/** A live session of an account as an operator sees it: what, through which client, since when, how; never a token. */
export interface ConsoleSession { kind: CredentialKind; clientId: string | null; issuedAt: Date | null; expiresAt: Date; methods?: string[] }

/** How many entries of the activity and of the history one page of the account shows. */
export const ACCOUNT_PAGE_ENTRIES = 30;
/** How many of an account's organizations its page lists. */
export const ACCOUNT_ORGANIZATIONS = 50;

/** An account as the console shows it. */
export interface ConsoleAccount {
  record: UserRecord & { passwordHash: null };
  hasPassword: boolean;
  /** How its password hash is written (never the hash): argon2id, or a format imported from another system until its next sign-in. */
  passwordFormat: string | null;
  identities: { provider: string; identifier: string }[];
  passkeys: { name: string; createdAt: Date; lastUsedAt: Date | null }[];
  totp: 'off' | 'pending' | 'on';
  recoveryCodesLeft: number;
  sessions: ConsoleSession[];
  activity: ActivityEntry[];
  /** The cursor of the activity's next page, when there is one. */
  activityNext?: string;
  /** Its newest versions, each as the difference from the one before. */
  history: HistoryEntry[];
  /** The organizations it is a member of (at most ACCOUNT_ORGANIZATIONS), with its roles in each. */
  organizations: { organizationId: string; name: string; roles: string[] }[];
  /** The application's clients' descriptions by client_id: what the page names them by. */
  clientNames: ReadonlyMap<string, string>;
  /** The application's roles it holds (docs/openid-connect.md#roles), and every role the application defines. */
  roles: string[];
  appRoles: string[];
}

/** A browser's session of the account page or the console that has idled out (its row lives on until its expiry, but it opens nothing). */
function idle(c: StoredCredential, app: Application, now: Date): boolean {
  if (c.kind !== 'browser_session' && c.kind !== 'console_session') return false;
  const seen = Date.parse(String(c.extra?.seen ?? ''));
  return !Number.isFinite(seen) || now.getTime() - seen > browserSessionLimits(app).idle * 1000;
}

const SESSIONS: CredentialKind[] = ['access_token', 'refresh_token', 'refresh_secret', 'browser_session', 'console_session', 'oidc_access_token', 'oidc_refresh_token'];

/** The account `entityId` of `app` (undefined when there is none), with a page of its activity (from `cursor`). */
export async function consoleAccount(
  deps: Pick<Services, 'clock' | 'db'>, command: { app: Application; entityId: number; cursor?: string },
): Promise<ConsoleAccount | undefined> {
  const { db, clock } = deps;
  const { app, entityId } = command;
  const now = clock.now();
  const record = await db.records.find(app.id, { id: entityId });
  if (!record) return undefined;
  const [profiles, passkeys, totp, codes, activity, history, live, memberships, held, defined] = await Promise.all([
    db.social.profiles.forEntity(app.id, entityId),
    db.passkeys.list(app.id, entityId),
    db.factors.totp(app.id, entityId),
    db.credentials.liveOfRecord(app.id, entityId, 'recovery_code', now),
    listActivity({ events: db.events }, { applicationId: app.id, accountId: entityId, ...activityQuery({ cursor: command.cursor, limit: String(ACCOUNT_PAGE_ENTRIES) }) }),
    recordHistory(deps, { applicationId: app.id, entityId, limit: ACCOUNT_PAGE_ENTRIES }),
    Promise.all(SESSIONS.map((kind) => db.credentials.liveOfRecord(app.id, entityId, kind, now))).then((all) => all.flat().filter((c) => !idle(c, app, now))),
    db.organizations.listMembershipsOf(app.id, entityId, ACCOUNT_ORGANIZATIONS),
    db.roles.listOf(app.id, entityId),
    db.roles.list(app.id),
  ]);
  const clients = await db.clients.list(app.id);
  const clientIds = new Map(clients.map((c) => [c.id, c.clientId]));
  return {
    record: { ...record, passwordHash: null },
    hasPassword: record.passwordHash !== null,
    passwordFormat: passwordFormatOf(record.passwordHash),
    identities: profiles.map((p) => ({ provider: p.provider, identifier: p.identifier })),
    passkeys: passkeys.map((k) => ({ name: k.name, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt })),
    totp: !totp ? 'off' : totp.confirmedAt ? 'on' : 'pending',
    recoveryCodesLeft: codes.length,
    sessions: live.map((c) => {
      const owner = c.forClientId ?? c.clientId;
      const facts = sessionFacts(c);
      return { kind: c.kind, clientId: owner === null ? null : clientIds.get(owner) ?? null, issuedAt: c.createdAt ?? null, expiresAt: c.expiresAt, ...(facts && { methods: facts.amr }) };
    }),
    activity: activity.entries,
    ...(activity.nextCursor && { activityNext: activity.nextCursor }),
    history,
    organizations: memberships.map((m) => ({ organizationId: m.organization.organizationId, name: m.organization.name, roles: m.member.roles })),
    clientNames: new Map(clients.filter((c) => c.description !== '').map((c) => [c.clientId, c.description])),
    roles: held.map((r) => r.name),
    appRoles: defined.map((r) => r.name),
  };
}

/** The record `entityId` of `app` as it is now (undefined: there is none), never its password hash. */
export async function consoleRecord(deps: Pick<Services, 'db'>, command: { app: Application; entityId: number }): Promise<(UserRecord & { passwordHash: null }) | undefined> {
  const record = await deps.db.records.find(command.app.id, { id: command.entityId });
  return record && { ...record, passwordHash: null };
}

/** The record at the address `email` (any case), if one has it; never its password hash. */
export async function consoleRecordByAddress(deps: Pick<Services, 'db'>, command: { app: Application; email: string }): Promise<(UserRecord & { passwordHash: null }) | undefined> {
  const email = command.email.trim();
  const record = email === '' || email.length > 254 ? undefined : await deps.db.records.find(command.app.id, { email });
  return record && { ...record, passwordHash: null };
}

/** The account as it was at `at` (undefined: it did not exist then, or was deleted). */
export function consoleAccountAt(deps: Pick<Services, 'versions'>, command: { app: Application; entityId: number; at: Date }): Promise<Record<string, unknown> | undefined> {
  return deps.versions.at(command.app.id, { id: command.entityId }, command.at);
}

/** A page of the application's audit log, with the filters of /audit/list (AuditQueryError names what is wrong), and its clients' descriptions by client_id. */
export async function consoleAudit(
  deps: Pick<Services, 'db'>, command: { app: Application; filters: AuditFilters },
): Promise<{ entries: AuditEntry[]; next?: string; clientNames: ReadonlyMap<string, string> }> {
  const [listed, clients] = await Promise.all([
    listAudit({ audit: deps.db.audit }, { applicationId: command.app.id, ...auditQuery({ limit: '50', ...command.filters }) }),
    deps.db.clients.list(command.app.id),
  ]);
  return { ...listed, clientNames: new Map(clients.filter((c) => c.description !== '').map((c) => [c.clientId, c.description])) };
}
