import type { Handler, RequestContext } from '../context';
import { errors } from '../../errors';
import { issueChallenge } from '../../usecases/login/proof-of-work';
import { callOf } from '../account-request';

/** A solved proof-of-work challenge, as the widget names its field (docs/proof-of-work.md). */
export const altchaOf = (ctx: RequestContext): string | undefined => ctx.params.get('altcha');

/** /oauth/challenge: a new challenge for the login client, as ALTCHA's widget and libraries take it (`parameters`, `signature`). */
export const challenge: Handler = async (ctx) => {
  if (ctx.principal.kind !== 'client') throw errors.missingArgument('client_id');
  const issued = await issueChallenge({ ...callOf(ctx), client: ctx.principal.client });
  return { parameters: issued.parameters, signature: issued.signature };
};
