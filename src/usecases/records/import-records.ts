import { Refusal } from '../../domain/refusal';
import type { ImportProgress } from '../../domain/storage/imports';
import type { RecordCall, RecordDeps } from './deps';
import { assertLongEnough, BulkItemError, formatsOf, insertRecords, passwordHashes, recordImported, type NewRecordInput } from './create-records';

/** One line of an import file, read into a new record. */
export interface ImportLine { line: number; record: NewRecordInput }

/** A line the import did not create a record for, and why. */
export interface RefusedLine { line: number; message: string }

/** What a batch did: records created, lines refused, and whether an earlier run had done it all already. */
export interface ImportBatch { created: number; weak: number; refused: RefusedLine[]; done: boolean }

type ImportDeps = Pick<RecordDeps, 'clock' | 'db' | 'passwords' | 'versions' | 'work'>;

/** Where an import of this key has come to (an earlier run's progress: what a resumed import skips). */
export const importProgress = (deps: Pick<RecordDeps, 'db'>, command: { app: RecordCall['app']; key: string }): Promise<ImportProgress> =>
  deps.db.imports.progress(command.app.id, command.key);

/**
 * One batch of an import (docs/import.md): its records created, with their events and snapshots,
 * and the import moved past `lastLine`, in one transaction, so a run killed at any point and
 * started again creates each record once. A batch an earlier run committed does nothing. When an
 * address or username is taken, the batch is done again line by line (each line and its progress
 * in one transaction), and the taken ones are refused by their line; a password too short too.
 */
export async function importBatch(deps: ImportDeps, command: RecordCall & { key: string; lines: readonly ImportLine[]; lastLine: number }): Promise<ImportBatch> {
  const { app, key, lastLine } = command;
  const refused: RefusedLine[] = [];
  const lines = command.lines.filter(({ line, record }) => {
    try {
      assertLongEnough(app, record.password, 'password');
      return true;
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      refused.push({ line, message: `password ${e.message}` });
      return false;
    }
  });
  const hashes = await passwordHashes(deps, lines.map((l) => l.record));
  try {
    const created = await deps.work.run(async (uow) => {
      const before = await deps.db.imports.progress(app.id, key, uow.tx);
      if (before.linesDone >= lastLine) return undefined;
      const fresh = lines.filter((l) => l.line > before.linesDone);
      const made = await insertRecords(deps, uow, command.acting, fresh.map((l) => l.record), fresh.map((l) => hashes[lines.indexOf(l)]), true);
      await deps.db.imports.advance(app.id, key, lastLine, made.length, deps.clock.now(), uow.tx);
      // the batch's one audit entry, in its transaction: an import stopped at any point leaves none of its records unaccounted for
      recordImported(uow, command.acting, app.id, deps.clock.now(), {
        created: made.length, refused: refused.length, weak: fresh.filter((l) => l.record.hashed?.weak).length, formats: formatsOf(fresh.map((l) => l.record)),
      });
      return { count: made.length, weak: fresh.filter((l) => l.record.hashed?.weak).length };
    });
    return created === undefined ? { created: 0, weak: 0, refused: [], done: true } : { created: created.count, weak: created.weak, refused, done: false };
  } catch (e) {
    if (!(e instanceof BulkItemError)) throw e;
  }
  // a taken address or username: line by line, each with its progress
  let created = 0;
  let weak = 0;
  for (const [n, l] of lines.entries()) {
    try {
      const one = await deps.work.run(async (uow) => {
        if ((await deps.db.imports.progress(app.id, key, uow.tx)).linesDone >= l.line) return 0;
        await insertRecords(deps, uow, command.acting, [l.record], [hashes[n]], true);
        await deps.db.imports.advance(app.id, key, l.line, 1, deps.clock.now(), uow.tx);
        recordImported(uow, command.acting, app.id, deps.clock.now(), { created: 1, refused: 0, weak: l.record.hashed?.weak ? 1 : 0, formats: formatsOf([l.record]) });
        return 1;
      });
      created += one;
      if (one === 1 && l.record.hashed?.weak) weak++;
    } catch (e) {
      if (!(e instanceof BulkItemError)) throw e;
      refused.push({ line: l.line, message: `another record already has this ${e.duplicate.attribute}` });
    }
  }
  await deps.work.run(async (uow) => {
    if ((await deps.db.imports.progress(app.id, key, uow.tx)).linesDone < lastLine) await deps.db.imports.advance(app.id, key, lastLine, 0, deps.clock.now(), uow.tx);
  });
  return { created, weak, refused: refused.sort((a, b) => a.line - b.line), done: false };
}
