/**
 * Why a use case refused its command, in the domain's words (docs/architecture.md#refusals). Each
 * adapter answers it in its own: the API as the spec's error body naming its own parameter
 * (src/errors.ts, with the names each endpoint declares where it is listed in src/http/routes.ts), a hosted page
 * on its form, the command line as a message naming its option.
 */
export type RefusalReason =
  /** A field of the command has a value the operation cannot use (`field` names it). */
  | 'invalid'
  /** A field the form requires was not sent at all (`formField` names it). */
  | 'missing'
  /** The password, the current password or the account is not right (with the flow's messages). */
  | 'wrong_credentials'
  /** Fields of a form are not valid: `fields` has the flow's messages by field. */
  | 'invalid_form'
  /** No account has this address (a reset asked for one). */
  | 'no_such_account'
  /** There is nothing to do (the address is verified already, the account has no password to reset). */
  | 'nothing_to_do'
  /** What the command acts on is gone (the account was deleted meanwhile). */
  | 'gone'
  /** No account has this social identity yet: it registers first (`prefill` has the provider's values). */
  | 'unknown_identity'
  /** An account has this email address: sign in to it to link the identity (`existing` says how it signs in). */
  | 'email_in_use'
  /** The social identity is linked to an account already. */
  | 'identity_taken'
  /** The social login token is invalid, expired or spent. */
  | 'spent_social_token'
  /** The access token is not live, or not this client's. */
  | 'not_signed_in'
  /** The authorization code gives nothing (invalid, expired, spent, another client's, a disabled user). */
  | 'no_grant'
  /** The redirect URI differs from the one the code was obtained with (`received`, `expected`). */
  | 'redirect_mismatch'
  /** The refresh token is invalid, expired or spent (`field` names it). */
  | 'spent_refresh_token'
  /** The application or its flows are set up so that this cannot work; an operator must fix it. */
  | 'misconfigured'
  /** The application does not offer this (its settings turned it off). */
  | 'not_offered'
  /** Who acts may not do this (a member without the role it takes). */
  | 'forbidden'
  /**
   * The first credential is right and the account signs in with a second factor too: the sign-in
   * waits for it (`secondFactor` says with what, and the token that finishes it).
   */
  | 'second_factor_required'
  /**
   * The first credential is right, and the application requires a second factor this account has
   * not added yet: the sign-in issues nothing but a token to add one with (`secondFactor`).
   */
  | 'second_factor_enrollment_required';

/** How an account that already has an email address signs in, for someone told to sign in to it. */
export interface ExistingAccount {
  /** `capture` for a password, else the provider of its first identity. */
  provider: string;
  displayName: string;
  photo: { id: number; value: unknown; type: 'other' } | null;
  /** When the account was made, as the API writes timestamps. */
  dateCreated: string;
}

export interface RefusalDetail {
  /** The command's field at fault (`refreshSecret`, `attributes.email`): the adapter names it its own way. */
  field?: string;
  /** A form field at fault, by the flow's name for it (the same on every adapter). */
  formField?: string;
  /** The flow's messages by form field (a form's own name for what concerns the whole form). */
  fields?: Readonly<Record<string, readonly string[]>>;
  /** A message for the person, in the flow's language. */
  message?: string;
  /** What was sent and what was expected, when a person can compare them (redirect URIs). */
  received?: string;
  expected?: string | null;
  existing?: ExistingAccount;
  /** The values a provider gave for the registration form's fields. */
  prefill?: Readonly<Record<string, string | null>>;
  /** A sign-in waiting for its second factor: the token that finishes it, and the methods that may. */
  secondFactor?: { token: string; methods: readonly string[]; expiresIn: number; enroll?: boolean };
}

export class Refusal extends Error {
  constructor(readonly reason: RefusalReason, description: string, readonly detail: RefusalDetail = {}) {
    super(description);
    this.name = 'Refusal';
  }
}

/** A field of the command with a value that cannot be used: `invalid`, naming it. */
export const invalidField = (field: string, why: string, detail: Omit<RefusalDetail, 'field'> = {}) =>
  new Refusal('invalid', why, { ...detail, field });

/**
 * A budget of attempts is spent (`what`: `registrations from this address`); nothing was done.
 * Every adapter says when to try again.
 */
export class LimitReachedError extends Error {
  constructor(readonly retryAfterSeconds: number, readonly what = 'attempts') {
    super(`too many ${what}; try again in ${retryAfterSeconds} seconds`);
    this.name = 'LimitReachedError';
  }
}

/** Too much work is waiting (password hashes); nothing was done, try again in a moment. */
export class BusyError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super(`the server is busy checking passwords; nothing was done, try again in ${retryAfterSeconds} second(s)`);
    this.name = 'BusyError';
  }
}

/** A dependency (`what`: the store of the rate limits) cannot be reached; nothing was done. */
export class DependencyDownError extends Error {
  constructor(readonly what: string, readonly failure: unknown) {
    super(`${what} is unavailable at the moment`);
    this.name = 'DependencyDownError';
  }
}

/** The access token is not live, or not this client's. */
export const notSignedIn = (why = 'the access token is invalid or has expired; obtain a new one') => new Refusal('not_signed_in', why);
