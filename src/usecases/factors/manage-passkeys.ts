import type { StoredCredential } from '../../domain/storage/credentials';
import type { StoredPasskey } from '../../domain/storage/factors';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { Refusal, invalidField } from '../../domain/refusal';
import { event, recordSubject } from '../../domain/events';
import { asAccount, type CallContext } from '../services';
import { accountOfToken } from './account';
import { passkeyMail, passkeyName } from './finish-passkey-registration';

/** A passkey as its owner sees it: no key, only what tells them apart. */
export interface PasskeyView {
  id: number; name: string; createdAt: Date; lastUsedAt: Date | null; backedUp: boolean; deviceType: StoredPasskey['deviceType']; transports: string[];
}

const viewOf = (p: StoredPasskey): PasskeyView => ({
  id: p.id, name: p.name, createdAt: p.createdAt, lastUsedAt: p.lastUsedAt, backedUp: p.backedUp, deviceType: p.deviceType, transports: p.transports,
});

/** The passkeys of the account of `token`, oldest first. */
export async function listPasskeys(ctx: CallContext<'clock' | 'db'>, command: { token: StoredCredential }): Promise<PasskeyView[]> {
  const { record } = await accountOfToken(ctx, command.token);
  return (await ctx.services.db.passkeys.list(ctx.app.id, record.id)).map(viewOf);
}

/** Names one of the account's passkeys (docs/passkeys.md); an event says so. */
export async function renamePasskey(ctx: CallContext<'clock' | 'db' | 'work'>, command: { token: StoredCredential; passkeyId: number; name: string }): Promise<void> {
  const { db, clock, work } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  const name = passkeyName(command.name, '');
  if (!name) throw invalidField('name', 'must not be empty');
  await work.run(async (uow) => {
    if (!(await db.passkeys.rename(ctx.app.id, record.id, command.passkeyId, name, uow.tx))) throw noSuchPasskey();
    uow.record(event('account.passkey_renamed', ctx.app.id, clock.now(), asAccount(ctx, record.id, client), recordSubject(record.id), { passkey: command.passkeyId }));
  });
}

const noSuchPasskey = () => invalidField('passkeyId', 'is not the id of one of this account\'s passkeys (passkeys_native lists them)');

/**
 * Removes one of the account's passkeys (docs/passkeys.md), with a recent proof (a token of a
 * sign-in within the last minutes): it signs in no more, and an email tells the person. The last
 * way to sign in of an account without a password is never removed.
 */
export async function removePasskey(ctx: CallContext<'clock' | 'db' | 'work'>, command: { token: StoredCredential; passkeyId: number }): Promise<void> {
  const { db, clock, work } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  if (!mayResetPassword(command.token, clock.now())) {
    throw invalidField('accessToken', `removing a passkey needs an access token from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes; sign in again`);
  }
  await work.run(async (uow) => {
    // the record locked first: two removals at once count each other's
    const locked = await db.records.findForUpdate(ctx.app.id, record.id, uow.tx);
    if (!locked) throw noSuchPasskey();
    // and claimed: on a Galera cluster the lock holds on one node only (docs/scaling.md)
    await db.records.claim(record.id, clock.now(), uow.tx);
    const all = await db.passkeys.list(ctx.app.id, record.id, uow.tx);
    const gone = all.find((p) => p.id === command.passkeyId);
    if (!gone) throw noSuchPasskey();
    const identities = await db.social.profiles.forEntity(ctx.app.id, record.id, uow.tx);
    if (!locked.passwordHash && all.length === 1 && identities.length === 0) {
      throw new Refusal('nothing_to_do', 'this passkey is the only way this account signs in: set a password or add another passkey first');
    }
    if (!(await db.passkeys.remove(ctx.app.id, record.id, gone.id, uow.tx))) throw noSuchPasskey();
    const acting = asAccount(ctx, record.id, client);
    uow.record(event('account.passkey_removed', ctx.app.id, clock.now(), acting, recordSubject(record.id), { passkey: gone.id }, passkeyMail(ctx, record, 'passkey-removed', gone.name)));
  });
}
