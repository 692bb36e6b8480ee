import type { Document, Element } from '@xmldom/xmldom';

/**
 * XML as SAML messages and metadata are read (docs/saml.md#hardening): no DOCTYPE, so no entity of
 * any kind (internal, external, parameter) is ever declared or expanded; no processing instruction
 * but the XML declaration; a bounded size; a parser error is a refusal, never a partial document.
 */

export const NS = {
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  xs: 'http://www.w3.org/2001/XMLSchema',
  xsi: 'http://www.w3.org/2001/XMLSchema-instance',
} as const;

export const BINDINGS = {
  redirect: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect',
  post: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST',
} as const;

export const NAME_ID_FORMATS = {
  email: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
  transient: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
} as const;

export const STATUS = {
  success: 'urn:oasis:names:tc:SAML:2.0:status:Success',
  requester: 'urn:oasis:names:tc:SAML:2.0:status:Requester',
  responder: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
  noPassive: 'urn:oasis:names:tc:SAML:2.0:status:NoPassive',
  invalidNameIdPolicy: 'urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy',
  authnFailed: 'urn:oasis:names:tc:SAML:2.0:status:AuthnFailed',
} as const;

/** The signature and digest algorithms Gatehouse signs with and accepts: never SHA-1. */
export const ALGORITHMS = {
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  rsaSha512: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  sha512: 'http://www.w3.org/2001/04/xmlenc#sha512',
  exclusiveC14n: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  enveloped: 'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
} as const;

/** The largest XML document read: metadata of an entity with a few certificates and endpoints, or one message. */
export const MAX_XML_BYTES = 256 * 1024;

/** Why a SAML message or metadata is refused, in words a person can act on (never the parser's own). */
export class SamlInputError extends Error {}

/**
 * Parses `text` as one XML document, refusing a DOCTYPE (and so every entity declaration), any
 * processing instruction other than the declaration, a document over MAX_XML_BYTES, and anything
 * the parser reports as an error or a warning.
 */
export function parseXml(text: string, what: string): Document {
  if (Buffer.byteLength(text, 'utf8') > MAX_XML_BYTES) throw new SamlInputError(`${what} is larger than ${MAX_XML_BYTES / 1024} KB`);
  if (/<!DOCTYPE/i.test(text) || /<!ENTITY/i.test(text)) throw new SamlInputError(`${what} has a DOCTYPE: SAML never needs one, and Gatehouse reads none (entities are refused)`);
  if (/<\?(?!xml[\s?])/i.test(text)) throw new SamlInputError(`${what} has a processing instruction: SAML never needs one`);
  let problem: string | undefined;
  // @xmldom/xmldom loads with the first document read, not with every process (docs/decisions.md)
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { DOMParser } = require('@xmldom/xmldom') as typeof import('@xmldom/xmldom');
  const parser = new DOMParser({ onError: (level) => { problem ??= level; } });
  let doc: Document;
  try {
    doc = parser.parseFromString(text, 'text/xml');
  } catch {
    throw new SamlInputError(`${what} is not well-formed XML`);
  }
  if (problem !== undefined || !doc.documentElement) throw new SamlInputError(`${what} is not well-formed XML`);
  return doc;
}

/** The element children of `parent` named `local` in namespace `ns`. */
export const childrenOf = (parent: Element, ns: string, local: string): Element[] => {
  const found: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).localName === local && (n as Element).namespaceURI === ns) found.push(n as Element);
  }
  return found;
};

/** The one element child `local` of `parent`, or undefined; more than one is a refusal (a message has one of each). */
export function childOf(parent: Element, ns: string, local: string, what: string): Element | undefined {
  const found = childrenOf(parent, ns, local);
  if (found.length > 1) throw new SamlInputError(`${what} has ${found.length} ${local} elements where one is allowed`);
  return found[0];
}

/**
 * The text of an element: its text children only, all of them. A comment or any element inside
 * (`a@b.example<!---->.evil.example`) is a refusal, never a part of the value.
 */
export function textOf(el: Element, what: string): string {
  let text = '';
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 3 || n.nodeType === 4) text += n.nodeValue ?? '';
    else throw new SamlInputError(`${what} holds more than text (a comment or an element): its value is refused whole`);
  }
  return text.trim();
}

/** An attribute's value, or undefined. */
export const attributeOf = (el: Element, name: string): string | undefined => (el.hasAttribute(name) ? el.getAttribute(name) ?? undefined : undefined);

/** Escapes text for an XML attribute or text node. */
export const xmlEscape = (v: string): string => v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

/** A SAML time: UTC, whole seconds, `Z` (SAML core 1.3.3). */
export const samlTime = (at: Date): string => `${at.toISOString().slice(0, 19)}Z`;

/** Reads a SAML time (xs:dateTime with a zone); undefined for anything else. */
export function parseSamlTime(raw: string | undefined): Date | undefined {
  if (raw === undefined || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(raw)) return undefined;
  const at = new Date(raw.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** A new message or assertion id: `_` and 40 hex digits (an xs:ID starts with a letter or `_`). */
export const newSamlId = (random: Buffer): string => `_${random.toString('hex')}`;
