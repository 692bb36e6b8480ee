import { SNAPSHOT_JOB, TOMBSTONE_JOB } from '../domain/storage/versions';
import type { Job, JobContext } from '../queue/port';
import type { Services } from '../usecases/services';
import { recordSnapshots, type VersionsSettings } from '../usecases/records/record-snapshots';

export { DEFAULT_VERSIONS, type VersionsSettings } from '../usecases/records/record-snapshots';

/** The versions queue's jobs (docs/versions.md): a snapshot or a tombstone, recorded by its use case with the backlog behind it. */
export function createVersionsProcessor(deps: { services: Pick<Services, 'db' | 'clock' | 'logger'>; settings?: Partial<VersionsSettings> }) {
  return async (job: Job, context: JobContext): Promise<Record<string, unknown>> => {
    if (job.name !== SNAPSHOT_JOB && job.name !== TOMBSTONE_JOB) throw new Error(`the versions queue has no job named "${job.name}"`);
    const result = await recordSnapshots(deps.services, { outboxId: String(job.data.outboxId ?? job.id), finalAttempt: context.finalAttempt, settings: deps.settings });
    return result.kind === 'skipped' ? { skipped: result.why } : { recorded: result.recorded };
  };
}
