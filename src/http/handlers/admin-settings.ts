import { SETTING_KEY, SETTING_KEY_FORM, settingValueProblem } from '../../domain/settings';
import { errors } from '../../errors';
import { adminCall, caller, type Handler, type RequestContext } from '../context';
import { NoSuchClientError } from '../../domain/clients';
import { applied, changeClientSettings, changeDefaultSettings, flowSettingsProblem } from '../../usecases/clients/change-settings';


function key(ctx: RequestContext, name = 'key'): string {
  const k = ctx.params.require(name);
  if (!SETTING_KEY.test(k)) throw errors.invalidArgument(name, SETTING_KEY_FORM);
  return k;
}

/** A setting's new value, checked when Gatehouse reads the key; `undefined` (an empty value) clears the setting. */
function value(k: string, v: unknown, name: string): string | undefined {
  if (typeof v !== 'string') throw errors.invalidArgument(name, 'must be a string');
  if (v === '') return undefined;
  const problem = settingValueProblem(k, v);
  if (problem) throw errors.invalidArgument(name, problem);
  return v;
}

/** The value `value` sent, or an empty one (which clears the setting). */
const sentValue = (ctx: RequestContext) => {
  if (!ctx.params.has('value')) throw errors.missingArgument('value');
  return ctx.params.values.value;
};


/** A default flow name or version must name a flow the application has: checked against the settings as they will be. */
async function checkFlow(ctx: RequestContext, settings: () => Promise<Record<string, string>>, changed: string[], name: string): Promise<void> {
  if (!changed.includes('default_flow_name') && !changed.includes('default_flow_version')) return;
  const problem = await flowSettingsProblem(ctx.services.db.lagTolerant.flows, ctx.app.id, await settings(), changed);
  if (problem) throw errors.invalidArgument(name, problem);
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

/** Applies `entries` to the target client's settings; answers the settings as they were. */
async function change(ctx: RequestContext, entries: (readonly [string, string | undefined])[], name: string): Promise<Record<string, string>> {
  await checkFlow(ctx, async () => applied(await effective(ctx), entries), entries.map(([k]) => k), name);
  return changeClientSettings(ctx.services, { ...adminCall(ctx), clientId: target(ctx), entries }).catch((e: unknown) => {
    if (e instanceof NoSuchClientError) throw errors.invalidArgument('for_client_id', e.message);
    throw e;
  });
}

export const getSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const settings = await effective(ctx);
  // own keys only: `toString` is a key like any other, not the object's method
  return { result: Object.hasOwn(settings, k) ? settings[k] : null };
};

export const listSettings: Handler = async (ctx) => ({ result: await effective(ctx) });

export const settingKeys: Handler = async (ctx) => ({ result: Object.keys(await effective(ctx)).sort() });

/** Answers whether the key existed before (the original's `result`). */
export const setSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const before = await change(ctx, [[k, value(k, sentValue(ctx), 'value')]], 'value');
  return { result: Object.hasOwn(before, k) };
};

export const setSettings: Handler = async (ctx) => {
  const items = ctx.params.json('items', true);
  if (typeof items !== 'object' || items === null || Array.isArray(items)) {
    throw errors.invalidArgument('items', 'must be a JSON object of key → string value');
  }
  const entries = Object.entries(items).map(([k, v]) => {
    if (!SETTING_KEY.test(k)) throw errors.invalidArgument('items', `key ${JSON.stringify(k)} ${SETTING_KEY_FORM}`);
    return [k, value(k, v, `items.${k}`)] as const;
  });
  const before = await change(ctx, entries, 'items');
  return { result: Object.fromEntries(entries.map(([k]) => [k, Object.hasOwn(before, k)])) };
};

export const deleteSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const before = await change(ctx, [[k, undefined]], 'key');
  return { result: Object.hasOwn(before, k) };
};

/** Application-wide default, seen by every client without its own value for the key. */
export const setDefaultSetting: Handler = async (ctx) => {
  const k = key(ctx);
  const entries = [[k, value(k, sentValue(ctx), 'value')] as const];
  await checkFlow(ctx, async () => applied((await ctx.services.db.applications.findById(ctx.app.id))?.settings ?? {}, entries), [k], 'value');
  const before = await changeDefaultSettings(ctx.services, { ...adminCall(ctx), entries });
  return { result: Object.hasOwn(before, k) };
};
