import type { AuthScheme } from '../auth/authenticate';
import type { Feature } from '../domain/clients';
import type { Handler } from './context';
import * as clients from './handlers/admin-clients';
import * as settings from './handlers/admin-settings';
import type { ErrorStyle } from './status';

/**
 * The one route table: every endpoint with its methods, where it reads parameters, the
 * authentication schemes it accepts, the client kinds (features) it admits, and how its errors
 * map to HTTP statuses (see status.ts). SPEC 5.5 decides the kinds.
 */
export interface Route {
  path: string;
  methods: readonly ('GET' | 'POST')[];
  /** `query+body`: URL query and urlencoded body; `body`: the body only (SPEC 4, /oauth/*). */
  params: 'query+body' | 'body';
  auth: readonly AuthScheme[];
  kinds: readonly Feature[];
  errors: ErrorStyle;
  handler: Handler;
}

const CLIENT_AUTH = ['basic', 'signature', 'client_params'] as const;
const admin = (path: string, handler: Handler): Route => ({
  path, methods: ['GET', 'POST'], params: 'query+body', auth: CLIENT_AUTH, kinds: ['owner'], errors: 'capture', handler,
});

export const ROUTES: readonly Route[] = [
  admin('/clients/add', clients.addClient),
  admin('/clients/list', clients.listClients),
  admin('/clients/set_features', clients.setFeatures),
  admin('/clients/delete', clients.deleteClient),
  admin('/clients/reset_secret', clients.resetSecret),
  admin('/settings/get', settings.getSetting),
  admin('/settings/items', settings.listSettings),
  admin('/settings/keys', settings.settingKeys),
  admin('/settings/set', settings.setSetting),
  admin('/settings/set_multi', settings.setSettings),
  admin('/settings/delete', settings.deleteSetting),
  admin('/settings/set_default', settings.setDefaultSetting),
];
