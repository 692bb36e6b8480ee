import type { Client } from '../../domain/clients';
import { displayName, withParameter, type MailRequest } from '../../domain/mail';
import { randomToken } from '../../domain/secrets';
import type { UserRecord } from '../../domain/storage/records';
import { wholeSeconds, type Issue } from '../../domain/tokens';
import type { CallContext } from '../services';
import type { FlowRequest } from './call';

/** A whole number of seconds from a client setting, else the application default, else `fallback`. */
export const settingSeconds = (ctx: CallContext<never>, client: Client, key: string, fallback: number) =>
  wholeSeconds(client.settings[key] ?? ctx.app.settings[key], fallback);

/**
 * A verification code for the record's email and the email carrying it (verify-email or welcome).
 * The caller stores `credential` in the transaction whose event carries `mail` (registration stores
 * it in the same INSERT as the new record's tokens).
 */
export function verificationMail(
  ctx: CallContext<'baseUrls'>,
  request: FlowRequest,
  record: UserRecord,
  verifyUrl: string,
  template: 'verify-email' | 'welcome',
) {
  const lifetime = settingSeconds(ctx, request.client, 'verification_lifetime', 604_800);
  const code = randomToken(20);
  const credential: { issue: Issue; value: string } = {
    issue: {
      kind: 'verification_code', app: ctx.app, entityId: record.id, client: request.client,
      extra: { attribute_name: 'emailVerified' }, seconds: lifetime,
    },
    value: code,
  };
  const mail: MailRequest = {
    app: ctx.app, template, locale: request.flow.locale, to: record.email!, name: displayName(record),
    link: withParameter(ctx.services.baseUrls.rebase(verifyUrl, ctx.app.name), 'verification_code', code), expiresIn: lifetime,
  };
  return { credential, mail };
}
