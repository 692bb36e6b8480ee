import type { Element } from '@xmldom/xmldom';
import { peerCertificate } from './certificates';
import { attributeOf, BINDINGS, childrenOf, NAME_ID_FORMATS, NS, parseXml, SamlInputError, textOf, xmlEscape } from './xml';

/**
 * SAML metadata (docs/saml.md): a service provider's, read when it is registered, and the identity
 * provider's that Gatehouse publishes per application.
 */

/** One endpoint of an entity's metadata. */
export interface SamlEndpoint { binding: string; location: string; responseLocation?: string; index?: number; isDefault?: boolean }

/** What Gatehouse keeps of a service provider's metadata. */
export interface ServiceProviderDescriptor {
  entityId: string;
  /** Where responses may go: its AssertionConsumerService endpoints (HTTP-POST only are answered to). */
  assertionConsumers: SamlEndpoint[];
  singleLogout: SamlEndpoint[];
  /** Its signing certificates (base64 DER): its signed requests are verified with these only. */
  certificates: string[];
  authnRequestsSigned: boolean;
  wantAssertionsSigned: boolean;
  nameIdFormats: string[];
}

const MAX_ENDPOINTS = 20;
const MAX_CERTIFICATES = 4;
const MAX_URL = 1024;

/** A URL of metadata: https, or http to a loopback host (a service provider on one machine). */
function endpointUrl(raw: string | undefined, what: string): string {
  if (raw === undefined || raw.length === 0) throw new SamlInputError(`${what} has no Location`);
  if (raw.length > MAX_URL) throw new SamlInputError(`${what} has a Location longer than ${MAX_URL} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SamlInputError(`${what} has a Location that is not a URL`);
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) || url.hostname.endsWith('.localhost');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw new SamlInputError(`${what} has a Location that is not https (http only for localhost)`);
  if (url.username || url.password || url.hash) throw new SamlInputError(`${what} has a Location with credentials or a fragment`);
  return raw;
}

function endpoints(parent: Element, local: string, what: string): SamlEndpoint[] {
  const found = childrenOf(parent, NS.md, local);
  if (found.length > MAX_ENDPOINTS) throw new SamlInputError(`${what} has more than ${MAX_ENDPOINTS} ${local} endpoints`);
  return found.map((el) => {
    const index = attributeOf(el, 'index');
    const responseLocation = attributeOf(el, 'ResponseLocation');
    return {
      binding: attributeOf(el, 'Binding') ?? '',
      location: endpointUrl(attributeOf(el, 'Location'), `${what}'s ${local}`),
      ...(responseLocation !== undefined && { responseLocation: endpointUrl(responseLocation, `${what}'s ${local}`) }),
      ...(index !== undefined && /^\d{1,5}$/.test(index) && { index: Number(index) }),
      ...(attributeOf(el, 'isDefault') === 'true' && { isDefault: true }),
    };
  });
}

/** The signing certificates of a role descriptor: its KeyDescriptors for `signing` or for no use named. */
function signingCertificates(role: Element, what: string): string[] {
  const certs = childrenOf(role, NS.md, 'KeyDescriptor')
    .filter((k) => (attributeOf(k, 'use') ?? 'signing') === 'signing')
    .flatMap((k) => childrenOf(k, NS.ds, 'KeyInfo'))
    .flatMap((info) => childrenOf(info, NS.ds, 'X509Data'))
    .flatMap((data) => childrenOf(data, NS.ds, 'X509Certificate'))
    .map((c) => peerCertificate(textOf(c, `${what}'s X509Certificate`), what));
  if (certs.length > MAX_CERTIFICATES) throw new SamlInputError(`${what} has more than ${MAX_CERTIFICATES} signing certificates`);
  return [...new Set(certs)];
}

/** The EntityDescriptor of metadata (an EntitiesDescriptor must hold exactly one). */
function entityOf(xml: string, what: string): Element {
  const root = parseXml(xml, what).documentElement!;
  if (root.namespaceURI === NS.md && root.localName === 'EntitiesDescriptor') {
    const inner = childrenOf(root, NS.md, 'EntityDescriptor');
    if (inner.length !== 1) throw new SamlInputError(`${what} describes ${inner.length} entities: register one entity's metadata at a time`);
    return inner[0];
  }
  if (root.namespaceURI !== NS.md || root.localName !== 'EntityDescriptor') throw new SamlInputError(`${what} is not SAML 2.0 metadata (an md:EntityDescriptor)`);
  return root;
}

function entityIdOf(entity: Element, what: string): string {
  const entityId = attributeOf(entity, 'entityID') ?? '';
  if (entityId.length === 0 || entityId.length > MAX_URL) throw new SamlInputError(`${what} has no entityID, or one longer than ${MAX_URL} characters`);
  return entityId;
}

/** The entity of metadata, its id and its role descriptor for SAML 2.0 (`SPSSODescriptor` or `IDPSSODescriptor`), or the refusal saying which is missing. */
function roleOf(xml: string, descriptor: 'SPSSODescriptor' | 'IDPSSODescriptor', whose: string): { entityId: string; role: Element } {
  const what = 'the metadata';
  const entity = entityOf(xml, what);
  const entityId = entityIdOf(entity, what);
  const role = childrenOf(entity, NS.md, descriptor)
    .find((d) => (attributeOf(d, 'protocolSupportEnumeration') ?? '').split(/\s+/).includes(NS.samlp));
  if (!role) throw new SamlInputError(`${what} has no ${descriptor} for SAML 2.0 (protocolSupportEnumeration ${NS.samlp}): is it ${whose}?`);
  return { entityId, role };
}

/** Reads a service provider's metadata; refuses one without an SPSSODescriptor for SAML 2.0 or without an HTTP-POST AssertionConsumerService. */
export function parseServiceProviderMetadata(xml: string): ServiceProviderDescriptor {
  const what = 'the metadata';
  const { entityId, role } = roleOf(xml, 'SPSSODescriptor', 'a service provider\'s');
  const assertionConsumers = endpoints(role, 'AssertionConsumerService', what);
  if (!assertionConsumers.some((e) => e.binding === BINDINGS.post)) {
    throw new SamlInputError(`${what} has no AssertionConsumerService with the HTTP-POST binding: Gatehouse answers over HTTP-POST only`);
  }
  return {
    entityId,
    assertionConsumers,
    singleLogout: endpoints(role, 'SingleLogoutService', what),
    certificates: signingCertificates(role, what),
    authnRequestsSigned: attributeOf(role, 'AuthnRequestsSigned') === 'true',
    wantAssertionsSigned: attributeOf(role, 'WantAssertionsSigned') === 'true',
    nameIdFormats: childrenOf(role, NS.md, 'NameIDFormat').map((f) => textOf(f, `${what}'s NameIDFormat`)).slice(0, 10),
  };
}

/** Whether a service provider that asks for signed requests can have them checked: it must publish a certificate. */
export function signingProblem(sp: ServiceProviderDescriptor): string | undefined {
  if (sp.authnRequestsSigned && sp.certificates.length === 0) return 'says AuthnRequestsSigned="true" but has no signing certificate (a KeyDescriptor with an X509Certificate)';
  return undefined;
}

/** The HTTP-POST assertion consumer a response goes to when the request names none: the default, else the lowest index, else the first. */
export function defaultAssertionConsumer(sp: ServiceProviderDescriptor): SamlEndpoint {
  const post = sp.assertionConsumers.filter((e) => e.binding === BINDINGS.post);
  return post.find((e) => e.isDefault) ?? [...post].sort((a, b) => (a.index ?? Infinity) - (b.index ?? Infinity))[0];
}

/** The identity provider's metadata: its entity id, signing certificates (current and next), SSO over both bindings, SLO over Redirect. */
export function identityProviderMetadata(idp: { entityId: string; ssoUrl: string; sloUrl: string; certificates: string[] }): string {
  const keys = idp.certificates.map((c) => `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${c}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`).join('');
  return '<?xml version="1.0" encoding="UTF-8"?>'
    + `<md:EntityDescriptor xmlns:md="${NS.md}" xmlns:ds="${NS.ds}" entityID="${xmlEscape(idp.entityId)}">`
    + `<md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="${NS.samlp}">${keys}`
    + `<md:SingleLogoutService Binding="${BINDINGS.redirect}" Location="${xmlEscape(idp.sloUrl)}"/>`
    + `<md:NameIDFormat>${NAME_ID_FORMATS.persistent}</md:NameIDFormat><md:NameIDFormat>${NAME_ID_FORMATS.email}</md:NameIDFormat>`
    + `<md:SingleSignOnService Binding="${BINDINGS.redirect}" Location="${xmlEscape(idp.ssoUrl)}"/>`
    + `<md:SingleSignOnService Binding="${BINDINGS.post}" Location="${xmlEscape(idp.ssoUrl)}"/>`
    + '</md:IDPSSODescriptor></md:EntityDescriptor>';
}

/** What Gatehouse keeps of an identity provider's metadata (a connection's). */
export interface IdentityProviderDescriptor {
  entityId: string;
  /** Its SingleSignOnService endpoints (HTTP-Redirect is the one requests go to). */
  singleSignOn: SamlEndpoint[];
  singleLogout: SamlEndpoint[];
  /** Its signing certificates (base64 DER): responses are verified with these only. */
  certificates: string[];
  wantAuthnRequestsSigned: boolean;
}

/** Reads an identity provider's metadata; refuses one without an IDPSSODescriptor for SAML 2.0, an HTTP-Redirect SSO endpoint or a signing certificate. */
export function parseIdentityProviderMetadata(xml: string): IdentityProviderDescriptor {
  const what = 'the metadata';
  const { entityId, role } = roleOf(xml, 'IDPSSODescriptor', 'an identity provider\'s');
  const singleSignOn = endpoints(role, 'SingleSignOnService', what);
  if (!singleSignOn.some((e) => e.binding === BINDINGS.redirect)) {
    throw new SamlInputError(`${what} has no SingleSignOnService with the HTTP-Redirect binding: Gatehouse sends its requests over HTTP-Redirect`);
  }
  const certificates = signingCertificates(role, what);
  if (certificates.length === 0) throw new SamlInputError(`${what} has no signing certificate (a KeyDescriptor with an X509Certificate): Gatehouse accepts signed responses only`);
  return {
    entityId, singleSignOn, singleLogout: endpoints(role, 'SingleLogoutService', what), certificates,
    wantAuthnRequestsSigned: attributeOf(role, 'WantAuthnRequestsSigned') === 'true',
  };
}

/** A service provider's metadata (a connection's): its entity id, its ACS over HTTP-POST, its signing certificate; signed requests, signed assertions wanted. */
export function serviceProviderMetadata(sp: { entityId: string; acsUrl: string; certificates: string[] }): string {
  const keys = sp.certificates.map((c) => `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${c}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`).join('');
  return '<?xml version="1.0" encoding="UTF-8"?>'
    + `<md:EntityDescriptor xmlns:md="${NS.md}" xmlns:ds="${NS.ds}" entityID="${xmlEscape(sp.entityId)}">`
    + `<md:SPSSODescriptor AuthnRequestsSigned="true" WantAssertionsSigned="true" protocolSupportEnumeration="${NS.samlp}">${keys}`
    + `<md:NameIDFormat>${NAME_ID_FORMATS.persistent}</md:NameIDFormat><md:NameIDFormat>${NAME_ID_FORMATS.email}</md:NameIDFormat>`
    + `<md:AssertionConsumerService Binding="${BINDINGS.post}" Location="${xmlEscape(sp.acsUrl)}" index="0" isDefault="true"/>`
    + '</md:SPSSODescriptor></md:EntityDescriptor>';
}
