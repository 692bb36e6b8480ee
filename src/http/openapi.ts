import { ROUTES, type EndpointDoc, type Route } from './routes';
import { OIDC_ROUTES } from '../domain/openid-routes';

/** Each endpoint's summary and parameters, as the route table declares them (the tests read them by path). */
export const ENDPOINT_DOCS: Record<string, EndpointDoc> = Object.fromEntries(ROUTES.flatMap((r) => (r.doc ? [[r.path, r.doc]] : [])));

const STRING = { type: 'string' };
const INTEGER = { type: 'integer' };
const BOOLEAN = { type: 'boolean' };
const OBJECT = { type: 'object' };
const RECORD_REF = { $ref: '#/components/schemas/Record' };
const CLIENT = { type: 'object', required: ['client_id', 'client_secret', 'description', 'features'], properties: { client_id: STRING, client_secret: STRING, description: STRING, features: { type: 'array', items: STRING } }, additionalProperties: false };
const PROVIDER = { type: 'object', required: ['name', 'kind', 'issuer', 'clientId', 'scopes'], properties: { name: STRING, kind: STRING, issuer: STRING, clientId: STRING, scopes: { type: 'array', items: STRING } }, additionalProperties: false };
const INDEXED_ATTRIBUTE = {
  type: 'object', required: ['name', 'state', 'created', 'ready'], additionalProperties: false,
  properties: { name: STRING, state: { type: 'string', enum: ['building', 'ready'] }, created: STRING, ready: { type: ['string', 'null'] } },
};
const AUDIT_ENTRY = {
  type: 'object', required: ['id', 'occurred_at', 'type', 'version', 'actor', 'subject', 'data', 'address', 'request_id'],
  properties: {
    id: STRING, occurred_at: STRING, type: STRING, version: INTEGER, actor: { type: 'object', required: ['kind'] },
    subject: { type: 'object', required: ['kind', 'id'] }, data: { type: 'object' }, address: { type: ['string', 'null'] }, request_id: { type: ['string', 'null'] },
  },
  additionalProperties: false,
};
/** One entry of an account's activity: what happened (its event's facts, or a minute of failed sign-ins), when, through which client, from where. */
const ACTIVITY_ENTRY = {
  type: 'object', required: ['type', 'at', 'client_id', 'address', 'user_agent'],
  properties: {
    type: STRING, at: STRING, actor: STRING, reason: STRING, count: INTEGER, last_at: STRING,
    client_id: { type: ['string', 'null'] }, address: { type: ['string', 'null'] }, user_agent: { type: ['string', 'null'] },
  },
};
/** A webhook endpoint (docs/webhooks.md#endpoints): never its secret, but as /webhooks/add answers it. */
const WEBHOOK_ENDPOINT_PROPERTIES = {
  id: STRING, url: STRING, events: { oneOf: [{ const: '*' }, { type: 'array', items: STRING }] }, description: STRING, include_record: BOOLEAN,
  created: STRING, disabled: { type: ['string', 'null'] }, failing_since: { type: ['string', 'null'] },
};
const WEBHOOK_ENDPOINT = { type: 'object', required: Object.keys(WEBHOOK_ENDPOINT_PROPERTIES), properties: WEBHOOK_ENDPOINT_PROPERTIES, additionalProperties: false };
const WEBHOOK_DELIVERY = {
  type: 'object', required: ['id', 'message_id', 'type', 'state', 'attempts', 'created', 'next_attempt', 'last_attempt', 'last_status', 'last_ms', 'last_answer'],
  properties: {
    id: INTEGER, message_id: STRING, type: STRING, state: { enum: ['pending', 'delivered', 'failed'] }, attempts: INTEGER, created: STRING,
    next_attempt: { type: ['string', 'null'] }, last_attempt: { type: ['string', 'null'] }, last_status: { type: ['integer', 'null'] },
    last_ms: { type: ['integer', 'null'] }, last_answer: { type: ['string', 'null'] },
  },
  additionalProperties: false,
};
/** A logout token owed to a client (docs/openid-connect.md#back-channel-logout): never the token itself. */
const LOGOUT_DELIVERY = {
  type: 'object', required: ['id', 'sub', 'sid', 'state', 'attempts', 'created', 'last_attempt', 'last_status', 'last_ms', 'last_answer'],
  properties: {
    id: STRING, sub: { type: ['string', 'null'] }, sid: { type: ['string', 'null'] }, state: { enum: ['pending', 'delivered', 'failed'] }, attempts: INTEGER, created: STRING,
    last_attempt: { type: ['string', 'null'] }, last_status: { type: ['integer', 'null'] }, last_ms: { type: ['integer', 'null'] }, last_answer: { type: ['string', 'null'] },
  },
  additionalProperties: false,
};
/** An organization's enterprise connection (docs/organizations.md#connections): never its secret. */
const CONNECTION_PROPERTIES = {
  id: STRING, organization_id: STRING, type: { enum: ['saml', 'oidc'] }, name: STRING, required: BOOLEAN, start_url: STRING,
  metadata_url: STRING, acs_url: STRING, idp_entity_id: STRING, idp_initiated: BOOLEAN, redirect_uri: STRING, issuer: STRING, client_id: STRING,
  attributes: { type: ['object', 'null'] }, groups: { type: ['object', 'null'] }, created: STRING, updated: STRING,
};
const CONNECTION = {
  type: 'object', required: ['id', 'organization_id', 'type', 'name', 'required', 'start_url', 'attributes', 'groups', 'created', 'updated'],
  properties: CONNECTION_PROPERTIES, additionalProperties: false,
};
/** An organization's SCIM token (docs/scim.md#tokens), never the token. */
const SCIM_TOKEN = {
  type: 'object', required: ['id', 'organization_id', 'description', 'created_by', 'created', 'last_used', 'revoked'], additionalProperties: false,
  properties: { id: STRING, organization_id: STRING, description: STRING, created_by: STRING, created: STRING, last_used: { type: ['string', 'null'] }, revoked: { type: ['string', 'null'] } },
};
const GROUP_ROLES = { type: 'object', additionalProperties: { type: 'array', items: STRING } };
/** A SAML service provider (docs/saml.md#service-providers). */
const SERVICE_PROVIDER_PROPERTIES = {
  id: STRING, entity_id: STRING, name: STRING, name_id_format: { enum: ['email', 'persistent', null] }, attributes: { type: ['object', 'null'] },
  assertion_consumer_services: { type: 'array', items: STRING }, single_logout_services: { type: 'array', items: STRING }, authn_requests_signed: BOOLEAN,
  certificates: INTEGER, created: STRING, updated: STRING,
};
const SERVICE_PROVIDER = { type: 'object', required: Object.keys(SERVICE_PROVIDER_PROPERTIES), properties: SERVICE_PROVIDER_PROPERTIES, additionalProperties: false };
/** An API (docs/openid-connect.md#apis). */
const API_PROPERTIES = {
  id: STRING, identifier: STRING, name: STRING, scopes: { type: 'array', items: STRING },
  client_scopes: { type: 'object', additionalProperties: { type: 'array', items: STRING } }, token_lifetime: INTEGER, rbac: BOOLEAN,
  permissions_in_token: BOOLEAN, created: STRING, updated: STRING,
};
const API = { type: 'object', required: Object.keys(API_PROPERTIES), properties: API_PROPERTIES, additionalProperties: false };
const APP_ROLE_PROPERTIES = { name: STRING, description: STRING, permissions: { type: 'object', additionalProperties: { type: 'array', items: STRING } } };
const APP_ROLE = { type: 'object', required: Object.keys(APP_ROLE_PROPERTIES), properties: APP_ROLE_PROPERTIES, additionalProperties: false };
const APP_ROLES = { results: { type: 'array', items: APP_ROLE } };
/** An organization (docs/organizations.md#the-api). */
const ORGANIZATION_PROPERTIES = {
  id: STRING, name: STRING, slug: STRING, logo_url: { type: ['string', 'null'] }, metadata: OBJECT, join_by_domain: BOOLEAN,
  default_roles: { type: 'array', items: STRING }, created: STRING, updated: STRING,
};
const ORGANIZATION = { type: 'object', required: Object.keys(ORGANIZATION_PROPERTIES), properties: ORGANIZATION_PROPERTIES, additionalProperties: false };
const MEMBERSHIP_PROPERTIES = { ...ORGANIZATION_PROPERTIES, roles: { type: 'array', items: STRING }, joined: STRING, active: BOOLEAN };
// (a member's own view has no metadata, join_by_domain nor default_roles)
const MEMBERSHIP = {
  type: 'object', required: Object.keys(MEMBERSHIP_PROPERTIES).filter((k) => !['metadata', 'join_by_domain', 'default_roles'].includes(k)),
  properties: MEMBERSHIP_PROPERTIES, additionalProperties: false,
};
const MEMBER_PROPERTIES = {
  user_id: STRING, email: { type: ['string', 'null'] }, username: { type: ['string', 'null'] }, roles: { type: 'array', items: STRING },
  joined_by: { enum: ['created', 'api', 'invitation', 'domain', 'connection'] }, joined: STRING,
};
const MEMBER = { type: 'object', required: Object.keys(MEMBER_PROPERTIES), properties: MEMBER_PROPERTIES, additionalProperties: false };
const INVITATION_PROPERTIES = {
  id: STRING, email: STRING, roles: { type: 'array', items: STRING }, state: { enum: ['pending', 'accepted', 'revoked', 'expired'] }, inviter: STRING, locale: STRING,
  expires: STRING, created: STRING, finished: { type: ['string', 'null'] },
};
const INVITATION = { type: 'object', required: Object.keys(INVITATION_PROPERTIES), properties: INVITATION_PROPERTIES, additionalProperties: false };
const ROLE = {
  type: 'object', required: ['name', 'description', 'permissions', 'built_in'],
  properties: { name: STRING, description: STRING, permissions: { type: 'array', items: STRING }, built_in: BOOLEAN }, additionalProperties: false,
};
const DOMAIN = {
  type: 'object', required: ['domain', 'verified', 'verified_by', 'verified_at', 'joinable'],
  properties: { domain: STRING, verified: BOOLEAN, verified_by: { enum: ['operator', 'member', null] }, verified_at: { type: ['string', 'null'] }, joinable: BOOLEAN }, additionalProperties: false,
};
const PAGE_OF = (items: unknown) => ({ results: { type: 'array', items }, next_cursor: { type: ['string', 'null'] } });
/** A sign-in's answer: the record, and what response_type asked for (an access token, an authorization code, or both). */
const SIGNED_IN = { capture_user: RECORD_REF, access_token: STRING, authorization_code: STRING };
const TOKEN_PAIR = { access_token: STRING, expires_in: INTEGER, refresh_token: STRING, transaction_state: {} };

/** A success body: stat "ok" and these members, no other (`optional` lists those not always present). */
const ok = (properties: Record<string, unknown> = {}, optional: readonly string[] = []) => ({
  type: 'object',
  required: ['stat', ...Object.keys(properties).filter((k) => !optional.includes(k))],
  properties: { stat: { const: 'ok' }, ...properties },
  additionalProperties: false,
});

/** What each endpoint answers on success (docs/api.md says the same in words); the README's run checks every answer it gets against these. */
export const ANSWERS: Record<string, Record<string, unknown>> = {
  '/access/getAccessToken': ok({ accessToken: STRING }),
  '/access/getAuthorizationCode': ok({ authorizationCode: STRING }),
  '/access/getCreationToken': ok({ creation_token: STRING }),
  '/access/getVerificationCode': ok({ verification_code: STRING }),
  '/access/useVerificationCode': ok({ uuid: STRING }),
  '/oauth/token': ok(TOKEN_PAIR, ['transaction_state']),
  '/oauth/register_native_traditional': ok(SIGNED_IN, ['access_token', 'authorization_code']),
  '/oauth/auth_native_traditional': ok(SIGNED_IN, ['access_token', 'authorization_code']),
  // the fields sent that the form has not (they changed nothing), when there were some
  '/oauth/update_profile_native': ok({ ignored_fields: { type: 'array', items: STRING } }, ['ignored_fields']),
  '/oauth/refresh_access_token': ok({ access_token: STRING, expires_in: INTEGER }),
  '/oauth/auth_native': ok({ ...SIGNED_IN, is_new: BOOLEAN }, ['access_token', 'authorization_code']),
  '/oauth/register_native': ok({ ...SIGNED_IN, is_new: BOOLEAN }, ['access_token', 'authorization_code']),
  '/oauth/link_account_native': ok(),
  '/oauth/unlink_account_native': ok(),
  '/oauth/totp_enroll_native': ok({ secret: STRING, otpauth_uri: STRING, qr_svg: STRING }),
  // with an enroll_token: the sign-in that was sent to add the factor goes on, with what it would have answered
  '/oauth/totp_confirm_native': ok({ recovery_codes: { type: 'array', items: STRING }, ...SIGNED_IN }, ['capture_user', 'access_token', 'authorization_code']),
  '/oauth/totp_remove_native': ok(),
  '/oauth/recovery_codes_native': ok({ recovery_codes: { type: 'array', items: STRING } }),
  // the answer the paused sign-in would have given: a social one (auth_native) says is_new too;
  // a paused password reset code's exchange, its pair
  '/oauth/mfa_verify_native': {
    oneOf: [ok({ ...SIGNED_IN, is_new: BOOLEAN }, ['access_token', 'authorization_code', 'is_new']), ok(TOKEN_PAIR, ['transaction_state'])],
  },
  '/oauth/passkey_register_begin': ok({ options: OBJECT }),
  '/oauth/passkey_register_finish': ok({ passkey_id: INTEGER, ...SIGNED_IN }, ['capture_user', 'access_token', 'authorization_code']),
  '/oauth/passkeys_native': ok({
    passkeys: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'name', 'created', 'last_used', 'backed_up', 'synced', 'transports'], additionalProperties: false,
        properties: { id: INTEGER, name: STRING, created: STRING, last_used: { type: ['string', 'null'] }, backed_up: BOOLEAN, synced: BOOLEAN, transports: { type: 'array', items: STRING } },
      },
    },
  }),
  '/oauth/passkey_rename_native': ok(),
  '/oauth/passkey_remove_native': ok(),
  '/oauth/passkey_auth_begin': ok({ options: OBJECT, challenge_token: STRING }),
  '/oauth/passkey_auth_native': ok(SIGNED_IN, ['access_token', 'authorization_code']),
  '/oauth/email_code_begin': ok({ code_token: STRING, expires_in: INTEGER }),
  '/oauth/email_code_native': ok(SIGNED_IN, ['access_token', 'authorization_code']),
  '/oauth/challenge': ok({ parameters: OBJECT, signature: STRING }),
  '/oauth/forgot_password_native': ok(),
  '/oauth/verify_email_native': ok(),
  '/entity.create': ok({ id: INTEGER, uuid: STRING }),
  '/entity': ok({ result: {} }),
  '/entity.find': ok({ result_count: INTEGER, results: { type: 'array', items: { type: 'object' } }, total_count: INTEGER }, ['total_count']),
  '/entity.count': ok({ total_count: INTEGER }),
  '/entity.update': ok({ result: RECORD_REF }, ['result']),
  '/entity.replace': ok({ result: RECORD_REF }, ['result']),
  '/entity.delete': ok(),
  '/entity.bulkCreate': ok({
    uuid_results: { type: 'array', items: STRING },
    results: { type: 'array', items: { type: 'object', required: ['id', 'uuid'], properties: { id: INTEGER, uuid: STRING }, additionalProperties: false } },
    weak_hashes: { type: 'array', items: { type: 'object', required: ['index', 'format'], properties: { index: INTEGER, format: STRING }, additionalProperties: false } },
  }, ['weak_hashes']),
  '/versions/entity': ok({ result: {} }),
  '/entityType': ok({ schema: { type: 'object', required: ['name', 'attr_defs'] } }),
  '/clients/add': ok(CLIENT.properties),
  '/clients/list': ok({ results: { type: 'array', items: CLIENT } }),
  '/clients/set_features': ok(),
  '/clients/delete': ok(),
  '/clients/reset_secret': ok({ new_secret: STRING }),
  '/clients/logouts': ok({ results: { type: 'array', items: LOGOUT_DELIVERY } }),
  '/providers/add': ok({ result: PROVIDER }),
  '/providers/list': ok({ results: { type: 'array', items: PROVIDER } }),
  '/providers/remove': ok(),
  '/attributes/index': ok({ result: INDEXED_ATTRIBUTE, created: { type: 'boolean' } }),
  '/attributes/list': ok({ results: { type: 'array', items: INDEXED_ATTRIBUTE } }),
  '/attributes/unindex': ok(),
  '/settings/get': ok({ result: { type: ['string', 'null'] } }),
  '/settings/items': ok({ result: { type: 'object', additionalProperties: STRING } }),
  '/settings/keys': ok({ result: { type: 'array', items: STRING } }),
  '/settings/set': ok({ result: BOOLEAN }),
  '/settings/set_multi': ok({ result: { type: 'object', additionalProperties: BOOLEAN } }),
  '/settings/delete': ok({ result: BOOLEAN }),
  '/settings/set_default': ok({ result: BOOLEAN }),
  '/entity.activity': ok({ id: INTEGER, uuid: STRING, results: { type: 'array', items: ACTIVITY_ENTRY }, next_cursor: { type: ['string', 'null'] } }),
  '/entity.disable': ok({
    disabled: { type: 'object', required: ['since', 'until', 'reason'], properties: { since: STRING, until: { type: ['string', 'null'] }, reason: { type: ['string', 'null'] } }, additionalProperties: false },
    sessions_ended: INTEGER,
  }),
  '/entity.enable': ok({ was_disabled: BOOLEAN }),
  '/entity.export': ok({ result: { type: 'object', required: ['format', 'exported_at', 'record', 'account', 'identities', 'second_factor', 'passkeys', 'sessions', 'activity', 'history'] } }),
  '/entity.erase': ok({ erased_at: STRING, already_erased: BOOLEAN }),
  '/entity.signOut': ok({ sessions_ended: INTEGER }),
  '/entity.resetSecondFactor': ok({ removed: BOOLEAN }),
  '/audit/list': ok({ results: { type: 'array', items: AUDIT_ENTRY }, next: { type: ['string', 'null'] } }),
  '/organizations/create': ok({ id: STRING, result: ORGANIZATION }),
  '/organizations/get': ok({ result: ORGANIZATION }),
  '/organizations/list': ok(PAGE_OF(ORGANIZATION)),
  '/organizations/update': ok({ result: ORGANIZATION }),
  '/organizations/delete': ok(),
  '/organizations/members/add': ok({ roles: { type: 'array', items: STRING } }),
  '/organizations/members/list': ok(PAGE_OF(MEMBER)),
  '/organizations/members/set_roles': ok({ roles: { type: 'array', items: STRING } }),
  '/organizations/members/remove': ok(),
  '/organizations/of': ok({ results: { type: 'array', items: MEMBERSHIP } }),
  '/organizations/switch': ok(),
  '/organizations/invitations/create': ok({ id: STRING, result: INVITATION }),
  '/organizations/invitations/list': ok(PAGE_OF(INVITATION)),
  '/organizations/invitations/revoke': ok(),
  '/organizations/invitations/accept': ok({ organization_id: STRING, roles: { type: 'array', items: STRING } }),
  '/organizations/roles/define': ok({ result: ROLE }),
  '/organizations/roles/list': ok({ results: { type: 'array', items: ROLE } }),
  '/organizations/roles/remove': ok({ members: INTEGER }),
  '/organizations/domains/add': ok({ result: DOMAIN }),
  '/organizations/domains/verify': ok(),
  '/organizations/domains/set_joinable': ok(),
  '/organizations/domains/remove': ok(),
  '/organizations/domains/list': ok({ results: { type: 'array', items: DOMAIN } }),
  '/webhooks/add': ok({ result: { ...WEBHOOK_ENDPOINT, required: [...WEBHOOK_ENDPOINT.required, 'secret'], properties: { ...WEBHOOK_ENDPOINT_PROPERTIES, secret: STRING } } }),
  '/webhooks/list': ok({ results: { type: 'array', items: WEBHOOK_ENDPOINT } }),
  '/webhooks/remove': ok(),
  '/webhooks/rotate_secret': ok({ secret: STRING, previous_valid_until: STRING }),
  '/webhooks/test': ok({ message_id: STRING }),
  '/webhooks/deliveries': ok({ results: { type: 'array', items: WEBHOOK_DELIVERY } }),
  '/webhooks/disable': ok(),
  '/webhooks/enable': ok(),
  '/webhooks/redeliver': ok({ queued: INTEGER }),
  '/organizations/connections/add': ok({ id: STRING, start_url: STRING, metadata_url: STRING, redirect_uri: STRING, result: CONNECTION }, ['metadata_url', 'redirect_uri']),
  '/organizations/connections/list': ok({ results: { type: 'array', items: CONNECTION } }),
  '/organizations/connections/update': ok({ result: CONNECTION }),
  '/organizations/connections/remove': ok(),
  '/organizations/scim/tokens/create': ok({ token: STRING, scim_url: STRING, result: SCIM_TOKEN }),
  '/organizations/scim/tokens/list': ok({ scim_url: STRING, results: { type: 'array', items: SCIM_TOKEN } }),
  '/organizations/scim/tokens/revoke': ok(),
  '/organizations/scim/configure': ok({ organization_id: STRING, group_roles: GROUP_ROLES }),
  '/organizations/scim/settings': ok({ organization_id: STRING, scim_url: STRING, group_roles: GROUP_ROLES }),
  '/saml/service_providers/add': ok({ result: SERVICE_PROVIDER, id: STRING, entity_id: STRING }),
  '/saml/service_providers/list': ok({ results: { type: 'array', items: SERVICE_PROVIDER } }),
  '/saml/service_providers/update': ok({ result: SERVICE_PROVIDER }),
  '/saml/service_providers/remove': ok(),
  '/apis/add': ok({ result: API, id: STRING }),
  '/apis/list': ok({ results: { type: 'array', items: API } }),
  '/apis/update': ok({ result: API }),
  '/apis/grant': ok({ result: API }),
  '/apis/remove': ok(),
  '/roles/define': ok({ result: APP_ROLE }),
  '/roles/list': ok(APP_ROLES),
  '/roles/remove': ok({ held: INTEGER }),
  '/roles/assign': ok(APP_ROLES),
  '/roles/unassign': ok(APP_ROLES),
  '/roles/of': ok(APP_ROLES),
};

const ERROR_BODY = { $ref: '#/components/schemas/ErrorBody' };
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ERROR_BODY } } });

/** Security requirements of a route: any one of its client schemes (none when it accepts no credentials). */
function security(route: Route): Record<string, string[]>[] {
  const out: Record<string, string[]>[] = [];
  if (route.auth.includes('basic')) out.push({ basic: [] });
  if (route.auth.includes('signature')) out.push({ signature: [] });
  if (route.auth.includes('access_token')) out.push({ oauth: [] });
  // client_id + client_secret, client_id alone, or nothing: parameters, not a header scheme
  if (route.auth.some((a) => a === 'client_params' || a === 'client_id' || a === 'none')) out.push({});
  return out;
}

/** A route of the table as an OpenAPI path item: an operation per method, its parameters from the route's declaration. */
function pathItem(route: Route): Record<string, unknown> {
  // (a route added outside the table, as tests do, is described by its path alone)
  const doc = route.doc ?? { summary: route.path, params: [] };
  const fields = [...doc.params, ...(route.auth.includes('client_params') ? ['client_id', 'client_secret'] : [])]
    .map((p) => ({ name: p.replace(/!$/, ''), required: p.endsWith('!') }))
    .filter((f, i, all) => all.findIndex((g) => g.name === f.name) === i);
  const kinds = route.kinds.length > 0 ? ` Client kinds: ${route.kinds.join(', ')}.` : '';
  const description = `${doc.summary}. Authentication: ${route.auth.join(', ')}.${kinds}`
    + (route.params === 'body' ? ' Parameters in the urlencoded body only.' : '')
    + (route.reads ? ' Read-only: a signed request may be repeated.' : '')
    + (route.kinds.includes('login_client')
      ? ' The form\'s fields are body parameters too: each flow version lists its forms and their fields at GET /widget_data/flows/{app}/{flow}/{version}/{locale}.json.'
      : '');
  const responses = {
    200: {
      description: 'stat "ok" with the answer, or stat "error" with the spec\'s error body (the original answered errors with HTTP 200)',
      content: { 'application/json': { schema: { oneOf: [ANSWERS[route.path] ?? { $ref: '#/components/schemas/OkBody' }, ERROR_BODY] } } },
    },
    ...(route.errors === 'oauth' && { 400: errorResponse('an /oauth/token error'), 401: errorResponse('bad client credentials') }),
    404: errorResponse('unknown endpoint'),
    405: errorResponse('a method the endpoint does not take'),
    413: errorResponse('the body is too large'),
    415: errorResponse('the body is not application/x-www-form-urlencoded'),
    500: errorResponse('an unexpected failure'),
    503: errorResponse('the database is unavailable, or too many password hashes are waiting; retry after Retry-After'),
  };
  const operation = (method: 'get' | 'post') => ({
    operationId: `${method}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: doc.summary,
    description,
    security: security(route),
    ...(method === 'get'
      ? { parameters: fields.map((f) => ({ name: f.name, in: 'query', required: f.required, schema: { type: 'string' } })) }
      : {
        requestBody: {
          required: fields.some((f) => f.required),
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                properties: Object.fromEntries(fields.map((f) => [f.name, { type: 'string' }])),
                ...(fields.some((f) => f.required) && { required: fields.filter((f) => f.required).map((f) => f.name) }),
                // the flow endpoints also take the fields of their form (see the flow document)
                additionalProperties: route.kinds.includes('login_client') ? { type: 'string' } : false,
              },
            },
          },
        },
      }),
    responses,
  });
  return Object.fromEntries(route.methods.map((m) => [m.toLowerCase(), operation(m.toLowerCase() as 'get' | 'post')]));
}

/**
 * The two API endpoints outside the route table: the social login application's profile lookup
 * and the mobile SDKs' flow download (each answers in its original shape).
 */
const OUTSIDE_TABLE: Record<string, unknown> = {
  '/api/v2/auth_info': {
    post: {
      operationId: 'postApiV2AuthInfo', summary: 'The profile behind a social login token (the original social login product\'s shape)',
      description: 'For apps that redeem tokens themselves, with the application\'s social_api_key. Answers {stat: "ok", profile} or {stat: "fail", err: {code, msg}}; '
        + 'wrong keys draw on the address\'s budget of failed sign-ins (HTTP 429 past it).',
      security: [{}],
      requestBody: {
        required: true,
        content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['apiKey', 'token'], properties: { apiKey: { type: 'string' }, token: { type: 'string' } }, additionalProperties: false } } },
      },
      responses: { 200: { description: 'the profile, or stat "fail" with err.code and err.msg', content: { 'application/json': { schema: { type: 'object', required: ['stat'] } } } }, 429: { description: 'too many failed attempts from this address; Retry-After' } },
    },
  },
  '/widget_data/flows/{app}/{flow}/{version}/{locale}.json': {
    get: {
      operationId: 'getWidgetDataFlow', summary: 'A flow version in the original widget format (the mobile SDKs\' flow download)',
      description: 'A numbered version never changes and is cached for a year (with an ETag); HEAD names the newest version.',
      security: [{}],
      parameters: ['app', 'flow', 'version', 'locale'].map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      responses: { 200: { description: 'the flow document', content: { 'application/json': { schema: { type: 'object' } } } }, 404: errorResponse('no such application, flow, version or locale') },
    },
  },
};

/** An OAuth 2.0 error (RFC 6749 5.2), as the OpenID provider's endpoints answer one. */
const OAUTH_ERROR = {
  description: 'an OAuth error: invalid_request, invalid_client (401), invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope',
  content: { 'application/json': { schema: { type: 'object', required: ['error'], properties: { error: { type: 'string' }, error_description: { type: 'string' } } } } },
};
const form = (properties: Record<string, string>, required: string[] = []) => ({
  required: true,
  content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required, properties: Object.fromEntries(Object.entries(properties).map(([k, d]) => [k, { type: 'string', description: d }])) } } },
});
const json = (description: string, schema: Record<string, unknown> = { type: 'object' }) => ({ description, content: { 'application/json': { schema } } });
/** How an OpenID client authenticates at the token, introspection and revocation endpoints (its login client's token_endpoint_auth_method). */
const CLIENT_AUTH = [{ basic: [] }, { clientSecretPost: [] }, { privateKeyJwt: [] }, {}];
const TAG = ['OpenID Connect'];

/** The OpenID provider of each application (docs/openid-connect.md): standard endpoints, described for tools; the provider's discovery document is their authority. */
const OPENID_PATHS: Record<string, unknown> = {
  '/.well-known/openid-configuration': {
    get: { operationId: 'getOpenIdConfiguration', tags: TAG, summary: 'The OpenID provider\'s discovery document (OpenID Connect Discovery 1.0)', security: [{}], responses: { 200: json('issuer, endpoints, scopes, claims, algorithms'), 404: { description: 'the application\'s setting openid_provider is off' } } },
  },
  [OIDC_ROUTES.authorization]: {
    get: {
      operationId: 'getOidcAuthorization', tags: TAG, summary: 'Authorization endpoint: the code flow through the hosted sign-in (PKCE S256; required of public clients)', security: [{}],
      parameters: ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'prompt', 'max_age', 'login_hint', 'ui_locales', 'acr_values']
        .map((name) => ({ name, in: 'query', required: ['client_id', 'response_type', 'scope'].includes(name), schema: { type: 'string' } })),
      responses: {
        303: { description: 'to the hosted sign-in, or back to the redirect_uri with code, state and iss (or error and state)' },
        400: { description: 'an HTML page in the application\'s look: an unknown client or a redirect_uri that is not the client\'s (never redirected to)' },
      },
    },
  },
  [OIDC_ROUTES.token]: {
    post: {
      operationId: 'postOidcToken', tags: TAG, summary: 'Token endpoint: authorization_code, refresh_token (rotating; a reuse revokes the grant), client_credentials, the device code', security: CLIENT_AUTH,
      requestBody: form({ grant_type: 'authorization_code, refresh_token, client_credentials or urn:ietf:params:oauth:grant-type:device_code', device_code: 'the device code (the device grant)', code: 'the authorization code', redirect_uri: 'as in the authorization request', code_verifier: 'the PKCE verifier', refresh_token: 'the refresh token', scope: 'the scopes asked', client_id: 'with client_secret_post, private_key_jwt or none', client_secret: 'with client_secret_post', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: 'the private_key_jwt assertion' }, ['grant_type']),
      responses: {
        200: json('the tokens', { type: 'object', required: ['access_token', 'token_type', 'expires_in'], properties: { access_token: { type: 'string' }, token_type: { const: 'Bearer' }, expires_in: { type: 'integer' }, refresh_token: { type: 'string' }, id_token: { type: 'string' }, scope: { type: 'string' } } }),
        400: OAUTH_ERROR, 401: OAUTH_ERROR,
      },
    },
  },
  [OIDC_ROUTES.userinfo]: {
    get: { operationId: 'getOidcUserinfo', tags: TAG, summary: 'UserInfo: the claims of the access token\'s scopes', security: [{ bearer: [] }], responses: { 200: json('sub and the claims of the granted scopes'), 401: { description: 'invalid_token (WWW-Authenticate)' } } },
  },
  [OIDC_ROUTES.jwks]: {
    get: { operationId: 'getOidcJwks', tags: TAG, summary: 'The application\'s signing keys: current, next and recently retired, public parts only', security: [{}], responses: { 200: json('a JWK set', { type: 'object', required: ['keys'], properties: { keys: { type: 'array' } } }) } },
  },
  [OIDC_ROUTES.end_session]: {
    get: {
      operationId: 'getOidcEndSession', tags: TAG, summary: 'RP-initiated logout: asks the person, ends the provider\'s and the account page\'s session, back to a post_logout_redirect_uri of the client', security: [{}],
      parameters: ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id', 'ui_locales'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })),
      responses: { 200: { description: 'the question, an HTML page' }, 400: { description: 'an HTML page: an ID token hint that is not this provider\'s, a post_logout_redirect_uri that is not the client\'s' } },
    },
  },
  [OIDC_ROUTES.introspection]: {
    post: {
      operationId: 'postOidcIntrospection', tags: TAG, summary: 'Token introspection (RFC 7662): a client\'s own tokens only', security: CLIENT_AUTH,
      requestBody: form({ token: 'the token', token_type_hint: 'access_token or refresh_token' }, ['token']),
      responses: { 200: json('active, and for an active token client_id, sub, scope, exp, iat…', { type: 'object', required: ['active'], properties: { active: { type: 'boolean' } } }), 401: OAUTH_ERROR },
    },
  },
  [OIDC_ROUTES.device_authorization]: {
    post: {
      operationId: 'postOidcDeviceAuthorization', tags: TAG, summary: 'Device authorization (RFC 8628): a device code to poll with, and the user code the person types on /oidc/device', security: CLIENT_AUTH,
      requestBody: form({ client_id: 'a login client with the device grant', scope: 'the scopes asked' }, ['client_id']),
      responses: {
        200: json('the codes', {
          type: 'object', required: ['device_code', 'user_code', 'verification_uri', 'expires_in'],
          properties: { device_code: { type: 'string' }, user_code: { type: 'string' }, verification_uri: { type: 'string' }, verification_uri_complete: { type: 'string' }, expires_in: { type: 'integer' }, interval: { type: 'integer' } },
        }),
        400: OAUTH_ERROR, 401: OAUTH_ERROR,
      },
    },
  },
  [OIDC_ROUTES.code_verification]: {
    get: { operationId: 'getOidcDevice', tags: TAG, summary: 'The page where a person types a device\'s user code (HTML)', security: [{}], responses: { 200: { description: 'an HTML page' } } },
    post: {
      operationId: 'postOidcDevice', tags: TAG, summary: 'The page\'s form: the user code, then the confirmation; each code typed counts against the address\'s and the application\'s budgets', security: [{}],
      requestBody: form({ xsrf: 'the page\'s token', user_code: 'the code the device shows (any case, with or without its dash)', confirm: 'yes: sign the device in', abort: 'yes: refuse it' }, ['xsrf']),
      responses: { 200: { description: 'the confirmation, or the sign-in; an HTML page' }, 400: { description: 'an unknown, expired or used code: the page again' }, 429: { description: 'too many codes typed from this address or in the application' } },
    },
  },
  [OIDC_ROUTES.revocation]: {
    post: {
      operationId: 'postOidcRevocation', tags: TAG, summary: 'Token revocation (RFC 7009): a client\'s own tokens only', security: CLIENT_AUTH,
      requestBody: form({ token: 'the token', token_type_hint: 'access_token or refresh_token' }, ['token']),
      responses: { 200: { description: 'revoked (or unknown: the same answer)' }, 401: OAUTH_ERROR },
    },
  },
};

const COMPONENTS = {
  securitySchemes: {
    basic: { type: 'http', scheme: 'basic', description: 'client_id and client_secret' },
    signature: {
      type: 'apiKey', in: 'header', name: 'Authorization',
      description: 'Signature client_id:base64(HMAC-SHA1(client_secret, path + "\\n" + Date + "\\n" + sorted "key=value\\n" lines)), with a Date header (YYYY-MM-DD HH:MM:SS, UTC)',
    },
    oauth: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'OAuth ACCESS_TOKEN (or an access_token parameter)' },
    bearer: { type: 'http', scheme: 'bearer', description: 'an access token of the OpenID provider' },
    clientSecretPost: { type: 'apiKey', in: 'query', name: 'client_secret', description: 'client_id and client_secret in the form body (token_endpoint_auth_method client_secret_post)' },
    privateKeyJwt: { type: 'apiKey', in: 'query', name: 'client_assertion', description: 'a JWT the client signed with its own key, in the form body (token_endpoint_auth_method private_key_jwt)' },
  },
  schemas: {
    OkBody: { type: 'object', required: ['stat'], properties: { stat: { const: 'ok' } }, additionalProperties: true },
    Record: {
      type: 'object',
      description: 'A user record: these members, the application\'s own attributes, and profiles (its linked identities)',
      required: ['id', 'uuid', 'created', 'lastUpdated'],
      properties: {
        id: INTEGER, uuid: STRING, created: STRING, lastUpdated: STRING, email: { type: ['string', 'null'] }, emailVerified: { type: ['string', 'null'] },
        lastLogin: { type: ['string', 'null'] }, profiles: { type: 'array', items: { type: 'object' } },
      },
      additionalProperties: true,
    },
    ErrorBody: {
      type: 'object',
      required: ['stat', 'code', 'error', 'error_description', 'request_id'],
      properties: {
        stat: { const: 'error' },
        code: { type: 'integer' },
        error: { type: 'string' },
        sub_error: { type: 'string' },
        error_description: { type: 'string' },
        request_id: { type: 'string' },
        argument_name: { type: 'string' },
        invalid_fields: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
        message: { type: 'string' },
        // second_factor_required (214): the sign-in waits for its second factor (docs/second-factor.md)
        mfa_token: { type: 'string' },
        // second_factor_enrollment_required (215): a token to add a second factor with
        enroll_token: { type: 'string' },
        methods: { type: 'array', items: { enum: ['totp', 'recovery_code', 'passkey'] } },
        expires_in: { type: 'integer' },
      },
      additionalProperties: true,
    },
  },
};

/** The OpenAPI 3.1 document of the routes. */
export function openApiDocument(routes: readonly Route[], version: string): Record<string, unknown> {
  const paths: Record<string, unknown> = Object.fromEntries(routes.map((route) => [route.path, pathItem(route)]));
  Object.assign(paths, OUTSIDE_TABLE, OPENID_PATHS);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse', version,
      description: 'The Registration and Authentication API as Gatehouse serves it. Every parameter is a string in a form field; JSON-valued ones hold JSON text.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/' }],
    paths,
    components: COMPONENTS,
  };
}
