import { activityQuery, MAX_ACTIVITY_PAGE } from '../../domain/activity';
import type { AccountExport, ExportedSession } from '../../domain/account-export';
import { sessionFacts } from '../../domain/session';
import type { Application } from '../../domain/storage/applications';
import type { CredentialKind, StoredCredential } from '../../domain/storage/credentials';
import type { ActivityEntry } from '../../domain/storage/events';
import { Refusal } from '../../domain/refusal';
import type { CallContext, Services } from '../services';
import { accountOfToken } from '../factors/account';
import { listActivity } from '../activity/list-activity';

/** The credentials that are a session of the account (what signing out ends), as an export lists them. */
const SESSIONS: CredentialKind[] = ['access_token', 'refresh_token', 'refresh_secret', 'browser_session', 'console_session', 'oidc_access_token', 'oidc_refresh_token'];

/** The most activity entries an export holds (the activity's retention bounds it anyway). */
const MAX_ENTRIES = 100_000;

/**
 * An account's data as one document (docs/lifecycle.md#export): the right of access. The record as
 * the API shows it, its linked identities, its second factor and passkeys, its live sessions, its
 * whole activity and every version of its history; never a secret (no password hash, token,
 * sealed authenticator secret, recovery code or passkey public key). Reads only.
 */
export async function exportAccount(deps: Pick<Services, 'clock' | 'db'>, command: { app: Application; entityId: number }): Promise<AccountExport> {
  const { db, clock } = deps;
  const { app, entityId } = command;
  const now = clock.now();
  const record = await db.records.find(app.id, { id: entityId });
  if (!record) throw new Refusal('gone', 'the record was deleted meanwhile');
  const [profiles, passkeys, totp, codes, history] = await Promise.all([
    db.social.profiles.forEntity(app.id, entityId),
    db.passkeys.list(app.id, entityId),
    db.factors.totp(app.id, entityId),
    db.credentials.liveOfRecord(app.id, entityId, 'recovery_code', now),
    db.versions.history(app.id, entityId),
  ]);
  const live = (await Promise.all(SESSIONS.map((kind) => db.credentials.liveOfRecord(app.id, entityId, kind, now)))).flat();
  const clientIds = new Map<number, string>();
  for (const id of new Set(live.map((c) => c.forClientId ?? c.clientId).filter((id): id is number => id !== null))) {
    const client = await db.clients.findById(app.id, id);
    if (client) clientIds.set(id, client.clientId);
  }
  const sessions: ExportedSession[] = live.map((c) => {
    const facts = sessionFacts(c);
    const owner = c.forClientId ?? c.clientId;
    return {
      kind: c.kind, clientId: owner === null ? null : clientIds.get(owner) ?? null, issuedAt: c.createdAt ?? null, expiresAt: c.expiresAt,
      ...(facts && { signedInAt: facts.auth_time, methods: facts.amr }),
    };
  });
  const activity: ActivityEntry[] = [];
  for (let cursor: string | undefined, first = true; (first || cursor) && activity.length < MAX_ENTRIES; first = false) {
    const page = await listActivity({ events: db.events }, { applicationId: app.id, accountId: entityId, ...activityQuery({ cursor, limit: String(MAX_ACTIVITY_PAGE) }) });
    activity.push(...page.entries);
    cursor = page.nextCursor;
  }
  return {
    exportedAt: now, application: app.name, record, profiles,
    secondFactor: { totp: !totp ? 'off' : totp.confirmedAt ? 'on' : 'pending', confirmedAt: totp?.confirmedAt ?? null, recoveryCodesLeft: codes.length },
    passkeys, sessions, activity, history,
  };
}

/** The account of `token` exports its own data (the account page's button): the same document. */
export async function exportOwnAccount(ctx: CallContext<'clock' | 'db'>, command: { token: StoredCredential }): Promise<AccountExport> {
  const { record } = await accountOfToken(ctx, command.token);
  return exportAccount(ctx.services, { app: ctx.app, entityId: record.id });
}
