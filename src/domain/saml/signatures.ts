import { sign as signBytes, verify as verifyBytes, X509Certificate } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Document, Element } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { certificatePem } from './certificates';
import { ALGORITHMS, attributeOf, childrenOf, MAX_XML_BYTES, NS, parseXml, SamlInputError } from './xml';

/**
 * SAML's signatures (docs/saml.md#hardening): XML signatures are made and checked by xml-crypto,
 * never by hand; the HTTP-Redirect binding's signature is over the query string's bytes (SAML
 * bindings 3.4.4.1), not XML, and is checked with Node's crypto. Only RSA-SHA256 and RSA-SHA512
 * (and ECDSA over SHA-256 for a Redirect signature by an EC key) are accepted; SHA-1 never.
 */

const REDIRECT_ALGORITHMS: Record<string, string> = {
  [ALGORITHMS.rsaSha256]: 'sha256',
  [ALGORITHMS.rsaSha512]: 'sha512',
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256': 'sha256',
};

/** A message of the HTTP-Redirect binding: base64 of DEFLATE, inflated to MAX_XML_BYTES at most. */
export function inflateMessage(value: string, what: string): string {
  const raw = base64(value, what);
  try {
    return inflateRawSync(raw, { maxOutputLength: MAX_XML_BYTES }).toString('utf8');
  } catch {
    throw new SamlInputError(`${what} is not a DEFLATE-compressed message, or is larger than ${MAX_XML_BYTES / 1024} KB once inflated`);
  }
}

/** A message of the HTTP-POST binding: base64 of the XML. */
export const decodePostMessage = (value: string, what: string): string => base64(value, what).toString('utf8');

function base64(value: string, what: string): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (compact.length === 0 || compact.length > MAX_XML_BYTES * 2 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) throw new SamlInputError(`${what} is not base64`);
  return Buffer.from(compact, 'base64');
}

/** The query parameters of a raw query string as sent (still URL-encoded), by name; a repeated one is refused. */
export function rawQueryParameters(rawQuery: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const name = decoded(at < 0 ? pair : pair.slice(0, at));
    if (found.has(name)) throw new SamlInputError(`the query has ${name} twice`);
    found.set(name, at < 0 ? '' : pair.slice(at + 1));
  }
  return found;
}

/** A query value as sent, decoded (`+` a space); malformed percent-encoding is a refusal. */
export function decoded(v: string): string {
  try {
    return decodeURIComponent(v.replace(/\+/g, ' '));
  } catch {
    throw new SamlInputError('the query has a value that is not percent-encoded correctly');
  }
}

/**
 * Checks the HTTP-Redirect binding's signature of a query (`SAMLRequest` or `SAMLResponse`, then
 * RelayState, then SigAlg, in that order, as sent) with the peer's certificates only: `unsigned`
 * when it carries no Signature, `valid` when one of the certificates verifies it; anything else
 * is a refusal.
 */
export function checkRedirectSignature(rawQuery: string, message: 'SAMLRequest' | 'SAMLResponse', certificates: readonly string[]): 'unsigned' | 'valid' {
  const q = rawQueryParameters(rawQuery);
  const signature = q.get('Signature');
  const sigAlg = q.get('SigAlg');
  if (signature === undefined && sigAlg === undefined) return 'unsigned';
  if (signature === undefined || sigAlg === undefined) throw new SamlInputError('the query has one of Signature and SigAlg without the other');
  const alg = decoded(sigAlg);
  const hash = REDIRECT_ALGORITHMS[alg];
  if (!hash) throw new SamlInputError(`the request is signed with ${alg.slice(0, 100)}: Gatehouse accepts RSA-SHA256 and RSA-SHA512 (never SHA-1)`);
  const signed = [message, 'RelayState', 'SigAlg'].filter((n) => q.has(n)).map((n) => `${n}=${q.get(n)}`).join('&');
  const bytes = Buffer.from(decoded(signature), 'base64');
  for (const der of certificates) {
    const key = new X509Certificate(Buffer.from(der, 'base64')).publicKey;
    const kind = key.asymmetricKeyType;
    if ((kind === 'ec') !== alg.includes('ecdsa')) continue;
    if (verifyBytes(hash, Buffer.from(signed, 'utf8'), kind === 'ec' ? { key, dsaEncoding: 'ieee-p1363' } : key, bytes)) return 'valid';
  }
  throw new SamlInputError('the query\'s signature is not one made by a signing key in the metadata');
}

/**
 * A query value encoded as HTML forms encode it (spaces as `+`, everything but letters, digits
 * and `-_.~` escaped): what verifiers that rebuild the signed string from decoded values
 * (pysaml2, python3-saml) make of it too.
 */
const formEncode = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+');

/** Signs a query of the HTTP-Redirect binding with RSA-SHA256: `name=…&RelayState=…&SigAlg=…&Signature=…`. */
export function signedRedirectQuery(name: 'SAMLRequest' | 'SAMLResponse', xml: string, relayState: string | undefined, privatePem: string): string {
  const parts = [
    `${name}=${formEncode(deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64'))}`,
    ...(relayState !== undefined ? [`RelayState=${formEncode(relayState)}`] : []),
    `SigAlg=${formEncode(ALGORITHMS.rsaSha256)}`,
  ];
  const signature = signBytes('sha256', Buffer.from(parts.join('&'), 'utf8'), privatePem).toString('base64');
  return `${parts.join('&')}&Signature=${formEncode(signature)}`;
}

/** An xml-crypto verifier that trusts `pem` only (never a certificate in the message's KeyInfo) and SHA-2 only. */
function verifier(pem: string): SignedXml {
  const sig = new SignedXml({ publicCert: pem, getCertFromKeyInfo: () => null });
  sig.SignatureAlgorithms = {
    [ALGORITHMS.rsaSha256]: sig.SignatureAlgorithms[ALGORITHMS.rsaSha256],
    [ALGORITHMS.rsaSha512]: sig.SignatureAlgorithms[ALGORITHMS.rsaSha512],
  } as SignedXml['SignatureAlgorithms'];
  sig.HashAlgorithms = {
    [ALGORITHMS.sha256]: sig.HashAlgorithms[ALGORITHMS.sha256],
    [ALGORITHMS.sha512]: sig.HashAlgorithms[ALGORITHMS.sha512],
  } as SignedXml['HashAlgorithms'];
  return sig;
}

/**
 * Checks the enveloped signature of `element` (the message's root, or an assertion in it): one
 * ds:Signature child whose one reference is `#` + the element's ID, verified with one of the
 * certificates only. Answers the element as it was signed (the signed bytes parsed again), which
 * is all the caller may read from: an element wrapped around or beside it (signature wrapping)
 * is never what is read. `unsigned` when the element has no signature.
 */
export function checkEnvelopedSignature(xml: string, element: Element, certificates: readonly string[], what: string): Element | 'unsigned' {
  const signatures = childrenOf(element, NS.ds, 'Signature');
  if (signatures.length === 0) return 'unsigned';
  if (signatures.length > 1) throw new SamlInputError(`${what} has more than one signature`);
  const id = attributeOf(element, 'ID');
  if (!id) throw new SamlInputError(`${what} is signed but has no ID`);
  for (const der of certificates) {
    const sig = verifier(certificatePem(der));
    let valid = false;
    try {
      sig.loadSignature(signatures[0] as unknown as Parameters<SignedXml['loadSignature']>[0]);
      valid = sig.checkSignature(xml);
    } catch {
      valid = false;
    }
    if (!valid) continue;
    const references = sig.getReferences();
    if (references.length !== 1 || references[0].uri !== `#${id}`) throw new SamlInputError(`${what}'s signature must sign ${what} itself, and nothing else`);
    const signed = sig.getSignedReferences();
    if (signed.length !== 1) throw new SamlInputError(`${what}'s signature must sign ${what} itself, and nothing else`);
    const doc: Document = parseXml(signed[0], what);
    const root = doc.documentElement!;
    if (root.localName !== element.localName || root.namespaceURI !== element.namespaceURI || attributeOf(root, 'ID') !== id) {
      throw new SamlInputError(`${what}'s signature must sign ${what} itself, and nothing else`);
    }
    return root;
  }
  throw new SamlInputError(`${what}'s signature is not valid for a signing key in the metadata (or was made with SHA-1)`);
}

/**
 * Signs `xml`'s element at `xpath` (which has an ID) with an enveloped RSA-SHA256 signature over
 * SHA-256 and exclusive canonicalization, placed after its Issuer, with the certificate in KeyInfo.
 */
export function signElement(xml: string, xpath: string, privatePem: string, certificate: string): string {
  const sig = new SignedXml({
    privateKey: privatePem, publicCert: certificatePem(certificate),
    signatureAlgorithm: ALGORITHMS.rsaSha256, canonicalizationAlgorithm: ALGORITHMS.exclusiveC14n,
  });
  sig.addReference({ xpath, digestAlgorithm: ALGORITHMS.sha256, transforms: [ALGORITHMS.enveloped, ALGORITHMS.exclusiveC14n] });
  sig.computeSignature(xml, { prefix: 'ds', location: { reference: `${xpath}/*[local-name(.)='Issuer']`, action: 'after' } });
  return sig.getSignedXml();
}
