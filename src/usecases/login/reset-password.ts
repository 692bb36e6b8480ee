import { writeRecord } from '../records/write-record';
import type { Client } from '../../domain/clients';
import type { CompiledForm } from '../../domain/flow-forms';
import { changesFrom } from '../../domain/profile-fields';
import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import { Refusal } from '../../domain/refusal';
import type { Origin } from '../../domain/events';
import type { Services } from '../services';
import { redeemCode, settleExchange } from '../tokens/exchange-code';
import { newPasswordRules } from './password-rules';
import { isPaused } from './call';
import { linkVerifies } from './email-requests';

/** What a reset link holds: its code and stored row, the client that sent it, and that client's new-password form. */
export interface ResetLink { code: string; row: StoredCredential; client: Client; form: CompiledForm }

/** A reset's result: the form's mistakes (the code still usable), the code already spent, or the password changed. */
export type ResetOutcome = { kind: 'invalid'; invalid: Record<string, string[]> } | { kind: 'spent' } | { kind: 'changed' };

/**
 * docs/api-guide.md: Password reset and email verification. Sets the password of the account a reset code is for. The form's
 * rules first, so a mistake never spends the code; then the code is redeemed for the client that
 * sent the email, as /oauth/token would redeem it (with the redirect URI it was sent with: once,
 * under concurrency too), and in the same transaction the password is set and every session of the
 * account ends, the one the redemption made included.
 */
export async function resetPassword(
  services: Pick<Services, 'box' | 'clock' | 'db' | 'passwords' | 'tokens' | 'versions' | 'work'>,
  command: { app: Application; link: ResetLink; sent: Record<string, string>; locale: string; origin: Origin },
): Promise<ResetOutcome> {
  const { app, link, sent } = command;
  const { passwords, work } = services;
  const result = await link.form.validate(sent, { isUnique: async () => true, password: await newPasswordRules(services.db, app, command.locale, link.row.entityId ?? undefined) });
  if (Object.keys(result.invalid).length > 0) return { kind: 'invalid', invalid: result.invalid };
  const { password } = changesFrom(link.form, result.values);
  if (password === undefined) throw new Error(`${link.form.name} has no field that writes the password`);
  const hash = await passwords.hash(password);
  const entityId = link.row.entityId!;
  const acting = { actor: { kind: 'account' as const, accountId: entityId, clientId: link.client.clientId }, origin: command.origin };
  const redirectUri = link.row.redirectUri ?? '';
  // the code spent and the password set in one transaction: a reset that fails leaves the code usable
  const outcome = await work.run(async (uow) => {
    const exchange = await redeemCode(services, uow, { app, client: link.client, code: link.code, redirectUri });
    if (!('pair' in exchange)) return { exchange };
    // the person proved the mailbox: every session ends, the one the redemption made included
    // a new operator's link names the address it was mailed to: using it verifies that address
    const verified = (locked: { email: string | null; emailVerified: Date | null }) => (!locked.emailVerified && linkVerifies(link.row.extra, locked.email) ? { emailVerified: services.clock.now() } : {});
    const written = await writeRecord(services, uow, { app, entityId, role: 'proven', channel: 'reset', acting, passwordHash: hash, change: (locked) => ({ change: verified(locked) }) });
    if (!written) throw new Refusal('gone', 'the account was deleted meanwhile');
    return { exchange };
  });
  try {
    // the page's redemption never pauses (it asks for no second factor: the new password ends every session instead)
    if (isPaused(await settleExchange(services, { app, redirectUri, origin: command.origin }, outcome.exchange))) {
      throw new Error('a reset code redeemed by the page paused for a second factor');
    }
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { kind: 'spent' };
  }
  return { kind: 'changed' };
}
