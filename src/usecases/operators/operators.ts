import { ApplicationExistsError } from '../../domain/applications';
import type { Acting } from '../../domain/events';
import type { FlowSource } from '../applications/import-flows';
import type { Application } from '../../domain/storage/applications';
import { createApplication } from '../applications/create-application';
import { changeDefaultSettings } from '../clients/change-settings';
import type { Services } from '../services';

/**
 * The operators' application (docs/console.md#operators): found, or created with its flows, its
 * owner and login clients as `apps:create` makes them; either way it requires a second factor
 * (`second_factor` = `required`), so that every operator signs in with two, and takes no
 * registration (`registration` = `closed`): its accounts are made by `operators:add` only.
 */
export async function ensureOperatorsApplication(
  deps: Pick<Services, 'baseUrls' | 'box' | 'clock' | 'db' | 'work'>,
  command: { name: string; flows: () => readonly FlowSource[]; acting: Acting },
): Promise<{ app: Application; created: boolean }> {
  let created = false;
  try {
    await createApplication(deps, command);
    created = true;
  } catch (e) {
    if (!(e instanceof ApplicationExistsError)) throw e;
  }
  let app = (await deps.db.applications.findByName(command.name))!;
  // operators sign in with two factors, and nobody makes an account here but operators:add
  const entries = ([['second_factor', 'required'], ['registration', 'closed']] as const).filter(([key, value]) => app.settings[key] !== value);
  if (entries.length > 0) {
    await changeDefaultSettings(deps, { applicationId: app.id, acting: command.acting, entries: entries.map(([k, v]) => [k, v]) });
    app = (await deps.db.applications.findByName(command.name))!;
  }
  return { app, created };
}
