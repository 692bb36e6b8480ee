import { BusyError, DependencyDownError, invalidField, LimitReachedError, Refusal, type RefusalReason } from '../../src/domain/refusal';
import { ApiError, apiErrorOf, argumentName, refusalError } from '../../src/errors';

// A use case refuses in the domain's words, naming its command's fields; the API answers with the
// spec's error, naming the endpoint's own parameter (src/errors.ts, names declared in routes.ts).

describe('argumentName', () => {
  it('is the field in snake_case, the endpoint\'s own name where it declares one, and keeps a path into a document as it is', () => {
    expect(argumentName('refreshSecret')).toBe('refresh_secret');
    expect(argumentName('token')).toBe('token');
    expect(argumentName('identifier', { identifier: 'identifier_to_remove' })).toBe('identifier_to_remove');
    expect(argumentName('attributes.emailVerified')).toBe('attributes.emailVerified');
    expect(argumentName('toString')).toBe('to_string'); // a declared name is an own entry, never a member of Object
  });
});

describe('refusalError', () => {
  const body = (e: ApiError) => ({ code: e.code, error: e.definition.error, sub_error: e.definition.subError, description: e.message, ...e.extra });

  it('answers each reason with its code of the spec', () => {
    const codes: Record<RefusalReason, number> = {
      invalid: 200, missing: 100, wrong_credentials: 210, invalid_form: 390, no_such_account: 212, nothing_to_do: 540, gone: 310,
      unknown_identity: 310, email_in_use: 380, identity_taken: 361, spent_social_token: 400, not_signed_in: 413, no_grant: 413,
      redirect_mismatch: 420, spent_refresh_token: 200, misconfigured: 500, not_offered: 403, forbidden: 403, second_factor_required: 214, second_factor_enrollment_required: 215,
    };
    for (const [reason, code] of Object.entries(codes)) {
      expect(refusalError(new Refusal(reason as RefusalReason, 'why', { field: 'someField', formField: 'f' })).code).toBe(code);
    }
  });

  it('names the field as the endpoint does, and carries the flow\'s messages, the compared values and the account found', () => {
    expect(body(refusalError(invalidField('identifier', 'no such identity'), { identifier: 'identifier_to_remove' })))
      .toEqual({ code: 200, error: 'invalid_argument', sub_error: undefined, description: 'invalid argument identifier_to_remove: no such identity', argument_name: 'identifier_to_remove' });
    expect(body(refusalError(new Refusal('missing', 'required', { formField: 'emailAddress' }))))
      .toMatchObject({ code: 100, description: 'missing required argument: emailAddress', argument_name: 'emailAddress' });
    expect(body(refusalError(new Refusal('spent_refresh_token', 'spent', { field: 'refreshToken' }))))
      .toMatchObject({ code: 200, error: 'invalid_request', sub_error: 'invalid_argument', argument_name: 'refresh_token' });
    expect(body(refusalError(new Refusal('wrong_credentials', 'no', { message: 'Disabled.', fields: { signInForm: ['Disabled.'] } }))))
      .toMatchObject({ code: 210, message: 'Disabled.', invalid_fields: { signInForm: ['Disabled.'] } });
    expect(body(refusalError(new Refusal('redirect_mismatch', 'differs', { received: 'https://a.example/', expected: null }))))
      .toMatchObject({ code: 420, received_value: 'https://a.example/', expected_value: null });
    expect(body(refusalError(new Refusal('email_in_use', 'exists', { existing: { provider: 'capture', displayName: 'Ada', photo: null, dateCreated: '2026-01-01' } }))))
      .toMatchObject({ code: 380, existing_provider: 'capture', existing_display_name: 'Ada', existing_photo: null, existing_date_created: '2026-01-01' });
    expect(body(refusalError(new Refusal('unknown_identity', 'register', { prefill: { emailAddress: 'ada@example.com' } }))))
      .toMatchObject({ code: 310, prereg_fields: { emailAddress: 'ada@example.com' } });
  });
});

describe('apiErrorOf', () => {
  it('answers a spent budget, a busy server and a dependency down with when to try again; anything else passes as it is', () => {
    expect(apiErrorOf(new LimitReachedError(30, 'sign-ins'))).toMatchObject({ code: 510, extra: { retry_after: 30 }, headers: { 'Retry-After': '30' } });
    expect(apiErrorOf(new BusyError(1))).toMatchObject({ code: 510, transportStatus: 503, headers: { 'Retry-After': '1' } });
    const down = new Error('ECONNREFUSED');
    expect(apiErrorOf(new DependencyDownError('the store of the rate limits (Redis)', down))).toMatchObject({ code: 500, transportStatus: 503, internal: down });
    const other = new Error('a bug');
    expect(apiErrorOf(other)).toBe(other);
  });
});
