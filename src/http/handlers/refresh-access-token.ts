import type { Handler } from '../context';
import { parseFlowRequest } from '../flow-request';
import { refreshWithSecret } from '../../usecases/tokens/refresh-with-secret';

/**
 * /oauth/refresh_access_token, as the Android and iOS SDKs call it: the session of `access_token`
 * (usually expired by then: it names the session, it does not authorize) gets a new access token
 * when `signature` signs it and `date` with the refresh secret the SDK sent at sign-in. Answers
 * `access_token` (what the SDKs read) and `expires_in`.
 */
export const refreshAccessToken: Handler = async (ctx) => {
  const request = await parseFlowRequest(ctx, { redirectUri: 'ignored' });
  const accessToken = ctx.params.require('access_token');
  const date = ctx.params.require('date');
  const signature = ctx.params.require('signature');
  const renewed = await refreshWithSecret(ctx.services, { app: ctx.app, client: request.client, accessToken, date, signature, origin: ctx.origin });
  return { access_token: renewed.accessToken, expires_in: renewed.expiresIn };
};
