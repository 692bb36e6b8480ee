/**
 * A package published as ES modules only (panva's `oidc-provider` and `jose`, docs/decisions.md),
 * loaded by this CommonJS build with `require`, which Node allows for them (20.19 and 22.12
 * onwards, 24). The require is Node's own, taken from `process.getBuiltinModule`, so that a module
 * loader wrapping this one (jest's, in the tests) does not try to transform the package.
 */
export function requireEsModule<T>(name: string): T {
  const getBuiltin = (process as unknown as { getBuiltinModule(id: 'node:module'): typeof import('node:module') }).getBuiltinModule;
  return getBuiltin('node:module').createRequire(__filename)(name) as T;
}
