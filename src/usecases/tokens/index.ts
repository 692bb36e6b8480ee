import { createIssuer, type TokenDeps } from '../../domain/tokens';
import { createGrants } from './grants';
import { createSdkRefresh } from './sdk-refresh';
import { createCodeSpending } from './verification-codes';

export type { Exchange } from './grants';

/**
 * Codes and tokens (docs/api.md#codes-and-tokens): random values of 160 bits, stored only as SHA-256 hashes,
 * checked for expiry on every use, spent by one conditional UPDATE so single use holds under
 * concurrency, and rotated in families so a replayed refresh token revokes its whole family.
 */
export function createTokenService(deps: TokenDeps) {
  const issuer = createIssuer(deps);
  // what only the grants use stays inside
  const { newPair, issuePair, secretBinding, ...issuing } = issuer;
  return { ...issuing, ...createGrants(deps, issuer), ...createSdkRefresh(deps, issuer), ...createCodeSpending(deps) };
}
export type TokenService = ReturnType<typeof createTokenService>;

