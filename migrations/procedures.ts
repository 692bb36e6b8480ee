import fs from 'node:fs';
import path from 'node:path';
import type { QueryInterface } from 'sequelize';

/**
 * Stored procedures are versioned SQL sources under migrations/procedures, `<name>.<version>.sql`:
 * a migration installs a version by name, and a landed version is never edited (the next one is a
 * new file and a new migration), so an old migration installs on a new database exactly what it
 * installed when it landed.
 */

/** What a migration run is asked for, beyond the database it runs on. */
export interface MigrationOptions {
  /** Install stored procedures (MySQL/MariaDB); off for engines that have none (DATABASE_PROCEDURES=off). */
  procedures: boolean;
}

/** The procedures of the current schema and the version of each that the code calls. */
export const PROCEDURES: Record<string, number> = {
  gh_rotate_refresh: 3, gh_sign_in: 1, gh_sign_in_events: 1, gh_sign_in_with_events: 1, gh_rotate_with_event: 2, gh_spend_with_event: 1,
};

/** The comment each installed procedure carries: how `installedProcedures` knows its version. */
const versionComment = (name: string, version: number) => `gatehouse ${name} ${version}`;

/** The source of one version of a procedure (compiled migrations find theirs copied beside them). */
export function procedureSource(name: string, version: number): string {
  return fs.readFileSync(path.join(__dirname, 'procedures', `${name}.${version}.sql`), 'utf8');
}

/** Whether this run installs procedures: on MySQL/MariaDB, unless they are turned off. */
export const installsProcedures = (qi: QueryInterface, options?: MigrationOptions) =>
  qi.sequelize.getDialect() === 'mysql' && options?.procedures !== false;

/** Replaces the procedure `name` with `version` of its source, marked with its version. */
export async function installProcedure(qi: QueryInterface, name: string, version: number): Promise<void> {
  const source = procedureSource(name, version);
  const marked = source.replace(/\bSQL SECURITY INVOKER\b/, `SQL SECURITY INVOKER\nCOMMENT '${versionComment(name, version)}'`);
  if (marked === source) throw new Error(`${name}.${version}.sql has no SQL SECURITY INVOKER clause to mark`);
  // MariaDB replaces it atomically: a CALL in flight never finds it missing. MySQL has no OR
  // REPLACE for procedures; there it is dropped and created again (see docs/decisions.md)
  const [[{ version: server }]] = await qi.sequelize.query('SELECT VERSION() AS version') as [[{ version: string }], unknown];
  if (/mariadb/i.test(server)) return void await qi.sequelize.query(marked.replace(/\bCREATE PROCEDURE\b/, 'CREATE OR REPLACE PROCEDURE'));
  await qi.sequelize.query(`DROP PROCEDURE IF EXISTS ${name}`);
  await qi.sequelize.query(marked);
}

/** A procedure's body, BEGIN to END with its whitespace collapsed: how a source compares with what the server holds. */
const bodyOf = (text: string) => text.slice(Math.max(0, text.search(/^BEGIN\b/m))).replace(/\s+/g, ' ').trim();

interface Installed { name: string; comment: string; definition: string | null }

async function installed(qi: QueryInterface): Promise<Map<string, Installed>> {
  const [rows] = await qi.sequelize.query(
    'SELECT ROUTINE_NAME AS name, ROUTINE_COMMENT AS comment, ROUTINE_DEFINITION AS definition FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = \'PROCEDURE\'',
  );
  return new Map((rows as Installed[]).map((r) => [r.name, r]));
}

/**
 * Whether an installed procedure is `version` of `name`: it carries that version's mark, or it
 * carries none (installed before procedures were marked) and has that version's body.
 */
function isVersion(found: Installed | undefined, name: string, version: number): 'marked' | 'unmarked' | false {
  if (!found) return false;
  if (found.comment === versionComment(name, version)) return 'marked';
  return found.comment === '' && found.definition !== null && bodyOf(found.definition) === bodyOf(procedureSource(name, version)) ? 'unmarked' : false;
}

/**
 * The current procedures missing from the database or installed at another version (a database
 * migrated with procedures off, then run with them on), as `name version`.
 */
export async function missingProcedures(qi: QueryInterface): Promise<string[]> {
  const found = await installed(qi);
  return Object.entries(PROCEDURES).filter(([name, version]) => !isVersion(found.get(name), name, version)).map(([name, version]) => `${name} ${version}`);
}

/**
 * Marks the current procedures installed before procedures carried their version (same body, no
 * mark) with their version, in place: ALTER, never DROP, so a CALL in flight never misses them.
 */
export async function markProcedures(qi: QueryInterface): Promise<void> {
  const found = await installed(qi);
  for (const [name, version] of Object.entries(PROCEDURES)) {
    if (isVersion(found.get(name), name, version) === 'unmarked') await qi.sequelize.query(`ALTER PROCEDURE ${name} COMMENT '${versionComment(name, version)}'`);
  }
}
