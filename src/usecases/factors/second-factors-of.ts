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
  const [totp, passkeys] = await Promise.all([db.factors.totp(app.id, entityId), db.passkeys.list(app.id, entityId)]);
  const methods: SecondFactorMethod[] = totp?.confirmedAt ? ['totp', 'recovery_code'] : [];
  if (passkeys.length > 0 && (methods.length > 0 || policy === 'required')) methods.push('passkey');
  return methods;
}

/** Whether account `entityId` can sign in with more than a password: a confirmed authenticator app or a passkey (what a stronger sign-in, acr_values, takes). */
export async function canStepUp(db: Services['db'], app: Application, entityId: number): Promise<boolean> {
  const [totp, passkeys] = await Promise.all([db.factors.totp(app.id, entityId), db.passkeys.list(app.id, entityId)]);
  return Boolean(totp?.confirmedAt) || passkeys.length > 0;
}
