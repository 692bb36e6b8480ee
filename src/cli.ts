import path from 'node:path';
import { Command } from 'commander';
import { loadConfigOrExit } from './config';
import { migrate, pendingMigrations } from './db/migrate';
import { findFlowDirectories, FlowDefinitionError, loadFlowDirectory } from './domain/flow-definition';
import { ApplicationExistsError } from './domain/applications';
import { banner } from './banner';
import { createLogger } from './logger';
import { newestMail } from './mail-files';
import { createCore, prepareSchema, projectRoot } from './runtime';
import { packageVersion } from './paths';

type Core = ReturnType<typeof createCore>;


/** Runs one command against the configured database, reporting failures as one clear message. */
async function withCore(work: (core: Core) => Promise<void>, options: { schema?: boolean } = {}): Promise<void> {
  const config = loadConfigOrExit();
  const core = createCore(config, createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr as never));
  try {
    if (options.schema !== false) await prepareSchema(config, core.db);
    await work(core);
  } catch (e) {
    const message = e instanceof FlowDefinitionError || e instanceof Error ? e.message : String(e);
    process.stderr.write(`gatehouse: ${message}\n`);
    process.exitCode = 1;
  } finally {
    await core.close();
  }
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

const program = new Command('gatehouse')
  .description('Gatehouse: registration and authentication service')
  .version(packageVersion(), '-V, --version', 'print the version')
  .showHelpAfterError();

program.command('migrate')
  .description('apply pending database migrations')
  .action(() => withCore(async ({ db }) => {
    const applied = await migrate(db.sequelize);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'the database is up to date\n');
  }, { schema: false }));

program.command('migrate:status')
  .description('list pending migrations; exits 1 when some are pending')
  .action(() => withCore(async ({ db }) => {
    const pending = await pendingMigrations(db.sequelize);
    process.stdout.write(pending.length ? `pending: ${pending.join(', ')}\n` : 'the database is up to date\n');
    if (pending.length) process.exitCode = 1;
  }, { schema: false }));

program.command('init')
  .description('create the DEFAULT_APP application with its flows and clients unless it exists (safe to run on every deploy)')
  .action(() => withCore(async ({ applications }) => {
    const config = loadConfigOrExit();
    try {
      const created = await applications.create(config.defaultApp, path.join(projectRoot(), 'flows'));
      process.stdout.write(banner(created, config.publicBaseUrl, process.stdout.isTTY === true));
    } catch (e) {
      if (!(e instanceof ApplicationExistsError)) throw e;
      process.stdout.write(`the application "${config.defaultApp}" exists; nothing to do (its clients: npx gatehouse clients:list --app ${config.defaultApp})\n`);
    }
  }));

program.command('apps:create')
  .argument('<name>', 'application name: the first label of its host name (demo → demo.example.com)')
  .option('--json', 'print the result as one JSON object')
  .option('--flows <dir>', 'folder of flows to import', path.join(projectRoot(), 'flows'))
  .description('create an application with its flows, an owner client and a login client')
  .action((name: string, opts: { json?: boolean; flows: string }) => withCore(async ({ applications }) => {
    const created = await applications.create(name, path.resolve(opts.flows));
    const { flows: _all, ...summary } = created;
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else print(summary);
  }));

program.command('flows:import')
  .argument('<dir>', 'a flow folder (flow.json + translations.json), or a folder of them')
  .requiredOption('--app <name>', 'application to import into')
  .description('import flows as new immutable versions (a flow identical to its newest version keeps it)')
  .action((dir: string, opts: { app: string }) => withCore(async ({ applications }) => {
    const imported = await applications.importFlows(opts.app, path.resolve(dir));
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
  .requiredOption('--app <name>', 'application')
  .description("print an application's clients with their secrets")
  .action((opts: { app: string }) => withCore(async ({ db, clients }) => {
    const app = await db.applications.findByName(opts.app);
    if (!app) throw new Error(`there is no application "${opts.app}"; create it with: npx gatehouse apps:create ${opts.app}`);
    const all = await clients.list(app.id);
    print(all.map((c) => ({ client_id: c.clientId, client_secret: c.secret, description: c.description, features: c.features, settings: c.settings })));
  }));

program.command('providers:add')
  .argument('<app>', 'application')
  .argument('<name>', 'provider name, part of its URLs (/social/NAME/start): google, github, …')
  .requiredOption('--issuer <url>', 'OpenID Connect issuer (https://accounts.google.com), or https://github.com')
  .requiredOption('--client-id <id>', 'client id the provider gave this application')
  .requiredOption('--client-secret <secret>', 'client secret the provider gave this application')
  .option('--kind <kind>', 'oidc (any OpenID Connect provider, by discovery) or github', 'oidc')
  .option('--scopes <scopes...>', 'scopes to ask for (default: openid email profile; GitHub: read:user user:email)')
  .description('add an identity provider to the application\'s social login')
  .action((app: string, name: string, opts: { issuer: string; clientId: string; clientSecret: string; kind: string; scopes?: string[] }) =>
    withCore(async ({ db, providers }) => {
      const found = await db.applications.findByName(app);
      if (!found) throw new Error(`there is no application "${app}"; create it with: npx gatehouse apps:create ${app}`);
      print(await providers.add(found.id, {
        name, kind: opts.kind as 'oidc' | 'github', issuer: opts.issuer, clientId: opts.clientId, clientSecret: opts.clientSecret, scopes: opts.scopes,
      }));
    }));

program.command('providers:list')
  .argument('<app>', 'application')
  .description("list the application's identity providers (never their secrets)")
  .action((app: string) => withCore(async ({ db, providers }) => {
    const found = await db.applications.findByName(app);
    if (!found) throw new Error(`there is no application "${app}"`);
    print(await providers.list(found.id));
  }));

program.command('providers:remove')
  .argument('<app>', 'application')
  .argument('<name>', 'provider name')
  .description('remove an identity provider (identities already linked stay linked)')
  .action((app: string, name: string) => withCore(async ({ db, providers }) => {
    const found = await db.applications.findByName(app);
    if (!found) throw new Error(`there is no application "${app}"`);
    await providers.remove(found.id, name);
    process.stdout.write(`removed provider ${name}\n`);
  }));

program.command('mail:last')
  .option('--to <address>', 'the newest message to this address')
  .option('--link', 'print only the link the message carries')
  .description('show the newest email written as a file (embedded default, or MAIL_TRANSPORT=file)')
  .action(async (opts: { to?: string; link?: boolean }) => {
    const config = loadConfigOrExit();
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
