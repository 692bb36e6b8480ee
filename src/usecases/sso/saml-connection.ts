import { randomBytes } from 'node:crypto';
import { SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import { checkResponseEnvelope, readSignedAssertion, type AssertionFacts } from '../../domain/saml/assertions';
import { certificatePem } from '../../domain/saml/certificates';
import { CLOCK_SKEW_SECONDS } from '../../domain/saml/identity-provider';
import { serviceProviderMetadata } from '../../domain/saml/metadata';
import { decodePostMessage } from '../../domain/saml/signatures';
import { BINDINGS, SamlInputError } from '../../domain/saml/xml';
import { sha256Hex } from '../../domain/secrets';
import type { Application } from '../../domain/storage/applications';
import type { SamlConnectionSettings, StoredConnection } from '../../domain/storage/connections';
import type { KeyDeps } from '../keys/signing-keys';
import { samlSigningKey } from '../saml/single-sign-on';
import { connectionUrls } from '../organizations/connections';
import type { CallContext, Services } from '../services';
import { ConnectionRefusal, type CheckedResponse } from './connection-sign-in';

/**
 * Signing in through an organization's SAML connection (docs/organizations.md#connections,
 * docs/saml.md#connections): Gatehouse is the service provider. The request is made and the
 * response's signature checked by node-saml (with the identity provider's certificates from its
 * metadata only); what node-saml leaves to its caller is checked here, on the signed assertion
 * alone: its Issuer, the Recipient and InResponseTo of its subject confirmation, the Response's
 * Destination, an assertion id used once on every node, a NameID with nothing but text in it.
 */


/** How long a checked response waits for its browser to come back for it. */
const RESULT_SECONDS = 5 * 60;
const RESULT_MODEL = 'SsoResult';
const ASSERTION_MARKER = 'SamlAssertion';

type SamlConnection = StoredConnection & { settings: SamlConnectionSettings };

/** The application's SAML connection of that public id (its type checked), or the refusal. */
async function samlConnectionOf(deps: Pick<Services, 'db'>, app: Application, publicId: string): Promise<SamlConnection> {
  const connection = /^con_[0-9a-f]{24}$/.test(publicId) ? await deps.db.connections.find(app.id, publicId) : undefined;
  if (!connection || connection.settings.type !== 'saml') throw new ConnectionRefusal('this link names no SAML connection of this application (it was removed, or the link is wrong)');
  return connection as SamlConnection;
}

/** node-saml for one connection: requests signed (RSA-SHA256), responses' assertions signed by the identity provider's certificates only, no InResponseTo cache (the browser's pending request is checked here). */
async function samlOf(deps: KeyDeps & Pick<Services, 'baseUrls'>, app: Application, connection: SamlConnection, requestId?: string): Promise<SAML> {
  const urls = connectionUrls(deps, app, connection.publicId);
  const { idp } = connection.settings;
  const key = await samlSigningKey(deps, app);
  return new SAML({
    callbackUrl: urls.acsUrl, issuer: urls.entityId, audience: urls.entityId, idpIssuer: idp.entityId,
    entryPoint: idp.singleSignOn.find((e) => e.binding === BINDINGS.redirect)!.location,
    idpCert: idp.certificates.map(certificatePem),
    wantAssertionsSigned: true, wantAuthnResponseSigned: false,
    privateKey: key.privatePem, publicCert: certificatePem(key.certificate), signatureAlgorithm: 'sha256', digestAlgorithm: 'sha256',
    acceptedClockSkewMs: CLOCK_SKEW_SECONDS * 1000, validateInResponseTo: ValidateInResponseTo.never,
    identifierFormat: null, disableRequestedAuthnContext: true,
    ...(requestId !== undefined && { generateUniqueId: () => requestId }),
  });
}

/** The metadata of a connection's service provider, for its identity provider. */
export async function connectionMetadata(deps: KeyDeps & Pick<Services, 'baseUrls'>, app: Application, publicId: string): Promise<string> {
  await samlConnectionOf(deps, app, publicId);
  const urls = connectionUrls(deps, app, publicId);
  const key = await samlSigningKey(deps, app);
  return serviceProviderMetadata({ entityId: urls.entityId, acsUrl: urls.acsUrl, certificates: [key.certificate] });
}

/** A sign-in sent to the identity provider: where the browser goes, and the request it must come back with. */
export interface StartedSignIn { url: string; requestId: string }

/** Starts an SP-initiated sign-in: a signed AuthnRequest over HTTP-Redirect, `relayState` the browser's pending sign-in. */
export async function startSamlConnection(ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'work'>, command: { connectionId: string; relayState: string; loginHint?: string }): Promise<StartedSignIn> {
  const connection = await samlConnectionOf(ctx.services, ctx.app, command.connectionId);
  const requestId = `_${randomBytes(20).toString('hex')}`;
  const saml = await samlOf(ctx.services, ctx.app, connection, requestId);
  const url = await saml.getAuthorizeUrlAsync(command.relayState, undefined, {});
  return { url, requestId };
}


/**
 * Checks a response posted to a connection's ACS URL (docs/saml.md#connections): every hostile one
 * is refused with what is wrong. The checked response is kept for RESULT_SECONDS under a new id
 * (the browser comes back for it from a page of this site, where its cookies are); the assertion's
 * id is spent once, on every node.
 */
export async function receiveSamlResponse(ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'work'>, command: { connectionId: string; samlResponse: string }): Promise<{ resultId: string }> {
  const { db, clock } = ctx.services;
  const connection = await samlConnectionOf(ctx.services, ctx.app, command.connectionId);
  const urls = connectionUrls(ctx.services, ctx.app, connection.publicId);
  const expect = { idpEntityId: connection.settings.idp.entityId, entityId: urls.entityId, acsUrl: urls.acsUrl };
  let facts: AssertionFacts;
  try {
    const xml = decodePostMessage(command.samlResponse, 'SAMLResponse');
    // no DOCTYPE, no entity, nothing but one well-formed document, before any library reads it
    checkResponseEnvelopeShape(xml);
    const saml = await samlOf(ctx.services, ctx.app, connection);
    const { profile } = await saml.validatePostResponseAsync({ SAMLResponse: command.samlResponse });
    const assertionXml = profile?.getAssertionXml?.();
    if (!profile || !assertionXml) throw new SamlInputError('the response holds no assertion');
    facts = readSignedAssertion(assertionXml, expect);
    checkResponseEnvelope(xml, facts, expect);
  } catch (e) {
    throw new ConnectionRefusal(e instanceof SamlInputError ? e.message : refusalOf(e));
  }
  if (facts.inResponseTo === undefined && !connection.settings.idpInitiated) {
    throw new ConnectionRefusal('the response answers no request of Gatehouse (an IdP-initiated sign-in), and this connection does not take those: start the sign-in from the application, or turn idp_initiated on');
  }
  const now = clock.now();
  const fresh = await db.oidcState.saveNewAlone(ctx.app.id, {
    model: ASSERTION_MARKER, idHash: sha256Hex(`${connection.publicId}\n${facts.id}`), uidHash: null, grantId: null, entityId: null, payload: {},
    expiresAt: new Date(Math.max(facts.notOnOrAfter.getTime(), now.getTime()) + 2 * CLOCK_SKEW_SECONDS * 1000),
  });
  if (!fresh) throw new ConnectionRefusal('this assertion was used before (an assertion signs in once): start the sign-in again');
  const resultId = randomBytes(24).toString('base64url');
  await db.oidcState.saveAlone(ctx.app.id, {
    model: RESULT_MODEL, idHash: sha256Hex(resultId), uidHash: null, grantId: null, entityId: null,
    payload: { connection: connection.publicId, facts: { ...facts, notOnOrAfter: facts.notOnOrAfter.toISOString() } } as unknown as Record<string, unknown>,
    expiresAt: new Date(now.getTime() + RESULT_SECONDS * 1000),
  });
  return { resultId };
}

/** A response refuses its DOCTYPE before node-saml parses it. */
function checkResponseEnvelopeShape(xml: string): void {
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) throw new SamlInputError('the response has a DOCTYPE: SAML never needs one, and Gatehouse reads none (entities are refused)');
}

/** node-saml's refusal in the service's words (its message names what failed, never a value of the response). */
function refusalOf(e: unknown): string {
  const message = e instanceof Error ? e.message : '';
  if (/signature/i.test(message)) return 'the response is not signed by the identity provider\'s key (its metadata\'s certificates), or was changed after signing';
  if (/audience/i.test(message)) return 'the assertion is for another service provider (its Audience)';
  if (/expired|NotOnOrAfter|NotBefore|not yet valid/i.test(message)) return 'the assertion is expired or not yet valid';
  if (/status/i.test(message)) return 'the identity provider did not sign the person in';
  if (/issuer/i.test(message)) return 'the response is not from the connection\'s identity provider (its Issuer)';
  return 'the response is not a valid SAML response for this connection';
}

/**
 * Takes the checked response once, for the browser that holds the request it answers (`requestId`,
 * none for an IdP-initiated sign-in the connection takes): its connection and facts.
 */
export async function takeCheckedResponse(ctx: CallContext<'clock' | 'db'>, command: { resultId: string; requestId?: string }): Promise<CheckedResponse> {
  const { db, clock } = ctx.services;
  const idHash = sha256Hex(command.resultId);
  const row = await db.oidcState.find(ctx.app.id, RESULT_MODEL, idHash);
  if (!row || row.expiresAt <= clock.now() || !(await db.oidcState.consumeAlone(ctx.app.id, RESULT_MODEL, idHash, clock.now()))) {
    throw new ConnectionRefusal('this sign-in is over (it was used, or it waited more than 5 minutes): start it again');
  }
  const payload = row.payload as unknown as { connection: string; facts: AssertionFacts & { notOnOrAfter: string } };
  const facts = { ...payload.facts, notOnOrAfter: new Date(payload.facts.notOnOrAfter) };
  if (facts.inResponseTo !== undefined && facts.inResponseTo !== command.requestId) {
    throw new ConnectionRefusal('the response answers a request this browser did not make (InResponseTo): start the sign-in again in this browser');
  }
  return { connection: payload.connection, facts };
}
