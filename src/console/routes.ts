import type { ConsoleAction } from '../domain/operators';
import * as account from './account';
import * as apis from './apis';
import * as forms from './account-forms';
import { searchPage } from './accounts';
import { applicationsPage, rotateKeys, showApplication } from './applications';
import { auditPage } from './audit';
import { createClient, resetClientSecret, showClient } from './clients';
import { flowChanges, importFlow } from './flows';
import { changeRole, operatorsPage } from './operators';
import * as organizations from './organizations';
import { overviewPage } from './overview';
import type { PageHandler } from './parts';
import { createProvider, deleteProvider } from './providers';
import { createServiceProvider, deleteServiceProvider } from './saml';
import { createToken, revokeToken } from './scim';
import { changeSetting } from './settings';
import { createWebhook, showWebhook, webhookAction } from './webhooks';

/**
 * The console's one route table (docs/console.md#the-pages): every page and every change with what the
 * operator's role must allow and the form it reads. console.ts builds the console from it: a page
 * is reached signed in, with the role it needs (docs/console.md#roles); a POST comes from the
 * console's own origin with the session's form token; a refusal of a use case is a page saying
 * why. The sign-in's own routes (/signin, its callback, /signout) are console.ts's, and the queue
 * dashboard is bull-board's.
 */

/** What a POST reads: its form's bytes and fields at most; `repeated` keeps a field sent more than once as a list. */
export interface FormLimits { bytes: string; fields: number; repeated?: true }

export interface ConsoleRoute {
  method: 'GET' | 'POST';
  /** An Express path; the table's order is the order routes are tried in. */
  path: string;
  /** What the operator's role must allow: `read` (every role), `account` (support and admins), `administer`. */
  needs: ConsoleAction;
  /** A POST's form. */
  form?: FormLimits;
  handler: PageHandler;
}

/** A form of a few fields. */
const FORM: FormLimits = { bytes: '16kb', fields: 20 };
const SMALL: FormLimits = { bytes: '4kb', fields: 10 };
/** An account's attributes: the flow's fields, each a field of its own. */
const ATTRIBUTES: FormLimits = { bytes: '32kb', fields: 100 };
/** A service provider's metadata, with a few certificates and endpoints. */
const METADATA: FormLimits = { bytes: '300kb', fields: 10 };
/** A flow's two documents, pasted (a flow is about 20 KB). */
const FLOW: FormLimits = { bytes: '512kb', fields: 10 };

const get = (path: string, needs: ConsoleAction, handler: PageHandler): ConsoleRoute => ({ method: 'GET', path, needs, handler });
const post = (path: string, needs: ConsoleAction, handler: PageHandler, form = FORM): ConsoleRoute => ({ method: 'POST', path, needs, handler, form });

export const CONSOLE_ROUTES: readonly ConsoleRoute[] = [
  // the overview, the first page
  get('/', 'read', overviewPage),
  // accounts: the search, an account's page and its actions; made and edited
  get('/accounts', 'read', searchPage),
  get('/apps/:app/new-account', 'account', forms.newAccountPage),
  post('/apps/:app/new-account', 'account', forms.createAccountFromForm, ATTRIBUTES),
  get('/apps/:app/accounts/:id', 'read', account.showAccount),
  get('/apps/:app/accounts/:id/edit', 'account', forms.editAccountPage),
  // (before the actions: `edit` is not one of them)
  post('/apps/:app/accounts/:id/edit', 'account', forms.saveAccount, ATTRIBUTES),
  // (an account's roles come as one field each: the route keeps a repeated field as a list)
  post('/apps/:app/accounts/:id/:action', 'account', account.accountAction, { bytes: '32kb', fields: 250, repeated: true }),
  // the audit log
  get('/audit', 'read', auditPage),
  // organizations
  get('/apps/:app/organizations', 'read', organizations.organizationsPage),
  get('/apps/:app/organizations/:org', 'read', organizations.showOrganization),
  post('/apps/:app/organizations/:org/members', 'account', organizations.addOrganizationMember),
  post('/apps/:app/organizations/:org/members/:id/roles', 'account', organizations.setOrganizationRoles),
  post('/apps/:app/organizations/:org/members/:id/remove', 'account', organizations.removeOrganizationMember),
  post('/apps/:app/organizations/:org/invitations', 'account', organizations.inviteToOrganization),
  post('/apps/:app/organizations/:org/invitations/:id/:action', 'account', organizations.invitationAction),
  // the operators, for admins
  get('/operators', 'administer', operatorsPage),
  post('/operators/:id/role', 'administer', changeRole, SMALL),
  // applications and what they hold; changes for admins
  get('/apps', 'read', applicationsPage),
  get('/apps/:app', 'read', showApplication),
  post('/apps/:app/settings', 'administer', changeSetting),
  get('/apps/:app/clients/:client', 'read', showClient),
  post('/apps/:app/clients', 'administer', createClient, { ...FORM, repeated: true }),
  post('/apps/:app/clients/:client/secret', 'administer', resetClientSecret),
  post('/apps/:app/providers', 'administer', createProvider),
  post('/apps/:app/providers/remove', 'administer', deleteProvider),
  post('/apps/:app/keys', 'administer', rotateKeys),
  post('/apps/:app/flows', 'administer', importFlow, FLOW),
  get('/apps/:app/flows/:name', 'read', flowChanges),
  post('/apps/:app/apis', 'administer', apis.createApi),
  post('/apps/:app/apis/:id/:action', 'administer', apis.apiAction),
  post('/apps/:app/roles', 'administer', apis.createRole),
  post('/apps/:app/roles/:name/remove', 'administer', apis.deleteRole),
  get('/apps/:app/webhooks/:id', 'read', showWebhook),
  post('/apps/:app/webhooks', 'administer', createWebhook),
  post('/apps/:app/webhooks/:id/:action', 'administer', webhookAction),
  post('/apps/:app/saml', 'administer', createServiceProvider, METADATA),
  post('/apps/:app/saml/:id/remove', 'administer', deleteServiceProvider, METADATA),
  post('/apps/:app/scim', 'administer', createToken, SMALL),
  post('/apps/:app/scim/:org/:token/revoke', 'administer', revokeToken, SMALL),
];
