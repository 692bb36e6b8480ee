import type { StoredCredential } from '../../domain/storage/credentials';
import type { UserRecord } from '../../domain/storage/records';
import { mayResetPassword } from '../../domain/tokens';
import { secondFactorPolicy, type SecondFactorPolicy } from '../../domain/second-factor';
import { accountOfToken } from '../factors/account';
import { listPasskeys, type PasskeyView } from '../factors/manage-passkeys';
import type { CallContext } from '../services';
import { listSessions, type SessionView } from './browser-sessions';
import { ACTIVITY_TYPES } from '../../domain/activity';
import type { ActivityEntry } from '../../domain/storage/events';
import { listActivity } from '../activity/list-activity';

/** One entry of the account's recent activity, with the name of the client it came through (its description, else its client_id). */
export type ActivityView = ActivityEntry & { clientName?: string };

/** How many entries of its activity the account page shows. */
export const RECENT_ACTIVITY = 20;

/** What the account page shows of an account: the record, how it signs in, and where it is signed in; no secret. */
export interface AccountOverview {
  /** The record, without its password hash. */
  record: UserRecord & { passwordHash: null };
  hasPassword: boolean;
  /** Linked social identities: the provider and the identity's id there. */
  identities: { provider: string; identifier: string }[];
  passkeys: PasskeyView[];
  /** The authenticator app: none, added but not confirmed, or on. */
  totp: 'off' | 'pending' | 'on';
  /** Recovery codes not used yet. */
  recoveryCodesLeft: number;
  sessions: SessionView[];
  /** The application's second_factor setting. */
  policy: SecondFactorPolicy;
  /** The newest entries of the account's activity. */
  activity: ActivityView[];
  /** The session's sign-in is recent enough to change how the account signs in (docs/account-page.md). */
  fresh: boolean;
}

/** The account of `token` as its own page shows it. */
export async function accountOverview(ctx: CallContext<'clients' | 'clock' | 'db'>, command: { token: StoredCredential }): Promise<AccountOverview> {
  const { db, clock } = ctx.services;
  const { record } = await accountOfToken(ctx, command.token);
  const now = clock.now();
  const [identities, passkeys, totp, codes, sessions, recent] = await Promise.all([
    db.social.profiles.forEntity(ctx.app.id, record.id),
    listPasskeys(ctx, command),
    db.factors.totp(ctx.app.id, record.id),
    db.credentials.liveOfRecord(ctx.app.id, record.id, 'recovery_code', now),
    listSessions(ctx, command),
    listActivity({ events: db.events }, { applicationId: ctx.app.id, accountId: record.id, types: ACTIVITY_TYPES, limit: RECENT_ACTIVITY }),
  ]);
  // each client named once, as the sessions name them: a relying party by its own name
  const names = new Map<string, string>();
  for (const id of new Set(recent.entries.map((e) => e.clientId).filter((id): id is string => id !== undefined))) {
    const client = await ctx.services.clients.find(ctx.app.id, id);
    if (client) names.set(id, client.description || client.clientId);
  }
  return {
    record: { ...record, passwordHash: null },
    hasPassword: record.passwordHash !== null,
    identities: identities.map((p) => ({ provider: p.provider, identifier: p.identifier })),
    passkeys,
    totp: !totp ? 'off' : totp.confirmedAt ? 'on' : 'pending',
    recoveryCodesLeft: codes.length,
    sessions,
    activity: recent.entries.map((e) => ({ ...e, ...(e.clientId !== undefined && names.has(e.clientId) && { clientName: names.get(e.clientId) }) })),
    policy: secondFactorPolicy(ctx.app),
    fresh: mayResetPassword(command.token, now),
  };
}
