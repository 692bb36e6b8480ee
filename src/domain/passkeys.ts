import {
  generateAuthenticationOptions, generateRegistrationOptions, verifyAuthenticationResponse, verifyRegistrationResponse,
  type AuthenticationResponseJSON, type AuthenticatorTransport, type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON, type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoBase64URL, isoUint8Array } from '@simplewebauthn/server/helpers';
import type { Application } from './storage/applications';
import type { NewPasskey, StoredPasskey } from './storage/factors';
import { settingOfList } from './settings';

/**
 * Passkeys (docs/passkeys.md): WebAuthn Level 3 credentials through @simplewebauthn/server
 * (docs/decisions.md), a first credential like a password and a second factor.
 */

/** A ceremony's challenge waits this long for its answer (the options' timeout too). */
export const PASSKEY_CHALLENGE_SECONDS = 300;
/** The most passkeys an account keeps. */
export const MAX_PASSKEYS = 20;
/** A passkey's name, at most. */
export const MAX_PASSKEY_NAME = 100;
/** A credential as sent (JSON), at most: attestation objects with certificates stay well below. */
export const MAX_CREDENTIAL_JSON = 64 * 1024;

/**
 * Whom the passkeys of an application belong to: the RP ID (the application's host, or the
 * registrable domain above it set in `passkey_rp_id`), its name, and the origins that may use them:
 * the application's own pages and each login client's `allowed_origins` on the RP ID's domain, and
 * the apps' origins (`android:apk-key-hash:…`) listed there.
 */
export interface RelyingParty { id: string; name: string; origins: string[] }

/** The relying party of `app` reached at `appOrigin`, with the `allowed_origins` settings of its login clients and its own. */
export function relyingPartyOf(app: Application, appOrigin: string, name: string, allowedOrigins: (string | undefined)[]): RelyingParty {
  const id = app.settings['passkey_rp_id'] || new URL(appOrigin).hostname;
  const origins = new Set([appOrigin]);
  for (const entry of allowedOrigins.flatMap((setting) => settingOfList(setting))) {
    if (/^android:apk-key-hash:[A-Za-z0-9_-]{20,}$/.test(entry)) origins.add(entry);
    else if (onDomain(entry, id)) origins.add(new URL(entry).origin);
  }
  return { id, name, origins: [...origins] };
}

/** Whether web origin `origin` may use the passkeys of RP ID `rpId`: its host is the RP ID or under it. */
function onDomain(origin: string, rpId: string): boolean {
  try {
    const { hostname, protocol } = new URL(origin);
    return (protocol === 'https:' || protocol === 'http:') && (hostname === rpId || hostname.endsWith(`.${rpId}`));
  } catch {
    return false;
  }
}

/** The WebAuthn user handle of account `uuid`: random and free of personal data, as WebAuthn asks. */
export const userHandleOf = (uuid: string): Uint8Array<ArrayBuffer> => isoUint8Array.fromUTF8String(uuid) as Uint8Array<ArrayBuffer>;

const descriptor = (p: StoredPasskey) => ({ id: p.credentialId, transports: p.transports as AuthenticatorTransport[] });

/** The options of a registration: a resident key and user verification preferred, the account's own passkeys excluded. */
export function registrationOptions(
  rp: RelyingParty, account: { uuid: string; name: string; displayName: string }, existing: StoredPasskey[],
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return generateRegistrationOptions({
    rpName: rp.name, rpID: rp.id, userID: userHandleOf(account.uuid), userName: account.name, userDisplayName: account.displayName,
    timeout: PASSKEY_CHALLENGE_SECONDS * 1000, attestationType: 'none',
    excludeCredentials: existing.map(descriptor),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
  });
}

/**
 * The options of a sign-in: any passkey of the RP ID (discoverable), or those of one account.
 * `hints` adds each passkey's transports, which only a caller who already knows the account may
 * see (a second factor's): for an identifier anyone can type they would tell a real account's
 * passkeys from a decoy's.
 */
export function authenticationOptions(rp: RelyingParty, allowed: StoredPasskey[] | undefined, hints = false): Promise<PublicKeyCredentialRequestOptionsJSON> {
  return generateAuthenticationOptions({
    rpID: rp.id, timeout: PASSKEY_CHALLENGE_SECONDS * 1000, userVerification: 'preferred',
    ...(allowed && { allowCredentials: allowed.map((p) => (hints ? descriptor(p) : { id: p.credentialId })) }),
  });
}

/** The challenge a credential answers (from its client data), or undefined when it names none. */
export function challengeOf(credential: { response?: { clientDataJSON?: unknown } }): string | undefined {
  const data = credential.response?.clientDataJSON;
  if (typeof data !== 'string' || data.length > MAX_CREDENTIAL_JSON) return undefined;
  try {
    const parsed = JSON.parse(isoBase64URL.toUTF8String(data)) as { challenge?: unknown };
    return typeof parsed.challenge === 'string' ? parsed.challenge : undefined;
  } catch {
    return undefined;
  }
}

/** A registration checked against its challenge and relying party: the passkey to store, or why not. */
export async function verifiedRegistration(
  rp: RelyingParty, challenge: string, response: RegistrationResponseJSON, owner: { applicationId: number; entityId: number; name: string; now: Date },
): Promise<NewPasskey | { error: string }> {
  let result;
  try {
    result = await verifyRegistrationResponse({
      response, expectedChallenge: challenge, expectedOrigin: rp.origins, expectedRPID: rp.id, requireUserVerification: false,
    });
  } catch (e) {
    return { error: (e as Error).message };
  }
  if (!result.verified) return { error: 'the registration could not be verified' };
  const info = result.registrationInfo;
  return {
    applicationId: owner.applicationId, entityId: owner.entityId, credentialId: info.credential.id,
    publicKey: isoBase64URL.fromBuffer(info.credential.publicKey), counter: info.credential.counter,
    deviceType: info.credentialDeviceType, backedUp: info.credentialBackedUp,
    // not signed, sent by the browser: kept only as a list of short names
    transports: (Array.isArray(response.response.transports) ? response.response.transports : [])
      .filter((t): t is AuthenticatorTransport => typeof t === 'string' && /^[a-z-]{1,20}$/.test(t)).slice(0, 8),
    aaguid: info.aaguid, name: owner.name, createdAt: owner.now,
  };
}

/** What a checked sign-in proved: whether the person was verified, the counter now and the backup state. */
export interface PasskeyAssertion { userVerified: boolean; counter: number; backedUp: boolean }

/** A sign-in's credential checked against its challenge, the relying party and the stored passkey (its signature and counter). */
export async function verifiedAssertion(
  rp: RelyingParty, challenge: string, response: AuthenticationResponseJSON, passkey: StoredPasskey,
): Promise<PasskeyAssertion | { error: string }> {
  let result;
  try {
    result = await verifyAuthenticationResponse({
      response, expectedChallenge: challenge, expectedOrigin: rp.origins, expectedRPID: rp.id, requireUserVerification: false,
      credential: {
        id: passkey.credentialId, publicKey: isoBase64URL.toBuffer(passkey.publicKey) as Uint8Array<ArrayBuffer>, counter: passkey.counter,
        transports: passkey.transports as AuthenticatorTransport[],
      },
    });
  } catch (e) {
    return { error: (e as Error).message };
  }
  if (!result.verified) return { error: 'the signature could not be verified' };
  const info = result.authenticationInfo;
  return { userVerified: info.userVerified, counter: info.newCounter, backedUp: info.credentialBackedUp };
}
