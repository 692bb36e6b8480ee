import type { NewPasswordRules } from '../../domain/flow-forms';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';
import { textsOf } from '../../texts';

/** The longest minimum an application may ask for: NIST asks that at least 64 characters be allowed. */
export const MAX_MIN_LENGTH = 64;
/** The shortest a minimum may be lowered to, for an account with a second factor (NIST SP 800-63B-4: 8 when a password is not the only factor). */
export const LOWEST_MIN_LENGTH = 8;

const lengthSetting = (value: string | undefined): number | undefined => (value !== undefined && /^\d{1,2}$/.test(value) ? Number(value) : undefined);

/**
 * The rules of a new password of application `app` in `locale` (docs/passwords.md), for account
 * `entityId` when it exists: never a commonly used password; at least `password_min_length`
 * characters when the application raises the flow's minimum; at least
 * `password_min_length_second_factor` for an account that signs in with a second factor too (an
 * authenticator app or a passkey), when the application lowers it for them.
 */
export async function newPasswordRules(db: Services['db'], app: Application, locale: string, entityId?: number): Promise<NewPasswordRules> {
  const texts = textsOf('api', locale);
  const raised = lengthSetting(app.settings['password_min_length']);
  const lowered = lengthSetting(app.settings['password_min_length_second_factor']);
  let minLength = raised;
  if (lowered !== undefined && entityId !== undefined) {
    const [totp, passkeys] = await Promise.all([db.factors.totp(app.id, entityId), db.passkeys.list(app.id, entityId)]);
    if (totp?.confirmedAt || passkeys.length > 0) minLength = lowered;
  }
  return { ...(minLength !== undefined && { minLength }), tooShort: (n) => texts.passwordTooShort.replace('{n}', String(n)), common: texts.commonPassword };
}
