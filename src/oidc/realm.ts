/**
 * oidc-provider tells a configuration object from others by `value.constructor === Object`. The
 * package is loaded with Node's own require (provider-module.ts), so under a module loader that
 * runs this code in a realm of its own (jest's) the objects made here have another realm's
 * `Object`, and the provider would not merge them with its defaults. `inProviderRealm` copies plain
 * objects and arrays into the realm of Node's builtins, where the provider runs; elsewhere (the
 * server) that is this realm, and it is a copy. Functions and other values pass as they are.
 */
type V8 = typeof import('node:v8');
const v8 = (process as unknown as { getBuiltinModule(id: 'node:v8'): V8 }).getBuiltinModule('node:v8');
const OuterObject = (v8.deserialize(v8.serialize({})) as object).constructor as ObjectConstructor;
const OuterArray = (v8.deserialize(v8.serialize([])) as unknown[]).constructor as ArrayConstructor;

export function inProviderRealm<T>(value: T): T {
  if (Array.isArray(value)) {
    const copy = new OuterArray();
    for (const item of value) copy.push(inProviderRealm(item));
    return copy as T;
  }
  if (value !== null && typeof value === 'object' && (Object.getPrototypeOf(value) === Object.prototype || (value as object).constructor === OuterObject)) {
    const copy = new OuterObject() as Record<string, unknown>;
    for (const [key, item] of Object.entries(value)) copy[key] = inProviderRealm(item);
    return copy as T;
  }
  return value;
}
