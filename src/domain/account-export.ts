import { passwordFormatOf } from './imported-hashes';
import { renderActivityEntry } from './activity';
import type { ActivityEntry } from './storage/events';
import type { StoredPasskey } from './storage/factors';
import { isDisabled, type UserRecord } from './storage/records';
import type { StoredProfile } from './storage/social';
import type { Snapshot } from './storage/versions';
import { formatTimestamp } from './timestamps';
import { renderDisable, renderWithProfiles } from './users';

/** A live session of an account as an export lists it: what, for which client, when; never its value. */
export interface ExportedSession {
  kind: string;
  clientId: string | null;
  issuedAt: Date | null;
  expiresAt: Date;
  /** How and when the person signed in for it, when it keeps that. */
  signedInAt?: string;
  methods?: string[];
}

/** Everything an export holds (docs/lifecycle.md#export). */
export interface AccountExport {
  exportedAt: Date;
  application: string;
  record: UserRecord;
  profiles: StoredProfile[];
  secondFactor: { totp: 'off' | 'pending' | 'on'; confirmedAt: Date | null; recoveryCodesLeft: number };
  passkeys: StoredPasskey[];
  sessions: ExportedSession[];
  activity: ActivityEntry[];
  history: Snapshot[];
}

const time = (d: Date | null) => (d ? formatTimestamp(d) : null);

/**
 * The export as one JSON document, the same from the API, the command line and the account page:
 * the record as /entity shows it, then what is kept beside it. No secret is in it: the record's
 * rendering has no password hash, and the rest is named here member by member. The person's own
 * download (`forThePerson`) leaves out the operators' words on a disable (docs/lifecycle.md: the
 * person is not told the reason); a disable whose time has passed is not shown as one.
 */
export function renderAccountExport(x: AccountExport, options: { forThePerson?: boolean } = {}): Record<string, unknown> {
  const disabled = x.record.disabled && isDisabled(x.record, x.exportedAt) ? renderDisable(x.record.disabled) : null;
  const withoutReason = <T extends Record<string, unknown>>(entry: T): T => {
    if (!options.forThePerson || entry.type !== 'account.disabled') return entry;
    const { reason: _reason, ...rest } = entry;
    return rest as T;
  };
  return {
    format: 'gatehouse-account-export/1',
    exported_at: formatTimestamp(x.exportedAt),
    application: x.application,
    record: renderWithProfiles(x.record, x.profiles),
    account: { has_password: x.record.passwordHash !== null, password_format: passwordFormatOf(x.record.passwordHash), disabled: disabled && options.forThePerson ? { ...disabled, reason: null } : disabled },
    identities: x.profiles.map((p) => ({ provider: p.provider, identifier: p.identifier, linked_at: formatTimestamp(p.created), profile: p.data })),
    second_factor: { authenticator: x.secondFactor.totp, confirmed_at: time(x.secondFactor.confirmedAt), recovery_codes_left: x.secondFactor.recoveryCodesLeft },
    passkeys: x.passkeys.map((p) => ({
      id: p.id, name: p.name, created_at: formatTimestamp(p.createdAt), last_used_at: time(p.lastUsedAt), device_type: p.deviceType,
      backed_up: p.backedUp, transports: p.transports, authenticator_model: p.aaguid,
    })),
    sessions: x.sessions.map((s) => ({
      kind: s.kind, client_id: s.clientId, issued_at: time(s.issuedAt), expires_at: formatTimestamp(s.expiresAt),
      ...(s.signedInAt !== undefined && { signed_in_at: s.signedInAt, methods: s.methods }),
    })),
    activity: x.activity.map((e) => withoutReason(renderActivityEntry(e))),
    history: x.history.map((v) => ({ version: v.version, valid_from: formatTimestamp(v.validFrom), record: v.snapshot })),
  };
}
