import { peerBudgetKey } from '../domain/addresses';
import type { Request, Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { ownerOf, type StoredCredential } from '../domain/storage/credentials';
import type { Client } from '../domain/clients';
import { chosenFlow, type FlowVersion } from '../domain/flows';
import { BusyError, DependencyDownError, LimitReachedError, Refusal } from '../domain/refusal';
import { refusalError, errors } from '../errors';
import { originOf } from './pages';
import type { Services } from '../usecases/services';
import type { FlowRequest, LoginUseCase } from '../usecases/login/call';

/**
 * Runs a login use case for a page, with the login client and flow the page holds and the command
 * its form makes: the same checks, limits and results as the API's endpoint. A refusal (or a spent
 * budget, or a server too busy) is returned, counted and logged as the API's own are; anything else
 * is thrown.
 */
export async function callUseCase<C, R>(
  services: Services, req: Request, res: Response, app: Application, useCase: LoginUseCase<C, R>, request: FlowRequest, command: C,
): Promise<{ result: R; error?: undefined } | { result?: undefined; error: PageRefusal }> {
  return pageCall(res, () => useCase({ origin: originOf(req, res), app, clientAddress: peerBudgetKey(req.ip), services, request }, command));
}

/**
 * Runs a use case's call for a page: its refusal (or a spent budget, a server too busy, a
 * dependency down) is returned, counted and logged as the API's own are; anything else is thrown.
 */
export async function pageCall<R>(res: Response, work: () => Promise<R>): Promise<{ result: R; error?: undefined } | { result?: undefined; error: PageRefusal }> {
  try {
    return { result: await work() };
  } catch (e) {
    if (!(e instanceof Refusal || e instanceof LimitReachedError || e instanceof BusyError || e instanceof DependencyDownError)) throw e;
    const { definition } = pageError(e);
    Object.assign((res.locals as { outcome?: Record<string, unknown> }).outcome ?? {}, { errorCode: definition.code, error: definition.error });
    return { error: e };
  }
}

/** What a page shows on its form when a use case did not do what was asked (a dependency down: that nothing was done). */
export type PageRefusal = Refusal | LimitReachedError | BusyError | DependencyDownError;

/** The API's error for what a page shows: its code and words, as the API would answer. */
export const pageError = (e: PageRefusal) => (e instanceof Refusal ? refusalError(e) : e instanceof DependencyDownError ? errors.unavailable(e.what, e.failure)
  : e instanceof BusyError ? errors.busy(e.retryAfterSeconds) : errors.apiLimit(e.retryAfterSeconds));

/**
 * A login client's flow (chosenFlow: its default_flow_name and default_flow_version) in `locale`;
 * in en-US when the flow lacks that locale; undefined when the client has no default flow.
 */
export async function clientFlow(services: Services, app: Application, client: Client, locale: string): Promise<FlowVersion | undefined> {
  const { name, version } = chosenFlow(client.settings);
  if (name === undefined || version === undefined) return undefined;
  return services.flows.resolve(app, name, version, locale).catch(() => services.flows.resolve(app, name, version, 'en-US'));
}

/** The client a code was issued for (the one whose email carried it), and its flow's form `name` in `locale`; undefined when it has none. */
export async function senderForm(services: Services, app: Application, row: StoredCredential, locale: string, name: string) {
  const id = ownerOf(row);
  const stored = id === null ? undefined : await services.db.clients.findById(app.id, id);
  const client = stored && await services.clients.find(app.id, stored.clientId);
  if (!client) return undefined;
  const flow = await clientFlow(services, app, client, locale);
  if (!flow) return undefined;
  const form = services.flows.form(app, flow, name);
  return form && { client, flow, form };
}
