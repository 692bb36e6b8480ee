import { APP_NAME, ApplicationExistsError, type CreatedApplication } from '../../domain/applications';
import type { BaseUrls } from '../../domain/base-urls';
import { event, type Acting } from '../../domain/events';
import { insertClient } from '../clients/add-client';
import type { AdminDeps } from '../clients/deps';
import { insertFlows, type FlowSource } from './import-flows';

/** A name that is not a DNS label (the first label of the application's host name). */
export class ApplicationNameError extends Error {}

/**
 * `gatehouse apps:create` and the embedded first start: an application with its flows imported,
 * an owner client, and a login client whose settings point at the default flow (`standard`, else
 * the first) and at the pages of the application's own base URL (base-urls.ts). All of it commits
 * together or not at all.
 */
export async function createApplication(
  deps: AdminDeps & { baseUrls: BaseUrls },
  command: { name: string; flows: readonly FlowSource[] | (() => readonly FlowSource[]); acting: Acting },
): Promise<CreatedApplication> {
  const { name, acting } = command;
  if (!APP_NAME.test(name)) {
    throw new ApplicationNameError(`"${name}" is not a valid application name: use a DNS label (lowercase letters, digits, inner hyphens; at most 63 characters)`);
  }
  if (await deps.db.applications.findByName(name)) throw new ApplicationExistsError(`application "${name}" already exists`);
  // read only now: an application that exists needs none (`gatehouse init` on every deploy)
  const sources = typeof command.flows === 'function' ? command.flows() : command.flows;
  if (sources.length === 0) throw new Error('an application needs at least one flow to import');
  return deps.work.run(async (uow) => {
    const app = await deps.db.applications.create(name, deps.clock.now(), uow.tx);
    uow.record(event('application.created', app.id, deps.clock.now(), acting, { kind: 'application', id: name }, {}));
    const flows = await insertFlows(deps, uow, acting, app.id, sources);
    const standard = flows.find((f) => f.name === 'standard') ?? flows[0];
    const owner = await insertClient(deps, uow, acting, app.id, { description: `${name} owner`, features: ['owner'] });
    const login = await insertClient(deps, uow, acting, app.id, {
      description: `${name} login client`,
      features: ['login_client'],
      settings: {
        default_flow_name: standard.name,
        default_flow_version: String(standard.version),
        password_recover_url: `${deps.baseUrls.of(name)}/reset-password`,
        verify_email_url: `${deps.baseUrls.of(name)}/verify-email`,
      },
    });
    return {
      app: name,
      flow: standard,
      flows,
      clients: {
        owner: { client_id: owner.client.clientId, client_secret: owner.secret },
        login: { client_id: login.client.clientId, client_secret: login.secret },
      },
    };
  });
}
