import type { Request, Response } from 'express';
import type { Application } from '../db/repositories/applications';
import type { Client } from '../domain/clients';
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
