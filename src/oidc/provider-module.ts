import type * as OidcProvider from 'oidc-provider';

/**
 * panva's `oidc-provider` (docs/decisions.md), which is published as ES modules only. Node loads
 * those with `require` (20.19 and 22.12 onwards, 24), so this CommonJS build does too. The require
 * is Node's own, taken from `process.getBuiltinModule`, so that a module loader wrapping this
 * one (jest's, in the tests) does not try to transform the package.
 */
export function oidcProviderModule(): typeof OidcProvider {
  const getBuiltin = (process as unknown as { getBuiltinModule(id: 'node:module'): typeof import('node:module') }).getBuiltinModule;
  return getBuiltin('node:module').createRequire(__filename)('oidc-provider') as typeof OidcProvider;
}
