import { ApplicationExistsError } from '../../domain/applications';
import type { Acting } from '../../domain/events';
import type { FlowSource } from '../applications/import-flows';
import { OPERATOR_ROLE_ATTRIBUTE, type OperatorRole } from '../../domain/operators';
import { Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { UserRecord } from '../../domain/storage/records';
import { createApplication } from '../applications/create-application';
import { changeDefaultSettings } from '../clients/change-settings';
import { changeRecord, RecordGoneError } from '../records/change-record';
import type { Services } from '../services';

/**
 * The operators' application (docs/console.md#operators): found, or created with its flows, its
 * owner and login clients as `apps:create` makes them; either way it requires a second factor
 * (`second_factor` = `required`), so that every operator signs in with two.
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
  if (app.settings.second_factor !== 'required') {
    await changeDefaultSettings(deps, { applicationId: app.id, acting: command.acting, entries: [['second_factor', 'required']] });
    app = (await deps.db.applications.findByName(command.name))!;
  }
  return { app, created };
}

/** Gives an operator a role, or takes it away (`null`): a change of its record, with its version and event naming who did it. */
export async function setOperatorRole(
  deps: Pick<Services, 'baseUrls' | 'clock' | 'db' | 'passwords' | 'versions' | 'work'>,
  command: { app: Application; record: UserRecord; role: OperatorRole | null; acting: Acting },
): Promise<void> {
  try {
    await changeRecord(deps, {
      app: command.app, acting: command.acting, writer: { record: command.record, byUser: false, fresh: false, clientId: null }, kind: 'record.updated',
      change: (doc) => {
        const { [OPERATOR_ROLE_ATTRIBUTE]: _old, ...rest } = doc;
        void _old;
        return command.role === null ? rest : { ...rest, [OPERATOR_ROLE_ATTRIBUTE]: command.role };
      },
    });
  } catch (e) {
    if (e instanceof RecordGoneError) throw new Refusal('gone', 'the record was deleted meanwhile');
    throw e;
  }
}
