import type * as Jose from 'jose-v6';
import type { StoredSigningKey } from './storage/signing-keys';
import { requireEsModule } from './es-modules';

/** panva's `jose` (docs/decisions.md), the library the OpenID provider signs with, published as ES modules only. */
const jose = () => requireEsModule<typeof Jose>('jose-v6');

/** A JWT of `claims` signed with one of the application's signing keys (its private JWK), its header naming the key and `typ`. */
export async function signJwt(key: Pick<StoredSigningKey, 'kid' | 'alg'>, privateJwk: Record<string, unknown>, typ: string, claims: Record<string, unknown>): Promise<string> {
  const { importJWK, SignJWT } = jose();
  const signing = await importJWK(privateJwk as Jose.JWK, key.alg);
  return new SignJWT(claims as Jose.JWTPayload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ }).sign(signing);
}
