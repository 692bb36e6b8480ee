import type { Application } from '../../domain/storage/applications';
import { secondFactorPolicy, type SecondFactorMethod } from '../../domain/second-factor';
import type { Services } from '../services';

/**
 * The second factors a sign-in into account `entityId` owes one of (none: it owes none). With the
 * application's setting `optional`, an account with a confirmed authenticator owes one: a code,
 * a recovery code, or one of its passkeys; with `required`, an account with passkeys owes one of
 * them too; with `off`, none.
 */
export async function secondFactorsOf(db: Services['db'], app: Application, entityId: number): Promise<SecondFactorMethod[]> {
  const policy = secondFactorPolicy(app);
  if (policy === 'off') return [];
  return secondFactorMethods(app, await db.factors.summary(app.id, entityId));
}

/** The second factors an account with `factors` owes under the application's policy. */
export function secondFactorMethods(app: Application, factors: { totp: boolean; passkeys: boolean }): SecondFactorMethod[] {
  const policy = secondFactorPolicy(app);
  if (policy === 'off') return [];
  const methods: SecondFactorMethod[] = factors.totp ? ['totp', 'recovery_code'] : [];
  if (factors.passkeys && (methods.length > 0 || policy === 'required')) methods.push('passkey');
  return methods;
}

/** Whether account `entityId` can sign in with more than a password: a confirmed authenticator app or a passkey (what a stronger sign-in, acr_values, takes). */
export async function canStepUp(db: Services['db'], app: Application, entityId: number): Promise<boolean> {
  const { totp, passkeys } = await db.factors.summary(app.id, entityId);
  return totp || passkeys;
}
