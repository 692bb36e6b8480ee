import type { Route } from './routes';

/**
 * What the route table does not say about each endpoint: a summary and its parameters (`!` marks
 * a required one). The OpenAPI document is generated from the table (paths, methods, where
 * parameters are read, authentication schemes, client kinds, error bodies) and these.
 */
const RECORD = ['uuid', 'id', 'key_attribute', 'key_value'];
/** The flow endpoints' shared parameters (docs/api.md#flows); the form's own fields come from the flow. */
const FLOW = ['client_id!', 'locale!', 'flow', 'flow_version', 'redirect_uri', 'response_type', 'form'];
/** The flow endpoints that require redirect_uri: a code is bound to it, or an email links to it (password_recover_url). */
const FLOW_REDIRECT = FLOW.map((p) => (p === 'redirect_uri' ? 'redirect_uri!' : p));
const SOCIAL = [...FLOW, 'token!', 'merge_token', 'refresh_secret'];

export const ENDPOINT_DOCS: Record<string, { summary: string; params: readonly string[] }> = {
  '/access/getAccessToken': { summary: 'An access token for a record', params: ['type_name!', ...RECORD, 'for_client_id'] },
  '/access/getAuthorizationCode': { summary: 'An authorization code for a record', params: ['type_name!', ...RECORD, 'redirect_uri!', 'transaction_state', 'lifetime', 'for_client_id'] },
  '/access/getCreationToken': { summary: 'A one-time token that lets a client without a secret create one record', params: ['type_name', 'lifetime', 'for_client_id'] },
  '/access/getVerificationCode': { summary: 'A one-time code that sets a time attribute (emailVerified) when used', params: ['type_name!', ...RECORD, 'attribute_name!', 'lifetime'] },
  '/access/useVerificationCode': { summary: 'Uses a verification code', params: ['verification_code!'] },
  '/oauth/token': { summary: 'Exchanges an authorization code, or rotates a refresh token', params: ['grant_type!', 'code', 'redirect_uri', 'refresh_token'] },
  '/oauth/register_native_traditional': { summary: 'Registers with the flow\'s registrationForm, and signs in', params: [...FLOW, 'refresh_secret'] },
  '/oauth/auth_native_traditional': { summary: 'Signs in with the flow\'s signInForm (or user and password)', params: [...FLOW, 'merge_token', 'refresh_secret', 'user', 'password'] },
  '/oauth/update_profile_native': { summary: 'Edits the record of an access token, or sets its password', params: [...FLOW, 'access_token!'] },
  '/oauth/refresh_access_token': { summary: 'Renews a mobile SDK\'s access token with its refresh secret', params: ['client_id!', 'locale!', 'flow', 'flow_version', 'access_token!', 'date!', 'signature!'] },
  '/oauth/auth_native': { summary: 'Completes a social sign-in with a social login token', params: [...FLOW_REDIRECT, 'token!', 'merge_token', 'refresh_secret', 'thin_registration', 'registration_form'] },
  '/oauth/register_native': { summary: 'Registers the identity behind a social login token', params: SOCIAL },
  '/oauth/link_account_native': { summary: 'Links a social identity to the record of an access token', params: ['client_id!', 'locale!', 'flow', 'flow_version', 'access_token!', 'token!'] },
  '/oauth/unlink_account_native': { summary: 'Unlinks a social identity from the record of an access token', params: ['client_id!', 'locale!', 'flow', 'flow_version', 'access_token!', 'identifier_to_remove!'] },
  '/oauth/forgot_password_native': { summary: 'Mails a one-time code for a new password (redirect_uri must equal the client\'s password_recover_url)', params: FLOW_REDIRECT },
  '/oauth/verify_email_native': { summary: 'Mails a verification code', params: FLOW_REDIRECT },
  '/entity.create': { summary: 'Creates a record', params: ['type_name!', 'attributes!', 'creation_token'] },
  '/entity': { summary: 'One record, whole or in part', params: ['type_name', ...RECORD, 'attributes', 'attribute_name', 'access_token'] },
  '/entity.find': { summary: 'Records matching a filter, one page', params: ['type_name', 'filter', 'max_results', 'first_result', 'sort_on', 'attributes', 'show_total_count'] },
  '/entity.count': { summary: 'How many records match a filter', params: ['type_name', 'filter'] },
  '/entity.update': { summary: 'Merges attributes into a record, or sets one sub-value', params: ['type_name', ...RECORD, 'attributes', 'attribute_name', 'value', 'include_record', 'access_token'] },
  '/entity.replace': { summary: 'Replaces a record\'s attribute set, or one sub-value', params: ['type_name', ...RECORD, 'attributes', 'attribute_name', 'value', 'include_record'] },
  '/entity.delete': { summary: 'Deletes a record, or one sub-value', params: ['type_name', ...RECORD, 'attribute_name'] },
  '/entity.bulkCreate': { summary: 'Creates up to 1,000 records in one transaction', params: ['type_name!', 'all_attributes!'] },
  '/versions/entity': { summary: 'A record as it was at a time', params: ['type_name!', 'id', 'uuid', 'timestamp!', 'attributes', 'attribute_name'] },
  '/entityType': { summary: 'The attributes of the user entity type', params: ['type_name!'] },
  '/clients/add': { summary: 'Adds a client', params: ['description', 'features'] },
  '/clients/list': { summary: 'The application\'s clients, with their secrets', params: ['has_features'] },
  '/clients/set_features': { summary: 'Sets a client\'s features', params: ['for_client_id!', 'features!'] },
  '/clients/delete': { summary: 'Deletes a client', params: ['client_id_for_deletion!'] },
  '/clients/reset_secret': { summary: 'Gives a client a new secret', params: ['for_client_id!'] },
  '/providers/add': { summary: 'Adds an identity provider of the built-in social login', params: ['name!', 'issuer!', 'provider_client_id!', 'provider_client_secret!', 'kind', 'scopes'] },
  '/providers/list': { summary: 'The identity providers, never a secret', params: [] },
  '/providers/remove': { summary: 'Removes an identity provider', params: ['name!'] },
  '/settings/get': { summary: 'One setting (a client\'s, else the application\'s)', params: ['key!', 'for_client_id'] },
  '/settings/items': { summary: 'Every setting of a client, with the application\'s defaults', params: ['for_client_id'] },
  '/settings/keys': { summary: 'The names of a client\'s settings', params: ['for_client_id'] },
  '/settings/set': { summary: 'Sets a client setting', params: ['key!', 'value!', 'for_client_id'] },
  '/settings/set_multi': { summary: 'Sets several client settings', params: ['items!', 'for_client_id'] },
  '/settings/delete': { summary: 'Deletes a client setting', params: ['key!', 'for_client_id'] },
  '/settings/set_default': { summary: 'Sets an application-wide default setting', params: ['key!', 'value!'] },
};

const STRING = { type: 'string' };
const INTEGER = { type: 'integer' };
const BOOLEAN = { type: 'boolean' };
const RECORD_REF = { $ref: '#/components/schemas/Record' };
const CLIENT = { type: 'object', required: ['client_id', 'client_secret', 'description', 'features'], properties: { client_id: STRING, client_secret: STRING, description: STRING, features: { type: 'array', items: STRING } }, additionalProperties: false };
const PROVIDER = { type: 'object', required: ['name', 'kind', 'issuer', 'clientId', 'scopes'], properties: { name: STRING, kind: STRING, issuer: STRING, clientId: STRING, scopes: { type: 'array', items: STRING } }, additionalProperties: false };
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
  '/oauth/update_profile_native': ok(),
  '/oauth/refresh_access_token': ok({ access_token: STRING, expires_in: INTEGER }),
  '/oauth/auth_native': ok({ ...SIGNED_IN, is_new: BOOLEAN }, ['access_token', 'authorization_code']),
  '/oauth/register_native': ok({ ...SIGNED_IN, is_new: BOOLEAN }, ['access_token', 'authorization_code']),
  '/oauth/link_account_native': ok(),
  '/oauth/unlink_account_native': ok(),
  '/oauth/forgot_password_native': ok(),
  '/oauth/verify_email_native': ok(),
  '/entity.create': ok({ id: INTEGER, uuid: STRING }),
  '/entity': ok({ result: {} }),
  '/entity.find': ok({ result_count: INTEGER, results: { type: 'array', items: { type: 'object' } }, total_count: INTEGER }, ['total_count']),
  '/entity.count': ok({ total_count: INTEGER }),
  '/entity.update': ok({ result: RECORD_REF }, ['result']),
  '/entity.replace': ok({ result: RECORD_REF }, ['result']),
  '/entity.delete': ok(),
  '/entity.bulkCreate': ok({ uuid_results: { type: 'array', items: STRING }, results: { type: 'array', items: { type: 'object', required: ['id', 'uuid'], properties: { id: INTEGER, uuid: STRING }, additionalProperties: false } } }),
  '/versions/entity': ok({ result: {} }),
  '/entityType': ok({ schema: { type: 'object', required: ['name', 'attr_defs'] } }),
  '/clients/add': ok(CLIENT.properties),
  '/clients/list': ok({ results: { type: 'array', items: CLIENT } }),
  '/clients/set_features': ok(),
  '/clients/delete': ok(),
  '/clients/reset_secret': ok({ new_secret: STRING }),
  '/providers/add': ok({ result: PROVIDER }),
  '/providers/list': ok({ results: { type: 'array', items: PROVIDER } }),
  '/providers/remove': ok(),
  '/settings/get': ok({ result: { type: ['string', 'null'] } }),
  '/settings/items': ok({ result: { type: 'object', additionalProperties: STRING } }),
  '/settings/keys': ok({ result: { type: 'array', items: STRING } }),
  '/settings/set': ok({ result: BOOLEAN }),
  '/settings/set_multi': ok({ result: { type: 'object', additionalProperties: BOOLEAN } }),
  '/settings/delete': ok({ result: BOOLEAN }),
  '/settings/set_default': ok({ result: BOOLEAN }),
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

/** The OpenAPI 3.1 document of the routes. */
export function openApiDocument(routes: readonly Route[], version: string): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const route of routes) {
    // (a route added outside the table, as tests do, is described by its path alone)
    const doc = ENDPOINT_DOCS[route.path] ?? { summary: route.path, params: [] };
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
    paths[route.path] = Object.fromEntries(route.methods.map((m) => [m.toLowerCase(), operation(m.toLowerCase() as 'get' | 'post')]));
  }
  // the two API endpoints outside the route table: the social login application's profile lookup
  // and the mobile SDKs' flow download (each answers in its original shape)
  paths['/api/v2/auth_info'] = {
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
  };
  paths['/widget_data/flows/{app}/{flow}/{version}/{locale}.json'] = {
    get: {
      operationId: 'getWidgetDataFlow', summary: 'A flow version in the original widget format (the mobile SDKs\' flow download)',
      description: 'A numbered version never changes and is cached for a year (with an ETag); HEAD names the newest version.',
      security: [{}],
      parameters: ['app', 'flow', 'version', 'locale'].map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      responses: { 200: { description: 'the flow document', content: { 'application/json': { schema: { type: 'object' } } } }, 404: errorResponse('no such application, flow, version or locale') },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse', version,
      description: 'The Registration and Authentication API as Gatehouse serves it. Every parameter is a string in a form field; JSON-valued ones hold JSON text.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: 'client_id and client_secret' },
        signature: {
          type: 'apiKey', in: 'header', name: 'Authorization',
          description: 'Signature client_id:base64(HMAC-SHA1(client_secret, path + "\\n" + Date + "\\n" + sorted "key=value\\n" lines)), with a Date header (YYYY-MM-DD HH:MM:SS, UTC)',
        },
        oauth: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'OAuth ACCESS_TOKEN (or an access_token parameter)' },
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
          },
          additionalProperties: true,
        },
      },
    },
  };
}
