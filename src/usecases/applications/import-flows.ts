import type { Clock } from '../../domain/clients';
import { event, type Acting } from '../../domain/events';
import type { FlowDefinition } from '../../domain/flow-definition';
import type { UnitOfWork, Work } from '../../domain/ports';
import type { Storage } from '../../domain/storage';

/** A flow as read from its folder: the definition and its checksum. */
export interface FlowSource { definition: FlowDefinition; checksum: string }

export type ImportedFlow = { name: string; version: number; unchanged?: true };

/** There is no application of this name. */
export class NoSuchApplicationError extends Error {
  constructor(readonly application: string) {
    super(`there is no application "${application}"; create it with: gatehouse apps:create ${application}`);
  }
}

/**
 * Imports flows into an application in the work's transaction as new immutable versions; a flow
 * identical to its newest version keeps that version (`unchanged`, and no event).
 */
export async function insertFlows(
  deps: { db: Storage; clock: Clock }, uow: UnitOfWork, acting: Acting, applicationId: number, flows: readonly FlowSource[],
): Promise<ImportedFlow[]> {
  const imported: ImportedFlow[] = [];
  for (const { definition, checksum } of flows) {
    const now = deps.clock.now();
    const stored = await deps.db.flows.insertNextVersion(applicationId, definition.name, definition, checksum, now, uow.tx);
    imported.push({ name: stored.name, version: stored.version, ...(stored.unchanged && { unchanged: true as const }) });
    if (!stored.unchanged) {
      uow.record(event('flow.imported', applicationId, now, acting, { kind: 'flow', id: `${stored.name}/${stored.version}` }, { name: stored.name, version: stored.version }));
    }
  }
  return imported;
}

/** `gatehouse flows:import`: the flows into the named application, all of them or none. */
export async function importFlows(
  deps: { db: Storage; work: Work; clock: Clock }, command: { applicationName: string; flows: readonly FlowSource[]; acting: Acting },
): Promise<ImportedFlow[]> {
  const app = await deps.db.applications.findByName(command.applicationName);
  if (!app) throw new NoSuchApplicationError(command.applicationName);
  return deps.work.run((uow) => insertFlows(deps, uow, command.acting, app.id, command.flows));
}
