import { formatTimestamp } from '../../domain/timestamps';
import { addApi, grantApiToClient, listApis, removeApi, updateApi, type ApiSettings, type ApiView } from '../../usecases/apis/apis';
import { adminCall, type Handler, type RequestContext } from '../context';

/** An API on the wire (docs/openid-connect.md#apis). */
export const shownApi = (api: ApiView) => ({
  id: api.id, identifier: api.identifier, name: api.name, scopes: api.scopes, client_scopes: api.clientScopes, token_lifetime: api.tokenSeconds,
  created: formatTimestamp(api.createdAt), updated: formatTimestamp(api.updatedAt),
});

const settingsOf = (ctx: RequestContext): ApiSettings => {
  const name = ctx.params.get('name');
  const scopes = ctx.params.get('scopes');
  const tokenLifetime = ctx.params.get('token_lifetime');
  return { ...(name !== undefined && { name }), ...(scopes !== undefined && { scopes }), ...(tokenLifetime !== undefined && { tokenLifetime }) };
};

/** /apis/add: an API (a resource server) by its resource indicator; answers it. */
export const addResourceServer: Handler = async (ctx) => {
  const added = await addApi(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, identifier: ctx.params.require('identifier'), ...settingsOf(ctx) });
  return { result: shownApi(added), id: added.id };
};

/** /apis/list: the application's APIs, oldest first. */
export const listResourceServers: Handler = async (ctx) => ({ results: (await listApis(ctx.services, { app: ctx.app })).map(shownApi) });

/** /apis/update: a new name, scopes or token lifetime. */
export const updateResourceServer: Handler = async (ctx) => ({
  result: shownApi(await updateApi(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, id: ctx.params.require('id'), ...settingsOf(ctx) })),
});

/** /apis/grant: the scopes a client may ask of the API for its own tokens (client credentials); '' takes them back. */
export const grantResourceServer: Handler = async (ctx) => ({
  result: shownApi(await grantApiToClient(ctx.services, {
    app: ctx.app, acting: adminCall(ctx).acting, id: ctx.params.require('id'), forClientId: ctx.params.require('for_client_id'), scopes: ctx.params.get('scopes') ?? '',
  })),
});

/** /apis/remove: no token is issued for it from now on. */
export const removeResourceServer: Handler = async (ctx) => {
  await removeApi(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, id: ctx.params.require('id') });
  return {};
};
