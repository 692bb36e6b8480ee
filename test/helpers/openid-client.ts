import type * as OpenIdClient from 'openid-client-v6';

/**
 * openid-client 6 (panva), the relying party the OpenID tests use, as an app would: published as
 * ES modules only, it is loaded with Node's own require (not jest's, which would try to transform it).
 */
export function openidClient(): typeof OpenIdClient {
  const getBuiltin = (process as unknown as { getBuiltinModule(id: 'node:module'): typeof import('node:module') }).getBuiltinModule;
  return getBuiltin('node:module').createRequire(__filename)('openid-client-v6') as typeof OpenIdClient;
}
