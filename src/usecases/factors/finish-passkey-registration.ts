import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { UserRecord } from '../../domain/storage/records';
import { markEnrolled, sessionAfterEnrollment } from '../login/enrolled-sign-in';
import type { SignedIn } from '../login/call';
import { MAX_PASSKEYS, MAX_PASSKEY_NAME, verifiedRegistration } from '../../domain/passkeys';
import { Refusal, invalidField } from '../../domain/refusal';
import { displayName, type MailRequest } from '../../domain/mail';
import { recordLocale } from '../../domain/email-change';
import { event, recordSubject } from '../../domain/events';
import { asAccount, type CallContext } from '../services';
import { accountOfToken } from './account';
import { credentialOf, relyingParty, spendChallenge } from './passkey-ceremony';

/** The email that tells the person a passkey was added or removed, when the account has an address. */
export const passkeyMail = (ctx: CallContext<never>, record: UserRecord, template: 'passkey-added' | 'passkey-removed', passkeyName: string): { mail: MailRequest } | undefined =>
  (record.email ? { mail: { app: ctx.app, template, locale: recordLocale(record), to: record.email, name: displayName(record), passkeyName } } : undefined);

/** A passkey's name as the person typed it: trimmed, printable, at most MAX_PASSKEY_NAME characters. */
export function passkeyName(typed: string | undefined, fallback: string): string {
  const name = (typed ?? '').trim();
  if (name.length > MAX_PASSKEY_NAME || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalidField('name', `must be at most ${MAX_PASSKEY_NAME} printable characters`);
  }
  return name || fallback;
}

/**
 * Adds the passkey the browser made (docs/passkeys.md) to the account of `token`: its challenge
 * must be one this account began with this client, and is spent; the attestation is checked by
 * @simplewebauthn/server against the relying party (RP ID and origins). In one unit of work the
 * passkey is stored and an event says so, which emails the person. Answers its id.
 */
export async function finishPasskeyRegistration(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>,
  command: { token: StoredCredential; credential: unknown; name?: string; continueSignIn?: boolean },
): Promise<{ passkeyId: number; signedIn?: SignedIn }> {
  const { db, clock, work } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  const credential = credentialOf<RegistrationResponseJSON>(command.credential, 'register');
  const now = clock.now();
  const name = passkeyName(command.name, `Passkey ${now.toISOString().slice(0, 10)}`);
  const row = await spendChallenge(ctx, credential.challenge, 'register', client, 'credential');
  if (row.entityId !== record.id) throw invalidField('credential', 'answers a challenge another account began; begin again with this account\'s access token');
  const made = await verifiedRegistration(await relyingParty(ctx), credential.challenge, credential, { applicationId: ctx.app.id, entityId: record.id, name, now });
  if ('error' in made) throw invalidField('credential', `is not a valid registration for this service: ${made.error}`);
  const passkeyId = await work.run(async (uow) => {
    // the record locked first: two registrations at once count each other's
    const locked = await db.records.findForUpdate(ctx.app.id, record.id, uow.tx);
    if (!locked) throw new Refusal('gone', 'the account was deleted meanwhile');
    // and claimed: on a Galera cluster the lock holds on one node only (docs/scaling.md)
    await db.records.claim(record.id, now, uow.tx);
    if ((await db.passkeys.list(ctx.app.id, record.id, uow.tx)).length >= MAX_PASSKEYS) {
      throw new Refusal('nothing_to_do', `this account has ${MAX_PASSKEYS} passkeys, the most it keeps; remove one first`);
    }
    const id = await db.passkeys.add(made, uow.tx);
    if (id === undefined) throw new Refusal('nothing_to_do', 'this passkey is registered already');
    const acting = asAccount(ctx, record.id, client);
    uow.record(event('account.passkey_added', ctx.app.id, now, acting, recordSubject(record.id), { passkey: id }, passkeyMail(ctx, record, 'passkey-added', name)));
    // added with an enroll_token: the sign-in that waits with it may go on with this passkey
    await markEnrolled(ctx, uow, command.token, 'passkey');
    return id;
  });
  // the ceremony just proved the passkey: the sign-in sent to add it goes on (the API's), never asking for the password again
  const signedIn = command.continueSignIn ? await sessionAfterEnrollment({ ...ctx, client }, command.token) : undefined;
  if (signedIn) return { passkeyId, signedIn };
  return { passkeyId };
}
