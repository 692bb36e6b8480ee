import { OPENID_SCOPES } from './openid-claims';

/**
 * An application's APIs (docs/openid-connect.md#apis): the resource servers its apps call with the
 * access tokens the OpenID provider issues. Each is named by its resource indicator (RFC 8707), the
 * `resource` a client asks for and the `aud` of the JWT access tokens (RFC 9068) it receives, and
 * defines the scopes a client may ask of it.
 */

/** At most this many APIs per application. */
export const MAX_APIS = 100;
/** At most this many scopes per API. */
export const MAX_API_SCOPES = 100;
const MAX_SCOPE = 64;
const MAX_IDENTIFIER = 255;
export const MAX_API_NAME = 200;
/** How long an API's access token lives unless the API says otherwise: a JWT is not revoked, so not long. */
export const API_TOKEN_SECONDS = 600;
export const API_TOKEN_SECONDS_RANGE = { min: 60, max: 86_400 } as const;
/** The resource indicators Gatehouse names itself (its organizations'): never an API's. */
export const RESERVED_RESOURCE = 'urn:gatehouse:';

/** Why `identifier` cannot name an API (undefined: it can): an absolute URI without a fragment (RFC 8707 section 2). */
export function apiIdentifierProblem(identifier: string): string | undefined {
  if (identifier.length === 0 || identifier.length > MAX_IDENTIFIER) return `must be 1 to ${MAX_IDENTIFIER} characters`;
  if (/[\s\u0000-\u001f\u007f]/.test(identifier)) return 'must not contain spaces or control characters';
  let url: URL;
  try {
    url = new URL(identifier);
  } catch {
    return 'must be an absolute URI, such as https://api.example.com/ (RFC 8707: the resource indicator the clients send)';
  }
  if (!/^[a-z][a-z0-9+.-]*:/i.test(identifier)) return 'must be an absolute URI with a scheme, such as https://api.example.com/';
  if (identifier.includes('#')) return 'must not have a fragment (#…): RFC 8707 forbids one';
  if (identifier.toLowerCase().startsWith(RESERVED_RESOURCE)) return `must not begin with ${RESERVED_RESOURCE}: those are the organizations' resources`;
  if ((url.protocol === 'http:' || url.protocol === 'https:') && url.host === '') return 'must name a host';
  return undefined;
}

/** Why `scope` cannot be a scope of an API (RFC 6749's scope-token, not one of the provider's own OpenID scopes). */
export function apiScopeProblem(scope: string): string | undefined {
  if (scope.length === 0 || scope.length > MAX_SCOPE) return `has a scope of more than ${MAX_SCOPE} characters`;
  if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope)) return `has ${JSON.stringify(scope.slice(0, 40))}: a scope is printable ASCII without spaces, " or \\ (RFC 6749)`;
  if ((OPENID_SCOPES as readonly string[]).includes(scope)) return `has ${scope}, a scope of the OpenID provider itself: name the API's scopes otherwise (read:orders, invoices.write)`;
  return undefined;
}

/** The scopes of a space- or comma-separated list, each once, in their order; or why they are not. */
export function apiScopesOf(raw: string): { scopes: string[] } | { problem: string } {
  const scopes = [...new Set(raw.split(/[\s,]+/).filter(Boolean))];
  if (scopes.length > MAX_API_SCOPES) return { problem: `names more than ${MAX_API_SCOPES} scopes` };
  const wrong = scopes.map(apiScopeProblem).find(Boolean);
  return wrong ? { problem: wrong } : { scopes };
}
