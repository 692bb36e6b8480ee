import { DuplicateAttributeError } from '../../db/repositories/entities';
import { parseNewUser, requireUserType } from '../../domain/users';
import { captureUser } from '../capture-user';
import { shape } from './entity-api';
import { ApiError, errors } from '../../errors';
import type { Handler, RequestContext } from '../context';
import { identifyRecord, namesRecord } from '../record';

/** Client kinds that read records with their credentials. */
const READERS = ['owner', 'direct_access', 'direct_read_access'];

/**
 * /entity.create: owner credentials, or a `creation_token` (SPEC 1: for mobile apps without a
 * secret). A token issued with `for_client_id` works only when that client sends `client_id`.
 */
export const createEntity: Handler = async (ctx) => {
  requireUserType(ctx.params.require('type_name'));
  const { entity, password } = parseNewUser(ctx.app.id, ctx.params.json('attributes', true));
  const creationToken = ctx.params.get('creation_token');
  const p = ctx.principal;
  if (creationToken === undefined) {
    if (p.kind !== 'client' || p.scheme === 'client_id') {
      throw errors.invalidClientCredentials('send owner client credentials, or a creation_token');
    }
    if (!p.client.features.includes('owner')) throw errors.permissionError(`client ${p.client.clientId} needs the owner feature, or a creation_token`);
  }
  const { db, tokens, passwords, clock } = ctx.services;
  const passwordHash = password === undefined ? null : await passwords.hash(password);
  try {
    const created = await db.transaction(async (tx) => {
      if (creationToken !== undefined) {
        await tokens.consumeCreationToken(ctx.app, creationToken, p.kind === 'client' ? p.client.id : null, tx);
      }
      return db.entities.insert({ ...entity, passwordHash }, clock.now(), tx);
    });
    return { id: created.id, uuid: created.uuid };
  } catch (e) {
    if (e instanceof DuplicateAttributeError) {
      throw new ApiError('uniqueViolation', `another record already has this ${e.attribute}`, { extra: { argument_name: `attributes.${e.attribute}` } });
    }
    throw e;
  }
};

async function readable(ctx: RequestContext) {
  const p = ctx.principal;
  if (p.kind === 'entity') {
    if (!namesRecord(ctx)) {
      const own = p.token.entityId === null ? undefined : await ctx.services.db.entities.find(ctx.app.id, { id: p.token.entityId });
      if (!own) throw errors.invalidAccessToken();
      return own;
    }
    const record = await identifyRecord(ctx);
    if (record.id !== p.token.entityId) throw errors.permissionError('the access token is for another record');
    return record;
  }
  if (p.kind !== 'client' || !READERS.some((k) => p.client.features.includes(k as never))) {
    throw errors.permissionError(`reading records needs the feature ${READERS.join(', ')} or an access token for the record`);
  }
  return identifyRecord(ctx);
}

/** /entity: one record, by uuid, id or key_attribute. */
export const readEntity: Handler = async (ctx) => {
  if (ctx.params.get('type_name') !== undefined) requireUserType(ctx.params.require('type_name'));
  return { result: shape(ctx, await captureUser(ctx, await readable(ctx))) };
};
