import { NoSuchClientError } from '../../domain/clients';
import { chosenFlow } from '../../domain/flows';
import type { Storage } from '../../domain/storage';
import { event, type Acting } from '../../domain/events';
import type { UnitOfWork } from '../../domain/ports';
import type { AdminCall, AdminDeps } from './deps';

/** Settings changes: a key and its new value, or undefined to remove it. */
export type SettingEntries = readonly (readonly [string, string | undefined])[];

/** `settings` with `entries` applied (an undefined value removes its key). */
export function applied(settings: Record<string, string>, entries: SettingEntries): Record<string, string> {
  const out = { ...settings };
  for (const [k, v] of entries) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * What is wrong with a default flow name or version (settings as they will be, after the keys
 * `changed`): it must name a flow the application has. Undefined when nothing is.
 */
export async function flowSettingsProblem(
  flows: Pick<Storage['flows'], 'find' | 'latestVersion'>, applicationId: number, settings: Record<string, string>, changed: readonly string[],
): Promise<string | undefined> {
  if (!changed.includes('default_flow_name') && !changed.includes('default_flow_version')) return undefined;
  const { name: flow, version } = chosenFlow(settings);
  // both removed: the client has no default flow of its own (its pages show the account page's client's)
  if (flow === undefined && version === undefined) return undefined;
  if (flow === undefined) return 'default_flow_version names a version of the default flow: set default_flow_name as well';
  if (version !== undefined) {
    if (!(await flows.find(applicationId, flow, Number(version)))) return `this application has no flow "${flow}" version ${version}; import it first (gatehouse flows:import)`;
  } else if ((await flows.latestVersion(applicationId, flow)) === undefined) {
    return `this application has no flow "${flow}"; import it first (gatehouse flows:import)`;
  }
  return undefined;
}

/** One setting.changed per key whose value changed. */
function recordChanges(uow: UnitOfWork, acting: Acting, applicationId: number, at: Date, before: Record<string, string>, entries: SettingEntries, client?: string) {
  for (const [key, value] of entries) {
    if (before[key] === value) continue;
    uow.record(event('setting.changed', applicationId, at, acting, { kind: 'setting', id: key }, {
      key, scope: client === undefined ? 'application' : 'client', ...(client !== undefined && { client }), removed: value === undefined,
    }));
  }
}

/** Applies `entries` to a client's settings under its row lock; answers the settings as they were. */
export function changeClientSettings(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { clientId: string; entries: SettingEntries }): Promise<Record<string, string>> {
  const { applicationId, clientId, entries } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    let before: Record<string, string> = {};
    const updated = await deps.db.clients.mutate(applicationId, clientId, (c) => {
      before = c.settings;
      return { settings: applied(c.settings, entries) };
    }, now, uow.tx);
    if (!updated) throw new NoSuchClientError(clientId);
    recordChanges(uow, command.acting, applicationId, now, before, entries, clientId);
    return before;
  });
}

/** Applies `entries` to the application-wide default settings under the application's row lock; answers them as they were. */
export function changeDefaultSettings(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { entries: SettingEntries }): Promise<Record<string, string>> {
  const { applicationId, entries } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    let before: Record<string, string> = {};
    await deps.db.applications.mutateSettings(applicationId, (s) => {
      before = s;
      return applied(s, entries);
    }, now, uow.tx);
    recordChanges(uow, command.acting, applicationId, now, before, entries);
    return before;
  });
}
