import { errors } from '../errors';
import { sha256Hex } from '../domain/secrets';
import { MAX_CREDENTIAL_JSON } from '../domain/passkeys';
import type { StoredCredential } from '../domain/storage/credentials';
import type { CallContext } from '../usecases/services';
import type { RequestContext } from './context';

/** What the endpoints of an account's factors (second factor, passkeys) read from a request. */

/** The call of a use case from this request: the application, where it came from, the services. */
export const callOf = (ctx: RequestContext): CallContext => ({ origin: ctx.origin, app: ctx.app, clientAddress: ctx.clientAddress, services: ctx.services });

/** The access token the request authenticated with (these endpoints take nothing else). */
export function tokenOf(ctx: RequestContext): StoredCredential {
  if (ctx.principal.kind !== 'entity') throw errors.missingArgument('access_token');
  return ctx.principal.token;
}

/**
 * The token an enrollment endpoint acts with: the request's access token, or the `enroll_token` of
 * a sign-in sent to add a second factor first (second_factor_enrollment_required), which nothing
 * else accepts.
 */
export async function enrollingTokenOf(ctx: RequestContext): Promise<StoredCredential> {
  if (ctx.principal.kind === 'entity') return ctx.principal.token;
  const value = ctx.params.get('enroll_token');
  if (value === undefined) throw errors.missingArgument('access_token');
  const row = value.length <= 128 ? await ctx.services.db.credentials.findActive(ctx.app.id, 'enroll_token', sha256Hex(value), ctx.services.clock.now()) : undefined;
  if (!row || row.entityId === null) throw errors.invalidArgument('enroll_token', 'is invalid or expired (a sign-in gives 5 minutes to add a second factor); sign in again');
  // a browser app names itself: the sign-in that gave the token must be its own
  if (ctx.principal.kind === 'client' && row.clientId !== null && row.clientId !== ctx.principal.client.id) {
    throw errors.invalidArgument('enroll_token', `was given to a sign-in of another client than ${ctx.principal.client.clientId}; send the client_id of the app that signed in`);
  }
  // it adds one second factor: once the account has one, it signs in with it instead
  const [totp, passkeys] = await Promise.all([ctx.services.db.factors.totp(ctx.app.id, row.entityId), ctx.services.db.passkeys.list(ctx.app.id, row.entityId)]);
  if (totp?.confirmedAt || passkeys.length > 0) throw errors.invalidArgument('enroll_token', 'is spent: the account has a second factor now; sign in with it');
  return row;
}

/** `credential`: the JSON of the browser's PublicKeyCredential (credential.toJSON()), as a parameter. */
export function credentialParam(ctx: RequestContext): unknown {
  const raw = ctx.params.require('credential');
  if (raw.length > MAX_CREDENTIAL_JSON) throw errors.invalidArgument('credential', `is longer than ${MAX_CREDENTIAL_JSON} characters`);
  try {
    return JSON.parse(raw);
  } catch {
    throw errors.invalidArgument('credential', 'is not JSON: send JSON.stringify(credential) of the PublicKeyCredential the browser answered');
  }
}
