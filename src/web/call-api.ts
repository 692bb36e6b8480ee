import type { Request, Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { ownerOf, type StoredCredential } from '../domain/storage/credentials';
import type { Client } from '../domain/clients';
import type { FlowVersion } from '../domain/flows';
import { ApiError } from '../errors';
import type { Handler, Services } from '../http/context';
import { Params } from '../http/params';

/**
 * Runs an API handler for a page, as the client's own call (client_id of a login client) would
 * run: the same checks, limits and answers. An API failure is returned, counted and logged as the
 * API's own failures are; anything else is thrown.
 */
export async function callApi(
  services: Services, req: Request, res: Response, app: Application, client: Client, handler: Handler, values: Record<string, string>,
): Promise<{ body: Record<string, unknown>; error?: undefined } | { body?: undefined; error: ApiError }> {
  try {
    const body = await handler({
      requestId: String(res.locals.requestId ?? ''), app, params: Params.from([values]),
      principal: { kind: 'client', scheme: 'client_id', client }, clientAddress: req.ip ?? 'unknown', services,
    });
    return { body };
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    Object.assign((res.locals as { outcome?: Record<string, unknown> }).outcome ?? {}, { errorCode: e.definition.code, error: e.definition.error });
    return { error: e };
  }
}

/** A login client's flow (its default_flow_name and default_flow_version) in `locale`; in en-US when the flow lacks that locale. */
export async function clientFlow(services: Services, app: Application, client: Client, locale: string): Promise<FlowVersion> {
  const name = client.settings.default_flow_name ?? 'standard';
  const version = client.settings.default_flow_version ?? '1';
  return services.flows.resolve(app, name, version, locale).catch(() => services.flows.resolve(app, name, version, 'en-US'));
}

/** The client a code was issued for (the one whose email carried it), and its flow's form `name` in `locale`. */
export async function senderForm(services: Services, app: Application, row: StoredCredential, locale: string, name: string) {
  const id = ownerOf(row);
  const stored = id === null ? undefined : await services.db.clients.findById(app.id, id);
  const client = stored && await services.clients.find(app.id, stored.clientId);
  if (!client) return undefined;
  const flow = await clientFlow(services, app, client, locale);
  const form = services.flows.form(app, flow, name);
  return form && { client, flow, form };
}

/** What a page's call of a login endpoint sends besides the form's fields: the client, and its flow's name, version and locale. */
export const flowParams = (client: Client, flow: FlowVersion) => ({
  client_id: client.clientId, locale: flow.locale, flow: flow.name, flow_version: String(flow.version),
});
