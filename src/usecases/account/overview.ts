import type { StoredCredential } from '../../domain/storage/credentials';
import type { UserRecord } from '../../domain/storage/records';
import { mayResetPassword } from '../../domain/tokens';
import { secondFactorPolicy, type SecondFactorPolicy } from '../../domain/second-factor';
import { accountOfToken } from '../factors/account';
import { listPasskeys, type PasskeyView } from '../factors/manage-passkeys';
import type { CallContext } from '../services';
import { listSessions, type SessionView } from './browser-sessions';

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
  /** The session's sign-in is recent enough to change how the account signs in (docs/account-page.md). */
  fresh: boolean;
}

/** The account of `token` as its own page shows it. */
export async function accountOverview(ctx: CallContext, command: { token: StoredCredential }): Promise<AccountOverview> {
  const { db, clock } = ctx.services;
  const { record } = await accountOfToken(ctx, command.token);
  const now = clock.now();
  const [identities, passkeys, totp, codes, sessions] = await Promise.all([
    db.social.profiles.forEntity(ctx.app.id, record.id),
    listPasskeys(ctx, command),
    db.factors.totp(ctx.app.id, record.id),
    db.credentials.liveOfRecord(ctx.app.id, record.id, 'recovery_code', now),
    listSessions(ctx, command),
  ]);
  return {
    record: { ...record, passwordHash: null },
    hasPassword: record.passwordHash !== null,
    identities: identities.map((p) => ({ provider: p.provider, identifier: p.identifier })),
    passkeys,
    totp: !totp ? 'off' : totp.confirmedAt ? 'on' : 'pending',
    recoveryCodesLeft: codes.length,
    sessions,
    policy: secondFactorPolicy(ctx.app),
    fresh: mayResetPassword(command.token, now),
  };
}
