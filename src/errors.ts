import { BusyError, DependencyDownError, LimitReachedError, Refusal, type RefusalReason } from './domain/refusal';

/**
 * Every error code of docs/api.md#errors, one definition each, plus the few transport-level errors
 * Gatehouse adds (unknown endpoint, unreadable body). Handlers throw `ApiError`s made by the
 * factories below; `src/http/render-error.ts` turns them into the error body (docs/api.md#errors).
 */

export interface ErrorDefinition {
  code: number;
  error: string;
  subError?: string;
}

/** The spec's codes (part 7) and the original service's codes Gatehouse also answers. */
export const ERROR_DEFINITIONS = {
  missingArgument: { code: 100, error: 'missing_argument' },
  invalidArgument: { code: 200, error: 'invalid_argument' },
  invalidRequestArgument: { code: 200, error: 'invalid_request', subError: 'invalid_argument' },
  invalidCredentials: { code: 210, error: 'invalid_credentials' },
  /** Gatehouse's: the password (or identity) is right and the account has a second factor (docs/second-factor.md). */
  secondFactorRequired: { code: 214, error: 'second_factor_required' },
  secondFactorEnrollmentRequired: { code: 215, error: 'second_factor_enrollment_required' },
  noSuchAccount: { code: 212, error: 'no_such_account' },
  recordNotFound: { code: 310, error: 'record_not_found' },
  uniqueViolation: { code: 361, error: 'unique_violation' },
  emailAddressInUse: { code: 380, error: 'email_address_in_use' },
  invalidFormFields: { code: 390, error: 'invalid_form_fields' },
  engageError: { code: 400, error: 'engage_error' },
  invalidClient: { code: 402, error: 'invalid_client', subError: 'invalid_client_credentials' },
  invalidClientCredentials: { code: 402, error: 'invalid_client_credentials' },
  permissionError: { code: 403, error: 'permission_error' },
  unknownEndpoint: { code: 404, error: 'unknown_endpoint' },
  invalidAccessToken: { code: 413, error: 'invalid_access_token' },
  noAccessGrant: { code: 413, error: 'invalid_request', subError: 'no_access_grant' },
  redirectUriMismatch: { code: 420, error: 'invalid_request', subError: 'redirect_uri_mismatch' },
  unexpectedError: { code: 500, error: 'unexpected_error' },
  serviceUnavailable: { code: 500, error: 'unexpected_error', subError: 'service_unavailable' },
  apiLimitError: { code: 510, error: 'api_limit_error' },
  triggeredError: { code: 540, error: 'triggered_error' },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorName = keyof typeof ERROR_DEFINITIONS;

/** Extra fields of the error body (docs/api.md#errors: invalid_fields, argument_name, ...). */
export type ErrorExtra = Record<string, unknown>;

/**
 * A failure the client is meant to see. `transportStatus` is set only for errors that happen
 * before a route is known (unknown endpoint, unreadable body): they keep their HTTP meaning.
 * `internal` is logged, never serialized.
 */
export class ApiError extends Error {
  readonly definition: ErrorDefinition;
  readonly kind: ErrorName;
  readonly extra: ErrorExtra;
  readonly transportStatus?: number;
  readonly internal?: unknown;
  /** HTTP headers the answer carries (Retry-After). */
  readonly headers: Record<string, string>;

  constructor(
    name: ErrorName,
    description: string,
    options: { extra?: ErrorExtra; transportStatus?: number; internal?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(description);
    this.name = 'ApiError';
    this.kind = name;
    this.definition = ERROR_DEFINITIONS[name];
    this.extra = options.extra ?? {};
    this.transportStatus = options.transportStatus;
    this.internal = options.internal;
    this.headers = options.headers ?? {};
  }

  get code(): number {
    return this.definition.code;
  }
}

/** Factories: the only way handlers and domain code make client-visible errors. */
export const errors = {
  missingArgument: (argument: string) =>
    new ApiError('missingArgument', `missing required argument: ${argument}`, {
      extra: { argument_name: argument },
    }),
  invalidArgument: (argument: string, why: string, extra: ErrorExtra = {}) =>
    new ApiError('invalidArgument', `invalid argument ${argument}: ${why}`, {
      extra: { argument_name: argument, ...extra },
    }),
  /** A name or value no request may hold (domain/request-values.ts), refused at the edge: HTTP 400 (OpenID clients read `error`). */
  unsafeInput: (argument: string, why: string) =>
    new ApiError('invalidRequestArgument', `the parameter ${JSON.stringify(argument)} ${why}`, { transportStatus: 400, extra: { argument_name: argument } }),
  invalidClientCredentials: (why: string) => new ApiError('invalidClientCredentials', why),
  invalidClient: (why: string) => new ApiError('invalidClient', why),
  permissionError: (why: string) => new ApiError('permissionError', why),
  invalidAccessToken: () =>
    new ApiError('invalidAccessToken', 'the access token is invalid or has expired; obtain a new one'),
  unknownEndpoint: (method: string, path: string) =>
    new ApiError('unknownEndpoint', `there is no endpoint ${method} ${path}; GET /openapi.json lists every endpoint`, {
      transportStatus: 404,
    }),
  methodNotAllowed: (method: string, path: string, allowed: readonly string[]) =>
    new ApiError('invalidArgument', `${path} does not accept ${method}; use ${allowed.join(' or ')}`, {
      transportStatus: 405,
      extra: { argument_name: 'method' },
    }),
  unreadableBody: (why: string, status: number) =>
    new ApiError('invalidArgument', why, { transportStatus: status, extra: { argument_name: 'body' } }),
  unexpected: (internal: unknown) =>
    new ApiError('unexpectedError', 'an unexpected error occurred; quote the request_id when reporting it', {
      internal,
      transportStatus: 500,
    }),
  misconfigured: (why: string) => new ApiError('unexpectedError', why),
  /** A dependency (the database) cannot be reached: HTTP 503 with Retry-After, nothing was done. */
  unavailable: (what: string, internal: unknown, retryAfterSeconds = 5) =>
    new ApiError('serviceUnavailable', `${what} is unavailable at the moment, so nothing was done; try again in ${retryAfterSeconds} seconds`, {
      internal, transportStatus: 503, headers: { 'Retry-After': String(retryAfterSeconds) }, extra: { retry_after: retryAfterSeconds },
    }),
  /** A write kept losing to concurrent ones on the same rows (deadlocks, a Galera cluster's certification) after every retry: HTTP 503, nothing was done. */
  conflicted: (internal: unknown) =>
    new ApiError('serviceUnavailable', 'this change collided with others made to the same data at the same moment, and retrying did not get it through; nothing was done, try again in 1 second', {
      internal, transportStatus: 503, headers: { 'Retry-After': '1' }, extra: { retry_after: 1 },
    }),
  /** Too much work is waiting (password hashes): HTTP 503 with Retry-After, nothing was done. */
  busy: (retryAfterSeconds: number) =>
    new ApiError('apiLimitError', `the server is busy checking passwords; nothing was done, try again in ${retryAfterSeconds} second(s)`, {
      transportStatus: 503, headers: { 'Retry-After': String(retryAfterSeconds) }, extra: { retry_after: retryAfterSeconds },
    }),
  /** A budget is spent: `what` says which (`registrations from this address`). */
  apiLimit: (retryAfterSeconds: number, what = 'attempts') =>
    new ApiError('apiLimitError', `too many ${what}; try again in ${retryAfterSeconds} seconds`, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      extra: { retry_after: retryAfterSeconds },
    }),
};

// Domain errors as the API's: a use case's refusal, a spent budget, a busy server, a dependency down

/** The spec's error of each reason a use case refuses for (docs/api.md#errors). */
const ERROR_OF: Readonly<Record<RefusalReason, ErrorName>> = {
  invalid: 'invalidArgument',
  missing: 'missingArgument',
  wrong_credentials: 'invalidCredentials',
  invalid_form: 'invalidFormFields',
  no_such_account: 'noSuchAccount',
  nothing_to_do: 'triggeredError',
  gone: 'recordNotFound',
  unknown_identity: 'recordNotFound',
  email_in_use: 'emailAddressInUse',
  identity_taken: 'uniqueViolation',
  spent_social_token: 'engageError',
  not_signed_in: 'invalidAccessToken',
  no_grant: 'noAccessGrant',
  redirect_mismatch: 'redirectUriMismatch',
  spent_refresh_token: 'invalidRequestArgument',
  misconfigured: 'unexpectedError',
  not_offered: 'permissionError',
  forbidden: 'permissionError',
  second_factor_required: 'secondFactorRequired',
  second_factor_enrollment_required: 'secondFactorEnrollmentRequired',
};

/**
 * How an endpoint names the fields of its command, where they are not the field in snake_case
 * (`identifier` is `identifier_to_remove` on /oauth/unlink_account_native): declared with the
 * endpoint where it is listed (src/http/routes.ts).
 */
export type ArgumentNames = Readonly<Record<string, string>>;

/**
 * A command's field as the endpoint's parameter: its declared name, else the field in snake_case
 * (`refreshSecret` → `refresh_secret`). A path into a document keeps the document's own names
 * (`attributes.emailVerified`).
 */
export const argumentName = (field: string, names: ArgumentNames = {}): string =>
  Object.hasOwn(names, field) ? names[field] : field.replace(/^[^.]*/, (own) => own.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));

/** A refusal as the API's error: its code, and its field named as this endpoint names it. */
export function refusalError(refusal: Refusal, names: ArgumentNames = {}): ApiError {
  const { detail } = refusal;
  const argument = detail.field !== undefined ? argumentName(detail.field, names) : detail.formField;
  if (refusal.reason === 'invalid' && argument !== undefined) {
    return errors.invalidArgument(argument, refusal.message, {
      ...(detail.received !== undefined && { received_value: detail.received, expected_value: detail.expected }),
      ...(detail.message !== undefined && { message: detail.message }),
    });
  }
  if (refusal.reason === 'missing' && argument !== undefined) return errors.missingArgument(argument);
  const extra: ErrorExtra = {
    ...(argument !== undefined && { argument_name: argument }),
    ...(detail.message !== undefined && { message: detail.message }),
    ...(detail.fields !== undefined && { invalid_fields: detail.fields }),
    ...(detail.received !== undefined && { received_value: detail.received, expected_value: detail.expected }),
    ...(detail.existing !== undefined && {
      existing_provider: detail.existing.provider, existing_display_name: detail.existing.displayName, existing_photo: detail.existing.photo,
      existing_date_created: detail.existing.dateCreated,
    }),
    ...(detail.prefill !== undefined && { prereg_fields: detail.prefill }),
    ...(detail.secondFactor !== undefined && {
      [detail.secondFactor.enroll ? 'enroll_token' : 'mfa_token']: detail.secondFactor.token, methods: detail.secondFactor.methods, expires_in: detail.secondFactor.expiresIn,
    }),
  };
  return new ApiError(ERROR_OF[refusal.reason], refusal.message, { extra });
}

/**
 * Any domain error as the API's error (a refusal with this endpoint's names; a spent budget, a busy
 * server, a dependency down), or `err` itself when it is none of them.
 */
export function apiErrorOf(err: unknown, names: ArgumentNames = {}): unknown {
  if (err instanceof Refusal) return refusalError(err, names);
  if (err instanceof LimitReachedError) return errors.apiLimit(err.retryAfterSeconds, err.what);
  if (err instanceof BusyError) return errors.busy(err.retryAfterSeconds);
  if (err instanceof DependencyDownError) return errors.unavailable(err.what, err.failure);
  return err;
}
