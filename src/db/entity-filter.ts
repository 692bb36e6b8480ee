import { FilterUseError, type Filter, type Literal } from '../domain/filter';
import { parseTimestamp } from '../domain/timestamps';
import { sqlTime } from './models';
import { uniqueKey } from '../domain/storage/records';
import { INDEX_TEXT_CHARS } from '../domain/indexed-attributes';

type Dialect = 'mysql' | 'sqlite';
interface Column { sql: string; type: 'id' | 'text' | 'key' | 'time'; sort?: string }

/** Attributes with a column of their own; every other attribute lives in the `attributes` JSON. */
const COLUMNS: Readonly<Record<string, Column>> = {
  id: { sql: 'e.id', type: 'id' },
  uuid: { sql: 'e.uuid', type: 'text' },
  email: { sql: 'e.email_key', type: 'key', sort: 'e.email' },
  username: { sql: 'e.username_key', type: 'key', sort: 'e.username' },
  created: { sql: 'e.created', type: 'time' },
  lastUpdated: { sql: 'e.last_updated', type: 'time' },
  emailVerified: { sql: 'e.email_verified', type: 'time' },
};
const PROFILE_COLUMNS: Readonly<Record<string, string>> = { identifier: 'p.identifier', provider: 'p.provider', domain: 'p.identifier' };
/** A table's own entry only: `toString` or `__proto__` are attribute names like any other, not members of the object. */
const own = <T>(table: Readonly<Record<string, T>>, name: string): T | undefined => (Object.hasOwn(table, name) ? table[name] : undefined);
const SECRET = new Set(['password', 'passwordHash', 'password_hash']);
const OPS = new Set(['=', '!=', '>', '>=', '<', '<=']);

/** `$."a"."b"`: the JSON path of a dotted attribute (names are letters, digits and _ only). */
const jsonPath = (dotted: string) => `$.${dotted.split('.').map((s) => `"${s}"`).join('.')}`;

/**
 * Turns a filter tree into a WHERE clause over `entities e` with every value bound as `?` — never
 * spliced in — for MySQL/MariaDB or SQLite. Columns are compared directly (email and username by
 * their case- and composition-insensitive keys); other attributes through the JSON functions, a
 * number only against numbers, a boolean only against booleans; `profiles.*` through EXISTS.
 * One recursive function over the tree, with one list of bound values: its length is the grammar's.
 * An attribute of `indexed` (its name and its index's id: docs/entity-filters.md#indexed-attributes)
 * is first looked up in its index, for the records whose kept value may match, then checked whole.
 */
export function compileFilter(filter: Filter, dialect: Dialect, indexed: ReadonlyMap<string, number> = new Map()): { where: string; values: unknown[] } {
  const values: unknown[] = [];
  const bind = (v: unknown) => (values.push(v), '?');

  /**
   * The records whose kept value of index `id` may pass the test (never fewer than pass it): a
   * string by its first INDEX_TEXT_CHARS characters, a number within a hair of the bound (the
   * check casts to DECIMAL on MySQL), `!=` by kind only.
   */
  function candidates(id: number, test: { kind: 'null'; negated: boolean } | { kind: 'compare'; op: string; value: Literal }): string {
    const where = [`v.attribute_id = ${bind(id)}`];
    if (test.kind === 'null') where.push(test.negated ? 'v.kind <> 0' : 'v.kind = 0');
    else if (typeof test.value === 'string') {
      where.push('v.kind = 1');
      const prefix = [...test.value].slice(0, INDEX_TEXT_CHARS).join('');
      if (test.op === '=') where.push(`v.text_value = ${bind(prefix)}`);
      else if (test.op === '>' || test.op === '>=') where.push(`v.text_value >= ${bind(prefix)}`);
      else if (test.op === '<' || test.op === '<=') where.push(`v.text_value <= ${bind(prefix)}`);
    } else if (typeof test.value === 'number') {
      where.push('v.kind = 2');
      const hair = 1e-9 + Math.abs(test.value) * 1e-12;
      if (test.op === '=') where.push(`v.number_value BETWEEN ${bind(test.value - hair)} AND ${bind(test.value + hair)}`);
      else if (test.op === '>' || test.op === '>=') where.push(`v.number_value >= ${bind(test.value - hair)}`);
      else if (test.op === '<' || test.op === '<=') where.push(`v.number_value <= ${bind(test.value + hair)}`);
    } else {
      where.push('v.kind = 3');
      if (test.op === '=') where.push(`v.number_value = ${bind(test.value ? 1 : 0)}`);
      else if (test.op === '!=') where.push(`v.number_value = ${bind(test.value ? 0 : 1)}`);
    }
    return `e.id IN (SELECT v.entity_id FROM attribute_values v WHERE ${where.join(' AND ')})`;
  }

  // each call binds the path where its text is placed, so placeholders and values stay in step
  const json = (doc: string, path: string) => ({
    text: () => (dialect === 'mysql' ? `JSON_UNQUOTE(JSON_EXTRACT(${doc}, ${bind(jsonPath(path))}))` : `CAST(json_extract(${doc}, ${bind(jsonPath(path))}) AS TEXT)`),
    type: () => (dialect === 'mysql' ? `JSON_TYPE(JSON_EXTRACT(${doc}, ${bind(jsonPath(path))}))` : `json_type(${doc}, ${bind(jsonPath(path))})`),
  });

  function compareJson(doc: string, path: string, op: string, value: Literal): string {
    const { text, type } = json(doc, path);
    const sqlOp = op === '!=' ? '<>' : op;
    if (typeof value === 'boolean') {
      if (op !== '=' && op !== '!=') throw new FilterUseError(`${path}: true and false compare with = and != only`);
      // a boolean member only: MySQL's JSON_TYPE says BOOLEAN and its text is true/false; SQLite's json_type says true/false
      return dialect === 'mysql'
        ? `(${type()} = 'BOOLEAN' AND ${text()} ${sqlOp} ${bind(String(value))})`
        : `(${type()} IN ('true', 'false') AND ${type()} ${sqlOp} ${bind(String(value))})`;
    }
    if (typeof value === 'number') {
      // a number member only: the string '36' is not the number 36
      const numeric = dialect === 'mysql' ? "('INTEGER', 'DOUBLE', 'DECIMAL', 'UNSIGNED INTEGER')" : "('integer', 'real')";
      const t = type();
      const cast = dialect === 'mysql' ? `CAST(${text()} AS DECIMAL(38,10))` : `CAST(${text()} AS REAL)`;
      return `(${t} IN ${numeric} AND ${cast} ${sqlOp} ${bind(value)})`;
    }
    const t = type();
    return `(${t} = ${dialect === 'mysql' ? "'STRING'" : "'text'"} AND ${text()} ${sqlOp} ${bind(value)})`;
  }

  function isNullJson(doc: string, path: string): string {
    const { type } = json(doc, path);
    // a missing member and a JSON null are both "null"
    return dialect === 'mysql' ? `COALESCE(${type()}, 'NULL') = 'NULL'` : `COALESCE(${type()}, 'null') = 'null'`;
  }

  function column(c: Column, attribute: string, op: string, value: Literal): string {
    const sqlOp = op === '!=' ? '<>' : op;
    if (c.type === 'time') {
      const date = typeof value === 'string' ? parseTimestamp(value) : undefined;
      if (!date) throw new FilterUseError(`${attribute} compares with a timestamp such as '2026-01-31 12:00:00.000000 +0000'`);
      return `${c.sql} ${sqlOp} ${bind(sqlTime(dialect, date))}`;
    }
    if (c.type === 'id') {
      const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
      if (!Number.isInteger(n)) throw new FilterUseError(`${attribute} compares with a whole number`);
      return `${c.sql} ${sqlOp} ${bind(n)}`;
    }
    if (typeof value !== 'string') throw new FilterUseError(`${attribute} compares with a string in single quotes`);
    // equality on the unique key (any case, any Unicode composition); order on the stored value
    if (c.type === 'key') return op === '=' || op === '!=' ? `${c.sql} ${sqlOp} ${bind(uniqueKey(value))}` : `${c.sort} ${sqlOp} ${bind(value)}`;
    return `${c.sql} ${sqlOp} ${bind(value)}`;
  }

  /** `[NOT] EXISTS` a linked identity whose `field` passes `test` (a column of profiles, or a member of its data). */
  function profile(field: string, test: (doc: string, path?: string) => string, exists = true): string {
    const column = own(PROFILE_COLUMNS, field);
    const where = column !== undefined ? test(column) : test('p.data', field);
    return `${exists ? '' : 'NOT '}EXISTS (SELECT 1 FROM profiles p WHERE p.entity_id = e.id AND ${where})`;
  }

  /** The operands of a chain of one kind (`a or b or c` is one list, not nested pairs). */
  const chain = (f: Filter, kind: 'and' | 'or'): Filter[] => (f.kind === kind ? [...chain(f.left, kind), ...chain(f.right, kind)] : [f]);

  // chains are flat and double negations cancel, so the SQL nests no deeper than the filter's own
  // parentheses (SQLite's parser has a small fixed stack)
  // `under`: inside an odd number of NOTs, where a comparison's NULL (a missing attribute) and its
  // FALSE differ; outside them both exclude a record, so an index may answer FALSE for NULL
  function walk(f: Filter, under = false): string {
    switch (f.kind) {
      case 'and':
      case 'or': return `(${chain(f, f.kind).map((g) => walk(g, under)).join(` ${f.kind.toUpperCase()} `)})`;
      case 'not': return f.operand.kind === 'not' ? walk(f.operand.operand, under) : `NOT (${walk(f.operand, !under)})`;
      case 'compare':
      case 'null': {
        const attribute = f.attribute;
        if (SECRET.has(attribute.split('.')[0])) throw new FilterUseError(`${attribute} cannot be filtered on`);
        if (f.kind === 'compare' && !OPS.has(f.op)) throw new FilterUseError(`unknown comparison ${f.op}`);
        const [head, ...rest] = attribute.split('.');
        if (head === 'profiles') {
          const field = rest.join('.');
          if (!field) throw new FilterUseError('name a field of profiles, such as profiles.identifier');
          if (f.kind === 'null') {
            return profile(field, (doc, path) => (path ? `NOT (${isNullJson(doc, path)})` : `${doc} IS NOT NULL`), f.negated);
          }
          const { op, value } = f;
          return profile(field, (doc, path) => (path
            ? compareJson(doc, path, op, value)
            : `${doc} ${op === '!=' ? '<>' : op} ${bind(String(value))}`));
        }
        const c = rest.length === 0 ? own(COLUMNS, head) : undefined;
        const index = c ? undefined : indexed.get(attribute);
        if (f.kind === 'null') {
          if (c) return `${c.type === 'key' ? c.sort : c.sql} IS ${f.negated ? 'NOT ' : ''}NULL`;
          // (the index keeps a missing member and a JSON null alike, as the test below reads them; checked whole too)
          if (index !== undefined) {
            const first = candidates(index, f);
            return `(${first} AND ${f.negated ? `NOT (${isNullJson('e.attributes', attribute)})` : isNullJson('e.attributes', attribute)})`;
          }
          return f.negated ? `NOT (${isNullJson('e.attributes', attribute)})` : isNullJson('e.attributes', attribute);
        }
        if (c) return column(c, attribute, f.op, f.value);
        // (under a NOT the whole test alone, whose NULL for a missing attribute the index cannot give)
        if (index === undefined || under) return compareJson('e.attributes', attribute, f.op, f.value);
        // bound in the order of the text: the index's values first
        const first = candidates(index, f);
        return `(${first} AND ${compareJson('e.attributes', attribute, f.op, f.value)})`;
      }
    }
  }
  return { where: walk(filter), values };
}

/**
 * ORDER BY for `sort_on` (attribute names, `-` for descending), always ending with the id so that
 * paging with first_result is stable.
 */
export function compileSort(sortOn: string[], dialect: Dialect): { orderBy: string; values: unknown[] } {
  const values: unknown[] = [];
  const parts = sortOn.map((entry) => {
    const descending = entry.startsWith('-');
    const attribute = descending ? entry.slice(1) : entry;
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(attribute)) throw new FilterUseError(`sort_on: "${attribute.slice(0, 64)}" is not an attribute name`, 'sort');
    if (SECRET.has(attribute) || attribute.startsWith('profiles')) throw new FilterUseError(`sort_on: ${attribute} cannot be sorted on`, 'sort');
    const c = own(COLUMNS, attribute);
    let expression: string;
    if (c) expression = c.sort ?? c.sql;
    else if (dialect === 'mysql') {
      // a JSON null sorts as SQL NULL, as it does on SQLite (JSON_UNQUOTE would make it the text "null")
      values.push(jsonPath(attribute), jsonPath(attribute));
      expression = "IF(JSON_TYPE(JSON_EXTRACT(e.attributes, ?)) = 'NULL', NULL, JSON_UNQUOTE(JSON_EXTRACT(e.attributes, ?)))";
    } else {
      values.push(jsonPath(attribute));
      expression = 'json_extract(e.attributes, ?)';
    }
    return `${expression} ${descending ? 'DESC' : 'ASC'}`;
  });
  if (!sortOn.some((s) => s.replace(/^-/, '') === 'id')) parts.push('e.id ASC');
  return { orderBy: parts.join(', '), values };
}
