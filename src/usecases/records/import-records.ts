import { Refusal } from '../../domain/refusal';
import type { ImportProgress } from '../../domain/storage/imports';
import { uniqueKey } from '../../domain/storage/records';
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

/** A line whose address or username another record has: found by the batch's transaction, which is rolled back. */
class TakenLine extends Error {
  constructor(readonly line: ImportLine, readonly attribute: string) {
    super(`line ${line.line}: the ${attribute} is taken`);
  }
}

/** Thrown to roll back a transaction that only tried whether a line can be created. */
class Tried extends Error {}

/**
 * One batch of an import (docs/import.md): its records created, with their events and snapshots,
 * its one audit entry, and the import moved past `lastLine`, in one transaction, so a run killed at
 * any point and started again creates each record once and leaves none unaccounted for. A batch an
 * earlier run committed does nothing. When an address or username is taken, each line is tried
 * alone in a transaction rolled back, and the batch without the taken ones is committed as one;
 * a password too short is refused too.
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
  const hashed = await passwordHashes(deps, lines.map((l) => l.record));
  const hashes = new Map(lines.map((l, n) => [l, hashed[n]]));
  const hashOf = (l: ImportLine) => hashes.get(l) ?? null;
  const refuse = (l: ImportLine, attribute: string) => refused.push({ line: l.line, message: `another record already has this ${attribute}` });

  /** The lines in `kept` created in one transaction with the batch's progress and its audit entry; done when an earlier run did it. */
  const commit = async (kept: readonly ImportLine[]): Promise<ImportBatch> => {
    const done = await deps.work.run(async (uow) => {
      const before = await deps.db.imports.progress(app.id, key, uow.tx);
      if (before.linesDone >= lastLine) return undefined;
      // lines an earlier run created one by one, before a batch was one transaction
      const fresh = kept.filter((l) => l.line > before.linesDone);
      const made = await insertRecords(deps, uow, command.acting, fresh.map((l) => l.record), fresh.map(hashOf), true).catch((e: unknown) => {
        throw e instanceof BulkItemError ? new TakenLine(fresh[e.index], e.duplicate.attribute) : e;
      });
      await deps.db.imports.advance(app.id, key, lastLine, made.length, deps.clock.now(), uow.tx);
      const weak = fresh.filter((l) => l.record.hashed?.weak).length;
      // the batch's one audit entry, in its transaction: an import stopped at any point leaves none of its records unaccounted for
      recordImported(uow, command.acting, app.id, deps.clock.now(), {
        created: made.length, refused: refused.filter((r) => r.line > before.linesDone).length, weak, formats: formatsOf(fresh.map((l) => l.record)),
      });
      return { created: made.length, weak };
    });
    return done === undefined ? { created: 0, weak: 0, refused: [], done: true } : { ...done, refused: refused.sort((a, b) => a.line - b.line), done: false };
  };

  /** The attribute of `l` another record has, if any: `l` created alone in a transaction that is always rolled back. */
  const takenOf = async (l: ImportLine): Promise<string | undefined> => {
    try {
      await deps.work.run(async (uow) => {
        await insertRecords(deps, uow, command.acting, [l.record], [hashOf(l)], true);
        throw new Tried();
      });
    } catch (e) {
      if (e instanceof BulkItemError) return e.duplicate.attribute;
      if (!(e instanceof Tried)) throw e;
    }
    return undefined;
  };

  try {
    return await commit(lines);
  } catch (e) {
    if (!(e instanceof TakenLine)) throw e;
  }
  // a taken address or username: each line tried alone finds the taken ones (a short transaction each, where retrying
  // the batch would cost a whole batch for each), and the batch without them is committed as one
  const { linesDone } = await deps.db.imports.progress(app.id, key);
  let kept: ImportLine[] = [];
  // the keys the lines kept so far hold: a repeat within the batch is refused here, not by committing the batch again
  const held = new Set<string>();
  const keysOf = (l: ImportLine) => ([['email', l.record.entity.email], ['username', l.record.entity.username]] as const)
    .flatMap(([attribute, value]) => (value ? [[attribute, `${attribute} ${uniqueKey(value)}`] as const] : []));
  for (const l of lines) {
    // (a line an earlier run created is kept: the commit skips it)
    const attribute = l.line > linesDone ? keysOf(l).find(([, k]) => held.has(k))?.[0] ?? await takenOf(l) : undefined;
    if (attribute !== undefined) {
      refuse(l, attribute);
      continue;
    }
    kept.push(l);
    for (const [, k] of keysOf(l)) held.add(k);
  }
  for (;;) {
    try {
      return await commit(kept);
    } catch (e) {
      if (!(e instanceof TakenLine)) throw e;
      // taken by an earlier line of the batch, or by a record made since its line was tried
      refuse(e.line, e.attribute);
      kept = kept.filter((l) => l !== e.line);
    }
  }
}
