import { isDisabled } from '../../domain/storage/records';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { credentialOf, provePasskey, spendAssertionChallenge } from '../factors/passkey-ceremony';
import type { LoginCall, SignInOutcome } from './call';
import { accountDisabled, signedIn } from './signed-in';

/** A sign-in with a passkey: the challenge begun (beginPasskeySignIn), the browser's credential, a mobile SDK's refresh secret. */
export interface PasskeySignInCommand { challengeToken: string; credential: unknown; refreshSecret?: string }

/**
 * Signs in with a passkey (docs/passkeys.md), a first credential like a password: the challenge
 * is this client's and spent, the assertion proven (provePasskey). A passkey that verified the
 * person (PIN, biometric) is two factors and owes no other, whatever the application's
 * `second_factor`; one that did not is the first factor of an account, which then owes its second
 * like a password does. Answers exactly what a password sign-in answers.
 */
export async function passkeySignIn(
  ctx: LoginCall<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, command: PasskeySignInCommand,
): Promise<SignInOutcome> {
  const { request } = ctx;
  const credential = credentialOf<AuthenticationResponseJSON>(command.credential, 'sign_in');
  await spendAssertionChallenge(ctx, credential, command.challengeToken, 'sign_in', request.client);
  const { record, factor } = await provePasskey(ctx, command.challengeToken, credential, request.flow.locale);
  if (isDisabled(record, ctx.services.clock.now())) throw accountDisabled(ctx, request);
  return signedIn(ctx, request, record, {
    factors: [factor], refreshSecret: command.refreshSecret, ...(factor === 'verified_passkey' && { secondFactorsOwed: [] }),
  });
}
