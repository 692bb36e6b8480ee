import { createHmac, randomBytes } from 'node:crypto';
import type { Element } from '@xmldom/xmldom';
import type { AuthMethod } from '../session';
import type { UserRecord } from '../storage/records';
import { defaultAssertionConsumer, type SamlEndpoint, type ServiceProviderDescriptor } from './metadata';
import { signElement } from './signatures';
import { attributeOf, BINDINGS, childOf, NAME_ID_FORMATS, newSamlId, NS, parseSamlTime, parseXml, SamlInputError, samlTime, STATUS, textOf, xmlEscape } from './xml';

/**
 * Gatehouse as a SAML 2.0 identity provider (docs/saml.md#identity-provider): what it reads of an
 * AuthnRequest and a LogoutRequest, and the responses it signs.
 */

/** How far a peer's clock may be from ours. */
export const CLOCK_SKEW_SECONDS = 90;
/** How old a request may be when it arrives (a person may take a while at a service provider's page before it is sent). */
export const REQUEST_SECONDS = 10 * 60;
/** How long an assertion may be used: its NotOnOrAfter. */
export const ASSERTION_SECONDS = 5 * 60;

/** What Gatehouse reads of an AuthnRequest. */
export interface AuthnRequestFacts {
  id: string;
  issuer: string;
  issueInstant: Date;
  destination?: string;
  acsUrl?: string;
  acsIndex?: number;
  protocolBinding?: string;
  forceAuthn: boolean;
  isPassive: boolean;
  nameIdFormat?: string;
}

/** The root of a message of `local` in the protocol namespace, with its ID, Version 2.0 and IssueInstant. */
function messageRoot(xml: string, local: string, what: string): { root: Element; id: string; issueInstant: Date; issuer: string; destination?: string } {
  const root = parseXml(xml, what).documentElement!;
  if (root.namespaceURI !== NS.samlp || root.localName !== local) throw new SamlInputError(`${what} is not a samlp:${local}`);
  return { root, ...messageFacts(root, what) };
}

/** A message's ID, Version 2.0, IssueInstant, Issuer and Destination. */
export function messageFacts(root: Element, what: string): { id: string; issueInstant: Date; issuer: string; destination?: string } {
  const id = attributeOf(root, 'ID') ?? '';
  if (!/^[A-Za-z_][\w.-]{0,255}$/.test(id)) throw new SamlInputError(`${what} has no ID, or one that is not an xs:ID of at most 256 characters`);
  if (attributeOf(root, 'Version') !== '2.0') throw new SamlInputError(`${what} is not SAML 2.0 (Version="2.0")`);
  const issueInstant = parseSamlTime(attributeOf(root, 'IssueInstant'));
  if (!issueInstant) throw new SamlInputError(`${what} has no IssueInstant, or one that is not a time with its zone`);
  const issuerEl = childOf(root, NS.saml, 'Issuer', what);
  const issuer = issuerEl ? textOf(issuerEl, `${what}'s Issuer`) : '';
  if (!issuer) throw new SamlInputError(`${what} has no Issuer`);
  const destination = attributeOf(root, 'Destination');
  return { id, issueInstant, issuer, ...(destination !== undefined && { destination }) };
}

/** Refuses a message issued too long ago, or in the future past the clock skew. */
export function checkIssueInstant(issueInstant: Date, now: Date, what: string): void {
  const age = (now.getTime() - issueInstant.getTime()) / 1000;
  if (age > REQUEST_SECONDS + CLOCK_SKEW_SECONDS) throw new SamlInputError(`${what} was issued more than ${REQUEST_SECONDS / 60} minutes ago: start again at the application`);
  if (age < -CLOCK_SKEW_SECONDS) throw new SamlInputError(`${what} was issued in the future (is the service provider's clock right?)`);
}

/** Reads an AuthnRequest (the one `root`: after a signature check, the signed one). */
export function readAuthnRequest(xml: string, signedRoot?: Element): AuthnRequestFacts {
  const what = 'the AuthnRequest';
  const parsed = messageRoot(xml, 'AuthnRequest', what);
  const root = signedRoot ?? parsed.root;
  const facts = signedRoot ? messageFacts(signedRoot, what) : parsed;
  const index = attributeOf(root, 'AssertionConsumerServiceIndex');
  if (index !== undefined && !/^\d{1,5}$/.test(index)) throw new SamlInputError(`${what}'s AssertionConsumerServiceIndex is not a number`);
  const policy = childOf(root, NS.samlp, 'NameIDPolicy', what);
  const format = policy && attributeOf(policy, 'Format');
  const acsUrl = attributeOf(root, 'AssertionConsumerServiceURL');
  const binding = attributeOf(root, 'ProtocolBinding');
  return {
    id: facts.id, issuer: facts.issuer, issueInstant: facts.issueInstant, ...(facts.destination !== undefined && { destination: facts.destination }),
    ...(acsUrl !== undefined && { acsUrl }), ...(index !== undefined && { acsIndex: Number(index) }), ...(binding !== undefined && { protocolBinding: binding }),
    forceAuthn: attributeOf(root, 'ForceAuthn') === 'true' || attributeOf(root, 'ForceAuthn') === '1',
    isPassive: attributeOf(root, 'IsPassive') === 'true' || attributeOf(root, 'IsPassive') === '1',
    ...(format && { nameIdFormat: format }),
  };
}

/** Where the response to a request goes: the ACS URL or index it names, which must be an HTTP-POST one of the metadata; else the default. */
export function assertionConsumerOf(sp: ServiceProviderDescriptor, request: Pick<AuthnRequestFacts, 'acsUrl' | 'acsIndex' | 'protocolBinding'>): SamlEndpoint {
  if (request.protocolBinding !== undefined && request.protocolBinding !== BINDINGS.post) {
    throw new SamlInputError('the AuthnRequest asks for a response over a binding other than HTTP-POST: Gatehouse answers over HTTP-POST only');
  }
  if (request.acsUrl !== undefined && request.acsIndex !== undefined) throw new SamlInputError('the AuthnRequest names both an AssertionConsumerServiceURL and an index: name one');
  if (request.acsUrl !== undefined) {
    const found = sp.assertionConsumers.find((e) => e.binding === BINDINGS.post && e.location === request.acsUrl);
    if (!found) throw new SamlInputError('the AuthnRequest\'s AssertionConsumerServiceURL is not an HTTP-POST AssertionConsumerService of the service provider\'s metadata: nothing is sent there');
    return found;
  }
  if (request.acsIndex !== undefined) {
    const found = sp.assertionConsumers.find((e) => e.binding === BINDINGS.post && e.index === request.acsIndex);
    if (!found) throw new SamlInputError('the AuthnRequest\'s AssertionConsumerServiceIndex is not an HTTP-POST AssertionConsumerService of the service provider\'s metadata');
    return found;
  }
  return defaultAssertionConsumer(sp);
}

/** The NameID formats a service provider may be given. */
export type NameIdKind = 'email' | 'persistent';

/**
 * The NameID format of a response: the service provider's setting (a request asking for another is
 * refused), else the one the request asks for (persistent or email), else the first of its
 * metadata's formats Gatehouse gives, else persistent. Undefined when the request asks for a
 * format Gatehouse does not give, or another than the setting.
 */
export function nameIdKindOf(requested: string | undefined, configured: NameIdKind | null, metadataFormats: readonly string[]): NameIdKind | undefined {
  const kindOf = (format: string): NameIdKind | undefined => (format === NAME_ID_FORMATS.persistent ? 'persistent' : format === NAME_ID_FORMATS.email ? 'email' : undefined);
  // the operator's choice for this service provider holds: a request (signed or not) asking for another gets InvalidNameIDPolicy
  if (configured) return requested === undefined || requested === NAME_ID_FORMATS.unspecified || kindOf(requested) === configured ? configured : undefined;
  if (requested !== undefined && requested !== NAME_ID_FORMATS.unspecified) return kindOf(requested);
  for (const f of metadataFormats) {
    const kind = kindOf(f);
    if (kind) return kind;
  }
  return 'persistent';
}

/** A persistent NameID: opaque, the same for an account at one service provider, different at each (a keyed digest with the provider's own salt). */
export const persistentNameId = (salt: string, accountUuid: string): string => createHmac('sha256', Buffer.from(salt, 'hex')).update(accountUuid).digest('base64url');

/** What an attribute of the assertion is taken from: a record's column (`email`, `username`, `uuid`, `emailVerified`) or an attribute (dotted path). */
export function attributeValues(record: UserRecord, source: string): string[] {
  let value: unknown;
  // an address is asserted once proven: a service provider may key its accounts on it
  if (source === 'email') value = record.emailVerified !== null ? record.email : null;
  else if (source === 'username') value = record.username;
  else if (source === 'uuid' || source === 'id') value = record.uuid;
  else if (source === 'emailVerified') value = record.emailVerified !== null;
  else value = source.split('.').reduce<unknown>((v, k) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined), record.attributes);
  const values = Array.isArray(value) ? value : [value];
  return values.filter((v) => ['string', 'number', 'boolean'].includes(typeof v)).map(String).filter((v) => v !== '').slice(0, 50);
}

/** The attributes a service provider gets when it configured none. */
export const DEFAULT_SAML_ATTRIBUTES: Readonly<Record<string, string>> = { email: 'email', givenName: 'givenName', familyName: 'familyName', displayName: 'displayName' };

/** The SAML authentication context of a sign-in, from how it was made. */
export function authnContextOf(amr: readonly AuthMethod[]): string {
  if (amr.includes('mfa') || amr.includes('hwk')) return 'https://refeds.org/profile/mfa';
  if (amr.includes('pwd')) return 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport';
  return 'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified';
}

/** What a response asserts. */
export interface AssertionFacts {
  idpEntityId: string;
  spEntityId: string;
  acsUrl: string;
  inResponseTo?: string;
  nameId: string;
  nameIdFormat: NameIdKind;
  sessionIndex: string;
  sessionNotOnOrAfter: Date;
  authnInstant: Date;
  authnContext: string;
  attributes: { name: string; values: string[] }[];
  now: Date;
}

/** The signing key: its PEM and its certificate (base64 DER). */
export interface SigningKey { privatePem: string; certificate: string }

const RESPONSE_XPATH = "/*[local-name(.)='Response' and namespace-uri(.)='urn:oasis:names:tc:SAML:2.0:protocol']";
const ASSERTION_XPATH = `${RESPONSE_XPATH}/*[local-name(.)='Assertion' and namespace-uri(.)='urn:oasis:names:tc:SAML:2.0:assertion']`;

/**
 * A successful Response with its Assertion, both signed (RSA-SHA256): the subject confirmed for
 * the ACS URL and the request, the audience the service provider, valid from 30 seconds ago for
 * ASSERTION_SECONDS.
 */
export function signedResponse(facts: AssertionFacts, key: SigningKey): string {
  const { now } = facts;
  const until = samlTime(new Date(now.getTime() + ASSERTION_SECONDS * 1000));
  const inResponse = facts.inResponseTo !== undefined ? ` InResponseTo="${xmlEscape(facts.inResponseTo)}"` : '';
  const attributes = facts.attributes.filter((a) => a.values.length > 0);
  const nameFormat = (name: string) => (/^(urn:|https?:)/.test(name) ? 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri' : 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic');
  const assertion = `<saml:Assertion xmlns:saml="${NS.saml}" xmlns:xs="${NS.xs}" xmlns:xsi="${NS.xsi}" ID="${newSamlId(randomBytes(20))}" Version="2.0" IssueInstant="${samlTime(now)}">`
    + `<saml:Issuer>${xmlEscape(facts.idpEntityId)}</saml:Issuer>`
    + '<saml:Subject>'
    + `<saml:NameID Format="${NAME_ID_FORMATS[facts.nameIdFormat]}"${facts.nameIdFormat === 'persistent' ? ` NameQualifier="${xmlEscape(facts.idpEntityId)}" SPNameQualifier="${xmlEscape(facts.spEntityId)}"` : ''}>${xmlEscape(facts.nameId)}</saml:NameID>`
    + '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">'
    + `<saml:SubjectConfirmationData${inResponse} NotOnOrAfter="${until}" Recipient="${xmlEscape(facts.acsUrl)}"/>`
    + '</saml:SubjectConfirmation></saml:Subject>'
    + `<saml:Conditions NotBefore="${samlTime(new Date(now.getTime() - 30_000))}" NotOnOrAfter="${until}">`
    + `<saml:AudienceRestriction><saml:Audience>${xmlEscape(facts.spEntityId)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>`
    + `<saml:AuthnStatement AuthnInstant="${samlTime(facts.authnInstant)}" SessionIndex="${xmlEscape(facts.sessionIndex)}" SessionNotOnOrAfter="${samlTime(facts.sessionNotOnOrAfter)}">`
    + `<saml:AuthnContext><saml:AuthnContextClassRef>${xmlEscape(facts.authnContext)}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`
    + (attributes.length > 0 ? `<saml:AttributeStatement>${attributes.map((a) => `<saml:Attribute Name="${xmlEscape(a.name)}" NameFormat="${nameFormat(a.name)}">`
      + a.values.map((v) => `<saml:AttributeValue xsi:type="xs:string">${xmlEscape(v)}</saml:AttributeValue>`).join('') + '</saml:Attribute>').join('')}</saml:AttributeStatement>` : '')
    + '</saml:Assertion>';
  const response = responseShell(facts.idpEntityId, facts.acsUrl, facts.inResponseTo, now, STATUS.success, undefined, assertion);
  const assertionSigned = signElement(response, ASSERTION_XPATH, key.privatePem, key.certificate);
  return signElement(assertionSigned, RESPONSE_XPATH, key.privatePem, key.certificate);
}

/** A signed Response saying the request failed (`status`, a second-level code under Responder or Requester), with no assertion. */
export function signedFailure(idpEntityId: string, acsUrl: string, inResponseTo: string | undefined, now: Date, status: string, message: string, key: SigningKey): string {
  const top = status === STATUS.noPassive || status === STATUS.authnFailed ? STATUS.responder : STATUS.requester;
  return signElement(responseShell(idpEntityId, acsUrl, inResponseTo, now, top, { second: status, message }), RESPONSE_XPATH, key.privatePem, key.certificate);
}

function responseShell(idp: string, destination: string, inResponseTo: string | undefined, now: Date, status: string, detail: { second: string; message: string } | undefined, body = ''): string {
  const code = detail ? `<samlp:StatusCode Value="${status}"><samlp:StatusCode Value="${detail.second}"/></samlp:StatusCode><samlp:StatusMessage>${xmlEscape(detail.message)}</samlp:StatusMessage>`
    : `<samlp:StatusCode Value="${status}"/>`;
  return `<samlp:Response xmlns:samlp="${NS.samlp}" xmlns:saml="${NS.saml}" ID="${newSamlId(randomBytes(20))}" Version="2.0" IssueInstant="${samlTime(now)}"`
    + ` Destination="${xmlEscape(destination)}"${inResponseTo !== undefined ? ` InResponseTo="${xmlEscape(inResponseTo)}"` : ''}>`
    + `<saml:Issuer>${xmlEscape(idp)}</saml:Issuer><samlp:Status>${code}</samlp:Status>${body}</samlp:Response>`;
}

/** What Gatehouse reads of a LogoutRequest. */
export interface LogoutRequestFacts { id: string; issuer: string; issueInstant: Date; destination?: string; nameId: string; nameIdFormat?: string; sessionIndexes: string[] }

export function readLogoutRequest(xml: string): LogoutRequestFacts {
  const what = 'the LogoutRequest';
  const { root, ...facts } = messageRoot(xml, 'LogoutRequest', what);
  const nameIdEl = childOf(root, NS.saml, 'NameID', what);
  if (!nameIdEl) throw new SamlInputError(`${what} has no NameID (an encrypted one is not read)`);
  const format = attributeOf(nameIdEl, 'Format');
  const sessionIndexes: string[] = [];
  for (let n = root.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).localName === 'SessionIndex' && (n as Element).namespaceURI === NS.samlp) sessionIndexes.push(textOf(n as Element, `${what}'s SessionIndex`));
  }
  return { ...facts, nameId: textOf(nameIdEl, `${what}'s NameID`), ...(format !== undefined && { nameIdFormat: format }), sessionIndexes: sessionIndexes.slice(0, 20) };
}

/** A LogoutResponse (sent over the Redirect binding, signed there). */
export function logoutResponse(idp: string, destination: string, inResponseTo: string, now: Date, status: string): string {
  return `<samlp:LogoutResponse xmlns:samlp="${NS.samlp}" xmlns:saml="${NS.saml}" ID="${newSamlId(randomBytes(20))}" Version="2.0" IssueInstant="${samlTime(now)}"`
    + ` Destination="${xmlEscape(destination)}" InResponseTo="${xmlEscape(inResponseTo)}">`
    + `<saml:Issuer>${xmlEscape(idp)}</saml:Issuer><samlp:Status><samlp:StatusCode Value="${status}"/></samlp:Status></samlp:LogoutResponse>`;
}
