import { type Feature, parseFeatures } from '../../domain/clients';
import { errors } from '../../errors';
import { caller, type Handler } from '../context';

const MAX_DESCRIPTION = 1024;

/** /clients/add: a new client of the caller's application. */
export const addClient: Handler = async (ctx) => {
  const description = ctx.params.get('description') ?? '';
  if (description.length > MAX_DESCRIPTION) {
    throw errors.invalidArgument('description', `is longer than ${MAX_DESCRIPTION} characters`);
  }
  const features = ctx.params.get('features') === undefined ? [] : parseFeatures(ctx.params.json('features'));
  const { client, secret } = await ctx.services.clients.create(ctx.app.id, { description, features });
  return { description: client.description, client_id: client.clientId, client_secret: secret, features: client.features };
};

/**
 * /clients/list: every client of the application, optionally only those with all of
 * `has_features`. Read from the primary: it shows each client's secret, and a replica's copy of one
 * just reset would still be the old one.
 */
export const listClients: Handler = async (ctx) => {
  const has: Feature[] = ctx.params.get('has_features') === undefined ? [] : parseFeatures(ctx.params.json('has_features'), 'has_features');
  const clients = await ctx.services.clients.list(ctx.app.id, has);
  return {
    results: clients.map((c) => ({ client_id: c.clientId, client_secret: c.secret, description: c.description, features: c.features })),
  };
};

export const setFeatures: Handler = async (ctx) => {
  const forClientId = ctx.params.require('for_client_id');
  const features = parseFeatures(ctx.params.json('features', true));
  await ctx.services.clients.setFeatures(ctx.app.id, caller(ctx), forClientId, features);
  return {};
};

export const deleteClient: Handler = async (ctx) => {
  await ctx.services.clients.remove(ctx.app.id, caller(ctx), ctx.params.require('client_id_for_deletion'));
  return {};
};

export const resetSecret: Handler = async (ctx) => {
  const newSecret = await ctx.services.clients.resetSecret(ctx.app.id, ctx.params.require('for_client_id'));
  return { new_secret: newSecret };
};
