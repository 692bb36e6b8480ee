import { createPrivateKey, createPublicKey, webcrypto, X509Certificate, type JsonWebKey } from 'node:crypto';
import type * as X509 from '@peculiar/x509';
import { SamlInputError } from './xml';

/**
 * The certificates of the SAML identity provider (docs/saml.md#keys). SAML names keys by X.509
 * certificates, so each RSA signing key of the application (the OpenID provider's, rotated with
 * `keys:rotate`) is published in one: self-signed by the key itself, as SAML's metadata expects
 * (trust comes from the metadata, never from a chain). The certificate is made from the key alone
 * (its thumbprint the serial number, its creation the start of its validity, twenty years of it),
 * and RSA PKCS#1 v1.5 signatures are deterministic: every pod makes the same bytes, and nothing is
 * stored beside the key.
 */

type Provider = Parameters<typeof X509.cryptoProvider.set>[0];

/**
 * @peculiar/x509 (with reflect-metadata, which it needs first), loaded when a certificate is first
 * made: a process that serves no SAML metadata never pays for it (docs/decisions.md).
 */
let x509: typeof X509 | undefined;
function library(): typeof X509 {
  if (!x509) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('reflect-metadata');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    x509 = require('@peculiar/x509') as typeof X509;
    x509.cryptoProvider.set(webcrypto as unknown as Provider);
  }
  return x509;
}

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
const YEARS = 20;
const made = new Map<string, Promise<string>>();

/** The base64 DER of the certificate of an RSA key (its private JWK), for metadata's X509Certificate and KeyInfo. */
export function certificateOf(privateJwk: JsonWebKey, kid: string, createdAt: Date, subject: string): Promise<string> {
  const key = `${kid}\n${subject}`;
  let cert = made.get(key);
  if (!cert) {
    cert = make(privateJwk, kid, createdAt, subject);
    cert.catch(() => made.delete(key));
    if (made.size > 200) made.clear();
    made.set(key, cert);
  }
  return cert;
}

async function make(privateJwk: JsonWebKey, kid: string, createdAt: Date, subject: string): Promise<string> {
  const privateKey = await webcrypto.subtle.importKey('jwk', privateJwk as webcrypto.JsonWebKey, RSA, false, ['sign']);
  const publicKey = await webcrypto.subtle.importKey('jwk', { kty: 'RSA', n: privateJwk.n, e: privateJwk.e, ext: true }, RSA, true, ['verify']);
  const notBefore = new Date(Math.floor(createdAt.getTime() / 1000) * 1000);
  const notAfter = new Date(notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + YEARS);
  const cert = await library().X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(kid, 'base64url').subarray(0, 16).toString('hex').replace(/^[89a-f]/, (c) => (parseInt(c, 16) - 8).toString(16)),
    name: `CN=${subject.replace(/[,+"\\<>;=]/g, ' ').slice(0, 64)}`,
    notBefore, notAfter, signingAlgorithm: RSA,
    keys: { privateKey, publicKey } as unknown as Parameters<typeof X509.X509CertificateGenerator.createSelfSigned>[0]['keys'],
  }, webcrypto as unknown as Provider);
  return Buffer.from(cert.rawData).toString('base64');
}

/** A private JWK as PEM (PKCS#8), for the XML signer. */
export const privatePemOf = (privateJwk: JsonWebKey): string => createPrivateKey({ key: privateJwk, format: 'jwk' }).export({ format: 'pem', type: 'pkcs8' }).toString();

/** The PEM of a base64 DER certificate. */
export const certificatePem = (der: string): string => `-----BEGIN CERTIFICATE-----\n${der.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;

/**
 * Reads a certificate of a peer's metadata (base64 DER, whitespace allowed): its normalized base64,
 * refused unless it parses and holds an RSA key of 2048 bits or more, or an EC key.
 */
export function peerCertificate(raw: string, what: string): string {
  const der = raw.replace(/\s+/g, '');
  let cert: X509Certificate;
  try {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(der)) throw new Error();
    cert = new X509Certificate(Buffer.from(der, 'base64'));
  } catch {
    throw new SamlInputError(`${what} has a certificate that is not a base64 DER X.509 certificate`);
  }
  const key = createPublicKey(cert.publicKey.export({ format: 'pem', type: 'spki' }));
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === 'rsa' && (details?.modulusLength ?? 0) < 2048) throw new SamlInputError(`${what} has an RSA key of fewer than 2048 bits`);
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'ec') throw new SamlInputError(`${what} has a ${key.asymmetricKeyType ?? 'unknown'} key: Gatehouse verifies RSA and EC signatures`);
  return Buffer.from(der, 'base64').toString('base64');
}
