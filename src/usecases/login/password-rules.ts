import type { NewPasswordRules } from '../../domain/flow-forms';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';
import { textsOf } from '../../texts';
import { secondFactorsOf } from '../factors/second-factors-of';

import { lengthSetting } from '../../domain/password-minimum';


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
