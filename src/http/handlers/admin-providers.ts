import { PROVIDER_KINDS, type ProviderKind } from '../../domain/social/providers';
import { errors } from '../../errors';
import type { Handler } from '../context';

/** /providers/add: an identity provider of this application's built-in social login. */
export const addProvider: Handler = async (ctx) => {
  const p = ctx.params;
  const kind = (p.get('kind') ?? 'oidc') as ProviderKind;
  if (!PROVIDER_KINDS.includes(kind)) throw errors.invalidArgument('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
  const provider = await ctx.services.providers.add(ctx.app.id, {
    name: p.require('name'), kind, issuer: p.require('issuer'), clientId: p.require('provider_client_id'),
    clientSecret: p.require('provider_client_secret'), scopes: p.get('scopes')?.split(/\s+/).filter(Boolean),
  });
  return { result: provider };
};

export const listProviders: Handler = async (ctx) => ({ results: await ctx.services.providers.list(ctx.app.id, ctx.services.db.lagTolerant.providers) });

export const removeProvider: Handler = async (ctx) => {
  await ctx.services.providers.remove(ctx.app.id, ctx.params.require('name'));
  return {};
};
