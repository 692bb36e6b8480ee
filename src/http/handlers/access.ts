import type { Client } from '../../domain/clients';
import { randomToken } from '../../domain/secrets';
import { parseLifetime } from '../../domain/tokens';
import { requireTimeAttribute, requireUserType } from '../../domain/users';
import { errors } from '../../errors';
import { caller, type Handler, type RequestContext } from '../context';
import { identifyRecord } from '../record';
import { parseRedirectUri } from '../flow-request';

/** `for_client_id`: another client of the same application that receives what is issued. */
async function forClient(ctx: RequestContext): Promise<Client | undefined> {
  const id = ctx.params.get('for_client_id');
  if (id === undefined) return undefined;
  const client = await ctx.services.clients.find(ctx.app.id, id);
  if (!client) throw errors.invalidArgument('for_client_id', `no client ${id.slice(0, 64)} in this application`);
  return client;
}

/** `transaction_state`: a JSON object handed back unchanged at the exchange. */
function transactionState(ctx: RequestContext): Record<string, unknown> | undefined {
  const state = ctx.params.json('transaction_state');
  if (state === undefined) return undefined;
  if (typeof state !== 'object' || state === null || Array.isArray(state)) {
    throw errors.invalidArgument('transaction_state', 'must be a JSON object, such as {"return_to":"/cart"}');
  }
  return state as Record<string, unknown>;
}

const typeName = (ctx: RequestContext) => requireUserType(ctx.params.require('type_name'));

/** The record a token or code is asked for; a disabled user gets none (none would work). */
async function enabledRecord(ctx: RequestContext) {
  const record = await identifyRecord(ctx);
  if (record.disabledAt) {
    const named = ['uuid', 'id', 'key_value'].find((k) => ctx.params.get(k) !== undefined) ?? 'uuid';
    throw errors.invalidArgument(named, 'the user is disabled: it gets no access token or code until an operator enables it again');
  }
  return record;
}

export const getAccessToken: Handler = async (ctx) => {
  typeName(ctx);
  const record = await enabledRecord(ctx);
  const target = await forClient(ctx);
  const accessToken = await ctx.services.tokens.issueAccessToken(ctx.app, caller(ctx), record.id, target?.id ?? null);
  return { accessToken };
};

export const getAuthorizationCode: Handler = async (ctx) => {
  typeName(ctx);
  const record = await enabledRecord(ctx);
  const redirectUri = parseRedirectUri(ctx);
  const state = transactionState(ctx);
  const seconds = parseLifetime(ctx.app, 'authorization_code', ctx.params.get('lifetime'));
  const target = await forClient(ctx);
  const authorizationCode = await ctx.services.tokens.issue({
    kind: 'authorization_code', app: ctx.app, entityId: record.id, client: caller(ctx), forClientId: target?.id ?? null,
    redirectUri, extra: state === undefined ? null : { transaction_state: state }, family: randomToken(16), seconds,
  });
  return { authorizationCode };
};

export const getCreationToken: Handler = async (ctx) => {
  typeName(ctx);
  const seconds = parseLifetime(ctx.app, 'creation_token', ctx.params.get('lifetime'));
  const target = await forClient(ctx);
  const token = await ctx.services.tokens.issue({
    kind: 'creation_token', app: ctx.app, entityId: null, client: caller(ctx), forClientId: target?.id ?? null, seconds,
  });
  return { creation_token: token };
};

export const getVerificationCode: Handler = async (ctx) => {
  typeName(ctx);
  const record = await identifyRecord(ctx);
  const attribute = ctx.params.require('attribute_name');
  requireTimeAttribute(attribute, ctx.app.settings.time_attributes);
  const seconds = parseLifetime(ctx.app, 'verification_code', ctx.params.get('lifetime'));
  const code = await ctx.services.tokens.issue({
    kind: 'verification_code', app: ctx.app, entityId: record.id, client: caller(ctx), extra: { attribute_name: attribute }, seconds,
  });
  return { verification_code: code };
};

export const useVerificationCode: Handler = async (ctx) => {
  const uuid = await ctx.services.tokens.useVerificationCode(ctx.app, ctx.params.require('verification_code'), ctx.origin);
  return { uuid };
};
