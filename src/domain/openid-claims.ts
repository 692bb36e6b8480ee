/**
 * What an application's OpenID provider says of a person (docs/openid-connect.md#scopes-and-claims):
 * the claims of each scope, taken from the record, and the application's own mapping (setting
 * `openid_claims`) of claims to attributes, which replaces a profile claim's source or adds a
 * claim of its own, released with the `profile` scope.
 */

/** The scopes an OpenID client may ask for; a client's setting `scope` narrows them. */
export const OPENID_SCOPES = ['openid', 'offline_access', 'profile', 'email', 'phone', 'address', 'organizations'] as const;

/** The claims of each scope (OpenID Connect Core 5.4). */
export const STANDARD_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  // every ID token says who, how (amr: pwd, otp, hwk, fed, mfa) and when the person signed in
  openid: ['sub', 'amr', 'auth_time'],
  email: ['email', 'email_verified'],
  profile: ['name', 'given_name', 'family_name', 'middle_name', 'nickname', 'preferred_username', 'profile', 'picture', 'website', 'gender', 'birthdate', 'zoneinfo', 'locale', 'updated_at'],
  phone: ['phone_number', 'phone_number_verified'],
  address: ['address'],
  // the account's organizations (docs/organizations.md#tokens): their ids, and its roles in each as id:role
  organizations: ['organizations', 'organization_roles'],
};

/**
 * Claims no mapping may give another source: who the person is, how they signed in, the token's
 * own, and what a relying party trusts as verified (an email address taken from an attribute
 * would be trusted as the account's verified one).
 */
const FIXED = new Set(['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'auth_time', 'nonce', 'acr', 'amr', 'azp', 'sid', 'at_hash', 'c_hash',
  'email', 'email_verified', 'phone_number_verified', 'updated_at', 'preferred_username', 'organizations', 'organization_roles', 'org_id', 'org_roles', 'org_permissions']);
const CLAIM_NAME = /^[A-Za-z][A-Za-z0-9_.:/-]{0,99}$/;
const ATTRIBUTE_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,63}(\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,4}$/;
const MAX_MAPPED = 30;

/** An application's mapping: claim name → attribute path (`plan`, `primaryAddress.country`). */
export type ClaimMapping = Readonly<Record<string, string>>;

/** What is wrong with a value of the setting `openid_claims`, if anything. */
export function claimMappingProblem(value: string): string | undefined {
  const example = 'such as {"name":"displayName","https://example.com/plan":"plan"}';
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return `must be a JSON object of claim names and the attributes they come from, ${example}`;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `must be a JSON object, ${example}`;
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length > MAX_MAPPED) return `maps at most ${MAX_MAPPED} claims`;
  for (const [claim, path] of entries) {
    if (!CLAIM_NAME.test(claim)) return `"${claim.slice(0, 100)}" is not a claim name (a letter, then letters, digits and _ . : / -)`;
    if (FIXED.has(claim)) return `the claim ${claim} comes from the account itself and cannot be mapped`;
    if (typeof path !== 'string' || !ATTRIBUTE_PATH.test(path)) return `the claim ${claim} must name an attribute, such as plan or primaryAddress.country`;
  }
  return undefined;
}

/** The application's mapping (an unreadable value maps nothing: it was checked when set). */
export function claimMappingOf(settings: Record<string, string>): ClaimMapping {
  const raw = settings.openid_claims;
  if (!raw || claimMappingProblem(raw) !== undefined) return {};
  return JSON.parse(raw) as ClaimMapping;
}

/** The claims of each scope for an application: the standard ones, and its own mapped claims with `profile`. */
export function claimsOfScopes(mapping: ClaimMapping): Record<string, string[]> {
  const standard = new Set(Object.values(STANDARD_CLAIMS).flat());
  const own = Object.keys(mapping).filter((c) => !standard.has(c));
  return Object.fromEntries(Object.entries(STANDARD_CLAIMS).map(([scope, claims]) => [scope, scope === 'profile' ? [...claims, ...own] : [...claims]]));
}

/** The value at `path` of a record's attributes, if any (an empty string is none). */
function attributeAt(attributes: Record<string, unknown>, path: string): unknown {
  let value: unknown = attributes;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value === '' || value === null ? undefined : value;
}

const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

/** A record's claims: the standard sources, then the application's mapping over them. */
export function claimsOfRecord(
  record: { uuid: string; email: string | null; emailVerified: unknown; username: string | null; attributes: Record<string, unknown>; lastUpdated: Date },
  mapping: ClaimMapping,
): { sub: string; [claim: string]: unknown } {
  const a = record.attributes;
  const claims: { sub: string; [claim: string]: unknown } = {
    sub: record.uuid,
    email: record.email ?? undefined,
    email_verified: record.email ? record.emailVerified !== null : undefined,
    given_name: text(a.givenName), family_name: text(a.familyName), nickname: text(a.displayName),
    name: [text(a.givenName), text(a.familyName)].filter(Boolean).join(' ') || text(a.displayName),
    preferred_username: record.username ?? undefined, birthdate: text(a.birthdate), picture: text(a.photo),
    phone_number: text(a.mobile),
    ...(a.address !== null && typeof a.address === 'object' && !Array.isArray(a.address) && { address: a.address }),
    updated_at: Math.floor(record.lastUpdated.getTime() / 1000),
  };
  for (const [claim, path] of Object.entries(mapping)) {
    // the mapping is the claim's source: an attribute the record lacks is no claim, not the standard one
    const value = attributeAt(a, path);
    if (value !== undefined) claims[claim] = value;
    else delete claims[claim];
  }
  return claims;
}
