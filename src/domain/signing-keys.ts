import { createHash, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import type { SecretBox } from './secrets';
import { SIGNING_ALGS, type KeySlot, type NewSigningKey, type SigningAlg, type StoredSigningKey } from './storage/signing-keys';

/**
 * The OpenID provider's signing keys (docs/openid-connect.md#keys): an ES256 key (P-256) and an
 * RS256 key (2048 bits) in each slot, made by Node's crypto, named by their RFC 7638 thumbprint,
 * the private half sealed with SECRET_KEY and bound to the application and the key.
 */

/**
 * How long a retired key stays in the JWKS: the longest life of what it signed (an ID token or a
 * JWT access token, an hour) and a day for the verifiers' caches of the JWKS.
 */
export const RETIRED_KEY_SECONDS = 25 * 3600;

const binding = (applicationId: number, kid: string) => `signing key\n${applicationId}\n${kid}`;

/** The RFC 7638 thumbprint of a public JWK: its required members in lexical order, SHA-256, base64url. */
export function thumbprint(jwk: JsonWebKey): string {
  const members = jwk.kty === 'EC' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

/** A new key of `alg` for `slot`, sealed. */
export function newSigningKey(box: SecretBox, applicationId: number, alg: SigningAlg, slot: KeySlot, now: Date): NewSigningKey {
  const { privateKey } = alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  const kid = thumbprint(jwk);
  const publicJwk = jwk.kty === 'EC' ? { kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y } : { kty: 'RSA', n: jwk.n, e: jwk.e };
  return {
    applicationId, kid, alg, slot, createdAt: now,
    publicJwk: { ...publicJwk, kid, alg, use: 'sig' },
    privateSealed: box.seal(JSON.stringify({ ...jwk, kid, alg, use: 'sig' }), binding(applicationId, kid)),
  };
}

/** An application's first keys: a current and a next key of each algorithm. */
export const firstSigningKeys = (box: SecretBox, applicationId: number, now: Date): NewSigningKey[] =>
  SIGNING_ALGS.flatMap((alg) => (['current', 'next'] as const).map((place) => newSigningKey(box, applicationId, alg, `${place}:${alg}`, now)));

/** The private JWK of a stored key (throws SealedWithAnotherKeyError under another SECRET_KEY). */
export const privateJwkOf = (box: SecretBox, key: StoredSigningKey): Record<string, unknown> =>
  JSON.parse(box.open(key.privateSealed, binding(key.applicationId, key.kid))) as Record<string, unknown>;
