import { errors } from '../../errors';
import { caller, type Handler, type RequestContext } from '../context';

const KEY = /^[A-Za-z0-9_.:-]{1,128}$/;
const MAX_VALUE = 4096;

function key(ctx: RequestContext, name = 'key'): string {
  const k = ctx.params.require(name);
  if (!KEY.test(k)) throw errors.invalidArgument(name, 'must be 1 to 128 letters, digits, or _ . : -');
  return k;
}

function value(v: unknown, name: string): string {
  if (typeof v !== 'string') throw errors.invalidArgument(name, 'must be a string');
  if (v.length > MAX_VALUE) throw errors.invalidArgument(name, `is longer than ${MAX_VALUE} characters`);
  return v;
}

/** The client whose settings the call is about: `for_client_id`, or the caller. */
const target = (ctx: RequestContext) => ctx.params.get('for_client_id') ?? caller(ctx).clientId;

/** Client settings layered over the application-wide defaults, as the original resolves them. */
async function effective(ctx: RequestContext): Promise<Record<string, string>> {
  const client = await ctx.services.clients.find(ctx.app.id, target(ctx));
  if (!client) throw errors.invalidArgument('for_client_id', `no client ${target(ctx)} in this application`);
  const app = await ctx.services.db.applications.findById(ctx.app.id);
  return { ...(app?.settings ?? {}), ...client.settings };
}

const change = (ctx: RequestContext, fn: (s: Record<string, string>) => Record<string, string>) =>
  ctx.services.clients.changeSettings(ctx.app.id, target(ctx), fn);

export const getSetting: Handler = async (ctx) => {
  const k = key(ctx);
  return { result: (await effective(ctx))[k] ?? null };
};

export const listSettings: Handler = async (ctx) => ({ result: await effective(ctx) });

export const settingKeys: Handler = async (ctx) => ({ result: Object.keys(await effective(ctx)).sort() });

/** Answers whether the key existed before (the original's `result`). */
export const setSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const v = value(ctx.params.require('value'), 'value');
  const before = await change(ctx, (s) => ({ ...s, [k]: v }));
  return { result: k in before };
};

export const setSettings: Handler = async (ctx) => {
  const items = ctx.params.json('items', true);
  if (typeof items !== 'object' || items === null || Array.isArray(items)) {
    throw errors.invalidArgument('items', 'must be a JSON object of key → string value');
  }
  const entries = Object.entries(items).map(([k, v]) => {
    if (!KEY.test(k)) throw errors.invalidArgument('items', `key ${JSON.stringify(k)} must be 1 to 128 letters, digits, or _ . : -`);
    return [k, value(v, `items.${k}`)] as const;
  });
  const before = await change(ctx, (s) => ({ ...s, ...Object.fromEntries(entries) }));
  return { result: Object.fromEntries(entries.map(([k]) => [k, k in before])) };
};

export const deleteSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const before = await change(ctx, ({ [k]: _removed, ...rest }) => rest);
  return { result: k in before };
};

/** Application-wide default, seen by every client without its own value for the key. */
export const setDefaultSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const v = value(ctx.params.require('value'), 'value');
  let existed = false;
  await ctx.services.db.applications.mutateSettings(ctx.app.id, (s) => {
    existed = k in s;
    return { ...s, [k]: v };
  }, ctx.services.clock.now());
  return { result: existed };
};
