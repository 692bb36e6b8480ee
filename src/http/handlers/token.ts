import { ApiError } from '../../errors';
import type { TokenPair } from '../../domain/tokens';
import { exchangeCode } from '../../usecases/tokens/exchange-code';
import { rotateRefreshToken } from '../../usecases/tokens/rotate-refresh-token';
import { caller, type Handler } from '../context';

/** A pair as /oauth/token answers it (docs/api.md#oauthtoken). */
export const pairBody = (pair: TokenPair): Record<string, unknown> => ({
  access_token: pair.accessToken, expires_in: pair.expiresIn, refresh_token: pair.refreshToken,
  ...(pair.transactionState !== undefined && { transaction_state: pair.transactionState }),
});

/** /oauth/token (docs/api.md#oauthtoken): the authorization_code and refresh_token grants. */
export const token: Handler = async (ctx) => {
  const grantType = ctx.params.require('grant_type');
  switch (grantType) {
    case 'authorization_code':
      return pairBody(await exchangeCode(ctx.services, { app: ctx.app, client: caller(ctx), code: ctx.params.require('code'), redirectUri: ctx.params.require('redirect_uri') }));
    case 'refresh_token':
      return pairBody(await rotateRefreshToken(ctx.services, { app: ctx.app, client: caller(ctx), refreshToken: ctx.params.require('refresh_token') }));
    default:
      throw new ApiError('invalidRequestArgument', `invalid grant_type ${JSON.stringify(grantType.slice(0, 40))}: use authorization_code or refresh_token`, {
        extra: { argument_name: 'grant_type' },
      });
  }
};
