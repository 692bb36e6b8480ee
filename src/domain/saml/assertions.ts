import type { Element } from '@xmldom/xmldom';
import { attributeOf, childOf, childrenOf, NAME_ID_FORMATS, NS, parseSamlTime, parseXml, SamlInputError, textOf } from './xml';

/**
 * What Gatehouse, as a connection's service provider (docs/saml.md#connections), reads of a
 * response once its signature checked out: only the signed assertion (the bytes the signature
 * covers), and the checks a library leaves to its caller (the assertion's Issuer, the subject
 * confirmation's Recipient and InResponseTo, the Response's Destination and Issuer).
 */

/** The facts of a signed assertion. */
export interface AssertionFacts {
  id: string;
  issuer: string;
  nameId: string;
  nameIdFormat: string;
  inResponseTo?: string;
  notOnOrAfter: Date;
  sessionIndex?: string;
  /** Attribute name to its values (text only). */
  attributes: Record<string, string[]>;
}

const MAX_ATTRIBUTE_VALUES = 100;

/**
 * Reads the signed assertion and checks it is for this service provider: issued by the identity
 * provider, a bearer confirmation for the ACS URL (the one with Recipient = `acsUrl`), an audience
 * of `entityId`. Throws SamlInputError saying what is wrong.
 */
export function readSignedAssertion(assertionXml: string, expect: { idpEntityId: string; entityId: string; acsUrl: string }): AssertionFacts {
  const what = 'the assertion';
  const root = parseXml(assertionXml, what).documentElement!;
  if (root.namespaceURI !== NS.saml || root.localName !== 'Assertion') throw new SamlInputError('the signed element is not a saml:Assertion');
  const id = attributeOf(root, 'ID') ?? '';
  if (!id) throw new SamlInputError(`${what} has no ID`);
  const issuerEl = childOf(root, NS.saml, 'Issuer', what);
  const issuer = issuerEl ? textOf(issuerEl, `${what}'s Issuer`) : '';
  if (issuer !== expect.idpEntityId) throw new SamlInputError(`${what}'s Issuer is not the connection's identity provider (${expect.idpEntityId})`);
  const subject = childOf(root, NS.saml, 'Subject', what);
  const nameIdEl = subject && childOf(subject, NS.saml, 'NameID', what);
  if (!subject || !nameIdEl) throw new SamlInputError(`${what} has no Subject with a NameID (an encrypted one is not read)`);
  const nameId = textOf(nameIdEl, `${what}'s NameID`);
  if (nameId.length === 0 || nameId.length > 1024) throw new SamlInputError(`${what}'s NameID is empty or longer than 1,024 characters`);
  const confirmation = childrenOf(subject, NS.saml, 'SubjectConfirmation')
    .filter((c) => attributeOf(c, 'Method') === 'urn:oasis:names:tc:SAML:2.0:cm:bearer')
    .map((c) => childOf(c, NS.saml, 'SubjectConfirmationData', what))
    .find((d): d is Element => d !== undefined && attributeOf(d, 'Recipient') === expect.acsUrl);
  if (!confirmation) throw new SamlInputError(`${what} has no bearer SubjectConfirmation whose Recipient is this connection's ACS URL (${expect.acsUrl})`);
  const notOnOrAfter = parseSamlTime(attributeOf(confirmation, 'NotOnOrAfter'));
  if (!notOnOrAfter) throw new SamlInputError(`${what}'s SubjectConfirmationData has no NotOnOrAfter`);
  const conditions = childOf(root, NS.saml, 'Conditions', what);
  const audiences = (conditions ? childrenOf(conditions, NS.saml, 'AudienceRestriction') : [])
    .map((r) => childrenOf(r, NS.saml, 'Audience').map((a) => textOf(a, `${what}'s Audience`)));
  if (audiences.length === 0 || !audiences.every((list) => list.includes(expect.entityId))) throw new SamlInputError(`${what} is for another audience than this connection (${expect.entityId})`);
  const statement = childrenOf(root, NS.saml, 'AuthnStatement')[0];
  const sessionIndex = statement ? attributeOf(statement, 'SessionIndex') : undefined;
  const attributes: Record<string, string[]> = {};
  for (const s of childrenOf(root, NS.saml, 'AttributeStatement')) {
    for (const a of childrenOf(s, NS.saml, 'Attribute')) {
      const name = attributeOf(a, 'Name');
      if (!name) continue;
      attributes[name] = [...(attributes[name] ?? []), ...childrenOf(a, NS.saml, 'AttributeValue').map((v) => textOf(v, `${what}'s attribute ${name.slice(0, 64)}`))].slice(0, MAX_ATTRIBUTE_VALUES);
    }
  }
  const inResponseTo = attributeOf(confirmation, 'InResponseTo');
  return {
    id, issuer, nameId, nameIdFormat: attributeOf(nameIdEl, 'Format') ?? NAME_ID_FORMATS.unspecified, notOnOrAfter, attributes,
    ...(inResponseTo !== undefined && { inResponseTo }), ...(sessionIndex !== undefined && { sessionIndex }),
  };
}

/**
 * The Response around it (signed or not): its Destination, when it names one, is the ACS URL; its
 * Issuer, when it names one, is the identity provider; its InResponseTo agrees with the assertion's.
 */
export function checkResponseEnvelope(responseXml: string, facts: AssertionFacts, expect: { idpEntityId: string; acsUrl: string }): void {
  const what = 'the Response';
  const root = parseXml(responseXml, what).documentElement!;
  if (root.namespaceURI !== NS.samlp || root.localName !== 'Response') throw new SamlInputError(`${what} is not a samlp:Response`);
  const destination = attributeOf(root, 'Destination');
  if (destination !== undefined && destination !== expect.acsUrl) throw new SamlInputError(`${what}'s Destination is not this connection's ACS URL`);
  const issuerEl = childOf(root, NS.saml, 'Issuer', what);
  if (issuerEl && textOf(issuerEl, `${what}'s Issuer`) !== expect.idpEntityId) throw new SamlInputError(`${what}'s Issuer is not the connection's identity provider`);
  const inResponseTo = attributeOf(root, 'InResponseTo');
  if (inResponseTo !== undefined && facts.inResponseTo !== undefined && inResponseTo !== facts.inResponseTo) throw new SamlInputError(`${what} and its assertion answer different requests`);
}
