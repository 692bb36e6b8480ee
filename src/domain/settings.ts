import { claimMappingProblem, OPENID_SCOPES } from './openid-claims';
import { DEVICE_CODE_GRANT } from './openid-routes';
import { lengthSetting, LOWEST_MIN_LENGTH, MAX_MIN_LENGTH } from './password-minimum';
import { limitProblem, ORGANIZATION_LIMITS, type OrganizationLimit } from './organizations';

/** A password minimum an application may set: a whole number from LOWEST_MIN_LENGTH to MAX_MIN_LENGTH. */
const minimumInRange = (value: string) => {
  const n = lengthSetting(value);
  return n !== undefined && n >= LOWEST_MIN_LENGTH && n <= MAX_MIN_LENGTH;
};

/**
 * The settings Gatehouse reads, checked when they are set: a value it could not use is refused
 * with the form it expects, instead of being stored and silently never matching. Other keys are
 * the application's own and are stored as given. `settingOfList` is how the readers split lists.
 */

/** Lists are separated by spaces or commas. */
export const settingOfList = (value: string | undefined): string[] => (value ?? '').split(/[\s,]+/).filter(Boolean);

const MAX_URL = 2048;

/** An absolute http(s) URL that the WHATWG parser takes as written, without user info or fragment. */
function httpUrl(raw: string): URL | undefined {
  if (raw.length > MAX_URL || /[\s"'<>\\]/.test(raw)) return undefined;
  try {
    const url = new URL(raw);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.hash || !url.hostname) return undefined;
    return url;
  } catch {
    return undefined;
  }
}

/** Whether `raw` is a usable logo, link or redirect URL (what pages and emails may show or send to). */
export const isHttpUrl = (raw: string): boolean => httpUrl(raw) !== undefined;

type Check = (value: string) => string | undefined;

/** The shortest and longest `access_token_lifetime` an application may set (tokens.ts reads it). */
export const ACCESS_TOKEN_SECONDS_RANGE = { min: 60, max: 86_400 } as const;

/** What is wrong with a client's public key set (setting `jwks`), if anything: a JWK set of 1 to 10 public EC, RSA or OKP keys. */
function publicJwksProblem(value: string): string | undefined {
  const example = 'such as {"keys":[{"kty":"EC","crv":"P-256","x":"…","y":"…"}]}';
  let set: unknown;
  try {
    set = JSON.parse(value);
  } catch {
    return `must be a JWK set in JSON, ${example}`;
  }
  const keys = (set as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > 10) return `must be a JWK set with 1 to 10 keys, ${example}`;
  for (const key of keys as Record<string, unknown>[]) {
    if (key === null || typeof key !== 'object' || !['EC', 'RSA', 'OKP'].includes(key.kty as string)) return 'each key must be an EC, RSA or OKP public key (kty)';
    // a private key shared with the provider is no longer the client's own: refused, never stored
    if (['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((m) => m in key)) return 'the keys must be public keys only: this one has a private part; keep it with the client and set its public part';
  }
  return undefined;
}

const urlList = (what: string, example: string): Check => (value) => {
  if (/^\s*\[/.test(value)) return `must be ${what} separated by spaces or commas, not a JSON list; such as ${example}`;
  const bad = settingOfList(value).find((u) => !isHttpUrl(u));
  return bad === undefined ? undefined : `"${bad.slice(0, 100)}" is not an absolute http(s) URL; the value is ${what} separated by spaces or commas, such as ${example}`;
};
const oneUrl = (example: string): Check => (value) => (isHttpUrl(value) ? undefined : `must be one absolute http(s) URL, such as ${example}`);

const CHECKS: Readonly<Record<string, Check>> = {
  social_token_urls: urlList('absolute URLs', 'https://app.example.com/social-token'),
  post_logout_redirect_uris: urlList('absolute URLs', 'https://app.example.com/signed-out'),
  id_token_signed_response_alg: (value) => (value === 'ES256' || value === 'RS256' ? undefined : 'must be ES256 or RS256 (the default): how the client\'s ID tokens are signed'),
  token_endpoint_auth_method: (value) => (['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'].includes(value) ? undefined
    : 'must be client_secret_basic (the default), client_secret_post, private_key_jwt (with the setting jwks or jwks_uri) or none (a public client, which must use PKCE)'),
  jwks_uri: (value) => (httpUrl(value)?.protocol === 'https:' ? undefined : 'must be the https URL of the client\'s public keys (a JWK set), such as https://app.example.com/jwks.json'),
  jwks: (value) => publicJwksProblem(value),
  openid_claims: (value) => claimMappingProblem(value),
  scope: (value) => {
    const scopes = settingOfList(value);
    const bad = scopes.find((s) => !(OPENID_SCOPES as readonly string[]).includes(s));
    if (bad !== undefined) return `"${bad.slice(0, 50)}" is not a scope of the provider; the value is scopes separated by spaces among ${OPENID_SCOPES.join(', ')}`;
    return scopes.includes('openid') ? undefined : 'must include openid: the scopes an OpenID client may ask for, such as openid email profile';
  },
  grant_types: (value) => {
    const bad = settingOfList(value).find((g) => !['authorization_code', 'refresh_token', 'client_credentials', DEVICE_CODE_GRANT].includes(g));
    return bad === undefined && settingOfList(value).length > 0 ? undefined
      : `must be grant types separated by spaces or commas among authorization_code, refresh_token, client_credentials and ${DEVICE_CODE_GRANT} (a TV, a kiosk or a command-line tool)`;
  },
  redirect_uris: urlList('absolute URLs', 'https://app.example.com/signed-in'),
  allowed_origins: (value) => {
    if (/^\s*\[/.test(value)) return 'must be origins separated by spaces or commas, not a JSON list; such as https://app.example.com';
    const bad = settingOfList(value).find((o) => {
      // an Android app's origin, for its passkeys (docs/passkeys.md)
      if (/^android:apk-key-hash:[A-Za-z0-9_-]{20,}$/.test(o)) return false;
      const url = httpUrl(o);
      return !url || url.origin !== o.replace(/\/$/, '').toLowerCase();
    });
    return bad === undefined ? undefined : `"${bad.slice(0, 100)}" is not an origin (scheme, host and port only); such as https://app.example.com`;
  },
  brand_color: (value) => (/^#[0-9a-fA-F]{6}$/.test(value) ? undefined : 'must be a colour as #rrggbb, such as #3b4cca'),
  logo_url: oneUrl('https://cdn.example.com/logo.png'),
  password_recover_url: oneUrl('https://app.example.com/reset-password'),
  verify_email_url: oneUrl('https://app.example.com/verify-email'),
  social_login_url: oneUrl('https://social.example.com'),
  app_url: oneUrl('https://app.example.com'),
  trusted_end_user_ip: (value) => (value === 'true' || value === 'false' ? undefined : 'must be true or false'),
  default_flow_name: (value) => (/^[A-Za-z0-9_-]{1,64}$/.test(value) ? undefined : 'must be the name of an imported flow, such as standard'),
  default_flow_version: (value) => (/^[1-9]\d{0,8}$/.test(value) ? undefined : 'must be a version number of the flow, such as 1 (HEAD is not accepted)'),
  app_name: (value) => (value.length <= 100 && !/[\u0000-\u001f\u007f]/.test(value) ? undefined : 'must be at most 100 printable characters'),
  password_min_length: (value) => (minimumInRange(value) ? undefined
    : `must be a whole number from ${LOWEST_MIN_LENGTH} to ${MAX_MIN_LENGTH}: the fewest characters a new password has (the flow's own minimum when unset)`),
  password_min_length_second_factor: (value) => (minimumInRange(value) ? undefined
    : `must be a whole number from ${LOWEST_MIN_LENGTH} to ${MAX_MIN_LENGTH}: the fewest characters a new password has for an account with a second factor`),
  passkey_rp_id: (value) => (/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/.test(value) ? undefined
    : 'must be a host name in lower case, such as example.com: the application\'s own host or a domain above it'),
  second_factor: (value) => (['off', 'optional', 'required'].includes(value) ? undefined
    : 'must be off (no second factor), optional (accounts may turn one on; the default) or required (every account signs in with one)'),
  consent_page: (value) => (value === 'on' || value === 'off' ? undefined
    : 'must be on (an OpenID sign-in through this login client asks the person to allow the scopes it has not granted yet) or off (the default: consent is implied)'),
  require_pushed_authorization_requests: (value) => (value === 'true' || value === 'false' ? undefined
    : 'must be true (the client\'s authorization requests must be pushed first: /oidc/request) or false (the default)'),
  require_signed_request_object: (value) => (value === 'true' || value === 'false' ? undefined
    : 'must be true (the client\'s authorization requests must come as a request object signed with its key: setting jwks or jwks_uri) or false (the default)'),
  dpop_bound_access_tokens: (value) => (value === 'true' || value === 'false' ? undefined
    : 'must be true (the client\'s access tokens are bound to its DPoP key: every token request carries a DPoP proof) or false (the default)'),
  token_endpoint_auth_signing_alg: (value) => (['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'].includes(value) ? undefined
    : 'must be ES256, ES384, PS256, RS256 or EdDSA: the one algorithm the client\'s key signs its assertions and request objects with (a FAPI 2.0 client: ES256, PS256 or EdDSA)'),
  backchannel_logout_uri: (value) => {
    const url = httpUrl(value);
    // https, or http to this machine (a developer's app; sent there only where WEBHOOKS_ALLOW_PRIVATE allows loopback addresses)
    const local = url?.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    if (!url || (url.protocol !== 'https:' && !local) || url.hash !== '' || value.includes('#')) {
      return 'must be one absolute https URL without a fragment, such as https://app.example.com/backchannel-logout (http only to localhost): where the client is sent a logout token when a session of its ends';
    }
    return undefined;
  },
  backchannel_logout_session_required: (value) => (value === 'true' || value === 'false' ? undefined
    : 'must be true (a logout token always names the session, sid: none is sent without one) or false (the default: a token names the session when it is known, and the account always)'),
  security_profile: (value) => (value === 'fapi2' ? undefined
    : 'must be fapi2 (the FAPI 2.0 security profile: pushed requests, PKCE, DPoP, private_key_jwt), or empty for none'),
  openid_provider: (value) => (value === 'on' || value === 'off' ? undefined : 'must be on (the application is an OpenID provider: the default) or off'),
  passkey_after_registration: (value) => (value === 'offer' || value === 'off' ? undefined
    : 'must be offer (a registration on /register offers a passkey before going back to the app) or off (the default)'),
  registration: (value) => (value === 'open' || value === 'closed' ? undefined
    : 'must be open (people make their own accounts: the default) or closed (accounts are made only by the application\'s backend or its operators; the operators\' application is always closed)'),
  email_code_sign_in: (value) => (value === 'on' || value === 'off' ? undefined
    : 'must be on (accounts may sign in with a code or link mailed to them) or off (the default)'),
  email_code_registration: (value) => (value === 'on' || value === 'off' ? undefined
    : 'must be on (a mailed code to an address no account has registers one) or off (the default: such an address gets no mail)'),
  challenge: (value) => (['off', 'on', 'when_busy'].includes(value) ? undefined
    : 'must be off (the default), on (sign-in, registration, password resets and email codes ask for a solved proof-of-work challenge) or when_busy (they ask once failed sign-ins and registrations pass challenge_busy_address or challenge_busy_application in 15 minutes)'),
  challenge_difficulty: (value) => (/^\d{1,7}$/.test(value) && Number(value) >= 10 && Number(value) <= 1_000_000 ? undefined
    : 'must be a whole number from 10 to 1000000: the attempts a challenge takes on average (10000 when unset; each is 1000 iterations of PBKDF2-SHA-256)'),
  challenge_busy_address: (value) => (/^\d{1,7}$/.test(value) && Number(value) >= 1 && Number(value) <= 1_000_000 ? undefined
    : 'must be a whole number from 1 to 1000000: the failed sign-ins and registrations from one address in 15 minutes after which when_busy asks for a challenge (10 when unset)'),
  challenge_busy_application: (value) => (/^\d{1,7}$/.test(value) && Number(value) >= 1 && Number(value) <= 1_000_000 ? undefined
    : 'must be a whole number from 1 to 1000000: the failed sign-ins and registrations in the whole application in 15 minutes after which when_busy asks every client address for a challenge (500 when unset)'),
  account_client_id: (value) => (/^[A-Za-z0-9_-]{1,64}$/.test(value) ? undefined : 'must be the client_id of a login client of this application'),
  access_token_lifetime: (value) => (/^[1-9]\d{0,5}$/.test(value) && Number(value) >= ACCESS_TOKEN_SECONDS_RANGE.min && Number(value) <= ACCESS_TOKEN_SECONDS_RANGE.max ? undefined
    : `must be a whole number of seconds from ${ACCESS_TOKEN_SECONDS_RANGE.min} to ${ACCESS_TOKEN_SECONDS_RANGE.max} (a day): how long the access tokens of this application's API live (3600, an hour, when unset; the OpenID provider's keep their hour)`),
  account_session_seconds: (value) => (/^\d{1,7}$/.test(value) && Number(value) >= 300 && Number(value) <= 2_592_000 ? undefined
    : 'must be a whole number of seconds from 300 to 2592000 (30 days): the longest an account page session lives (43200, 12 hours, when unset)'),
  account_session_idle_seconds: (value) => (/^\d{1,7}$/.test(value) && Number(value) >= 60 && Number(value) <= 86_400 ? undefined
    : 'must be a whole number of seconds from 60 to 86400: how long an account page session lives unused (1800, 30 minutes, when unset)'),
  owner_email: (value) => (value.length <= 254 && /^[^\s@<>",;]+@[^\s@<>",;]+\.[^\s@<>",;]+$/.test(value) ? undefined : 'must be one email address, such as platform@example.com: where Gatehouse writes about the application (a webhook endpoint it disabled)'),
  time_attributes: (value) => {
    const bad = value.split(',').map((n) => n.trim()).filter(Boolean).find((n) => !/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(n));
    return bad === undefined ? undefined : `"${bad.slice(0, 64)}" is not an attribute name; the value is names separated by commas, such as termsAccepted, phoneVerified`;
  },
  scim_deleted_accounts: (value) => (value === 'disable' || value === 'delete' ? undefined
    : 'must be disable (the default: an account an organization\'s directory deletes, that belongs to no other organization, is disabled) or delete (one the directory made is deleted)'),
  // organizations' limits (docs/organizations.md#limits)
  ...Object.fromEntries(Object.keys(ORGANIZATION_LIMITS).map((key) => [key, (value: string) => limitProblem(key as OrganizationLimit, value)])),
};

/** Why `value` cannot be used for the known setting `key`, or undefined when it can (or the key is the application's own). */
export function settingProblem(key: string, value: string): string | undefined {
  return Object.hasOwn(CHECKS, key) ? CHECKS[key](value) : undefined;
}

/** Whether the application is an OpenID provider (setting `openid_provider`: on unless set to off). */
export const isOpenIdProvider = (app: { settings: Record<string, string> }): boolean => app.settings.openid_provider !== 'off';

/** A setting's key: 1 to 128 letters, digits, or _ . : - (the admin API's and the CLI's). */
export const SETTING_KEY = /^[A-Za-z0-9_.:-]{1,128}$/;
export const SETTING_KEY_FORM = 'must be 1 to 128 letters, digits, or _ . : -';
const MAX_SETTING_VALUE = 4096;

/** What is wrong with a setting's new (non-empty) value: its length, then the form Gatehouse reads it in. */
export function settingValueProblem(key: string, value: string): string | undefined {
  if (value.length > MAX_SETTING_VALUE) return `is longer than ${MAX_SETTING_VALUE} characters`;
  const problem = settingProblem(key, value);
  return problem && `${key} ${problem}`;
}
