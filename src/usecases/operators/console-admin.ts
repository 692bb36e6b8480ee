import type { Client } from '../../domain/clients';
import type { Acting } from '../../domain/events';
import { differences, type AttributeChange } from '../../domain/history';
import { invalidField } from '../../domain/refusal';
import { isOpenIdProvider, SETTING_KEY, SETTING_KEY_FORM, settingValueProblem } from '../../domain/settings';
import type { Application } from '../../domain/storage/applications';
import { applied, changeClientSettings, changeDefaultSettings, flowSettingsProblem } from '../clients/change-settings';
import { FlowDefinitionError, flowSource } from '../../domain/flow-definition';
import { importFlows, type ImportedFlow } from '../applications/import-flows';
import type { Services } from '../services';

/**
 * What the console's administration pages read and change (docs/console.md#applications): an
 * application with its settings, clients (never a secret), identity providers, flows and signing
 * keys; a setting changed as the admin API and `gatehouse settings:set` change it; the difference
 * between two versions of a flow.
 */

export interface ApplicationView {
  app: Application;
  baseUrl: string;
  clients: Omit<Client, 'id' | 'applicationId'>[];
  providers: { name: string; kind: string; issuer: string }[];
  flows: { name: string; latest: number }[];
  /** The published signing keys of an OpenID provider application (none otherwise). */
  keys: { kid: string; alg: string; slot: string | null; createdAt: Date; retiredAt: Date | null }[];
}

/** An application as its administration page shows it. */
export async function applicationView(deps: Pick<Services, 'baseUrls' | 'clients' | 'clock' | 'db'>, command: { app: Application }): Promise<ApplicationView> {
  const { app } = command;
  const [clients, providers, flows, keys] = await Promise.all([
    deps.clients.list(app.id),
    deps.db.social.providers.list(app.id),
    deps.db.flows.listNames(app.id),
    isOpenIdProvider(app) ? deps.db.signingKeys.published(app.id, new Date(0)) : Promise.resolve([]),
  ]);
  return {
    app,
    baseUrl: deps.baseUrls.of(app.name),
    clients: clients.map((c) => ({ clientId: c.clientId, description: c.description, features: c.features, settings: c.settings })),
    providers: providers.map((p) => ({ name: p.name, kind: p.kind, issuer: p.issuer })),
    flows,
    // retired keys of the last month (older ones verify nothing any more)
    keys: keys.filter((k) => k.retiredAt === null || deps.clock.now().getTime() - k.retiredAt.getTime() < 30 * 86_400_000).map((k) => ({ kid: k.kid, alg: k.alg, slot: k.slot, createdAt: k.createdAt, retiredAt: k.retiredAt })),
  };
}

/**
 * Sets one setting of the application, or of one of its clients (`clientId`), checked as the admin
 * API checks it: the key's form, the value as Gatehouse reads it, and a default flow the
 * application has. An empty value removes the setting. Answers what it was.
 */
export async function changeOneSetting(
  deps: Pick<Services, 'clients' | 'clock' | 'db' | 'work'>, command: { app: Application; clientId?: string; key: string; value: string; acting: Acting },
): Promise<{ was?: string }> {
  const { app, key, value, acting } = command;
  if (!SETTING_KEY.test(key)) throw invalidField('key', `the key ${SETTING_KEY_FORM}`);
  const problem = value === '' ? undefined : settingValueProblem(key, value);
  if (problem) throw invalidField('value', problem);
  const client = command.clientId === undefined ? undefined : await deps.clients.find(app.id, command.clientId);
  if (command.clientId !== undefined && !client) throw invalidField('client', 'is not a client of this application');
  const entries = [[key, value === '' ? undefined : value] as const];
  const flowProblem = await flowSettingsProblem(deps.db.flows, app.id, applied({ ...app.settings, ...client?.settings }, entries), [key]);
  if (flowProblem) throw invalidField('value', flowProblem);
  const call = { applicationId: app.id, acting, entries };
  const before = client ? await changeClientSettings(deps, { ...call, clientId: client.clientId }) : await changeDefaultSettings(deps, call);
  return { ...(before[key] !== undefined && { was: before[key] }) };
}

/** A JSON value as its leaves by path (`forms.signInForm.fields[0].name`): what a difference lists. */
function leaves(value: unknown, path = '', into: Record<string, unknown> = {}): Record<string, unknown> {
  if (Array.isArray(value) && value.length > 0) value.forEach((v, i) => leaves(v, `${path}[${i}]`, into));
  else if (value && typeof value === 'object' && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) leaves(v, path ? `${path}.${k}` : k, into);
  } else into[path || '(whole)'] = value;
  return into;
}

/** What changed between two versions of a flow, leaf by leaf of its definition; undefined when either is missing. */
export async function flowDifference(
  deps: Pick<Services, 'db'>, command: { app: Application; name: string; from: number; to: number },
): Promise<AttributeChange[] | undefined> {
  const [a, b] = await Promise.all([deps.db.flows.find(command.app.id, command.name, command.from), deps.db.flows.find(command.app.id, command.name, command.to)]);
  if (!a || !b) return undefined;
  return differences(leaves(a.definition), leaves(b.definition));
}

/**
 * Imports a flow from its two documents as typed or pasted (the console's form): flow.json and
 * translations.json, validated as `gatehouse flows:import` validates a folder (FlowDefinitionError
 * lists what is wrong); a definition the newest version holds keeps that version (`unchanged`).
 */
export async function importFlowDocuments(
  deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; flow: string; translations: string; acting: Acting },
): Promise<ImportedFlow> {
  const parse = (text: string, name: string) => {
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      throw new FlowDefinitionError([`${name}: not valid JSON (${(e as Error).message})`]);
    }
  };
  const source = flowSource(parse(command.flow, 'flow.json'), parse(command.translations, 'translations.json'));
  const [imported] = await importFlows(deps, { applicationName: command.app.name, flows: [source], acting: command.acting });
  return imported;
}
