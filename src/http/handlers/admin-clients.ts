import { NoSuchClientError, OwnOwnerFeatureError, SelfDeletionError, type Feature, parseFeatures } from '../../domain/clients';
import { errors } from '../../errors';
import { addClient as add } from '../../usecases/clients/add-client';
import { deleteClient as remove } from '../../usecases/clients/delete-client';
import { resetSecret as reset } from '../../usecases/clients/reset-secret';
import { setFeatures as set } from '../../usecases/clients/set-features';
import { adminCall, caller, type Handler } from '../context';
import { formatTimestamp } from '../../domain/timestamps';
import { listLogouts, MAX_LOGOUTS_LISTED, type LogoutView } from '../../usecases/oidc/backchannel-logout';

const MAX_DESCRIPTION = 1024;

/** /clients/add: a new client of the caller's application. */
export const addClient: Handler = async (ctx) => {
  const description = ctx.params.get('description') ?? '';
  if (description.length > MAX_DESCRIPTION) {
    throw errors.invalidArgument('description', `is longer than ${MAX_DESCRIPTION} characters`);
  }
  const features = ctx.params.get('features') === undefined ? [] : parseFeatures(ctx.params.json('features'));
  const { client, secret } = await add(ctx.services, { ...adminCall(ctx), description, features });
  return { description: client.description, client_id: client.clientId, client_secret: secret, features: client.features };
};

/**
 * /clients/list: every client of the application, optionally only those with all of
 * `has_features`. Read from the primary: it shows each client's secret, and a replica's copy of one
 * just reset would still be the old one.
 */
export const listClients: Handler = async (ctx) => {
  const has: Feature[] = ctx.params.get('has_features') === undefined ? [] : parseFeatures(ctx.params.json('has_features'), 'hasFeatures');
  const clients = await ctx.services.clients.list(ctx.app.id, has);
  return {
    results: clients.map((c) => ({ client_id: c.clientId, client_secret: c.secret, description: c.description, features: c.features })),
  };
};

/** A client the call names that does not exist: 200 naming the parameter. */
const named = (argument: string) => (e: unknown): never => {
  if (e instanceof NoSuchClientError) throw errors.invalidArgument(argument, e.message);
  throw e;
};

export const setFeatures: Handler = async (ctx) => {
  const forClientId = ctx.params.require('for_client_id');
  const features = parseFeatures(ctx.params.json('features', true));
  await set(ctx.services, { ...adminCall(ctx), callerClientId: caller(ctx).clientId, forClientId, features }).catch((e: unknown) => {
    if (e instanceof OwnOwnerFeatureError) throw errors.invalidArgument('features', 'the owner client cannot remove its own owner feature; use another owner client to do it');
    return named('for_client_id')(e);
  });
  return {};
};

export const deleteClient: Handler = async (ctx) => {
  await remove(ctx.services, { ...adminCall(ctx), callerClientId: caller(ctx).clientId, clientId: ctx.params.require('client_id_for_deletion') }).catch((e: unknown) => {
    if (e instanceof SelfDeletionError) throw errors.invalidArgument('client_id_for_deletion', 'a client cannot delete itself; use another owner client');
    return named('client_id_for_deletion')(e);
  });
  return {};
};

export const resetSecret: Handler = async (ctx) => {
  const newSecret = await reset(ctx.services, { ...adminCall(ctx), forClientId: ctx.params.require('for_client_id') }).catch(named('for_client_id'));
  return { new_secret: newSecret };
};

/** A logout token owed to a client on the wire (docs/openid-connect.md#back-channel-logout): whom, how it went, the receiver's first bytes. */
export const shownLogout = (l: LogoutView) => ({
  id: l.id, sub: l.subject, sid: l.sid, state: l.state, attempts: l.attempts, created: formatTimestamp(l.createdAt),
  last_attempt: l.lastAttemptAt ? formatTimestamp(l.lastAttemptAt) : null, last_status: l.lastStatus, last_ms: l.lastMs, last_answer: l.lastAnswer,
});

/** /clients/logouts: the latest logout tokens sent (or being sent) to a login client's back-channel logout address, newest first. */
export const clientLogouts: Handler = async (ctx) => {
  const raw = ctx.params.get('limit');
  const limit = raw === undefined ? undefined : /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
  if (limit !== undefined && !(limit >= 1 && limit <= MAX_LOGOUTS_LISTED)) throw errors.invalidArgument('limit', `must be a whole number from 1 to ${MAX_LOGOUTS_LISTED}`);
  return { results: (await listLogouts(ctx.services, { app: ctx.app, clientId: ctx.params.require('for_client_id'), limit })).map(shownLogout) };
};
