import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { addApi, grantApiToClient, listApis, removeApi } from '../usecases/apis/apis';
import { defineAppRole, listAppRoles, removeAppRole } from '../usecases/apis/roles';
import { escape } from '../web/pages';
import { adminForm, appBase, inApp, q, say, type PageCall } from './parts';

/**
 * The application's APIs and roles (docs/console.md#apis-and-roles, docs/openid-connect.md#apis):
 * each API with its scopes, its tokens' lifetime, its role-based access and the scopes each client
 * may ask for its own tokens; the roles with the permissions they give. For admins: an API
 * registered, removed, a client's scopes granted; a role defined or removed. Each is the use case
 * the API and the CLI run; an account's roles are changed on its page.
 */
export async function apisSection({ s, p }: Pick<PageCall, 's' | 'p'>, a: Application, clients: ReadonlyArray<{ clientId: string; description: string }>): Promise<string> {
  const { locale } = s;
  const [apis, roles] = await Promise.all([listApis(p.services, { app: a }), listAppRoles(p.services, { app: a })]);
  const admin = roleMay(s.operator.role, 'administer');
  const base = `${appBase(a)}/apis`;
  const clientName = (id: string) => clients.find((c) => c.clientId === id)?.description || id;
  const flag = (on: boolean) => escape(say(locale, on ? 'yes' : 'no'));
  let html = `<section aria-labelledby="h-apis"><h2 id="h-apis">${escape(say(locale, 'apis'))}</h2>`
    + (apis.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['apiName', 'apiScopes', 'apiLifetime', 'apiRbac', 'apiPermissionsInToken', 'apiGrants', ''].map((k) => `<th scope="col">${k ? escape(say(locale, k)) : ''}</th>`).join('')}</tr></thead><tbody>`
        + apis.map((api) => `<tr><td>${escape(api.name)}<br><code title="${escape(api.id)}">${escape(api.identifier)}</code></td>`
          + `<td>${api.scopes.length === 0 ? '—' : api.scopes.map((x) => `<code>${escape(x)}</code>`).join(' ')}</td>`
          + `<td>${escape(say(locale, 'seconds', { count: String(api.tokenSeconds) }))}</td><td>${flag(api.rbac)}</td><td>${flag(api.permissionsInToken)}</td>`
          + `<td>${Object.keys(api.clientScopes).length === 0 ? '—' : Object.entries(api.clientScopes).map(([c, scopes]) => `<span title="${escape(c)}">${escape(clientName(c))}</span>: ${scopes.map((x) => `<code>${escape(x)}</code>`).join(' ')}`).join('<br>')}</td>`
          + `<td>${admin ? adminForm(s, `${base}/${encodeURIComponent(api.id)}/grant`, say(locale, 'apiGrant'),
            `<label for="grant-client-${escape(api.id)}">${escape(say(locale, 'client'))}</label><select id="grant-client-${escape(api.id)}" name="client">`
            + clients.map((c) => `<option value="${escape(c.clientId)}">${escape(c.description || c.clientId)}</option>`).join('') + '</select>'
            + `<label for="grant-scopes-${escape(api.id)}">${escape(say(locale, 'apiScopes'))}</label><input id="grant-scopes-${escape(api.id)}" name="scopes" type="text" maxlength="2000" placeholder="${escape(api.scopes.slice(0, 2).join(' '))}">`)
            + adminForm(s, `${base}/${encodeURIComponent(api.id)}/remove`, say(locale, 'apiRemove'), '', true) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (admin ? adminForm(s, base, say(locale, 'addApi'),
      `<label for="api-identifier">${escape(say(locale, 'apiIdentifier'))}</label><input id="api-identifier" name="identifier" type="url" required maxlength="255" placeholder="https://api.example.com/" aria-describedby="api-identifier-tip">`
      + `<p class="tip" id="api-identifier-tip">${escape(say(locale, 'apiIdentifierTip'))}</p>`
      + `<label for="api-name">${escape(say(locale, 'apiName'))}</label><input id="api-name" name="name" type="text" maxlength="200">`
      + `<label for="api-scopes">${escape(say(locale, 'apiScopes'))}</label><input id="api-scopes" name="scopes" type="text" maxlength="4000" placeholder="read:orders write:orders">`
      + `<label for="api-lifetime">${escape(say(locale, 'apiLifetime'))}</label><input id="api-lifetime" name="token_lifetime" type="text" inputmode="numeric" placeholder="600">`
      + `<label class="choice"><input type="checkbox" name="rbac" value="true"> ${escape(say(locale, 'apiRbac'))}</label>`
      + `<label class="choice"><input type="checkbox" name="permissions_in_token" value="true"> ${escape(say(locale, 'apiPermissionsInToken'))}</label>`) : '')
    + '</section>';
  html += `<section aria-labelledby="h-roles"><h2 id="h-roles">${escape(say(locale, 'appRoles'))}</h2>`
    + (roles.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['roleName', 'description', 'rolePermissions', ''].map((k) => `<th scope="col">${k ? escape(say(locale, k)) : ''}</th>`).join('')}</tr></thead><tbody>`
        + roles.map((r) => `<tr><td><code>${escape(r.name)}</code></td><td>${escape(r.description)}</td>`
          + `<td>${Object.keys(r.permissions).length === 0 ? '—' : Object.entries(r.permissions).map(([api, scopes]) => `<code>${escape(api)}</code>: ${scopes.map((x) => `<code>${escape(x)}</code>`).join(' ')}`).join('<br>')}</td>`
          + `<td>${admin ? adminForm(s, `${appBase(a)}/roles/${encodeURIComponent(r.name)}/remove`, say(locale, 'roleRemove'), '', true) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (admin ? adminForm(s, `${appBase(a)}/roles`, say(locale, 'defineRole'),
      `<label for="role-name">${escape(say(locale, 'roleName'))}</label><input id="role-name" name="name" type="text" required maxlength="64" placeholder="support-agent">`
      + `<label for="role-description">${escape(say(locale, 'description'))}</label><input id="role-description" name="description" type="text" maxlength="200">`
      + `<label for="role-permissions">${escape(say(locale, 'rolePermissions'))}</label><textarea id="role-permissions" name="permissions" rows="3" spellcheck="false" aria-describedby="role-permissions-tip" placeholder="https://api.example.com/ read:orders write:orders"></textarea>`
      + `<p class="tip" id="role-permissions-tip">${escape(say(locale, 'rolePermissionsTip'))}</p>`) : '')
    + '</section>';
  return html;
}

/** Where a change leads: the application's page, at its APIs or roles. */
const back = (a: Application, locale: string, at: 'h-apis' | 'h-roles') => `${appBase(a)}${q({ locale })}#${at}`;

/** An API registered. */
export const createApi = inApp(async ({ res, s, p, body }, a) => {
  await addApi(p.services, {
    app: a, acting: s.operator.acting, identifier: body.identifier ?? '', ...(body.name && { name: body.name }), scopes: body.scopes ?? '',
    tokenLifetime: body.token_lifetime ?? '', rbac: body.rbac === 'true' ? 'true' : 'false', permissionsInToken: body.permissions_in_token === 'true' ? 'true' : 'false',
  });
  res.redirect(303, back(a, s.locale, 'h-apis'));
});

/** An API removed (confirmed), or the scopes a client may ask of it for its own tokens ('' takes them back). */
export const apiAction = inApp(async ({ req, res, s, p, body }, a) => {
  const id = String(req.params.id);
  if (req.params.action === 'remove') {
    if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
    await removeApi(p.services, { app: a, acting: s.operator.acting, id });
  } else if (req.params.action === 'grant') {
    if (!body.client) throw invalidField('client', say(s.locale, 'noSuchClient'));
    await grantApiToClient(p.services, { app: a, acting: s.operator.acting, id, forClientId: body.client, scopes: body.scopes ?? '' });
  } else {
    return p.problem(res, 404, s.locale, say(s.locale, 'noSuchAction'), s);
  }
  res.redirect(303, back(a, s.locale, 'h-apis'));
});

/**
 * Lines of "identifier scope scope" as the use case's permissions (an object of API identifiers to
 * scopes); a line may also be the object itself, as the API takes it.
 */
export function permissionsFromLines(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) return trimmed;
  const permissions: Record<string, string[]> = {};
  for (const line of trimmed.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '')) {
    const [identifier, ...scopes] = line.split(/[\s,]+/);
    permissions[identifier] = [...(permissions[identifier] ?? []), ...scopes];
  }
  return JSON.stringify(permissions);
}

/** A role defined (or its description and permissions replaced). */
export const createRole = inApp(async ({ res, s, p, body }, a) => {
  await defineAppRole(p.services, {
    app: a, acting: s.operator.acting, name: (body.name ?? '').trim(), ...(body.description && { description: body.description }), permissions: permissionsFromLines(body.permissions ?? ''),
  });
  res.redirect(303, back(a, s.locale, 'h-roles'));
});

/** A role removed, confirmed: the accounts holding it lose it. */
export const deleteRole = inApp(async ({ req, res, s, p, body }, a) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  await removeAppRole(p.services, { app: a, acting: s.operator.acting, name: String(req.params.name) });
  res.redirect(303, back(a, s.locale, 'h-roles'));
});
