import type { NewPasswordRules } from '../../domain/flow-forms';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';
import { textsOf } from '../../texts';
import { secondFactorsOf } from '../factors/second-factors-of';

/** The longest minimum an application may ask for: NIST asks that at least 64 characters be allowed. */
export const MAX_MIN_LENGTH = 64;
/** The shortest a minimum may be lowered to, for an account with a second factor (NIST SP 800-63B-4: 8 when a password is not the only factor). */
export const LOWEST_MIN_LENGTH = 8;

const lengthSetting = (value: string | undefined): number | undefined => (value !== undefined && /^\d{1,2}$/.test(value) ? Number(value) : undefined);

/**
 * The rules of a new password of application `app` in `locale` (docs/passwords.md), for account
 * `entityId` when it exists: never a commonly used password; at least `password_min_length`
 * characters when the application raises the flow's minimum; at least
 * `password_min_length_second_factor` for an account whose sign-ins owe a second factor (an
 * authenticator app, or passkeys under `required`), when the application sets it.
 */
export async function newPasswordRules(db: Services['db'], app: Application, locale: string, entityId?: number): Promise<NewPasswordRules> {
  const texts = textsOf('api', locale);
  const raised = lengthSetting(app.settings['password_min_length']);
  const lowered = lengthSetting(app.settings['password_min_length_second_factor']);
  let minLength = raised;
  // only for an account whose sign-ins owe a second factor: its password is then never its only factor
  if (lowered !== undefined && entityId !== undefined && (await secondFactorsOf(db, app, entityId)).length > 0) minLength = lowered;
  return { ...(minLength !== undefined && { minLength }), tooShort: (n) => texts.passwordTooShort.replace('{n}', String(n)), common: texts.commonPassword };
}
