import { ApiError } from '../../errors';
import { exchangeCode } from '../../usecases/tokens/exchange-code';
import { rotateRefreshToken } from '../../usecases/tokens/rotate-refresh-token';
import { caller, type Handler } from '../context';
import { pairBody, unlessPaused } from '../flow-request';

/** /oauth/token (docs/api.md#oauthtoken): the authorization_code and refresh_token grants. */
export const token: Handler = async (ctx) => {
  const grantType = ctx.params.require('grant_type');
  switch (grantType) {
    case 'authorization_code':
      return pairBody(unlessPaused(await exchangeCode(ctx.services, {
        app: ctx.app, client: caller(ctx), code: ctx.params.require('code'), redirectUri: ctx.params.require('redirect_uri'), origin: ctx.origin,
      })));
    case 'refresh_token':
      return pairBody(await rotateRefreshToken(ctx.services, { app: ctx.app, client: caller(ctx), refreshToken: ctx.params.require('refresh_token'), origin: ctx.origin }));
    default:
      throw new ApiError('invalidRequestArgument', `invalid grant_type ${JSON.stringify(grantType.slice(0, 40))}: use authorization_code or refresh_token`, {
        extra: { argument_name: 'grant_type' },
      });
  }
};
