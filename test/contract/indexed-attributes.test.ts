import { randomUUID } from 'node:crypto';
import { BUILD_DELAY_MS, INDEX_TEXT_CHARS } from '../../src/domain/indexed-attributes';
import { parseFilter } from '../../src/domain/filter';
import { compileFilter } from '../../src/db/entity-filter';
import { updated, type UserRecord } from '../../src/domain/storage/records';
import { forEveryEngine } from '../helpers/contract';

// Indexed attributes (docs/entity-filters.md#indexed-attributes): a declared attribute is built
// from the existing records in batches, kept by every write of a record (the sign-in's stored
// procedure included), and a search on it answers exactly what a scan answers, through its index.

type Doc = Record<string, unknown>;
const long = (tail: string) => `${'x'.repeat(INDEX_TEXT_CHARS + 20)}${tail}`;

/** Attributes of many shapes: strings (some longer than an index key, sharing its prefix), numbers, booleans, members, nulls, objects. */
const shapes = (n: number): Doc => {
  const doc: Doc = {};
  if (n % 7 !== 0) doc.familyName = n % 5 === 0 ? long(String(n % 3)) : `name-${n % 4}`;
  if (n % 6 === 0) doc.familyName = null;
  if (n % 3 !== 0) doc.age = n % 11 === 0 ? `${n}` : (n % 9) + (n % 2 ? 0.5 : 0);
  doc.active = n % 4 === 0 ? 'yes' : n % 2 === 0;
  if (n % 8 === 0) doc.primaryAddress = { country: n % 16 === 0 ? 'FR' : 'GB' };
  if (n % 10 === 0) doc.primaryAddress = 'somewhere';
  if (n % 13 === 0) doc.age = { years: 3 };
  return doc;
};

const FILTERS = [
  "familyName = 'name-1'", "familyName != 'name-1'", "familyName > 'name-1'", "familyName <= 'name-2'", `familyName = '${long('1')}'`,
  `familyName > '${long('1')}'`, `familyName < '${long('1')}'`, 'familyName is null', 'familyName is not null',
  'age = 4', 'age > 3', 'age <= 2', "age = '22'", 'age is null', 'age != 4', 'age >= 5',
  'active = true', 'active != true', "active = 'yes'", 'active is null',
  "primaryAddress.country = 'FR'", "primaryAddress.country != 'FR'", 'primaryAddress.country is null', 'primaryAddress.country is not null',
  "familyName = 'name-1' and age > 3", "familyName = 'name-1' or primaryAddress.country = 'FR'", "not (familyName = 'name-2')",
];
const INDEXED = ['familyName', 'age', 'active', 'primaryAddress.country', 'lastLogin'];

forEveryEngine('indexed attributes', (storage) => {
  const records: UserRecord[] = [];
  const search = async (filter: string) => {
    const { db, appId } = storage();
    return (await db.records.searchPage(appId, parseFilter(filter), ['id'], { limit: 1000, offset: 0 }, 10_000)).map((r) => r.id);
  };
  /** What each filter answers now (without indexes, a scan: the truth). */
  const answers = async () => Object.fromEntries(await Promise.all(FILTERS.map(async (f) => [f, await search(f)] as const)));
  const insert = (attributes: Doc) => storage().db.transaction((tx) => storage().db.records.insert({
    applicationId: storage().appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null, passwordHash: null, emailVerified: null, attributes,
  }, new Date(), tx));
  const kept = async () => {
    const [rows] = await storage().db.sequelize.query('SELECT COUNT(*) AS n FROM attribute_values') as [{ n: number }[], unknown];
    return Number(rows[0].n);
  };

  beforeAll(async () => {
    for (let n = 0; n < 60; n++) records.push(await insert(shapes(n)));
  });

  it('a declared attribute is built from the existing records in batches, then searches use it and answer what a scan answers', async () => {
    const { db, appId } = storage();
    const scanned = await answers();
    expect(Object.values(scanned).every((ids) => ids.length < 60)).toBe(true);
    expect(scanned["familyName = 'name-1'"].length).toBeGreaterThan(0);
    // declared long enough ago that every writer keeps it (else the build waits BUILD_DELAY_MS)
    const then = new Date(Date.now() - BUILD_DELAY_MS - 1000);
    for (const name of INDEXED) expect(await db.transaction((tx) => db.attributeIndexes.declare(appId, name, 16, then, tx))).toBe('declared');
    expect(await db.transaction((tx) => db.attributeIndexes.declare(appId, 'age', 16, then, tx))).toBe('exists');
    expect(await db.transaction((tx) => db.attributeIndexes.declare(appId, 'other', INDEXED.length, then, tx))).toBe('full');
    expect((await db.attributeIndexes.list(appId)).map((a) => a.state)).toEqual(INDEXED.map(() => 'building'));
    // building: searches still scan, and answer the same
    expect(await answers()).toEqual(scanned);
    let batches = 0;
    for (let built = await db.attributeIndexes.buildAlone(7, new Date()); built; built = await db.attributeIndexes.buildAlone(7, new Date())) batches++;
    expect(batches).toBeGreaterThanOrEqual(INDEXED.length * 9);
    expect((await db.attributeIndexes.list(appId)).map((a) => a.state)).toEqual(INDEXED.map(() => 'ready'));
    expect(await kept()).toBe(60 * INDEXED.length);
    expect(await answers()).toEqual(scanned);
  });

  it('the search goes through the index (the query plan names it)', async () => {
    const { db, appId } = storage();
    const [ids] = await db.sequelize.query('SELECT id, name FROM indexed_attributes WHERE application_id = ?', { replacements: [appId] }) as [{ id: number; name: string }[], unknown];
    const map = new Map(ids.map((r) => [r.name, Number(r.id)]));
    expect(map.size).toBe(INDEXED.length);
    const mysql = db.sequelize.getDialect() === 'mysql';
    for (const [filter, key] of [["familyName = 'name-1'", 'attribute_values_text'], ['age > 3', 'attribute_values_number'], ['familyName is null', 'attribute_values_text']] as const) {
      const { where, values } = compileFilter(parseFilter(filter), mysql ? 'mysql' : 'sqlite', map);
      const [plan] = await db.sequelize.query(`${mysql ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} SELECT e.id FROM entities e WHERE e.application_id = ? AND (${where})`, { replacements: [appId, ...values] });
      // (SQLite's planner, with no statistics, may take either index of the attribute)
      expect(JSON.stringify(plan)).toContain(mysql ? key : 'USING INDEX attribute_values_');
    }
  });

  it('every write keeps the values: insert, update, replace, a time set, a sign-in (with and without the stored procedure), a deletion', async () => {
    const { db, appId } = storage();
    const scanned = await answers();
    records.push(await insert({ familyName: 'name-1', age: 5, active: true, primaryAddress: { country: 'FR' } }));
    await db.transaction(async (tx) => {
      const locked = (await db.records.findForUpdate(appId, records[1].id, tx))!;
      await db.records.update(locked, { attributes: { familyName: 'name-2', age: 8 } }, new Date(), tx);
    });
    await db.transaction(async (tx) => {
      const locked = (await db.records.findForUpdate(appId, records[2].id, tx))!;
      await db.records.replace(locked, { email: locked.email, username: null, emailVerified: null, attributes: { active: false } }, new Date(), tx);
    });
    await db.transaction(async (tx) => {
      const locked = (await db.records.findForUpdate(appId, records[3].id, tx))!;
      await db.records.setTime(locked, 'lastLogin', new Date('2026-01-01T00:00:00Z'), tx);
    });
    await db.transaction(async (tx) => db.records.remove((await db.records.findForUpdate(appId, records[4].id, tx))!, tx));
    // a sign-in's write as the use case makes it: on MariaDB the stored procedure's, unless an index keeps lastLogin (this one does)
    const read = (await db.records.find(appId, { id: records[5].id }))!;
    const at = new Date('2026-02-02T00:00:00Z');
    expect(await db.records.signInAlone(read, updated(read, { attributes: { lastLogin: at.toISOString() } }, at), [], [], [], at)).toBe(true);
    const after = await answers();
    expect(after).not.toEqual(scanned);
    expect(await search(`lastLogin = '${at.toISOString()}'`)).toEqual([records[5].id]);
    expect(await search("lastLogin < '2026-01-02'")).toEqual([records[3].id]);
    // the truth after the writes: the same filters with no index at all; searches stop using an index
    // at once when it is removed, its values go later, in batches, and it cannot be declared meanwhile
    for (const a of await db.attributeIndexes.list(appId)) expect(await db.transaction((tx) => db.attributeIndexes.remove(appId, a.name, new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.attributeIndexes.remove(appId, 'age', new Date(), tx))).toBe(false);
    expect(await db.transaction((tx) => db.attributeIndexes.declare(appId, 'age', 16, new Date(), tx))).toBe('removing');
    expect(await kept()).toBe(60 * INDEXED.length); // (61 records made, one deleted: its values went with it)
    expect(await answers()).toEqual(after);
    expect(await db.attributeIndexes.buildAlone(25, new Date())).toBeUndefined();
    const later = new Date(Date.now() + BUILD_DELAY_MS + 1000);
    let batches = 0;
    for (let done = await db.attributeIndexes.buildAlone(25, later); done; done = await db.attributeIndexes.buildAlone(25, later)) batches++;
    expect(batches).toBeGreaterThanOrEqual(INDEXED.length * 3);
    expect(await kept()).toBe(0);
    expect(await db.attributeIndexes.list(appId)).toEqual([]);
    expect(await answers()).toEqual(after);
  });

  it('a build under concurrent writes keeps every record\'s last value', async () => {
    const { db, appId, on } = storage();
    expect(await db.transaction((tx) => db.attributeIndexes.declare(appId, 'familyName', 16, new Date(Date.now() - BUILD_DELAY_MS - 1000), tx))).toBe('declared');
    let building = true;
    await Promise.all([
      (async () => {
        while (await on(1).attributeIndexes.buildAlone(3, new Date()));
        building = false;
      })(),
      (async () => {
        for (let i = 0; building || i < 10; i++) {
          const id = records[(i * 7) % records.length].id;
          await on(2).transaction(async (tx) => {
            const locked = await on(2).records.findForUpdate(appId, id, tx);
            if (locked) await on(2).records.update(locked, { attributes: { familyName: `written-${i}` } }, new Date(), tx);
          });
        }
      })(),
    ]);
    const [rows] = await db.sequelize.query(`SELECT e.id, e.attributes, v.text_value FROM entities e LEFT JOIN attribute_values v ON v.entity_id = e.id
      WHERE e.application_id = ?`, { replacements: [appId] }) as [{ id: number; attributes: string; text_value: string | null }[], unknown];
    expect(rows.length).toBe(records.length - 1);
    for (const r of rows) {
      const value = (JSON.parse(r.attributes) as Doc).familyName;
      expect({ id: r.id, text: r.text_value }).toEqual({ id: r.id, text: typeof value === 'string' ? [...value].slice(0, INDEX_TEXT_CHARS).join('') : null });
    }
  });

  it('a write of a record by id goes through the primary key alone (an index that leads it elsewhere first made two sign-ins of one account deadlock)', async () => {
    const { db, appId } = storage();
    if (db.sequelize.getDialect() !== 'mysql') return;
    const [plan] = await db.sequelize.query('EXPLAIN UPDATE entities SET version = version + 1 WHERE id = ? AND application_id = ? AND version = ?', { replacements: [records[0].id, appId, 1] }) as [{ key: string | null }[], unknown];
    expect(plan.map((p) => p.key)).toEqual(['PRIMARY']);
  });
});
