import { signedInBody } from '../flow-request';
import { errors } from '../../errors';
import { beginPasskeyRegistration } from '../../usecases/factors/begin-passkey-registration';
import { finishPasskeyRegistration } from '../../usecases/factors/finish-passkey-registration';
import { listPasskeys, removePasskey, renamePasskey } from '../../usecases/factors/manage-passkeys';
import { beginPasskeySignIn } from '../../usecases/login/begin-passkey-sign-in';
import type { Handler, RequestContext } from '../context';
import { callOf, credentialParam, enrollingTokenOf, tokenOf } from '../account-request';

/** `passkey_id`: one of the account's passkeys, by the id passkeys_native lists. */
function passkeyIdOf(ctx: RequestContext): number {
  const raw = ctx.params.require('passkey_id');
  if (!/^[1-9]\d{0,15}$/.test(raw)) throw errors.invalidArgument('passkey_id', 'must be the id of a passkey, as passkeys_native lists it');
  return Number(raw);
}

/** /oauth/passkey_register_begin: the options of navigator.credentials.create() for the account. */
export const registerBegin: Handler = async (ctx) => ({ options: await beginPasskeyRegistration(callOf(ctx), { token: await enrollingTokenOf(ctx) }) });

/** /oauth/passkey_register_finish: the passkey the browser made, added to the account. */
export const registerFinish: Handler = async (ctx) => {
  const credential = credentialParam(ctx);
  const token = await enrollingTokenOf(ctx);
  // added with an enroll_token: the sign-in that was sent to add it goes on, answering what it would have answered
  const { passkeyId, signedIn } = await finishPasskeyRegistration(callOf(ctx), { token, credential, name: ctx.params.get('name'), continueSignIn: true });
  return signedIn ? { ...signedInBody(signedIn), passkey_id: passkeyId } : { passkey_id: passkeyId };
};

/** /oauth/passkeys_native: the account's passkeys. */
export const list: Handler = async (ctx) => ({
  passkeys: (await listPasskeys(callOf(ctx), { token: tokenOf(ctx) })).map((p) => ({
    id: p.id, name: p.name, created: p.createdAt.toISOString(), last_used: p.lastUsedAt?.toISOString() ?? null,
    backed_up: p.backedUp, synced: p.deviceType === 'multiDevice', transports: p.transports,
  })),
});

/** /oauth/passkey_rename_native: names one of the account's passkeys. */
export const rename: Handler = async (ctx) => {
  const token = tokenOf(ctx);
  const name = ctx.params.require('name');
  await renamePasskey(callOf(ctx), { token, passkeyId: passkeyIdOf(ctx), name });
  return {};
};

/** /oauth/passkey_remove_native: removes one of the account's passkeys. */
export const remove: Handler = async (ctx) => {
  const token = tokenOf(ctx);
  await removePasskey(callOf(ctx), { token, passkeyId: passkeyIdOf(ctx) });
  return {};
};

/** /oauth/passkey_auth_begin: the options of navigator.credentials.get() and their challenge_token. */
export const authBegin: Handler = async (ctx) => {
  if (ctx.principal.kind !== 'client') throw errors.missingArgument('client_id');
  const { options, challengeToken } = await beginPasskeySignIn({ ...callOf(ctx), client: ctx.principal.client }, {
    identifier: ctx.params.get('identifier'), mfaToken: ctx.params.get('mfa_token'),
  });
  return { options, challenge_token: challengeToken };
};
