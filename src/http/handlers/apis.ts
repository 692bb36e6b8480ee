import { formatTimestamp } from '../../domain/timestamps';
import { addApi, grantApiToClient, listApis, removeApi, updateApi, type ApiSettings, type ApiView } from '../../usecases/apis/apis';
import { accountRoles, changeAccountRoles, defineAppRole, listAppRoles, removeAppRole, type AppRoleView } from '../../usecases/apis/roles';
import { adminCall, type Handler, type RequestContext } from '../context';
import { identifyRecord } from '../record';

/** An API on the wire (docs/openid-connect.md#apis). */
export const shownApi = (api: ApiView) => ({
  id: api.id, identifier: api.identifier, name: api.name, scopes: api.scopes, client_scopes: api.clientScopes, token_lifetime: api.tokenSeconds,
  rbac: api.rbac, permissions_in_token: api.permissionsInToken,
  created: formatTimestamp(api.createdAt), updated: formatTimestamp(api.updatedAt),
});

const settingsOf = (ctx: RequestContext): ApiSettings => {
  const name = ctx.params.get('name');
  const scopes = ctx.params.get('scopes');
  const tokenLifetime = ctx.params.get('token_lifetime');
  const rbac = ctx.params.get('rbac');
  const permissionsInToken = ctx.params.get('permissions_in_token');
  return {
    ...(name !== undefined && { name }), ...(scopes !== undefined && { scopes }), ...(tokenLifetime !== undefined && { tokenLifetime }),
    ...(rbac !== undefined && { rbac }), ...(permissionsInToken !== undefined && { permissionsInToken }),
  };
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

/** A role of the application on the wire (docs/openid-connect.md#roles). */
export const shownRole = (r: AppRoleView) => ({ name: r.name, description: r.description, permissions: r.permissions });

/** /roles/define: a role (again), its permissions a JSON object of API identifiers to scopes. */
export const defineRole: Handler = async (ctx) => ({
  result: shownRole(await defineAppRole(ctx.services, {
    app: ctx.app, acting: adminCall(ctx).acting, name: ctx.params.require('name'), description: ctx.params.get('description'), permissions: ctx.params.get('permissions') ?? '',
  })),
});

/** /roles/list: the application's roles by name. */
export const listRoles: Handler = async (ctx) => ({ results: (await listAppRoles(ctx.services, { app: ctx.app })).map(shownRole) });

/** /roles/remove: the role, and every account's holding of it. */
export const removeRole: Handler = async (ctx) => ({ held: await removeAppRole(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, name: ctx.params.require('name') }) });

/** `roles`: names separated by commas or spaces. */
const roleNames = (ctx: RequestContext) => ctx.params.require('roles').split(/[\s,]+/).filter(Boolean);

/** /roles/assign and /roles/unassign: roles given to an account, or taken from it; answers those it holds after. */
export const changeRoles = (give: boolean): Handler => async (ctx) => {
  const names = roleNames(ctx);
  const record = await identifyRecord(ctx);
  const held = await changeAccountRoles(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, entityId: record.id, ...(give ? { add: names } : { take: names }) });
  return { results: held.map(shownRole) };
};

/** /roles/of: the roles an account holds. */
export const rolesOfAccount: Handler = async (ctx) => ({ results: (await accountRoles(ctx.services, { app: ctx.app, entityId: (await identifyRecord(ctx)).id })).map(shownRole) });
