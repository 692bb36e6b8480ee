import { configureScim, createScimToken, listScimTokens, revokeScimToken } from './usecases/scim/tokens';
import { SCIM_PATH } from './domain/scim/schemas';
import fs from 'node:fs';
import readline from 'node:readline';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { Command } from 'commander';
import { type Config, loadConfigOrExit } from './config';
import { findFlowDirectories, FlowDefinitionError, loadFlowDirectory } from './domain/flow-definition';
import { ApplicationExistsError } from './domain/applications';
import { heldBy } from './data-dir-lock';
import { createBaseUrls } from './domain/base-urls';
import { banner } from './banner';
import { createLogger } from './logger';
import { FilterError, FilterUseError, parseFilter } from './domain/filter';
import { findRecords } from './usecases/records/find-records';
import { disableUser } from './usecases/operators/disable-user';
import { enableUser } from './usecases/operators/enable-user';
import { signOutUser } from './usecases/operators/sign-out-user';
import { resetSecondFactor } from './usecases/operators/reset-second-factor';
import { deleteUser } from './usecases/operators/delete-user';
import { eraseUser } from './usecases/operators/erase-user';
import { exportUser } from './usecases/operators/export-user';
import { importBatch, importProgress, type ImportLine } from './usecases/records/import-records';
import { passwordFormatOf } from './domain/imported-hashes';
import { renderAccountExport } from './domain/account-export';
import { operatorActing, type AccountCommand, type OperatorDeps } from './usecases/operators/deps';
import { createApplication } from './usecases/applications/create-application';
import { importFlows } from './usecases/applications/import-flows';
import { addProvider } from './usecases/providers/add-provider';
import { removeProvider } from './usecases/providers/remove-provider';
import { buildAttributeIndexes, indexAttribute, listIndexedAttributes, unindexAttribute } from './usecases/records/indexed-attributes';
import { BUILD_DELAY_MS } from './domain/indexed-attributes';
import { rotateSigningKeys } from './usecases/keys/signing-keys';
import { addClient } from './usecases/clients/add-client';
import { applied, changeClientSettings, changeDefaultSettings, flowSettingsProblem } from './usecases/clients/change-settings';
import { parseFeatures } from './domain/clients';
import { SETTING_KEY, SETTING_KEY_FORM, settingValueProblem } from './domain/settings';
import { ProviderInputError } from './domain/social/providers';
import { listAudit } from './usecases/audit/list-audit';
import {
  addWebhook, listDeliveries, listWebhooks, MAX_DELIVERIES, pingWebhook, redeliverWebhooks, removeWebhook, rotateWebhookSecret, setWebhookEnabled,
} from './usecases/webhooks/endpoints';
import { shown as shownEndpoint, shownDelivery } from './http/handlers/webhooks';
import { shownLogout } from './http/handlers/admin-clients';
import { listLogouts, MAX_LOGOUTS_LISTED } from './usecases/oidc/backchannel-logout';
import { shownConnection, shownInvitation, shownMember, shownOrganization } from './http/handlers/organizations';
import { addConnection, listConnections, removeConnection } from './usecases/organizations/connections';
import { shownServiceProvider } from './http/handlers/saml';
import { shownApi, shownRole } from './http/handlers/apis';
import { addApi, grantApiToClient, listApis, removeApi, updateApi } from './usecases/apis/apis';
import { accountRoles, changeAccountRoles, defineAppRole, listAppRoles, removeAppRole } from './usecases/apis/roles';
import { addServiceProvider, listServiceProviders, removeServiceProvider, updateServiceProvider } from './usecases/saml/service-providers';
import { createOrganization, listOrganizations } from './usecases/organizations/organizations';
import { addMember, listMembers, removeMember, setMemberRoles } from './usecases/organizations/members';
import { createInvitation } from './usecases/organizations/invitations';
import { addDomain, listDomains, setDomainJoinable, verifyDomain } from './usecases/organizations/domains';
import { AuditQueryError, auditQuery } from './domain/audit-query';
import { shownAuditEntry } from './http/handlers/audit';
import { listActivity } from './usecases/activity/list-activity';
import { ActivityQueryError, activityQuery, MAX_ACTIVITY_PAGE, renderActivityEntry } from './domain/activity';
import type { Acting } from './domain/events';
import { parseNewUser, renderDisable, renderWithProfiles } from './domain/users';
import { formatTimestamp, parseTimestamp } from './domain/timestamps';
import { Refusal } from './domain/refusal';
import { DuplicateAttributeError, isDisabled, type RecordKey, type UserRecord } from './domain/storage/records';
import type { Application } from './domain/storage/applications';
import { AttributeRefusedError, changeRecord, RecordGoneError } from './usecases/records/change-record';
import { createRecord } from './usecases/records/create-records';
import { recordHistory } from './usecases/records/record-history';
import { recordOrHistory } from './usecases/records/record-or-history';
import { ensureOperatorsApplication } from './usecases/operators/operators';
import { addOperator, promote, type OperatorAdded } from './usecases/operators/add-operator';
import { OPERATOR_ROLE_ATTRIBUTE, OPERATOR_ROLES, operatorRoleOf, type OperatorRole } from './domain/operators';
import type { createCommandCore } from './runtime';
import os from 'node:os';
import { packageVersion, projectRoot } from './paths';

/** What a command works with: the database and its services, and the use cases' unit of work with the operator acting. */
type Core = ReturnType<typeof createCommandCore> & { acting: Acting; operator: string };

/** Who runs a command, as the audit log names the operator: OPERATOR_NAME, else the login name of the shell. */
function operatorName(): string {
  if (process.env.OPERATOR_NAME) return process.env.OPERATOR_NAME.slice(0, 64);
  try {
    return os.userInfo().username || 'operator';
  } catch {
    return 'operator';
  }
}

/**
 * Runs one command against the configured database, reporting failures as one clear message.
 * Every command reads the primary, DATABASE_READ_URL or not: an operator reads back at once what
 * the last command wrote, and `migrate` reads what it applies. The outbox rows a command commits
 * go to the command's queue (see commandQueue).
 */
async function withCore(work: (core: Core) => Promise<void>, options: { schema?: boolean } = {}): Promise<void> {
  const config = primaryOnly(loadConfigOrExit());
  // the wiring (and the engines beneath it) loads only for a command that runs: --help answers without it
  const { createCommandCore, prepareSchema } = await import('./runtime');
  const base = createCommandCore(config, createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr as never));
  const operator = operatorName();
  const core: Core = { ...base, operator, acting: operatorActing(operator) };
  try {
    if (options.schema !== false) await prepareSchema(config, core.db);
    await work(core);
  } catch (e) {
    // a use case's refusal of a field names it as the option that gave it
    const field = e instanceof Refusal ? e.detail.field : undefined;
    const message = field ? `${field.startsWith('attributes.') ? field.slice('attributes.'.length) : `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`} ${(e as Error).message}`
      : e instanceof FlowDefinitionError || e instanceof Error ? e.message : String(e);
    process.stderr.write(`gatehouse: ${message}\n`);
    process.exitCode = 1;
  } finally {
    await core.close();
  }
}

const primaryOnly = (config: Config): Config =>
  config.database.dialect === 'mysql' ? { ...config, database: { ...config.database, readUrls: [] } } : config;

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/** The flows of a folder (one flow, or a folder of them), read and checked. */
const flowSources = (root: string) => findFlowDirectories(root).map(loadFlowDirectory);

/** Every command about one application takes it as --app, the default application when omitted. */
const APP_OPTION = ['--app <name>', 'application (default: DEFAULT_APP, which defaults to local)'] as const;
const appName = (opts: { app?: string }) => opts.app ?? loadConfigOrExit().defaultApp;
async function applicationOf(core: Core, opts: { app?: string }) {
  const name = appName(opts);
  const found = await core.db.applications.findByName(name);
  if (!found) throw new Error(`there is no application "${name}"; create it with: npx gatehouse apps:create ${name}`);
  return found;
}

const program = new Command('gatehouse')
  .description('Gatehouse: registration and authentication service')
  .version(packageVersion(), '-V, --version', 'print the version')
  .showHelpAfterError();

program.command('migrate')
  .description('apply pending database migrations')
  .action(() => withCore(async ({ db }) => {
    const { migrate } = await import('./db/migrate');
    const applied = await migrate(db);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'the database is up to date\n');
  }, { schema: false }));

program.command('migrate:status')
  .description('list pending migrations; exits 1 when some are pending')
  .action(() => withCore(async ({ db }) => {
    const { pendingMigrations } = await import('./db/migrate');
    const pending = await pendingMigrations(db);
    process.stdout.write(pending.length ? `pending: ${pending.join(', ')}\n` : 'the database is up to date\n');
    if (pending.length) process.exitCode = 1;
  }, { schema: false }));

program.command('init')
  .description('create the DEFAULT_APP application with its flows and clients unless it exists (safe to run on every deploy)')
  .action(() => withCore(async (core) => {
    const config = loadConfigOrExit();
    try {
      const created = await createApplication(core, { name: config.defaultApp, flows: () => flowSources(path.join(projectRoot(), 'flows')), acting: core.acting });
      process.stdout.write(banner(created, config.publicBaseUrl, process.stdout.isTTY === true));
    } catch (e) {
      if (!(e instanceof ApplicationExistsError)) throw e;
      process.stdout.write(`the application "${config.defaultApp}" exists; nothing to do (its clients: npx gatehouse clients:list --app ${config.defaultApp})\n`);
    }
  }));

/** Where an application's pages and API answer, made of PUBLIC_BASE_URL as the server makes it. */
const baseUrlOf = (name: string) => {
  const config = loadConfigOrExit();
  return createBaseUrls(config.publicBaseUrl, config.defaultApp).of(name);
};

/**
 * Where the server answers, as this command can know it: PUBLIC_BASE_URL (or PORT) as set here, else
 * what the embedded default's running api wrote in its data folder; undefined when nothing says.
 */
function knownBaseUrl(name: string): string | undefined {
  if (process.env.PUBLIC_BASE_URL || process.env.PORT) return baseUrlOf(name);
  const config = loadConfigOrExit();
  const running = config.embedded ? heldBy(config.varDir)?.publicBaseUrl : undefined;
  return running ? createBaseUrls(running, config.defaultApp).of(name) : undefined;
}

/** Says why a printed address (`field`) is null: this shell cannot know where the server answers, and a guess would be taken for it. */
const warnUnknownBaseUrl = (field = 'base_url') => process.stderr.write(
  `gatehouse: the server's address is not known here (${field} null): run this with the PUBLIC_BASE_URL (or PORT) the server has\n`,
);

program.command('apps:create')
  .argument('<name>', 'application name: the first label of its host name (demo → demo.example.com)')
  .option('--json', 'print the result as one JSON object')
  .option('--flows <dir>', 'folder of flows to import', path.join(projectRoot(), 'flows'))
  .description('create an application with its flows, an owner client and a login client')
  .action((name: string, opts: { json?: boolean; flows: string }) => withCore(async (core) => {
    const created = await createApplication(core, { name, flows: () => flowSources(path.resolve(opts.flows)), acting: core.acting });
    const { flows: _all, ...summary } = created;
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else print(summary);
    // the login client's reset and verification links are under the application's own base URL,
    // made of PUBLIC_BASE_URL: the server's, not this shell's
    if (!process.env.PUBLIC_BASE_URL) {
      process.stderr.write(`gatehouse: PUBLIC_BASE_URL is not set, so the login client's password_recover_url and verify_email_url are under ${baseUrlOf(name)}; `
        + 'run this with the PUBLIC_BASE_URL the server has, or change them with /settings/set\n');
    }
  }));

program.command('apps:list')
  .description('print every application: its name, base URL and how many users and clients it has')
  .action(() => withCore(async (core) => {
    const apps = (await core.db.applications.list()).sort((a, b) => a.name.localeCompare(b.name));
    const config = loadConfigOrExit();
    const listed = await Promise.all(apps.map(async (app) => ({
      name: app.name, id: app.id, base_url: knownBaseUrl(app.name) ?? null,
      users: await core.db.records.count(app.id, undefined, config.entityQueryTimeoutMs), clients: (await core.clients.list(app.id)).length,
    })));
    print(listed);
    if (listed.some((a) => a.base_url === null)) warnUnknownBaseUrl();
  }));

program.command('apps:show')
  .argument('[name]', 'application name (default: DEFAULT_APP, which defaults to local)')
  .description('print one application: its base URL, settings, clients (without their secrets), identity providers and how many users it has')
  .action((name: string | undefined) => withCore(async (core) => {
    const app = await applicationOf(core, { app: name });
    const config = loadConfigOrExit();
    const baseUrl = knownBaseUrl(app.name) ?? null;
    print({
      name: app.name, id: app.id, base_url: baseUrl, settings: app.settings,
      users: await core.db.records.count(app.id, undefined, config.entityQueryTimeoutMs),
      clients: (await core.clients.list(app.id)).map((c) => ({ client_id: c.clientId, description: c.description, features: c.features })),
      providers: (await core.db.social.providers.list(app.id)).map((p) => p.name),
    });
    if (baseUrl === null) warnUnknownBaseUrl();
  }));

program.command('flows:import')
  .argument('<dir>', 'a flow folder (flow.json + translations.json), or a folder of them')
  .option(...APP_OPTION)
  .description('import flows as new immutable versions (a flow identical to its newest version keeps it)')
  .action((dir: string, opts: { app?: string }) => withCore(async (core) => {
    const imported = await importFlows(core, { applicationName: appName(opts), flows: flowSources(path.resolve(dir)), acting: core.acting });
    print(imported.length === 1 ? imported[0] : imported);
  }));

program.command('flows:validate')
  .argument('<dir>', 'a flow folder (flow.json + translations.json), or a folder of them')
  .description('check flows as flows:import does, without a database and without writing anything')
  .action((dir: string) => {
    try {
      const dirs = findFlowDirectories(path.resolve(dir));
      const checked = dirs.map((d) => {
        const { definition, checksum } = loadFlowDirectory(d);
        return { name: definition.name, locales: definition.locales, forms: Object.keys(definition.forms), checksum };
      });
      print(checked.length === 1 ? checked[0] : checked);
    } catch (e) {
      process.stderr.write(`gatehouse: ${(e as Error).message}\n`);
      process.exitCode = 1;
    }
  });

program.command('clients:list')
  .option(...APP_OPTION)
  .description("print an application's clients with their secrets")
  .action((opts: { app?: string }) => withCore(async (core) => {
    const all = await core.clients.list((await applicationOf(core, opts)).id);
    print(all.map((c) => ({ client_id: c.clientId, client_secret: c.secret, description: c.description, features: c.features, settings: c.settings })));
  }));

program.command('clients:logouts')
  .argument('<client_id>', 'the login client, as clients:list prints it')
  .option('--limit <n>', `how many, 1 to ${MAX_LOGOUTS_LISTED}`, '20')
  .option(...APP_OPTION)
  .description("print the latest logout tokens sent to a login client's back-channel logout address, newest first: state, attempts, the app's status and first bytes (docs/openid-connect.md#back-channel-logout)")
  .action((clientId: string, opts: { app?: string; limit: string }) => withCore(async (core) => {
    const limit = Number(opts.limit);
    if (!/^\d{1,3}$/.test(opts.limit) || limit < 1 || limit > MAX_LOGOUTS_LISTED) throw new Error(`--limit must be a whole number from 1 to ${MAX_LOGOUTS_LISTED}`);
    print((await listLogouts(core, { app: await applicationOf(core, opts), clientId, limit })).map(shownLogout));
  }));

program.command('clients:add')
  .option(...APP_OPTION)
  .requiredOption('--description <text>', 'what the client is, as the operators see it (an app, a backend)')
  .option('--features <features...>', 'its features: login_client (an app people sign in to: an OpenID client too), owner, access_issuer, direct_access, direct_read_access', ['login_client'])
  .description('add a client to the application; prints its id and its secret (shown once here, and by clients:list), and what it changed')
  .action((opts: { app?: string; description: string; features: string[] }) => withCore(async (core) => {
    const features = parseFeatures(opts.features, '--features');
    const app = await applicationOf(core, opts);
    const added = await addClient(core, { applicationId: app.id, acting: core.acting, description: opts.description, features });
    const { settings, own } = added;
    const changed = [`added the client ${added.client.clientId} (${features.join(', ')}) to the application "${app.name}"`];
    if (settings) changed.push(`its hosted pages show the flow ${settings.default_flow_name} version ${settings.default_flow_version}, as the application's own login client's do`);
    if (own) {
      changed.push(`the account page (/account) still signs in with ${own.clientId} unless its link names a client_id; `
        + 'the setting account_client_id chooses another');
      changed.push('set its redirect_uris before an app signs in with it (settings:set redirect_uris URL --client ID)');
    }
    print({ client_id: added.client.clientId, client_secret: added.secret, description: added.client.description, features: added.client.features, ...(settings && { settings }), changed });
  }));

/** The application a settings command is about, and the client `--client` names (which must be the application's). */
async function settingsTarget(core: Core, opts: { app?: string; client?: string }) {
  const app = await applicationOf(core, opts);
  const client = opts.client === undefined ? undefined : await core.clients.find(app.id, opts.client);
  if (opts.client !== undefined && !client) throw new Error(`application "${app.name}" has no client ${opts.client}`);
  return { app, client };
}

program.command('settings:set')
  .argument('<key>', 'the setting, such as redirect_uris, token_endpoint_auth_method or second_factor (docs/api-guide.md: the settings Gatehouse reads)')
  .argument('<value>', 'its new value; an empty one ("") removes the setting')
  .option(...APP_OPTION)
  .option('--client <client_id>', "set it on this client only (else it is the application's default)")
  .description("change a setting of the application or of one of its clients, checked as the admin API checks it")
  .action((key: string, value: string, opts: { app?: string; client?: string }) => withCore(async (core) => {
    if (!SETTING_KEY.test(key)) throw new Error(`the key ${SETTING_KEY_FORM}`);
    const problem = value === '' ? undefined : settingValueProblem(key, value);
    if (problem) throw new Error(problem);
    const { app, client } = await settingsTarget(core, opts);
    const entries = [[key, value === '' ? undefined : value] as const];
    const flowProblem = await flowSettingsProblem(core.db.flows, app.id, applied({ ...app.settings, ...client?.settings }, entries), [key]);
    if (flowProblem) throw new Error(flowProblem);
    const call = { applicationId: app.id, acting: core.acting, entries };
    const before = client ? await changeClientSettings(core, { ...call, clientId: client.clientId }) : await changeDefaultSettings(core, call);
    print({ key, value: value === '' ? null : value, was: before[key] ?? null, scope: client ? { client_id: client.clientId } : 'application' });
  }));

program.command('settings:list')
  .option(...APP_OPTION)
  .option('--client <client_id>', "a client's settings over the application's defaults")
  .description("print the application's settings, or those a client reads (its own over the application's)")
  .action((opts: { app?: string; client?: string }) => withCore(async (core) => {
    const { app, client } = await settingsTarget(core, opts);
    print({ ...app.settings, ...client?.settings });
  }));

/** The option or argument of providers:add each field of a new provider comes from. */
const PROVIDER_OPTION = { name: 'the name', kind: '--kind', issuer: '--issuer', clientId: '--client-id', clientSecret: '--client-secret', scopes: '--scopes' } as const;

program.command('providers:add')
  .argument('<name>', 'provider name, part of its URLs (/social/NAME/start): google, github, …')
  .option(...APP_OPTION)
  .requiredOption('--issuer <url>', 'OpenID Connect issuer (https://accounts.google.com), or https://github.com')
  .requiredOption('--client-id <id>', 'client id the provider gave this application')
  .requiredOption('--client-secret <secret>', 'client secret the provider gave this application')
  .option('--kind <kind>', 'oidc (any OpenID Connect provider, by discovery) or github', 'oidc')
  .option('--scopes <scopes...>', 'scopes to ask for (default: openid email profile; GitHub: read:user user:email)')
  .description('add an identity provider to the application\'s social login')
  .action((name: string, opts: { app?: string; issuer: string; clientId: string; clientSecret: string; kind: string; scopes?: string[] }) =>
    withCore(async (core) => {
      const provider = { name, kind: opts.kind as 'oidc' | 'github', issuer: opts.issuer, clientId: opts.clientId, clientSecret: opts.clientSecret, scopes: opts.scopes };
      try {
        print(await addProvider(core, { applicationId: (await applicationOf(core, opts)).id, acting: core.acting, provider }));
      } catch (e) {
        // named as the command's options are
        if (e instanceof ProviderInputError) throw new Error(`${PROVIDER_OPTION[e.field]} ${e.message}`);
        throw e;
      }
    }));

program.command('providers:list')
  .option(...APP_OPTION)
  .description("list the application's identity providers (never their secrets)")
  .action((opts: { app?: string }) => withCore(async (core) => {
    print(await core.providers.list((await applicationOf(core, opts)).id));
  }));

program.command('providers:remove')
  .argument('<name>', 'provider name')
  .option(...APP_OPTION)
  .description('remove an identity provider (identities already linked stay linked)')
  .action((name: string, opts: { app?: string }) => withCore(async (core) => {
    await removeProvider(core, { applicationId: (await applicationOf(core, opts)).id, acting: core.acting, name });
    process.stdout.write(`removed provider ${name}\n`);
  }));

const shownIndex = (a: { name: string; state: string; created: Date; ready: Date | null }) => ({ name: a.name, state: a.state, created: a.created.toISOString(), ready: a.ready && a.ready.toISOString() });

program.command('attributes:index')
  .argument('<name>', 'an attribute of the records: familyName, or a member of one as primaryAddress.country')
  .option(...APP_OPTION)
  .option('--wait', 'build it now, in this process, and return once searches use it (else the maintenance worker builds it)')
  .description('index an attribute of the records for /entity.find (=, ranges, is null); built online in batches')
  .action((name: string, opts: { app?: string; wait?: boolean }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const { index, declared } = await indexAttribute(core, { applicationId: app.id, acting: core.acting, name });
    process.stdout.write(declared ? `indexed ${index.name}: building\n` : `${index.name} is indexed already (${index.state})\n`);
    if (!opts.wait) return;
    // every pod keeps the new index within BUILD_DELAY_MS; the build starts after it
    for (;;) {
      const now = (await listIndexedAttributes(core, { applicationId: app.id })).find((a) => a.name === index.name);
      if (!now || now.state === 'removing') throw new Error(`the index of ${index.name} was removed meanwhile`);
      if (now.state === 'ready') break;
      const built = await buildAttributeIndexes(core, { batchSize: 1000, maxBatches: 100 });
      if (built.records > 0) process.stdout.write(`  ${built.records} records\n`);
      else await new Promise((r) => setTimeout(r, Math.min(1000, BUILD_DELAY_MS)));
    }
    process.stdout.write(`${index.name} is ready: searches use it\n`);
  }));

program.command('attributes:list')
  .option(...APP_OPTION)
  .description('list the indexed attributes (building or ready)')
  .action((opts: { app?: string }) => withCore(async (core) => {
    print((await listIndexedAttributes(core, { applicationId: (await applicationOf(core, opts)).id })).map(shownIndex));
  }));

program.command('attributes:unindex')
  .argument('<name>', 'an indexed attribute')
  .option(...APP_OPTION)
  .description("remove an attribute's index (searches on it scan again, within the cost limits)")
  .action((name: string, opts: { app?: string }) => withCore(async (core) => {
    await unindexAttribute(core, { applicationId: (await applicationOf(core, opts)).id, acting: core.acting, name });
    process.stdout.write(`removed the index of ${name}\n`);
  }));

program.command('keys:rotate')
  .option(...APP_OPTION)
  .option('--force', 'rotate even when the next keys were published less than a day ago')
  .description('rotate the OpenID provider\'s signing keys: the next keys (published since the last rotation) sign from now on, the current ones stay published until what they signed has expired, new next keys are published')
  .action((opts: { app?: string; force?: boolean }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    print(await rotateSigningKeys(core, { applicationId: app.id, applicationName: app.name, acting: core.acting, force: opts.force === true }));
  }));

const WHO = ['<who>', 'an email address, a username, a uuid or an id'] as const;

/** The user an operator names by email, username, uuid or id. */
/** A user, or a deleted one by its history (its uuid or id): what erasing it and reading its history name. */
async function userOrHistoryOf(core: Core, app: Application, who: string): Promise<{ found?: UserRecord; entityId: number }> {
  const named = await recordOrHistory(core, { applicationId: app.id, key: recordKeyOf(who) });
  if (!named) throw new Error(`application "${app.name}" has no user ${JSON.stringify(who)}, and no history of one`);
  return { found: named.record, entityId: named.entityId };
}

/** How a command names a user: an id, a uuid, an email address or a username. */
const recordKeyOf = (who: string): RecordKey =>
  (/^\d{1,15}$/.test(who) ? { id: Number(who) } : /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(who) ? { uuid: who } : who.includes('@') ? { email: who } : { username: who });

async function userOf(core: Core, opts: { app?: string }, who: string) {
  const app = await applicationOf(core, opts);
  const record = await core.db.records.find(app.id, recordKeyOf(who));
  if (!record) throw new Error(`application "${app.name}" has no user ${JSON.stringify(who)}`);
  return { app, record };
}

/**
 * A secret the operator types: standard input when it is not a terminal (`printf %s "$PW" | …`), else
 * asked on the terminal without echo. Never an argument: those show in `ps` and the shell's history.
 */
async function readSecret(prompt: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    let text = '';
    for await (const chunk of input) text += chunk;
    return text.replace(/\r?\n$/, '');
  }
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.resume();
  input.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let typed = '';
    const done = (error?: Error) => {
      input.setRawMode(false);
      input.pause();
      input.removeListener('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n') return done();
        if (c === '\u0003') return done(new Error('cancelled'));
        if (c === '\u007f' || c === '\b') typed = typed.slice(0, -1);
        else typed += c;
      }
    };
    input.on('data', onData);
  });
}

/** A change of a user through the record use case, as the application's backend makes it through the record API (docs/api.md#who-may-change-what). */
async function changeUser(core: Core, app: Application, record: UserRecord, change: (doc: Record<string, unknown>) => Record<string, unknown>, password?: string) {
  try {
    return await changeRecord(core, { app, acting: core.acting, writer: { record, byUser: false, fresh: false, clientId: null }, kind: 'record.updated', change, password });
  } catch (e) {
    if (e instanceof AttributeRefusedError) throw new Error(`${e.attribute}: ${e.message}`);
    if (e instanceof RecordGoneError) throw new Error('the user was deleted meanwhile');
    throw e;
  }
}

program.command('users:create')
  .argument('<email>', 'the new user\'s email address')
  .option(...APP_OPTION)
  .option('--username <name>', 'a username too')
  .option('--attributes <json>', 'more attributes, as a JSON object (such as \'{"givenName":"Ada"}\')')
  .option('--password', 'give it a password: read from standard input, or asked without echo on a terminal')
  .option('--verified', 'its email address is verified already')
  .description('create a user (as /entity.create does), recorded under the operator\'s name')
  .action((email: string, opts: { app?: string; username?: string; attributes?: string; password?: boolean; verified?: boolean }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    let attributes: unknown = {};
    if (opts.attributes !== undefined) {
      try {
        attributes = JSON.parse(opts.attributes);
      } catch {
        throw new Error('--attributes is not JSON: write an object such as \'{"givenName":"Ada"}\'');
      }
    }
    if (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes)) throw new Error('--attributes must be a JSON object');
    if (Object.hasOwn(attributes, 'password')) throw new Error('--attributes has a password: give it with --password (read from standard input, never an argument, which ps and the shell\'s history show)');
    const password = opts.password ? await readSecret('password: ') : undefined;
    const document = {
      ...attributes, email, ...(opts.username !== undefined && { username: opts.username }), ...(password !== undefined && { password }),
      ...(opts.verified && { emailVerified: formatTimestamp(new Date()) }),
    };
    const record = parseNewUser(app.id, document);
    try {
      const created = await createRecord(core, { app, origin: {}, operator: core.acting, record });
      print({ id: created.id, uuid: created.uuid });
    } catch (e) {
      if (e instanceof DuplicateAttributeError) throw new Error(`another user already has this ${e.attribute}`);
      throw e;
    }
  }));

program.command('users:set-password')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('set a user\'s password: read from standard input, or asked without echo on a terminal (the rules of /entity.update apply; its sessions stay)')
  .action((who: string, opts: { app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    const password = await readSecret('new password: ');
    await changeUser(core, app, record, (doc) => doc, password);
    process.stdout.write(`set the password of user ${record.id} (${record.uuid})\n`);
  }));

program.command('users:verify-email')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('mark a user\'s email address as verified now')
  .action((who: string, opts: { app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    if (!record.email) throw new Error(`user ${record.id} has no email address to verify`);
    await changeUser(core, app, record, (doc) => ({ ...doc, emailVerified: formatTimestamp(new Date()) }));
    process.stdout.write(`verified the email address of user ${record.id} (${record.uuid})\n`);
  }));

/** The operators' application's name (docs/console.md): CONSOLE_APP, else `operators`. */
const operatorsAppName = (opts: { app?: string }) => opts.app ?? process.env.CONSOLE_APP ?? 'operators';
const OPERATORS_APP_OPTION = ['--app <name>', 'the operators\' application (default: CONSOLE_APP, which defaults to operators)'] as const;
const roleOption = (role: string): OperatorRole => {
  const found = OPERATOR_ROLES.find((r) => r === role);
  if (!found) throw new Error(`--role must be one of ${OPERATOR_ROLES.join(', ')} (viewer reads; support also acts on accounts; admin also administers applications)`);
  return found;
};

/** What operators:add and operators:role say they did. */
function saidOfOperator(email: string, done: OperatorAdded | { kind: 'role_removed' }): string {
  switch (done.kind) {
    case 'created': return done.mailed
      ? `created the operator ${email} (${operatorRoleOf(done.record)}) and mailed it a link to choose its password (single use, within 3 days; using it verifies the address); its first sign-in adds a second factor\n`
      : `created the operator ${email} (${operatorRoleOf(done.record)}) with the password given; its address is unverified and its first sign-in adds a second factor\n`;
    case 'role_set': return done.from === done.to ? `${email} is an operator (${done.to}) already\n` : `${email} is an operator: ${done.from} before, ${done.to} now\n`;
    case 'taken_over': return `took over the account ${email}: its password, second factor, passkeys, linked identities, sessions and verified mark are removed; it is an operator (${operatorRoleOf(done.record)}) and was mailed a link to choose its password (single use, within 3 days)\n`;
    case 'role_removed': return `${email} is no longer an operator (its console sessions stop working at once)\n`;
  }
}

const RESET_OPTION = ['--reset', 'take over an account that exists but was not made an operator by operators:add (someone may have registered it first): remove its password, second factor, passkeys, linked identities, sessions and verified mark, and mail it a link to choose a password'] as const;

program.command('operators:add')
  .argument('<email>', 'the operator\'s email address')
  .requiredOption('--role <role>', `what the operator may do in the console: ${OPERATOR_ROLES.join(', ')}`)
  .option(...OPERATORS_APP_OPTION)
  .option('--password', 'give a new operator a password (read from standard input, or asked without echo on a terminal) instead of mailing it a link to choose one')
  .option(...RESET_OPTION)
  .description('make an operator of the console: the operators\' application is created when missing (second factor required, no registration), the account when it has none (mailed a single-use link to choose its password), and its role set; an account this command did not make is refused unless --reset')
  .action((email: string, opts: { app?: string; role: string; password?: boolean; reset?: boolean }) => withCore(async (core) => {
    const role = roleOption(opts.role);
    const { app, created } = await ensureOperatorsApplication(core, { name: operatorsAppName(opts), flows: () => flowSources(path.join(projectRoot(), 'flows')), acting: core.acting });
    if (created) process.stdout.write(`created the operators' application "${app.name}" (a second factor is required to sign in; nobody registers there)\n`);
    const password = opts.password ? await readSecret('password: ') : undefined;
    process.stdout.write(saidOfOperator(email, await addOperator({ ...core, entityQueryTimeoutMs: loadConfigOrExit().entityQueryTimeoutMs }, { app, email, role, password, reset: opts.reset === true, acting: core.acting })));
  }));

program.command('operators:role')
  .argument(...WHO)
  .argument('<role>', `${OPERATOR_ROLES.join(', ')}, or none to take the role away (its console sessions stop working at once)`)
  .option(...OPERATORS_APP_OPTION)
  .option(...RESET_OPTION)
  .description('change what an operator may do in the console (an account that is no operator is refused unless --reset)')
  .action((who: string, roleText: string, opts: { app?: string; reset?: boolean }) => withCore(async (core) => {
    const role = roleText === 'none' ? null : roleOption(roleText);
    const { app, record } = await userOf(core, { app: operatorsAppName(opts) }, who);
    process.stdout.write(saidOfOperator(record.email ?? who, await promote({ ...core, entityQueryTimeoutMs: loadConfigOrExit().entityQueryTimeoutMs }, { app, record, role, reset: opts.reset === true, acting: core.acting })));
  }));

program.command('operators:list')
  .option(...OPERATORS_APP_OPTION)
  .description('the operators of the console and their roles')
  .action((opts: { app?: string }) => withCore(async (core) => {
    const app = await core.db.applications.findByName(operatorsAppName(opts));
    if (!app) throw new Error(`there is no operators' application "${operatorsAppName(opts)}" yet: gatehouse operators:add EMAIL --role admin makes it`);
    const found = await findRecords({ db: core.db, entityQueryTimeoutMs: loadConfigOrExit().entityQueryTimeoutMs }, { applicationId: app.id, filter: parseFilter(`${OPERATOR_ROLE_ATTRIBUTE} is not null`), sortOn: ['email'], limit: 1000, offset: 0, total: false });
    print(found.results.map((r) => ({ email: r.email ?? null, uuid: r.uuid, role: r[OPERATOR_ROLE_ATTRIBUTE] })));
  }));

program.command('users:password-formats')
  .option(...APP_OPTION)
  .description('count the application\'s users by the format of their password hash: argon2id (Gatehouse\'s own), those still on a hash imported from another system (each becomes argon2id at its next sign-in), none')
  .action((opts: { app?: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const counts = await core.db.records.countPasswordFormats(app.id);
    const imported = Object.entries(counts).filter(([f]) => f !== 'argon2id' && f !== 'none').reduce((sum, [, n]) => sum + n, 0);
    print({ formats: counts, still_imported: imported });
  }));

program.command('users:show')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('print one user record as the API shows it, with its linked identities (never its password hash)')
  .action((who: string, opts: { app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    // a disabled user says since when (an account's state, not one of its attributes: the API does not show it)
    print({
      ...renderWithProfiles(record, await core.db.social.profiles.forEntity(app.id, record.id)), ...(record.disabled && isDisabled(record, new Date()) && { disabled: renderDisable(record.disabled) }),
      // how its password hash is written (never the hash): one imported from another system becomes argon2id at its next sign-in
      password_format: passwordFormatOf(record.passwordHash),
    });
  }));

/** Runs an operator's use case on one user, named by email, username, uuid or id. */
async function asOperator<T>(core: Core, opts: { app?: string }, who: string, run: (deps: OperatorDeps, command: AccountCommand, named: { app: { name: string }; record: { id: number; uuid: string; email: string | null } }) => Promise<T>): Promise<T> {
  const { app, record } = await userOf(core, opts, who);
  return run(core, { app, entityId: record.id, acting: core.acting }, { app, record });
}

program.command('users:disable')
  .argument(...WHO)
  .option(...APP_OPTION)
  .option('--until <time>', 'the disable ends by itself at this time (ISO 8601, such as 2026-12-01T09:00:00Z)')
  .option('--reason <text>', 'why, for operators (the audit log and `users:show` keep it; the person is not told)')
  .description('disable a user: no sign-in by any method (its right password is told the account is disabled), every session ends, no token of it works')
  .action((who: string, opts: { app?: string; until?: string; reason?: string }) => withCore((core) => asOperator(core, opts, who, async (deps, command, { record }) => {
    const until = opts.until === undefined ? undefined : parseTimestamp(opts.until);
    if (opts.until !== undefined && until === undefined) throw new Error('--until is not a time: write it as ISO 8601 with its zone, such as 2026-12-01T09:00:00Z');
    const { spent, disabled } = await disableUser(deps, { ...command, until, reason: opts.reason });
    const till = disabled.until ? ` until ${disabled.until.toISOString()}` : '';
    process.stdout.write(`disabled user ${record.id} (${record.uuid})${till}; ${spent} unspent token(s) and code(s) spent\n`);
  })));

program.command('users:enable')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('enable a disabled user again (sessions ended by disabling stay ended)')
  .action((who: string, opts: { app?: string }) => withCore((core) => asOperator(core, opts, who, async (deps, command, { record }) => {
    const { wasDisabled } = await enableUser(deps, command);
    process.stdout.write(wasDisabled ? `enabled user ${record.id} (${record.uuid})\n` : `user ${record.id} (${record.uuid}) was not disabled; nothing changed\n`);
  })));

program.command('users:reset-second-factor')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('remove a user\'s authenticator app and recovery codes (it lost them): the password alone signs in until it adds one again; the person is told by email')
  .action((who: string, opts: { app?: string }) => withCore((core) => asOperator(core, opts, who, async (deps, command, { record }) => {
    const { removed } = await resetSecondFactor(deps, command);
    process.stdout.write(removed ? `removed the authenticator and recovery codes of user ${record.id} (${record.uuid})\n` : `user ${record.id} (${record.uuid}) has no authenticator; nothing changed\n`);
  })));

program.command('users:signout')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('end every session of a user: access and refresh tokens, codes not yet exchanged, browser and OpenID sessions (the password stays); the person is told by email')
  .action((who: string, opts: { app?: string }) => withCore((core) => asOperator(core, opts, who, async (deps, command, { record }) => {
    const { spent } = await signOutUser(deps, command);
    process.stdout.write(`ended the sessions of user ${record.id} (${record.uuid}): ${spent} unspent token(s) and code(s) spent\n`);
  })));

program.command('users:delete')
  .argument(...WHO)
  .option(...APP_OPTION)
  .option('--yes', 'delete without asking (required: there is no undo)')
  .description('delete a user record with its tokens, codes and linked identities (its history stays for /versions/entity)')
  .action((who: string, opts: { app?: string; yes?: boolean }) => withCore((core) => asOperator(core, opts, who, async (deps, command, { app, record }) => {
    const named = `user ${record.id} (${record.uuid}${record.email ? `, ${record.email}` : ''}) of application "${app.name}"`;
    if (!opts.yes) throw new Error(`this deletes ${named} for good; run again with --yes to delete it`);
    if (!(await deleteUser(deps, command))) throw new Error(`${named} was deleted meanwhile`);
    process.stdout.write(`deleted ${named}\n`);
  })));

program.command('users:erase')
  .argument('<who>', 'the user: email, username, uuid or id (a deleted user: its uuid or id)')
  .option(...APP_OPTION)
  .option('--yes', 'erase without asking (required: there is no undo)')
  .description('erase a user for good: its record, credentials, identities, factors, passkeys, sessions, every version of its history, its events\' personal facts and its emails; a tombstone stays')
  .action((who: string, opts: { app?: string; yes?: boolean }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const { found, entityId } = await userOrHistoryOf(core, app, who);
    const named = `user ${entityId}${found ? ` (${found.uuid}${found.email ? `, ${found.email}` : ''})` : ' (deleted before)'} of application "${app.name}"`;
    if (!opts.yes) throw new Error(`this erases ${named} and every trace of it for good; run again with --yes to erase it`);
    const { erasedAt, already } = await eraseUser(core, { app, entityId, acting: core.acting });
    process.stdout.write(already ? `user ${entityId} was erased already, at ${erasedAt.toISOString()}\n` : `erased user ${entityId} of application "${app.name}"; what remains is its tombstone\n`);
  }));

program.command('users:export')
  .argument(...WHO)
  .option(...APP_OPTION)
  .option('--out <file>', 'write the document to this file (created with mode 600) instead of printing it')
  .description('one JSON document of a user: its record, identities, second factor, passkeys, sessions, activity and full history, never a secret (the right of access)')
  .action((who: string, opts: { app?: string; out?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    // the file made first (never over another), so that an export that cannot be written is not taken (nor audited)
    const fd = opts.out === undefined ? undefined : fs.openSync(opts.out, 'wx', 0o600);
    let document: ReturnType<typeof renderAccountExport>;
    try {
      document = renderAccountExport(await exportUser(core, { app, entityId: record.id, acting: core.acting }));
    } catch (e) {
      if (fd !== undefined) {
        fs.closeSync(fd);
        fs.rmSync(opts.out!);
      }
      throw e;
    }
    if (fd === undefined) {
      print(document);
      return;
    }
    fs.writeSync(fd, `${JSON.stringify(document, null, 2)}\n`);
    fs.closeSync(fd);
    process.stderr.write(`wrote the export of user ${record.id} (${record.uuid}) to ${opts.out}\n`);
  }));

program.command('users:import')
  .argument('<file>', 'a JSON Lines file: one record per line, as /entity.bulkCreate takes them (a password in clear, or {"hashed": …} from another system)')
  .option(...APP_OPTION)
  .option('--key <key>', 'the name this import resumes under (default: the file\'s path, size and time)')
  .option('--batch <n>', 'records per transaction (1 to 1000)', '1000')
  .description('create users from a file, streaming, in batches; killed and started again it goes on after the last line done (docs/import.md)')
  .action((file: string, opts: { app?: string; key?: string; batch: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const size = Math.min(1000, Math.max(1, Number(opts.batch) || 1000));
    const stat = fs.statSync(file);
    const key = createHash('sha256').update(opts.key ?? `${fs.realpathSync(file)}:${stat.size}:${stat.mtimeMs}`).digest('hex');
    const start = await importProgress(core, { app, key });
    if (start.linesDone > 0) process.stderr.write(`resuming after line ${start.linesDone} (${start.created} records created before)\n`);
    const bar = progressBar(stat.size);
    let batch: ImportLine[] = [];
    const totals = { created: 0, refused: 0, weak: 0 };
    const refuse = (line: number, message: string) => {
      totals.refused++;
      bar.clear();
      process.stderr.write(`line ${line}: ${message}\n`);
    };
    const flush = async (lastLine: number) => {
      const done = await importBatch(core, { app, acting: core.acting, key, lines: batch, lastLine });
      totals.created += done.created;
      totals.weak += done.weak;
      for (const r of done.refused) refuse(r.line, r.message);
      batch = [];
    };
    let line = 0;
    let bytes = 0;
    for await (const text of readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity })) {
      line++;
      bytes += Buffer.byteLength(text) + 1;
      if (line <= start.linesDone || text.trim() === '') continue;
      try {
        batch.push({ line, record: parseNewUser(app.id, JSON.parse(text)) });
      } catch (e) {
        if (e instanceof SyntaxError) refuse(line, `not JSON (${e.message})`);
        else if (e instanceof Refusal) refuse(line, `${e.detail.field ?? 'the record'} ${e.message}`);
        else throw e;
      }
      if (batch.length >= size) await flush(line);
      bar.show(bytes, line, totals.created);
    }
    await flush(line);
    bar.clear();
    const weak = totals.weak > 0 ? `; ${totals.weak} with a weak hash (MD5, SHA-1, SHA-2 digests: ask those users to sign in soon, their hash becomes argon2id then)` : '';
    process.stdout.write(`imported ${totals.created} users from ${line - start.linesDone} lines; ${totals.refused} lines refused${weak}\n`);
    if (totals.refused > 0) process.exitCode = 2;
  }));

/** A progress bar on a terminal (standard error), nothing otherwise; redrawn at most ten times a second. */
function progressBar(total: number) {
  const tty = process.stderr.isTTY === true;
  let drawn = 0;
  const started = Date.now();
  return {
    show(done: number, line: number, created: number) {
      if (!tty || Date.now() - drawn < 100) return;
      drawn = Date.now();
      const share = total > 0 ? Math.min(1, done / total) : 1;
      const width = 30;
      const rate = Math.round(created / Math.max(0.001, (drawn - started) / 1000));
      process.stderr.write(`\r[${'#'.repeat(Math.round(share * width)).padEnd(width, '.')}] ${(share * 100).toFixed(0).padStart(3)}%  line ${line}  ${created} created  ${rate}/s `);
    },
    clear() {
      if (tty && drawn > 0) process.stderr.write('\r\x1b[2K');
    },
  };
}

program.command('users:history')
  .argument('<who>', 'the user: email, username, uuid or id (a deleted user: its uuid or id)')
  .option(...APP_OPTION)
  .option('--limit <n>', 'the newest n versions (1 to 1000)', '20')
  .description('a user\'s versions, newest first, one JSON line each: what changed from the version before (from, to), by which change and actor')
  .action((who: string, opts: { app?: string; limit: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const { entityId } = await userOrHistoryOf(core, app, who);
    const entries = await recordHistory(core, { applicationId: app.id, entityId, limit: Number(opts.limit) || 20 });
    for (const e of entries) {
      process.stdout.write(`${JSON.stringify({
        version: e.version, at: formatTimestamp(e.at), ...(e.record === null && { deleted: true }),
        by: e.by ? { type: e.by.type, actor: e.by.actor } : null, changes: e.changes,
      })}\n`);
    }
  }));

program.command('users:find')
  .argument('<filter>', 'a filter of the entity API, such as "email = \'ada@example.com\'" or "lastLogin is null"')
  .option(...APP_OPTION)
  .option('--limit <n>', 'at most this many records (1 to 1000)', '100')
  .description('list the users a filter matches: id, uuid, email, username, created and lastLogin')
  .action((filter: string, opts: { app?: string; limit: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const limit = Math.min(1000, Math.max(1, Number(opts.limit) || 100));
    let found;
    try {
      const query = { applicationId: app.id, filter: parseFilter(filter), sortOn: [], limit, offset: 0, total: false };
      found = await findRecords({ db: core.db, entityQueryTimeoutMs: loadConfigOrExit().entityQueryTimeoutMs }, query);
    } catch (e) {
      if (e instanceof FilterError || e instanceof FilterUseError) throw new Error(`the filter is not valid: ${e.message}`);
      throw e;
    }
    print(found.results.map(({ id, uuid, email, username, created, lastLogin }) => ({ id, uuid, email, username: username ?? null, created, lastLogin: lastLogin ?? null })));
  }));

program.command('users:activity')
  .argument(...WHO)
  .option(...APP_OPTION)
  .option('--types <types>', 'only these activity types, separated by commas (account.signed_in,account.sign_in_failed)')
  .option('--since <time>', 'entries at or after this ISO 8601 time')
  .option('--until <time>', 'entries before this ISO 8601 time')
  .option('--limit <n>', `at most this many entries (1 to ${MAX_ACTIVITY_PAGE})`, '50')
  .option('--cursor <cursor>', 'continue a listing where the last one said')
  .description("print a user's activity, newest first, one JSON object per line: sign-ins, failed sign-ins, changes of how they sign in")
  .action((who: string, opts: { app?: string; types?: string; since?: string; until?: string; limit: string; cursor?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    let query;
    try {
      query = activityQuery(opts);
    } catch (e) {
      if (e instanceof ActivityQueryError) throw new Error(`--${e.field} ${e.message}`);
      throw e;
    }
    const page = await listActivity({ events: core.db.events }, { applicationId: app.id, accountId: record.id, ...query });
    for (const e of page.entries) process.stdout.write(`${JSON.stringify(renderActivityEntry(e))}\n`);
    if (page.nextCursor) process.stderr.write(`gatehouse: more entries: run again with --cursor ${page.nextCursor}\n`);
  }));

program.command('webhooks:add')
  .argument('<url>', 'where deliveries are sent: https (http and private addresses only where WEBHOOKS_ALLOW_PRIVATE=true)')
  .requiredOption('--events <types...>', 'the event types it gets (docs/webhooks.md#events), or * for every one')
  .option('--description <text>', 'what it is, as the operators see it')
  .option('--include-record', 'add the account\'s record, as it is when sent, to its user.* deliveries')
  .option(...APP_OPTION)
  .description('add a webhook endpoint to the application; prints it with its secret (whsec_…), shown this once')
  .action((url: string, opts: { events: string[]; description?: string; includeRecord?: boolean; app?: string }) => withCore(async (core) => {
    const types = opts.events.flatMap((t) => t.split(/[\s,]+/)).filter(Boolean);
    const added = await addWebhook(core, { app: await applicationOf(core, opts), acting: core.acting, url, types, description: opts.description, includeRecord: opts.includeRecord === true });
    print({ ...shownEndpoint(added.endpoint), secret: added.secret });
  }));

program.command('webhooks:list')
  .option(...APP_OPTION)
  .description("print the application's webhook endpoints (never a secret)")
  .action((opts: { app?: string }) => withCore(async (core) => {
    print((await listWebhooks(core, { app: await applicationOf(core, opts) })).map(shownEndpoint));
  }));

/** The commands about one endpoint: its id, and the application. */
const endpointCommand = (name: string, description: string) => program.command(name)
  .argument('<id>', 'the endpoint (ep_…, as webhooks:list prints it)')
  .option(...APP_OPTION)
  .description(description);

endpointCommand('webhooks:remove', 'remove a webhook endpoint: nothing more is sent to it')
  .action((id: string, opts: { app?: string }) => withCore(async (core) => {
    await removeWebhook(core, { app: await applicationOf(core, opts), acting: core.acting, endpointId: id });
    print({ removed: id });
  }));

endpointCommand('webhooks:rotate-secret', 'give a webhook endpoint a new secret (printed this once); the previous one signs too for 24 hours')
  .action((id: string, opts: { app?: string }) => withCore(async (core) => {
    const rotated = await rotateWebhookSecret(core, { app: await applicationOf(core, opts), acting: core.acting, endpointId: id });
    print({ secret: rotated.secret, previous_valid_until: formatTimestamp(rotated.previousUntil) });
  }));

endpointCommand('webhooks:test', 'send a ping to a webhook endpoint, delivered like any event; prints its webhook-id')
  .action((id: string, opts: { app?: string }) => withCore(async (core) => {
    print({ message_id: await pingWebhook(core, { app: await applicationOf(core, opts), acting: core.acting, endpointId: id }) });
  }));

endpointCommand('webhooks:deliveries', "print a webhook endpoint's latest deliveries, newest first: state, attempts, the receiver's status and first bytes")
  .option('--limit <n>', `how many, 1 to ${MAX_DELIVERIES}`, '20')
  .action((id: string, opts: { app?: string; limit: string }) => withCore(async (core) => {
    const limit = Number(opts.limit);
    if (!/^\d{1,3}$/.test(opts.limit) || limit < 1 || limit > MAX_DELIVERIES) throw new Error(`--limit must be a whole number from 1 to ${MAX_DELIVERIES}`);
    print((await listDeliveries(core, { app: await applicationOf(core, opts), endpointId: id, limit })).map(shownDelivery));
  }));

for (const enabled of [false, true]) {
  endpointCommand(enabled ? 'webhooks:enable' : 'webhooks:disable', enabled ? 'enable a webhook endpoint again: what waited is sent' : 'disable a webhook endpoint: nothing is sent to it; its deliveries wait')
    .action((id: string, opts: { app?: string }) => withCore(async (core) => {
      await setWebhookEnabled(core, { app: await applicationOf(core, opts), acting: core.acting, endpointId: id, enabled });
      print({ [enabled ? 'enabled' : 'disabled']: id });
    }));
}

endpointCommand('webhooks:redeliver', 'send a delivery again (--delivery), or every delivery given up since a time (--since)')
  .option('--delivery <id>', 'the delivery, as webhooks:deliveries prints it')
  .option('--since <time>', 'a time, such as "2026-11-27 09:00:00" or 2026-11-27T09:00:00Z')
  .action((id: string, opts: { app?: string; delivery?: string; since?: string }) => withCore(async (core) => {
    if ((opts.delivery === undefined) === (opts.since === undefined)) throw new Error('give either --delivery or --since');
    const command = { app: await applicationOf(core, opts), acting: core.acting, endpointId: id };
    if (opts.delivery !== undefined) {
      if (!/^\d{1,15}$/.test(opts.delivery)) throw new Error('--delivery must be the id of a delivery, a whole number (webhooks:deliveries prints them)');
      print({ queued: await redeliverWebhooks(core, { ...command, deliveryId: Number(opts.delivery) }) });
      return;
    }
    const since = parseTimestamp(opts.since!);
    if (!since) throw new Error('--since is not a time: write it as "2026-11-27 09:00:00" or 2026-11-27T09:00:00Z');
    print({ queued: await redeliverWebhooks(core, { ...command, since }) });
  }));

/** A metadata file's XML (`-` for standard input). */
function metadataFile(file: string): string {
  try {
    return fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch {
    throw new Error(`--metadata ${file} cannot be read: give the path of the service provider's metadata XML, or - for standard input`);
  }
}

program.command('saml:add-sp')
  .requiredOption('--metadata <file>', "the service provider's SAML metadata (an XML file, or - for standard input)")
  .option('--name <name>', 'what the operators and the activity call it (default: its entity id)')
  .option('--name-id-format <format>', 'email, or persistent (an opaque id per service provider); default: its metadata\'s first, else persistent')
  .option('--attributes <json>', 'SAML attribute names to record attributes, as JSON: {"email":"email","givenName":"givenName"}')
  .option(...APP_OPTION)
  .description("register a SAML service provider of the application's identity provider from its metadata (docs/saml.md#service-providers)")
  .action((opts: { metadata: string; name?: string; nameIdFormat?: string; attributes?: string; app?: string }) => withCore(async (core) => {
    print(shownServiceProvider(await addServiceProvider(core, {
      app: await applicationOf(core, opts), acting: core.acting, metadata: metadataFile(opts.metadata), name: opts.name, nameIdFormat: opts.nameIdFormat, attributes: opts.attributes,
    })));
  }));

program.command('saml:list-sps')
  .option(...APP_OPTION)
  .description("print the application's SAML service providers")
  .action((opts: { app?: string }) => withCore(async (core) => {
    print((await listServiceProviders(core, { app: await applicationOf(core, opts) })).map(shownServiceProvider));
  }));

program.command('saml:update-sp')
  .argument('<id>', 'the service provider (sp_…, as saml:list-sps prints it)')
  .option('--metadata <file>', 'its new metadata (new certificates or endpoints)')
  .option('--name <name>', 'its new name')
  .option('--name-id-format <format>', 'email or persistent; "" for its metadata\'s first')
  .option('--attributes <json>', 'SAML attribute names to record attributes, as JSON; "" for the defaults')
  .option(...APP_OPTION)
  .description('change a SAML service provider: its metadata, name, NameID format or attributes')
  .action((id: string, opts: { metadata?: string; name?: string; nameIdFormat?: string; attributes?: string; app?: string }) => withCore(async (core) => {
    print(shownServiceProvider(await updateServiceProvider(core, {
      app: await applicationOf(core, opts), acting: core.acting, id, ...(opts.metadata !== undefined && { metadata: metadataFile(opts.metadata) }),
      name: opts.name, nameIdFormat: opts.nameIdFormat, attributes: opts.attributes,
    })));
  }));

program.command('saml:remove-sp')
  .argument('<id>', 'the service provider (sp_…, as saml:list-sps prints it)')
  .option(...APP_OPTION)
  .description('remove a SAML service provider: its requests are refused from now on')
  .action((id: string, opts: { app?: string }) => withCore(async (core) => {
    await removeServiceProvider(core, { app: await applicationOf(core, opts), acting: core.acting, id });
    print({ removed: id });
  }));

/** An API's settings as the commands take them (docs/openid-connect.md#roles for the last two). */
type ApiOptions = { name?: string; scopes?: string; tokenLifetime?: string; rbac?: string; permissionsInToken?: string; app?: string };
const RBAC_OPTION = ['--rbac <true|false>', "a person's token has only the scopes their roles give"] as const;
const PERMISSIONS_OPTION = ['--permissions-in-token <true|false>', "a person's token lists the scopes their roles give (permissions)"] as const;
const apiSettingsOf = ({ app: _app, ...settings }: ApiOptions) => settings;

program.command('apis:add')
  .argument('<identifier>', 'its resource indicator: an absolute URI such as https://api.example.com/, the aud of its tokens')
  .option('--name <name>', 'what the operators and the activity call it (default: its identifier)')
  .option('--scopes <scopes>', 'the scopes it defines, separated by spaces: "read:orders write:orders"')
  .option('--token-lifetime <seconds>', 'how long its access tokens live, 60 to 86400 seconds (default 600)')
  .option(...RBAC_OPTION)
  .option(...PERMISSIONS_OPTION)
  .option(...APP_OPTION)
  .description("register an API the application's apps call with JWT access tokens (docs/openid-connect.md#apis)")
  .action((identifier: string, opts: ApiOptions) => withCore(async (core) => {
    print(shownApi(await addApi(core, { app: await applicationOf(core, opts), acting: core.acting, identifier, ...apiSettingsOf(opts) })));
  }));

program.command('apis:list')
  .option(...APP_OPTION)
  .description("print the application's APIs")
  .action((opts: { app?: string }) => withCore(async (core) => {
    print((await listApis(core, { app: await applicationOf(core, opts) })).map(shownApi));
  }));

program.command('apis:update')
  .argument('<id>', 'the API (api_…, as apis:list prints it)')
  .option('--name <name>', 'its new name')
  .option('--scopes <scopes>', 'the scopes it defines from now on, separated by spaces ("" for none)')
  .option('--token-lifetime <seconds>', 'its tokens\' lifetime in seconds; "" for the default')
  .option(...RBAC_OPTION)
  .option(...PERMISSIONS_OPTION)
  .option(...APP_OPTION)
  .description('change an API: its name, scopes, token lifetime or role-based access')
  .action((id: string, opts: ApiOptions) => withCore(async (core) => {
    print(shownApi(await updateApi(core, { app: await applicationOf(core, opts), acting: core.acting, id, ...apiSettingsOf(opts) })));
  }));

program.command('apis:grant')
  .argument('<id>', 'the API (api_…, as apis:list prints it)')
  .requiredOption('--client <client_id>', 'the client that calls the API as itself (the client credentials grant)')
  .requiredOption('--scopes <scopes>', 'the API\'s scopes it may ask for, separated by spaces ("" takes them back)')
  .option(...APP_OPTION)
  .description("give a client scopes of an API for its own tokens (client credentials)")
  .action((id: string, opts: { client: string; scopes: string; app?: string }) => withCore(async (core) => {
    print(shownApi(await grantApiToClient(core, { app: await applicationOf(core, opts), acting: core.acting, id, forClientId: opts.client, scopes: opts.scopes })));
  }));

program.command('apis:remove')
  .argument('<id>', 'the API (api_…, as apis:list prints it)')
  .option(...APP_OPTION)
  .description('remove an API: no token is issued for it from now on (those issued live out their lifetime)')
  .action((id: string, opts: { app?: string }) => withCore(async (core) => {
    await removeApi(core, { app: await applicationOf(core, opts), acting: core.acting, id });
    print({ removed: id });
  }));

program.command('roles:define')
  .argument('<name>', 'the role: lower-case letters, digits and _ . : - (clerk, billing_admin)')
  .option('--permissions <json>', 'the scopes of the APIs it gives, as JSON: {"https://api.example.com/":["read:orders"]}', '{}')
  .option('--description <text>', 'what it is for')
  .option(...APP_OPTION)
  .description("define a role of the application (again): the scopes of its APIs it gives (docs/openid-connect.md#roles)")
  .action((name: string, opts: { permissions: string; description?: string; app?: string }) => withCore(async (core) => {
    print(shownRole(await defineAppRole(core, { app: await applicationOf(core, opts), acting: core.acting, name, description: opts.description, permissions: opts.permissions })));
  }));

program.command('roles:list')
  .option(...APP_OPTION)
  .description("print the application's roles")
  .action((opts: { app?: string }) => withCore(async (core) => {
    print((await listAppRoles(core, { app: await applicationOf(core, opts) })).map(shownRole));
  }));

program.command('roles:remove')
  .argument('<name>', 'the role')
  .option(...APP_OPTION)
  .description('remove a role, from every account holding it')
  .action((name: string, opts: { app?: string }) => withCore(async (core) => {
    print({ removed: name, held: await removeAppRole(core, { app: await applicationOf(core, opts), acting: core.acting, name }) });
  }));

for (const [command, give] of [['roles:assign', true], ['roles:unassign', false]] as const) {
  program.command(command)
    .argument(...WHO)
    .argument('<roles...>', 'the roles, separated by spaces or commas')
    .option(...APP_OPTION)
    .description(give ? 'give a user roles of the application' : 'take roles of the application from a user')
    .action((who: string, roles: string[], opts: { app?: string }) => withCore(async (core) => {
      const { app, record } = await userOf(core, opts, who);
      const names = rolesOf(roles);
      print((await changeAccountRoles(core, { app, acting: core.acting, entityId: record.id, ...(give ? { add: names } : { take: names }) })).map(shownRole));
    }));
}

program.command('roles:of')
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('print the roles of the application a user holds')
  .action((who: string, opts: { app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    print((await accountRoles(core, { app, entityId: record.id })).map(shownRole));
  }));

program.command('audit')
  .option(...APP_OPTION)
  .option('--type <type>', 'one event type (client.secret_reset), or a family ending in a dot (client.)')
  .option('--actor <actor>', 'client, operator, account or system, optionally :who (client:<client_id>, operator:<name>)')
  .option('--subject <subject>', 'what was changed, as kind:id (record:42, client:<client_id>, setting:<key>)')
  .option('--since <time>', 'entries at or after this ISO 8601 time')
  .option('--until <time>', 'entries before this ISO 8601 time')
  .option('--limit <n>', 'at most this many entries (1 to 1000)', '100')
  .option('--before <id>', 'continue a listing: the entries before this id (the last id printed)')
  .description("print the application's audit log, newest first, one JSON object per line: what clients and operators changed")
  .action((opts: { app?: string; type?: string; actor?: string; subject?: string; since?: string; until?: string; limit: string; before?: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    let query;
    try {
      query = auditQuery(opts);
    } catch (e) {
      if (e instanceof AuditQueryError) throw new Error(`--${e.field} ${e.message}`);
      throw e;
    }
    const page = await listAudit({ audit: core.db.audit }, { applicationId: app.id, ...query });
    for (const e of page.entries) process.stdout.write(`${JSON.stringify(shownAuditEntry(e))}\n`);
    if (page.next) process.stderr.write(`gatehouse: more entries: run again with --before ${page.next}\n`);
  }));

// docs/organizations.md: an operator's commands (the application's authority: any organization, any role)
const ORG_ARGUMENT = ['<organization>', 'the organization (org_…, as organizations:list prints it)'] as const;
const rolesOf = (roles: string[]) => roles.flatMap((r) => r.split(/[\s,]+/)).filter(Boolean);

program.command('organizations:list')
  .option(...APP_OPTION)
  .option('--limit <n>', 'at most this many (1 to 200)', '200')
  .option('--after <cursor>', 'continue a listing where the last one said')
  .description("print the application's organizations, oldest first")
  .action((opts: { app?: string; limit: string; after?: string }) => withCore(async (core) => {
    const after = opts.after === undefined ? null : /^\d{1,18}$/.test(opts.after) ? Number(opts.after) : Number.NaN;
    if (Number.isNaN(after)) throw new Error('--after must be the cursor a previous listing printed');
    const page = await listOrganizations(core, { app: await applicationOf(core, opts), after, limit: Number(opts.limit) || 200 });
    print(page.items.map(shownOrganization));
    if (page.next !== null) process.stderr.write(`gatehouse: more organizations: run again with --after ${page.next}\n`);
  }));

program.command('organizations:create')
  .argument('<name>', 'its name, as people read it')
  .requiredOption('--slug <slug>', 'its unique short name: lower-case letters, digits and hyphens (acme-corp)')
  .option('--owner <who>', 'a user who becomes its owner: id, uuid, email or username')
  .option(...APP_OPTION)
  .description('make an organization; prints it with its id')
  .action((name: string, opts: { slug: string; owner?: string; app?: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const owner = opts.owner === undefined ? undefined : (await userOf(core, opts, opts.owner)).record.id;
    print(shownOrganization(await createOrganization(core, { app, acting: core.acting, fields: { name, slug: opts.slug }, owner })));
  }));

program.command('organizations:members')
  .argument(...ORG_ARGUMENT)
  .option(...APP_OPTION)
  .description("print an organization's members with their roles")
  .action((organizationId: string, opts: { app?: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const members = [];
    for (let after: number | null = null; ;) {
      const page = await listMembers(core, { app, acting: core.acting, organizationId, after, limit: 200 });
      members.push(...page.items.map(shownMember));
      if (page.next === null) break;
      after = page.next;
    }
    print(members);
  }));

program.command('organizations:add-member')
  .argument(...ORG_ARGUMENT)
  .argument(...WHO)
  .requiredOption('--roles <roles...>', 'its roles (owner, admin, member, or one the application defined)')
  .option(...APP_OPTION)
  .description('add a user to an organization with roles')
  .action((organizationId: string, who: string, opts: { roles: string[]; app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    print({ roles: (await addMember(core, { app, acting: core.acting, organizationId, entityId: record.id, roles: rolesOf(opts.roles) })).roles });
  }));

program.command('organizations:set-roles')
  .argument(...ORG_ARGUMENT)
  .argument(...WHO)
  .requiredOption('--roles <roles...>', 'its roles from now on')
  .option(...APP_OPTION)
  .description("set a member's roles (an organization always keeps an owner)")
  .action((organizationId: string, who: string, opts: { roles: string[]; app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    print({ roles: (await setMemberRoles(core, { app, acting: core.acting, organizationId, entityId: record.id, roles: rolesOf(opts.roles) })).roles });
  }));

program.command('organizations:remove-member')
  .argument(...ORG_ARGUMENT)
  .argument(...WHO)
  .option(...APP_OPTION)
  .description('remove a member from an organization (never its last owner)')
  .action((organizationId: string, who: string, opts: { app?: string }) => withCore(async (core) => {
    const { app, record } = await userOf(core, opts, who);
    await removeMember(core, { app, acting: core.acting, organizationId, entityId: record.id });
    print({ removed: record.uuid });
  }));

program.command('organizations:invite')
  .argument(...ORG_ARGUMENT)
  .argument('<email>', 'the address invited')
  .option('--roles <roles...>', 'the roles it gets (member when none)')
  .option('--locale <locale>', 'the language of the email and of the page (en-US, fr-FR, de-DE, es-ES)', 'en-US')
  .option(...APP_OPTION)
  .description('invite an address to an organization: the link goes by email')
  .action((organizationId: string, email: string, opts: { roles?: string[]; locale: string; app?: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const invitation = await createInvitation(core, { app, acting: core.acting, organizationId, email, roles: opts.roles ? rolesOf(opts.roles) : ['member'], locale: opts.locale });
    print(shownInvitation(invitation, core.clock.now()));
  }));

program.command('organizations:verify-domain')
  .argument(...ORG_ARGUMENT)
  .argument('<domain>', 'the email domain (acme.com)')
  .option(...APP_OPTION)
  .option('--joinable', 'and let accounts with a verified address at it join the organization as they sign in, where a member verified it before (an operator\'s verification does; never a mail provider anyone can use)')
  .description('claim an email domain for an organization as verified (or verify its claim): an operator has checked it is theirs')
  .action((organizationId: string, domain: string, opts: { app?: string; joinable?: boolean }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const found = (await listDomains(core, { app, acting: core.acting, organizationId })).find((d) => d.domain === domain.trim().toLowerCase());
    if (!found) await addDomain(core, { app, acting: core.acting, organizationId, domain, verified: true });
    else {
      if (!found.verifiedAt) await verifyDomain(core, { app, acting: core.acting, organizationId, domain });
      if (opts.joinable && !found.joinableAt) await setDomainJoinable(core, { app, acting: core.acting, organizationId, domain, joinable: true });
    }
    const now = (await listDomains(core, { app, acting: core.acting, organizationId })).find((d) => d.domain === domain.trim().toLowerCase());
    print({ domain: domain.trim().toLowerCase(), verified: now?.verifiedAt != null, joinable: now?.joinableAt != null });
  }));

program.command('organizations:add-connection')
  .argument(...ORG_ARGUMENT)
  .requiredOption('--type <type>', 'saml (the identity provider\'s metadata) or oidc (its issuer and client)')
  .option('--metadata <file>', 'SAML: the identity provider\'s metadata (an XML file, or - for standard input)')
  .option('--metadata-url <url>', 'SAML: the https URL of the identity provider\'s metadata, fetched once')
  .option('--issuer <url>', 'OpenID: the provider\'s issuer')
  .option('--client-id <id>', 'OpenID: the client registered at the provider')
  .option('--client-secret <secret>', 'OpenID: its secret (sealed, never shown back)')
  .option('--name <name>', 'what people and operators see')
  .option('--required', 'the organization\'s members sign in through it only')
  .option('--idp-initiated', 'SAML: take responses no request asked for (each assertion once)')
  .option(...APP_OPTION)
  .description('add an enterprise connection to an organization: its own identity provider (docs/organizations.md#connections); prints what to give the identity provider')
  .action((organizationId: string, opts: {
    type: string; metadata?: string; metadataUrl?: string; issuer?: string; clientId?: string; clientSecret?: string; name?: string; required?: boolean; idpInitiated?: boolean; app?: string;
  }) => withCore(async (core) => {
    const added = await addConnection(core, {
      app: await applicationOf(core, opts), acting: core.acting, organizationId, type: opts.type,
      ...(opts.metadata !== undefined && { metadata: metadataFile(opts.metadata) }), ...(opts.metadataUrl !== undefined && { metadataUrl: opts.metadataUrl }),
      ...(opts.issuer !== undefined && { issuer: opts.issuer }), ...(opts.clientId !== undefined && { clientId: opts.clientId }),
      ...(opts.clientSecret !== undefined && { clientSecret: opts.clientSecret }), ...(opts.name !== undefined && { name: opts.name }),
      required: opts.required === true, idpInitiated: opts.idpInitiated === true,
    });
    print(shownConnection(added));
  }));

program.command('organizations:connections')
  .argument(...ORG_ARGUMENT)
  .option(...APP_OPTION)
  .description("print an organization's enterprise connections (never a secret)")
  .action((organizationId: string, opts: { app?: string }) => withCore(async (core) => {
    print((await listConnections(core, { app: await applicationOf(core, opts), acting: core.acting, organizationId })).map(shownConnection));
  }));

program.command('organizations:remove-connection')
  .argument(...ORG_ARGUMENT)
  .argument('<connection>', 'the connection (con_…, as organizations:connections prints it)')
  .option(...APP_OPTION)
  .description('remove an enterprise connection: its sign-ins stop; the accounts it made stay')
  .action((organizationId: string, connectionId: string, opts: { app?: string }) => withCore(async (core) => {
    await removeConnection(core, { app: await applicationOf(core, opts), acting: core.acting, organizationId, connectionId });
    print({ removed: connectionId });
  }));

program.command('organizations:scim-token')
  .argument(...ORG_ARGUMENT)
  .option(...APP_OPTION)
  .option('--description <text>', 'what the token is for (the directory: Okta, Entra ID…)', 'SCIM')
  .description("make a SCIM token for an organization's directory; the token is printed once, never stored")
  .action((organizationId: string, opts: { app?: string; description: string }) => withCore(async (core) => {
    const app = await applicationOf(core, opts);
    const made = await createScimToken(core, { app, acting: core.acting, organizationId, description: opts.description });
    // the address the identity provider is given: the server's as known here, never a guess
    const base = knownBaseUrl(app.name);
    print({ token: made.token, scim_url: base ? `${base}${SCIM_PATH}` : null, id: made.view.id, description: made.view.description });
    if (!base) warnUnknownBaseUrl('scim_url');
  }));

program.command('organizations:scim-tokens')
  .argument(...ORG_ARGUMENT)
  .option(...APP_OPTION)
  .description("print an organization's SCIM tokens, revoked ones too (never a token)")
  .action((organizationId: string, opts: { app?: string }) => withCore(async (core) => {
    print((await listScimTokens(core, { app: await applicationOf(core, opts), acting: core.acting, organizationId })).map((t) => ({
      id: t.id, description: t.description, created_by: t.createdBy, created: t.createdAt.toISOString(),
      last_used: t.lastUsedAt?.toISOString() ?? null, revoked: t.revokedAt?.toISOString() ?? null,
    })));
  }));

program.command('organizations:revoke-scim-token')
  .argument(...ORG_ARGUMENT)
  .argument('<token>', 'the token\'s id (scim_…, as organizations:scim-tokens prints it)')
  .option(...APP_OPTION)
  .description('revoke a SCIM token: the directory\'s next call with it is refused')
  .action((organizationId: string, tokenId: string, opts: { app?: string }) => withCore(async (core) => {
    await revokeScimToken(core, { app: await applicationOf(core, opts), acting: core.acting, organizationId, tokenId });
    print({ revoked: tokenId });
  }));

program.command('organizations:scim-groups')
  .argument(...ORG_ARGUMENT)
  .argument('<mapping>', 'JSON: the directory\'s groups to the organization\'s roles, such as \'{"Admins":["admin"]}\' ({} maps none)')
  .option(...APP_OPTION)
  .description("map an organization's directory groups to its roles: its provisioned members' roles follow their groups")
  .action((organizationId: string, mapping: string, opts: { app?: string }) => withCore(async (core) => {
    const view = await configureScim(core, { app: await applicationOf(core, opts), acting: core.acting, organizationId, groupRoles: mapping });
    print({ organization_id: view.organizationId, group_roles: view.groupRoles });
  }));

program.command('mail:last')
  .option('--to <address>', 'the newest message to this address')
  .option('--link', 'print only the link the message carries')
  .description('show the newest email written as a file (embedded default, or MAIL_TRANSPORT=file)')
  .action(async (opts: { to?: string; link?: boolean }) => {
    const config = loadConfigOrExit();
    // (the mail parser loads only for this command)
    const { newestMail } = await import('./mail-files');
    const found = await newestMail(config.mailDir, opts.to);
    if (!found) {
      process.stderr.write(`gatehouse: no email${opts.to ? ` to ${opts.to}` : ''} under ${config.mailDir}\n`);
      process.exitCode = 1;
      return;
    }
    if (opts.link) {
      if (!found.link) throw new Error(`${found.file} carries no link`);
      process.stdout.write(`${found.link}\n`);
    } else {
      process.stdout.write(`File:    ${found.file}\nDate:    ${found.date}\nTo:      ${found.to}\nSubject: ${found.subject}\n\n${found.text}\n`);
    }
  });

program.parseAsync(process.argv).catch((e: Error) => {
  process.stderr.write(`gatehouse: ${e.message}\n`);
  process.exitCode = 1;
});
