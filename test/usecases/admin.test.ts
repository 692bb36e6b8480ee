import { NoSuchClientError, OwnOwnerFeatureError, SelfDeletionError } from '../../src/domain/clients';
import { ApplicationExistsError } from '../../src/domain/applications';
import { findFlowDirectories, loadFlowDirectory } from '../../src/domain/flow-definition';
import { ProviderInputError, ProviderNameError, type NewProvider } from '../../src/domain/social/providers';
import { addClient } from '../../src/usecases/clients/add-client';
import { changeClientSettings, changeDefaultSettings } from '../../src/usecases/clients/change-settings';
import { deleteClient } from '../../src/usecases/clients/delete-client';
import { resetSecret } from '../../src/usecases/clients/reset-secret';
import { setFeatures } from '../../src/usecases/clients/set-features';
import { addProvider } from '../../src/usecases/providers/add-provider';
import { removeProvider } from '../../src/usecases/providers/remove-provider';
import { ApplicationNameError, createApplication } from '../../src/usecases/applications/create-application';
import { importFlows, NoSuchApplicationError } from '../../src/usecases/applications/import-flows';
import { listAudit } from '../../src/usecases/audit/list-audit';
import { FLOWS, startTestApp, type TestApp } from '../helpers/backend';
import { asOwner } from '../helpers/usecases';

// The administration's use cases called directly: clients, settings, providers, applications and
// flows, each one unit of work with its events (kept in the audit log), and domain errors that
// name no parameter of any endpoint.

let t: TestApp;
let appId: number;
beforeAll(async () => {
  t = await startTestApp();
  appId = (await t.runtime.db.applications.findByName('local'))!.id;
});
afterAll(() => t.close());

const call = () => ({ applicationId: appId, acting: asOwner(t) });
const lastEvents = async (n: number) => (await listAudit({ audit: t.runtime.db.audit }, { applicationId: appId, limit: n })).entries.map((e) => [e.type, e.subject.id]);

describe('clients', () => {
  it('adds a client whose secret authenticates; a reset secret stops the old one at once, in this process and (through the channel) every other', async () => {
    const { services } = t.runtime;
    const { client, secret } = await addClient(services, { ...call(), description: 'use case', features: ['direct_access'] });
    expect(await services.clients.authenticate(appId, client.clientId, secret)).toMatchObject({ clientId: client.clientId });
    const fresh = await resetSecret(services, { ...call(), forClientId: client.clientId });
    // the lookup above cached the client: the committed change dropped it (the client cache subscriber)
    expect(await services.clients.authenticate(appId, client.clientId, secret)).toBeUndefined();
    expect(await services.clients.authenticate(appId, client.clientId, fresh)).toBeDefined();
    expect(await lastEvents(2)).toEqual([['client.secret_reset', client.clientId], ['client.created', client.clientId]]);
  });

  it('refuses with domain errors: an unknown client, an owner dropping its own owner feature, a client deleting itself', async () => {
    const { services } = t.runtime;
    const owner = t.local.clients.owner.client_id;
    await expect(setFeatures(services, { ...call(), forClientId: 'nobody', features: [] })).rejects.toBeInstanceOf(NoSuchClientError);
    await expect(setFeatures(services, { ...call(), callerClientId: owner, forClientId: owner, features: ['login_client'] })).rejects.toBeInstanceOf(OwnOwnerFeatureError);
    await expect(deleteClient(services, { ...call(), callerClientId: owner, clientId: owner })).rejects.toBeInstanceOf(SelfDeletionError);
    await expect(resetSecret(services, { ...call(), forClientId: 'nobody' })).rejects.toBeInstanceOf(NoSuchClientError);
    // nothing of the refused calls was kept
    expect((await lastEvents(1))[0][0]).not.toBe('client.changed');
  });

  it('changes settings, answering them as they were, with one event per key whose value changed', async () => {
    const { services } = t.runtime;
    const login = t.local.clients.login.client_id;
    const before = await changeClientSettings(services, { ...call(), clientId: login, entries: [['brand_color', '#123456'], ['default_flow_name', 'standard']] });
    expect(before.default_flow_name).toBe('standard');
    expect(await lastEvents(1)).toEqual([['setting.changed', 'brand_color']]);
    await changeDefaultSettings(services, { ...call(), entries: [['time_attributes', 'trialEnds']] });
    expect((await t.runtime.db.applications.findById(appId))!.settings.time_attributes).toBe('trialEnds');
    await changeDefaultSettings(services, { ...call(), entries: [['time_attributes', undefined]] });
    const [removed] = (await listAudit({ audit: t.runtime.db.audit }, { applicationId: appId, limit: 1 })).entries;
    expect(removed).toMatchObject({ type: 'setting.changed', data: { key: 'time_attributes', scope: 'application', removed: true } });
  });
});

describe('providers', () => {
  const provider = { name: 'acme', kind: 'oidc' as const, issuer: 'https://id.acme.example', clientId: 'acme-client', clientSecret: 'acme-secret' };

  it('adds and removes a provider, never showing its secret; a second of one name and an unknown one are refused', async () => {
    const { services } = t.runtime;
    const view = await addProvider(services, { ...call(), provider });
    expect(view).toEqual({ name: 'acme', kind: 'oidc', issuer: 'https://id.acme.example', clientId: 'acme-client', scopes: ['openid', 'email', 'profile'] });
    await expect(addProvider(services, { ...call(), provider })).rejects.toBeInstanceOf(ProviderNameError);
    await removeProvider(services, { ...call(), name: 'acme' });
    await expect(removeProvider(services, { ...call(), name: 'acme' })).rejects.toBeInstanceOf(ProviderNameError);
    expect(await lastEvents(2)).toEqual([['provider.removed', 'acme'], ['provider.added', 'acme']]);
  });

  it.each<[Partial<NewProvider>, string]>([
    [{ name: 'Not A Label' }, 'name'], [{ issuer: 'http://id.example' }, 'issuer'], [{ clientId: 'x'.repeat(256) }, 'clientId'],
    [{ clientSecret: '' }, 'clientSecret'], [{ scopes: ['a b'] }, 'scopes'],
  ])('%j is refused naming the field %s of the provider, not a parameter', async (over, field) => {
    await expect(addProvider(t.runtime.services, { ...call(), provider: { ...provider, ...over } })).rejects.toMatchObject({ field });
    await expect(addProvider(t.runtime.services, { ...call(), provider: { ...provider, ...over } })).rejects.toBeInstanceOf(ProviderInputError);
  });
});

describe('applications and flows', () => {
  const flows = findFlowDirectories(FLOWS).map(loadFlowDirectory);
  const operator = { actor: { kind: 'operator' as const, name: 'ada' }, origin: {} };

  it('creates an application with its flows and two clients in one unit of work, and says so in its audit log', async () => {
    const created = await createApplication(t.runtime.services, { name: 'usecase-app', flows, acting: operator });
    expect(created).toMatchObject({ app: 'usecase-app', flow: { name: 'standard', version: 1 } });
    const app = (await t.runtime.db.applications.findByName('usecase-app'))!;
    const { entries } = await listAudit({ audit: t.runtime.db.audit }, { applicationId: app.id, limit: 100 });
    expect(entries.map((e) => e.type).sort()).toEqual(['application.created', 'client.created', 'client.created', ...flows.map(() => 'flow.imported')].sort());
    expect(entries.every((e) => e.actor.kind === 'operator')).toBe(true);
  });

  it('refuses a name that is not a DNS label or is taken; imports a flow once (an unchanged flow keeps its version and records nothing)', async () => {
    await expect(createApplication(t.runtime.services, { name: 'Not_A_Label', flows, acting: operator })).rejects.toBeInstanceOf(ApplicationNameError);
    await expect(createApplication(t.runtime.services, { name: 'usecase-app', flows, acting: operator })).rejects.toBeInstanceOf(ApplicationExistsError);
    await expect(importFlows(t.runtime.services, { applicationName: 'nowhere', flows, acting: operator })).rejects.toBeInstanceOf(NoSuchApplicationError);
    const imported = await importFlows(t.runtime.services, { applicationName: 'usecase-app', flows: flows.slice(0, 1), acting: operator });
    expect(imported).toEqual([expect.objectContaining({ unchanged: true })]);
  });
});
