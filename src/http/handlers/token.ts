import { ApiError } from '../../errors';
import { caller, type Handler } from '../context';

/** /oauth/token (docs/api.md#oauthtoken): the authorization_code and refresh_token grants. */
export const token: Handler = async (ctx) => {
  const grantType = ctx.params.require('grant_type');
  const { tokens } = ctx.services;
  switch (grantType) {
    case 'authorization_code':
      return { ...(await tokens.exchangeCode(ctx.app, caller(ctx), ctx.params.require('code'), ctx.params.require('redirect_uri'))) };
    case 'refresh_token':
      return { ...(await tokens.refresh(ctx.app, caller(ctx), ctx.params.require('refresh_token'))) };
    default:
      throw new ApiError('invalidRequestArgument', `invalid grant_type ${JSON.stringify(grantType.slice(0, 40))}: use authorization_code or refresh_token`, {
        extra: { argument_name: 'grant_type' },
      });
  }
};
