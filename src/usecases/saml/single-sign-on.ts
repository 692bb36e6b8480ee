import { randomBytes } from 'node:crypto';
import { event, recordSubject } from '../../domain/events';
import { sha256Hex } from '../../domain/secrets';
import { sessionFacts } from '../../domain/session';
import { privateJwkOf } from '../../domain/signing-keys';
import { certificateOf, privatePemOf } from '../../domain/saml/certificates';
import {
  assertionConsumerOf, attributeValues, authnContextOf, checkIssueInstant, CLOCK_SKEW_SECONDS, DEFAULT_SAML_ATTRIBUTES, logoutResponse, nameIdKindOf,
  persistentNameId, readAuthnRequest, readLogoutRequest, REQUEST_SECONDS, signedFailure, signedResponse, type NameIdKind, type SigningKey,
} from '../../domain/saml/identity-provider';
import { defaultAssertionConsumer, identityProviderMetadata } from '../../domain/saml/metadata';
import { checkEnvelopedSignature, checkRedirectSignature, decoded, decodePostMessage, inflateMessage, rawQueryParameters, signedRedirectQuery } from '../../domain/saml/signatures';
import { BINDINGS, NAME_ID_FORMATS, parseXml, SamlInputError, STATUS } from '../../domain/saml/xml';
import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import { isDisabled } from '../../domain/storage/records';
import type { StoredServiceProvider } from '../../domain/storage/saml';
import { endFamily } from '../account/browser-sessions';
import { signingKeys, type KeyDeps } from '../keys/signing-keys';
import { asAccount, type CallContext, type Services } from '../services';

/**
 * Gatehouse as a SAML identity provider (docs/saml.md#identity-provider). A request is checked
 * whole before anything is answered to it (its service provider, signature, destination, time, ACS
 * URL, that its id was never seen); what survives is a pending sign-in the browser keeps (sealed),
 * answered from the application's single sign-on session (the account page's) or after the hosted
 * sign-in makes one.
 */

/** The paths of the identity provider on the application's address. */
export const SAML_PATHS = { metadata: '/saml/metadata', sso: '/saml/sso', slo: '/saml/slo' } as const;

/** The replay markers of requests, kept in the OpenID provider's state (one row per id, saved once on any node). */
const REQUEST_MARKER = 'SamlRequest';
const LOGOUT_MARKER = 'SamlLogout';

/** Why a SAML request is refused without an answer to its service provider (shown to the person, with what to fix). */
export class SamlRefusal extends Error {}

/** The identity provider's addresses for an application. */
export function identityProviderOf(deps: Pick<Services, 'baseUrls'>, app: Application) {
  const base = deps.baseUrls.of(app.name);
  return { entityId: `${base}${SAML_PATHS.metadata}`, ssoUrl: `${base}${SAML_PATHS.sso}`, sloUrl: `${base}${SAML_PATHS.slo}` };
}

const subjectOf = (app: Application) => `Gatehouse SAML ${app.name}`;

/** The key that signs now (the application's current RSA key) and its certificate: the identity provider's, and a connection's service provider's. */
export async function samlSigningKey(deps: KeyDeps, app: Application): Promise<SigningKey> {
  const key = (await signingKeys(deps, app.id)).find((k) => k.slot === 'current:RS256');
  if (!key) throw new Error('the application has no current RS256 signing key');
  const jwk = privateJwkOf(deps.box, key);
  return { privatePem: privatePemOf(jwk), certificate: await certificateOf(jwk, key.kid, key.createdAt, subjectOf(app)) };
}

/** The identity provider's metadata: the certificates of the current and the next RSA keys (the next published ahead of a rotation). */
export async function samlMetadata(deps: KeyDeps & Pick<Services, 'baseUrls'>, app: Application): Promise<string> {
  const keys = (await signingKeys(deps, app.id)).filter((k) => k.slot === 'current:RS256' || k.slot === 'next:RS256')
    .sort((a, b) => (a.slot === 'current:RS256' ? -1 : b.slot === 'current:RS256' ? 1 : 0));
  const certificates = await Promise.all(keys.map((k) => certificateOf(privateJwkOf(deps.box, k), k.kid, k.createdAt, subjectOf(app))));
  return identityProviderMetadata({ ...identityProviderOf(deps, app), certificates });
}

/** A sign-in a service provider asked for (or that the identity provider starts), waiting for the browser's session. */
export interface PendingSignIn {
  /** Its own id: what the hosted sign-in made for it carries (ForceAuthn is met by that sign-in only). */
  pendingId: string;
  serviceProvider: string;
  requestId?: string;
  acsUrl: string;
  relayState?: string;
  forceAuthn: boolean;
  isPassive: boolean;
  nameIdFormat: NameIdKind | 'unsupported';
}

/** An answer for the service provider: a Response posted to its ACS URL by the browser. */
export interface PostedResponse { acsUrl: string; samlResponse: string; relayState?: string }

const refused = (e: unknown) => (e instanceof SamlInputError ? new SamlRefusal(e.message) : e);

/** What a request's binding brought: Redirect (the raw query, as signed) or POST (the form's fields). */
export type ReceivedMessage =
  | { binding: 'redirect'; rawQuery: string }
  | { binding: 'post'; message: string; relayState?: string };

const MAX_RELAY_STATE = 1024;

/**
 * Checks an AuthnRequest (SP-initiated sign-in): answers the pending sign-in, or throws SamlRefusal
 * (nothing is sent to anyone). A request id is accepted once per service provider, on any node.
 */
export async function receiveAuthnRequest(ctx: CallContext<'baseUrls' | 'clock' | 'db'>, received: ReceivedMessage): Promise<PendingSignIn> {
  const { db, clock } = ctx.services;
  const idp = identityProviderOf(ctx.services, ctx.app);
  try {
    const query = received.binding === 'redirect' ? rawQueryParameters(received.rawQuery) : undefined;
    const encoded = received.binding === 'redirect' ? query!.get('SAMLRequest') : received.message;
    if (!encoded) throw new SamlInputError('the request has no SAMLRequest');
    const xml = query ? inflateMessage(decoded(encoded), 'SAMLRequest') : decodePostMessage(encoded, 'SAMLRequest');
    const relayRaw = query?.get('RelayState');
    const relayState = relayRaw !== undefined ? decoded(relayRaw) : received.binding === 'post' ? received.relayState : undefined;
    if (relayState !== undefined && relayState.length > MAX_RELAY_STATE) throw new SamlInputError(`the RelayState is longer than ${MAX_RELAY_STATE} characters`);
    const unsigned = readAuthnRequest(xml);
    const sp = await db.saml.findByEntity(ctx.app.id, unsigned.issuer);
    if (!sp) throw new SamlInputError(`the AuthnRequest's Issuer (${unsigned.issuer.slice(0, 200)}) is not a SAML service provider of this application: register its metadata first`);
    const certificates = sp.descriptor.certificates;
    let facts = unsigned;
    if (received.binding === 'redirect') {
      const signed = checkRedirectSignature(received.rawQuery, 'SAMLRequest', certificates);
      if (signed === 'unsigned' && sp.descriptor.authnRequestsSigned) throw new SamlInputError('the service provider\'s metadata says its AuthnRequests are signed, and this one is not');
    } else {
      const root = parseXml(xml, 'the AuthnRequest').documentElement!;
      const signed = checkEnvelopedSignature(xml, root, certificates, 'the AuthnRequest');
      if (signed === 'unsigned') {
        if (sp.descriptor.authnRequestsSigned) throw new SamlInputError('the service provider\'s metadata says its AuthnRequests are signed, and this one is not');
      } else {
        // what was signed is all that is read
        facts = readAuthnRequest(xml, signed);
        if (facts.issuer !== sp.entityId) throw new SamlInputError('the signed AuthnRequest names another Issuer');
      }
    }
    if (facts.destination !== undefined && facts.destination !== idp.ssoUrl) throw new SamlInputError(`the AuthnRequest's Destination is not this identity provider's SSO URL (${idp.ssoUrl})`);
    const now = clock.now();
    checkIssueInstant(facts.issueInstant, now, 'the AuthnRequest');
    const acs = assertionConsumerOf(sp.descriptor, facts);
    const kind = nameIdKindOf(facts.nameIdFormat, sp.nameIdFormat, sp.descriptor.nameIdFormats);
    // once per service provider and id, on every node
    const fresh = await db.oidcState.saveNewAlone(ctx.app.id, {
      model: REQUEST_MARKER, idHash: sha256Hex(`${sp.entityId}\n${facts.id}`), uidHash: null, grantId: null, entityId: null, payload: {},
      expiresAt: new Date(facts.issueInstant.getTime() + (REQUEST_SECONDS + 2 * CLOCK_SKEW_SECONDS) * 1000),
    });
    if (!fresh) throw new SamlInputError('this AuthnRequest was received before (its ID is used once): start again at the application');
    return {
      pendingId: randomBytes(18).toString('base64url'), serviceProvider: sp.publicId, requestId: facts.id, acsUrl: acs.location,
      ...(relayState !== undefined && relayState !== '' && { relayState }), forceAuthn: facts.forceAuthn, isPassive: facts.isPassive, nameIdFormat: kind ?? 'unsupported',
    };
  } catch (e) {
    throw refused(e);
  }
}

/** An IdP-initiated sign-in to a service provider (its public id or entity id): to its default ACS URL, no request to answer. */
export async function startIdpInitiated(ctx: CallContext<'db'>, command: { serviceProvider: string; relayState?: string }): Promise<PendingSignIn> {
  const { db } = ctx.services;
  const sp = /^sp_[0-9a-f]{24}$/.test(command.serviceProvider)
    ? await db.saml.find(ctx.app.id, command.serviceProvider)
    : await db.saml.findByEntity(ctx.app.id, command.serviceProvider);
  if (!sp) throw new SamlRefusal('this link names no SAML service provider of this application');
  if (command.relayState !== undefined && command.relayState.length > MAX_RELAY_STATE) throw new SamlRefusal(`the RelayState is longer than ${MAX_RELAY_STATE} characters`);
  // a link anyone may make: its RelayState is a path of the service provider's own, never an address elsewhere it would redirect to
  if (command.relayState !== undefined && command.relayState !== '' && !/^\/(?![/\\])[^\s]*$/.test(command.relayState)) {
    throw new SamlRefusal('an IdP-initiated sign-in\'s RelayState is a path of the service provider (starting with one /), never another address');
  }
  return {
    pendingId: randomBytes(18).toString('base64url'), serviceProvider: sp.publicId, acsUrl: defaultAssertionConsumer(sp.descriptor).location,
    ...(command.relayState && { relayState: command.relayState }), forceAuthn: false, isPassive: false,
    nameIdFormat: nameIdKindOf(undefined, sp.nameIdFormat, sp.descriptor.nameIdFormats) ?? 'persistent',
  };
}

/** The SessionIndex of a browser session: a keyed digest of its family, the same in every assertion of that session. */
export const sessionIndexOf = (deps: Pick<Services, 'box'>, session: StoredCredential): string =>
  `_${deps.box.tag(session.family ?? String(session.id), 'saml session index').slice(0, 32)}`;

/** What answers a pending sign-in: a Response for its service provider, or the hosted sign-in first. */
export type PendingAnswer = { kind: 'respond'; response: PostedResponse } | { kind: 'sign_in' };

/**
 * Answers a pending sign-in from the browser's session: an assertion for its account when the
 * session may answer (ForceAuthn: only the sign-in made for this request), NoPassive when the
 * request was passive and there is none, else the hosted sign-in. The assertion is an event
 * (`saml.assertion_issued`, in the account's activity).
 */
export async function answerPendingSignIn(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'work'>, command: { pending: PendingSignIn; session: StoredCredential | undefined },
): Promise<PendingAnswer> {
  const { db, clock, box, work } = ctx.services;
  const { pending, session } = command;
  const sp = await db.saml.find(ctx.app.id, pending.serviceProvider);
  if (!sp) throw new SamlRefusal('the service provider of this sign-in was removed from this application');
  const idp = identityProviderOf(ctx.services, ctx.app);
  const now = clock.now();
  // (the key is read only for a response: a sign-in sent to the hosted page signs nothing)
  const failure = async (status: string, message: string): Promise<PendingAnswer> => ({
    kind: 'respond', response: {
      acsUrl: pending.acsUrl, ...(pending.relayState !== undefined && { relayState: pending.relayState }),
      samlResponse: Buffer.from(signedFailure(idp.entityId, pending.acsUrl, pending.requestId, now, status, message, await samlSigningKey(ctx.services, ctx.app))).toString('base64'),
    },
  });
  if (pending.nameIdFormat === 'unsupported') return failure(STATUS.invalidNameIdPolicy, 'Gatehouse gives persistent and emailAddress NameIDs');
  const facts = session && sessionFacts(session);
  const record = facts && session.entityId !== null ? await db.records.find(ctx.app.id, { id: session.entityId }) : undefined;
  const usable = record && !isDisabled(record, now) && (!pending.forceAuthn || session?.extra?.interaction === pending.pendingId);
  if (!usable || !record || !facts || !session) return pending.isPassive ? failure(STATUS.noPassive, 'the person is not signed in') : { kind: 'sign_in' };
  // an address is a name once proven (anyone may register with someone else's): a service provider may key its accounts on it
  if (pending.nameIdFormat === 'email' && (!record.email || record.emailVerified === null)) return failure(STATUS.invalidNameIdPolicy, 'this account has no verified email address');
  const nameId = pending.nameIdFormat === 'email' ? record.email! : persistentNameId(sp.persistentSalt, record.uuid);
  const attributes = Object.entries(sp.attributes ?? DEFAULT_SAML_ATTRIBUTES).map(([name, source]) => ({ name, values: attributeValues(record, source) }));
  const xml = signedResponse({
    idpEntityId: idp.entityId, spEntityId: sp.entityId, acsUrl: pending.acsUrl, ...(pending.requestId !== undefined && { inResponseTo: pending.requestId }),
    nameId, nameIdFormat: pending.nameIdFormat, sessionIndex: sessionIndexOf({ box }, session), sessionNotOnOrAfter: session.expiresAt,
    authnInstant: new Date(facts.auth_time), authnContext: authnContextOf(facts.amr), attributes, now,
  }, await samlSigningKey(ctx.services, ctx.app));
  await work.run(async (uow) => {
    uow.record(event('saml.assertion_issued', ctx.app.id, now, asAccount(ctx, record.id), recordSubject(record.id), {
      serviceProvider: sp.publicId, entityId: sp.entityId, nameIdFormat: pending.nameIdFormat, initiated: pending.requestId === undefined ? 'idp' : 'sp',
    }));
  });
  return { kind: 'respond', response: { acsUrl: pending.acsUrl, samlResponse: Buffer.from(xml).toString('base64'), ...(pending.relayState !== undefined && { relayState: pending.relayState }) } };
}

/**
 * Single logout over HTTP-Redirect (docs/saml.md#single-logout): a LogoutRequest signed by its
 * service provider (always), meant for this identity provider, fresh and never seen, ends the
 * browser's session when it names that session's account (its NameID as that provider got it,
 * and its SessionIndex when it names one). Answers the URL of the signed LogoutResponse.
 */
export async function singleLogout(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'work'>, command: { rawQuery: string; session: StoredCredential | undefined },
): Promise<{ location: string; ended: boolean }> {
  const { db, clock, box, work } = ctx.services;
  const idp = identityProviderOf(ctx.services, ctx.app);
  let ended = false;
  let sp: StoredServiceProvider | undefined;
  let request: ReturnType<typeof readLogoutRequest>;
  let relayState: string | undefined;
  try {
    const query = rawQueryParameters(command.rawQuery);
    const encoded = query.get('SAMLRequest');
    if (!encoded) throw new SamlInputError('the request has no SAMLRequest (a LogoutResponse is not expected here)');
    request = readLogoutRequest(inflateMessage(decoded(encoded), 'SAMLRequest'));
    const relayRaw = query.get('RelayState');
    relayState = relayRaw !== undefined ? decoded(relayRaw).slice(0, MAX_RELAY_STATE) : undefined;
    sp = await db.saml.findByEntity(ctx.app.id, request.issuer);
    if (!sp) throw new SamlInputError('the LogoutRequest\'s Issuer is not a SAML service provider of this application');
    if (checkRedirectSignature(command.rawQuery, 'SAMLRequest', sp.descriptor.certificates) !== 'valid') throw new SamlInputError('a LogoutRequest must be signed by its service provider');
    if (request.destination !== undefined && request.destination !== idp.sloUrl) throw new SamlInputError(`the LogoutRequest's Destination is not this identity provider's SLO URL (${idp.sloUrl})`);
    checkIssueInstant(request.issueInstant, clock.now(), 'the LogoutRequest');
  } catch (e) {
    throw refused(e);
  }
  const endpoint = sp.descriptor.singleLogout.find((e) => e.binding === BINDINGS.redirect);
  if (!endpoint) throw new SamlRefusal('the service provider\'s metadata has no SingleLogoutService with the HTTP-Redirect binding to answer to');
  const fresh = await db.oidcState.saveNewAlone(ctx.app.id, {
    model: LOGOUT_MARKER, idHash: sha256Hex(`${sp.entityId}\n${request.id}`), uidHash: null, grantId: null, entityId: null, payload: {},
    expiresAt: new Date(request.issueInstant.getTime() + (REQUEST_SECONDS + 2 * CLOCK_SKEW_SECONDS) * 1000),
  });
  if (!fresh) throw new SamlRefusal('this LogoutRequest was received before (its ID is used once)');
  const now = clock.now();
  const { session } = command;
  const record = session && session.entityId !== null ? await db.records.find(ctx.app.id, { id: session.entityId }) : undefined;
  let status: string = STATUS.success;
  if (session && record) {
    const named = request.nameIdFormat === NAME_ID_FORMATS.email
      ? (record.email ?? '').toLowerCase() === request.nameId.toLowerCase()
      : request.nameId === persistentNameId(sp.persistentSalt, record.uuid) || (record.email ?? '').toLowerCase() === request.nameId.toLowerCase();
    const indexed = request.sessionIndexes.length === 0 || request.sessionIndexes.includes(sessionIndexOf({ box }, session));
    if (named && indexed) {
      const target = sp;
      await work.run(async (uow) => {
        if (session.family !== null) await endFamily(db, ctx.app.id, record.id, session.family, now, uow);
        uow.record(event('saml.logout', ctx.app.id, now, asAccount(ctx, record.id), recordSubject(record.id), { serviceProvider: target.publicId, entityId: target.entityId }));
      }, { readCommitted: true });
      ended = true;
    } else {
      // a request for another account or session than this browser's: nothing ends here
      status = STATUS.requester;
    }
  }
  const key = await samlSigningKey(ctx.services, ctx.app);
  const destination = endpoint.responseLocation ?? endpoint.location;
  const query = signedRedirectQuery('SAMLResponse', logoutResponse(idp.entityId, destination, request.id, now, status), relayState, key.privatePem);
  return { location: `${destination}${destination.includes('?') ? '&' : '?'}${query}`, ended };
}
