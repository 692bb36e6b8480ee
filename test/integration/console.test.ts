import { findFlowDirectories, FlowDefinitionError, loadFlowDirectory } from '../../src/domain/flow-definition';
import { FilterError } from '../../src/domain/filter';
import { OPERATOR_ROLE_ATTRIBUTE, OperatorForbiddenError } from '../../src/domain/operators';
import { sessionOf, type SignInFactor } from '../../src/domain/session';
import type { Application } from '../../src/domain/storage/applications';
import type { UserRecord } from '../../src/domain/storage/records';
import { parseNewUser } from '../../src/domain/users';
import fs from 'node:fs';
import path from 'node:path';
import { applicationView, changeOneSetting, flowDifference, importFlowDocuments } from '../../src/usecases/operators/console-admin';
import { consoleAccount, consoleAccountAt, searchAccounts, SEARCH_PAGE } from '../../src/usecases/operators/console-reads';
import { consoleLoginClient, consoleOperator, endConsoleSession, openConsoleSession } from '../../src/usecases/operators/console';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { sendPasswordReset } from '../../src/usecases/operators/send-password-reset';
import { ensureOperatorsApplication } from '../../src/usecases/operators/operators';
import { promote } from '../../src/usecases/operators/add-operator';
import { createRecord } from '../../src/usecases/records/create-records';
import { changeRecord } from '../../src/usecases/records/change-record';
import { FLOWS, manualClock, startTestApp, type TestApp } from '../helpers/backend';

// The operators' console's use cases (docs/console.md), on the engine of the run: who may open a
// console session, what a role may do, the search of accounts and an account's page.

const clock = manualClock();
const acting = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };
let t: TestApp;
let ops: Application;
let local: Application;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { CONSOLE_PORT: '3999', CONSOLE_PUBLIC_URL: 'https://console.example.com' } });
  ({ app: ops } = await ensureOperatorsApplication(t.runtime.services, { name: 'operators', flows: () => findFlowDirectories(FLOWS).map(loadFlowDirectory), acting }));
  local = (await t.runtime.db.applications.findByName('local'))!;
});
afterAll(() => t?.close());

const make = async (app: Application, doc: Record<string, unknown>): Promise<UserRecord> => {
  const made = await createRecord(t.runtime.services, { app, origin: {}, operator: acting, record: parseNewUser(app.id, doc) });
  return (await t.runtime.db.records.find(app.id, { id: made.id }))!;
};
const call = (app: Application) => ({ origin: {}, app, clientAddress: '127.0.0.1', services: t.runtime.services });

it('makes the operators\' application with a second factor required and no registration, once', async () => {
  expect(ops.settings).toMatchObject({ second_factor: 'required', registration: 'closed' });
  const again = await ensureOperatorsApplication(t.runtime.services, { name: 'operators', flows: () => [], acting });
  expect(again).toMatchObject({ created: false, app: { id: ops.id } });
});

describe('a console session', () => {
  const callback = 'https://console.example.com/callback';
  /** The code the hosted sign-in would give the console's callback after a sign-in with `factors`. */
  async function codeFor(record: UserRecord, factors: SignInFactor[]): Promise<string> {
    const client = (await consoleLoginClient(t.runtime.services, ops))!;
    return t.runtime.services.work.run(async (uow) => t.runtime.services.tokens.issue({
      kind: 'authorization_code', app: ops, entityId: record.id, client, redirectUri: callback, family: `f${Math.random()}`, seconds: 60,
      extra: { authenticated_at: clock.now().toISOString(), session: sessionOf(factors, clock.now()) },
    }, uow.tx));
  }
  const open = async (record: UserRecord, factors: SignInFactor[]) => openConsoleSession(call(ops), {
    client: (await consoleLoginClient(t.runtime.services, ops))!, code: await codeFor(record, factors), redirectUri: callback, device: 'test',
  });

  it('opens for an operator with a role and two factors only, and answers its operator while the role allows', async () => {
    const ada = await make(ops, { email: 'ada@ops.example', password: 'operator horse battery', [OPERATOR_ROLE_ATTRIBUTE]: 'viewer' });
    const nobody = await make(ops, { email: 'nobody@ops.example', password: 'operator horse battery' });
    await expect(open(ada, ['password'])).rejects.toThrow(/two factors/);
    await expect(open(nobody, ['password', 'totp'])).rejects.toThrow(/no operator role/);
    const opened = await open(ada, ['verified_passkey']);
    const reads = await consoleOperator(call(ops), { value: opened.value, action: 'read' });
    expect(reads).toMatchObject({ role: 'viewer', name: 'ada@ops.example', acting: { actor: { kind: 'operator', name: 'ada@ops.example' } } });
    await expect(consoleOperator(call(ops), { value: opened.value, action: 'account' })).rejects.toBeInstanceOf(OperatorForbiddenError);
    // a role given is a role used at the next request; a role taken away ends the console for it
    await promote(t.runtime.services, { app: ops, record: ada, role: 'support', reset: false, acting });
    expect(await consoleOperator(call(ops), { value: opened.value, action: 'account' })).toMatchObject({ role: 'support' });
    const now = (await t.runtime.db.records.find(ops.id, { id: ada.id }))!;
    await promote(t.runtime.services, { app: ops, record: now, role: null, reset: false, acting });
    expect(await consoleOperator(call(ops), { value: opened.value, action: 'read' })).toBeUndefined();
  });

  it('ends when signed out, when the operator is disabled, and after its idle time', async () => {
    const bob = await make(ops, { email: 'bob@ops.example', password: 'operator horse battery', [OPERATOR_ROLE_ATTRIBUTE]: 'admin' });
    const first = await open(bob, ['password', 'totp']);
    const operator = (await consoleOperator(call(ops), { value: first.value, action: 'administer' }))!;
    await endConsoleSession(call(ops), { session: operator.session });
    expect(await consoleOperator(call(ops), { value: first.value, action: 'read' })).toBeUndefined();
    const second = await open(bob, ['password', 'totp']);
    await disableUser(t.runtime.services, { app: ops, entityId: bob.id, acting });
    expect(await consoleOperator(call(ops), { value: second.value, action: 'read' })).toBeUndefined();
    const carol = await make(ops, { email: 'carol@ops.example', password: 'operator horse battery', [OPERATOR_ROLE_ATTRIBUTE]: 'admin' });
    const third = await open(carol, ['password', 'totp']);
    clock.advance(31 * 60_000);
    expect(await consoleOperator(call(ops), { value: third.value, action: 'read' })).toBeUndefined();
  });
});

describe('the search of accounts', () => {
  beforeAll(async () => {
    await make(local, { email: 'augusta@example.com', givenName: 'Ada', familyName: 'Lovelace' });
    await make(local, { email: 'grace@example.com', givenName: 'Grace', familyName: 'Hopper', username: 'amazing' });
    for (let i = 0; i < SEARCH_PAGE + 1; i++) await make(local, { email: `pager-${String(i).padStart(2, '0')}@example.com` });
  });
  const find = (text: string, page = 0) => searchAccounts(t.runtime.services, { app: local, text, page });
  const emails = (found: Awaited<ReturnType<typeof find>>) => found.rows.map((r) => r.record.email);

  it('finds by the beginning of a name, a username or an address, typed in any case', async () => {
    expect(emails(await find('lov'))).toEqual(['augusta@example.com']);
    expect(emails(await find('AMAZ'))).toEqual(['grace@example.com']);
    expect(emails(await find('GRACE@Ex'))).toEqual(['grace@example.com']);
    expect(emails(await find('nobody-has-this'))).toEqual([]);
  });

  it('pages newest first, and says whether there is more', async () => {
    const first = await find('pager-');
    expect(first.rows).toHaveLength(SEARCH_PAGE);
    expect(first.more).toBe(true);
    // every match counted, not only a page's
    expect(first.total).toBe(SEARCH_PAGE + 1);
    expect(first.rows[0].record.email).toBe(`pager-${SEARCH_PAGE}@example.com`);
    const second = await find('pager-', 1);
    expect(emails(second)).toEqual(['pager-00@example.com']);
    expect(second.more).toBe(false);
    expect(second.total).toBe(SEARCH_PAGE + 1);
    expect(first.rows.every((r) => r.record.passwordHash === null)).toBe(true);
  });

  it('takes the filter language as /entity.find does, and says what is wrong with a filter', async () => {
    const found = await find("familyName = 'Hopper'");
    expect(emails(found)).toEqual(['grace@example.com']);
    expect(found.total).toBe(1);
    await expect(find("familyName = 'Hopper")).rejects.toBeInstanceOf(FilterError);
  });
});

it('shows an account: its history as differences and as it was at a time, its activity, its state', async () => {
  const record = await make(local, { email: 'history@example.com', password: 'history horse battery', givenName: 'Old' });
  const created = clock.now();
  clock.advance(1_000);
  await changeRecord(t.runtime.services, {
    app: local, acting, writer: { record, byUser: false, fresh: false, clientId: null }, kind: 'record.updated', change: (doc) => ({ ...doc, givenName: 'New' }),
  });
  await disableUser(t.runtime.services, { app: local, entityId: record.id, acting, reason: 'asked to' });
  const account = (await consoleAccount(t.runtime.services, { app: local, entityId: record.id }))!;
  expect(account.record.passwordHash).toBeNull();
  expect(account.hasPassword).toBe(true);
  expect(account.record.disabled).toMatchObject({ reason: 'asked to' });
  expect(account.history[0]).toMatchObject({ version: 2, changes: [{ attribute: 'givenName', from: 'Old', to: 'New' }], by: { type: 'record.updated', actor: { kind: 'operator', name: 'test' } } });
  expect(account.activity.map((e) => e.type)).toContain('account.disabled');
  expect(await consoleAccountAt(t.runtime.services, { app: local, entityId: record.id, at: new Date(created.getTime() + 500) })).toMatchObject({ givenName: 'Old' });
  expect(await consoleAccountAt(t.runtime.services, { app: local, entityId: record.id, at: new Date(created.getTime() - 60_000) })).toBeUndefined();
  expect(await consoleAccount(t.runtime.services, { app: local, entityId: 999_999 })).toBeUndefined();
});

describe('administering an application', () => {
  it('changes a setting as the admin API does, refusing what it would refuse', async () => {
    const change = (key: string, value: string, clientId?: string) => changeOneSetting(t.runtime.services, { app: local, key, value, acting, ...(clientId && { clientId }) });
    await expect(change('second_factor', 'sometimes')).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'value' } });
    await expect(change('not a key!', 'x')).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'key' } });
    await expect(change('default_flow_name', 'nowhere')).rejects.toThrow(/no flow "nowhere"/);
    await expect(change('brand_color', '#112233', 'no-such-client')).rejects.toMatchObject({ detail: { field: 'client' } });
    expect(await change('brand_color', '#112233')).toEqual({});
    expect(await change('brand_color', '')).toEqual({ was: '#112233' });
    expect((await t.runtime.db.applications.findByName('local'))!.settings.brand_color).toBeUndefined();
  });

  it('shows a flow\'s two versions as the leaves that changed; undefined for a version it lacks', async () => {
    const view = await applicationView(t.runtime.services, { app: local });
    const standard = view.flows.find((f) => f.name === 'standard')!;
    expect(view.clients.every((c) => !('secret' in c))).toBe(true);
    const base = (await t.runtime.db.flows.find(local.id, 'standard', standard.latest))!;
    const changed = JSON.parse(JSON.stringify(base.definition)) as { locales?: unknown; [k: string]: unknown };
    changed.extraSetting = 'new';
    await t.runtime.services.work.run((uow) => t.runtime.db.flows.insertNextVersion(local.id, 'standard', changed, 'changed', clock.now(), uow.tx));
    expect(await flowDifference(t.runtime.services, { app: local, name: 'standard', from: standard.latest, to: standard.latest + 1 }))
      .toEqual([{ attribute: 'extraSetting', from: undefined, to: 'new' }]);
    expect(await flowDifference(t.runtime.services, { app: local, name: 'standard', from: 1, to: 99 })).toBeUndefined();
  });

  it('imports a flow from its two documents as pasted, refusing what flows:import refuses', async () => {
    const read = (f: string) => fs.readFileSync(path.join(FLOWS, 'standard', f), 'utf8');
    const importing = (flow: string, translations = read('translations.json')) => importFlowDocuments(t.runtime.services, { app: local, flow, translations, acting });
    const flow = JSON.parse(read('flow.json')) as { name: string };
    const renamed = JSON.stringify({ ...flow, name: 'pasted' });
    expect(await importing(renamed)).toEqual({ name: 'pasted', version: 1 });
    expect(await importing(renamed)).toEqual({ name: 'pasted', version: 1, unchanged: true });
    await expect(importing('{"name": ')).rejects.toThrow(/flow\.json: not valid JSON/);
    await expect(importing('[1]')).rejects.toThrow(/flow\.json: must be a JSON object/);
    await expect(importing(JSON.stringify({ ...flow, name: 'Not A Name!' }))).rejects.toBeInstanceOf(FlowDefinitionError);
    expect((await t.runtime.db.flows.listNames(local.id)).map((f) => f.name)).toContain('pasted');
  });
});

it('mails a reset link as the operator, from the application\'s own login client; an account without an address gets none', async () => {
  const record = await make(local, { email: 'forgetful@example.com', password: 'forgetful horse battery' });
  await sendPasswordReset(t.runtime.services, { app: local, entityId: record.id, acting });
  const [entry] = await t.runtime.db.audit.list({ applicationId: local.id, limit: 1, type: 'account.password_reset_requested' });
  expect(entry).toMatchObject({ actor: { kind: 'operator', name: 'test' }, subject: { kind: 'record', id: String(record.id) } });
  const codes = await t.runtime.db.credentials.liveOfRecord(local.id, record.id, 'authorization_code', clock.now());
  expect(codes.some((c) => c.extra?.password_reset === true)).toBe(true);
  const nameless = await make(local, { username: 'no-address' });
  await expect(sendPasswordReset(t.runtime.services, { app: local, entityId: nameless.id, acting })).rejects.toMatchObject({ reason: 'nothing_to_do' });
});
