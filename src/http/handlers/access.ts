import type { Client } from '../../domain/clients';
import { parseLifetime } from '../../domain/tokens';
import { requireTimeAttribute, requireUserType } from '../../domain/users';
import { errors } from '../../errors';
import { adminCall, caller, type Handler, type RequestContext } from '../context';
import { identifyRecord } from '../record';
import { parseRedirectUri } from '../flow-request';
import { assertEnabled, issueAccessToken, issueAuthorizationCode, issueCreationToken, issueVerificationCode, RecordDisabledError } from '../../usecases/access/issue';
import { useVerificationCode as spendVerificationCode } from '../../usecases/tokens/use-verification-code';

/** `for_client_id`: another client of the same application that receives what is issued. */
async function forClient(ctx: RequestContext): Promise<Client | undefined> {
  const id = ctx.params.get('for_client_id');
  if (id === undefined) return undefined;
  const client = await ctx.services.clients.find(ctx.app.id, id);
  if (!client) throw errors.invalidArgument('for_client_id', `no client ${id.slice(0, 64)} in this application`);
  return client;
}

/** `transaction_state`: a JSON object handed back unchanged at the exchange. */
function transactionStateOf(ctx: RequestContext): Record<string, unknown> | undefined {
  const state = ctx.params.json('transaction_state');
  if (state === undefined) return undefined;
  if (typeof state !== 'object' || state === null || Array.isArray(state)) {
    throw errors.invalidArgument('transaction_state', 'must be a JSON object, such as {"return_to":"/cart"}');
  }
  return state as Record<string, unknown>;
}

const typeName = (ctx: RequestContext) => requireUserType(ctx.params.require('type_name'));

/** A disabled user asked for: 200 naming how the request named the record. */
async function issuing<T>(ctx: RequestContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (!(e instanceof RecordDisabledError)) throw e;
    throw errors.invalidArgument(['uuid', 'id', 'key_value'].find((k) => ctx.params.get(k) !== undefined) ?? 'uuid', e.message);
  }
}

/** The record a token or code is asked for; a disabled user is refused before anything else is checked. */
async function enabledRecord(ctx: RequestContext) {
  const record = await identifyRecord(ctx);
  await issuing(ctx, async () => assertEnabled(record, ctx.services.clock.now()));
  return record;
}

export const getAccessToken: Handler = async (ctx) => {
  typeName(ctx);
  const record = await enabledRecord(ctx);
  const target = await forClient(ctx);
  const accessToken = await issuing(ctx, () => issueAccessToken(ctx.services, { ...adminCall(ctx), app: ctx.app, client: caller(ctx), record, forClientId: target?.id ?? null }));
  return { accessToken };
};

export const getAuthorizationCode: Handler = async (ctx) => {
  typeName(ctx);
  const record = await enabledRecord(ctx);
  const redirectUri = parseRedirectUri(ctx);
  const transactionState = transactionStateOf(ctx);
  const seconds = parseLifetime(ctx.app, 'authorization_code', ctx.params.get('lifetime'));
  const target = await forClient(ctx);
  const authorizationCode = await issuing(ctx, () => issueAuthorizationCode(ctx.services, {
    ...adminCall(ctx), app: ctx.app, client: caller(ctx), record, forClientId: target?.id ?? null, redirectUri, transactionState, seconds,
  }));
  return { authorizationCode };
};

export const getCreationToken: Handler = async (ctx) => {
  typeName(ctx);
  const seconds = parseLifetime(ctx.app, 'creation_token', ctx.params.get('lifetime'));
  const target = await forClient(ctx);
  return { creation_token: await issueCreationToken(ctx.services, { ...adminCall(ctx), app: ctx.app, client: caller(ctx), forClientId: target?.id ?? null, seconds }) };
};

export const getVerificationCode: Handler = async (ctx) => {
  typeName(ctx);
  const record = await identifyRecord(ctx);
  const attribute = ctx.params.require('attribute_name');
  requireTimeAttribute(attribute, ctx.app.settings.time_attributes);
  const seconds = parseLifetime(ctx.app, 'verification_code', ctx.params.get('lifetime'));
  return { verification_code: await issueVerificationCode(ctx.services, { ...adminCall(ctx), app: ctx.app, client: caller(ctx), record, attribute, seconds }) };
};

export const useVerificationCode: Handler = async (ctx) => {
  const uuid = await spendVerificationCode(ctx.services, { app: ctx.app, code: ctx.params.require('verification_code'), origin: ctx.origin });
  return { uuid };
};
