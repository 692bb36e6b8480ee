/**
 * Where each application's OpenID provider answers (docs/openid-connect.md#endpoints): its
 * discovery document and endpoints, beside the original API, which keeps `/oauth/`.
 */

/** The provider's endpoints, all under /oidc/ (the original API keeps /oauth/). */
export const OIDC_ROUTES = {
  authorization: '/oidc/auth', token: '/oidc/token', userinfo: '/oidc/me', jwks: '/oidc/jwks', end_session: '/oidc/session/end',
  introspection: '/oidc/token/introspection', revocation: '/oidc/token/revocation', pushed_authorization_request: '/oidc/request',
  registration: '/oidc/reg', backchannel_authentication: '/oidc/backchannel', device_authorization: '/oidc/device/auth', code_verification: '/oidc/device',
} as const;

/** Whether a path is the provider's: its discovery document or one of its endpoints (its interactions are Gatehouse's pages). */
export const isOidcPath = (path: string) => path === '/.well-known/openid-configuration' || (path.startsWith('/oidc/') && !path.startsWith('/oidc/interaction/'));

/** Whether a path is one of the provider's that a browser is sent to (the authorization, its resume, the logout): it answers with pages. */
export const isProviderPage = (path: string) => /^\/oidc\/(?:auth|session\/end)(?:\/|$)/.test(path);

/** The shape of an interaction's uid (the provider's random base64url): anything else is not looked up. */
export const INTERACTION_UID = /^[A-Za-z0-9_-]{10,64}$/;

/** The device authorization grant (RFC 8628), as a client's `grant_types` names it. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
