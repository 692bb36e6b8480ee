import type * as Jose from 'jose-v6';
import type { StoredSigningKey } from './storage/signing-keys';

/**
 * panva's `jose` (docs/decisions.md), the library the OpenID provider signs with, published as ES
 * modules only: loaded with Node's own `require` (20.19 and 22.12 onwards), as the provider is.
 */
function jose(): typeof Jose {
  const getBuiltin = (process as unknown as { getBuiltinModule(id: 'node:module'): typeof import('node:module') }).getBuiltinModule;
  return getBuiltin('node:module').createRequire(__filename)('jose-v6') as typeof Jose;
}

/** A JWT of `claims` signed with one of the application's signing keys (its private JWK), its header naming the key and `typ`. */
export async function signJwt(key: Pick<StoredSigningKey, 'kid' | 'alg'>, privateJwk: Record<string, unknown>, typ: string, claims: Record<string, unknown>): Promise<string> {
  const { importJWK, SignJWT } = jose();
  const signing = await importJWK(privateJwk as Jose.JWK, key.alg);
  return new SignJWT(claims as Jose.JWTPayload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ }).sign(signing);
}
