import { PROVIDER_KINDS, ProviderInputError, ProviderNameError, type ProviderKind } from '../../domain/social/providers';
import { errors } from '../../errors';
import { addProvider as add } from '../../usecases/providers/add-provider';
import { removeProvider as remove } from '../../usecases/providers/remove-provider';
import { adminCall, type Handler } from '../context';

/** The parameter of /providers/add each field of a new provider comes from. */
const ARGUMENT = { name: 'name', kind: 'kind', issuer: 'issuer', clientId: 'provider_client_id', clientSecret: 'provider_client_secret', scopes: 'scopes' } as const;

/** /providers/add: an identity provider of this application's built-in social login. */
export const addProvider: Handler = async (ctx) => {
  const p = ctx.params;
  const kind = (p.get('kind') ?? 'oidc') as ProviderKind;
  if (!PROVIDER_KINDS.includes(kind)) throw errors.invalidArgument('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
  const provider = {
    name: p.require('name'), kind, issuer: p.require('issuer'), clientId: p.require('provider_client_id'),
    clientSecret: p.require('provider_client_secret'), scopes: p.get('scopes')?.split(/\s+/).filter(Boolean),
  };
  try {
    return { result: await add(ctx.services, { ...adminCall(ctx), provider }) };
  } catch (e) {
    if (e instanceof ProviderInputError) throw errors.invalidArgument(ARGUMENT[e.field], e.message);
    if (e instanceof ProviderNameError) throw errors.invalidArgument('name', e.message);
    throw e;
  }
};

export const listProviders: Handler = async (ctx) => ({ results: await ctx.services.providers.list(ctx.app.id, ctx.services.db.lagTolerant.providers) });

export const removeProvider: Handler = async (ctx) => {
  try {
    await remove(ctx.services, { ...adminCall(ctx), name: ctx.params.require('name') });
  } catch (e) {
    if (e instanceof ProviderNameError) throw errors.invalidArgument('name', e.message);
    throw e;
  }
  return {};
};
