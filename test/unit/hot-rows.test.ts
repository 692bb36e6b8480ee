import fs from 'node:fs';
import path from 'node:path';
import { PROCEDURES, procedureSource } from '../../migrations/procedures';
import { CREDENTIAL_COLUMNS, EVENT_COLUMNS, insertRows, OUTBOX_COLUMNS, procedureMembers } from '../../src/db/hot-rows';

// The rows of the two hot writes are written once (src/db/hot-rows.ts): the portable statements
// insert them, a CALL hands them to the stored procedures keyed by column. The procedures are
// frozen SQL, so this checks them against the one list: every procedure the code calls inserts
// exactly these columns and reads only these members of its JSON arrays.

const ROOT = path.join(__dirname, '../..');
/** The procedures the code calls, at the version it calls (src/db/mysql/procedures.ts). */
const called = [...fs.readFileSync(path.join(ROOT, 'src/db/mysql/procedures.ts'), 'utf8').matchAll(/CALL (\w+)\(/g)].map((m) => m[1]);

/** The column list of every `INSERT INTO table (…)` of `source`. */
const insertedColumns = (source: string, table: string) =>
  [...source.matchAll(new RegExp(`INSERT INTO ${table} \\(([^)]*)\\)`, 'g'))].map((m) => m[1].split(',').map((c) => c.trim()));

/** The members a procedure reads from the JSON array parameter `parameter`. */
const membersRead = (source: string, parameter: string) =>
  [...source.matchAll(new RegExp(`JSON_EXTRACT\\(${parameter}, CONCAT\\('\\$\\[', \\w+, '\\]\\.(\\w+)'\\)\\)`, 'g'))].map((m) => m[1]);

/** The members the sign-in procedure reads of each event, once taken out of p_events. */
const eventMembersRead = (source: string) => [...source.matchAll(/JSON_EXTRACT\(v_event, '\$\.(\w+)'\)/g)].map((m) => m[1]);

it('the code calls the sign-in and the rotation procedures, at versions that exist', () => {
  expect(called.sort()).toEqual(['gh_rotate_with_event', 'gh_sign_in_with_events', 'gh_spend_with_event']);
  for (const name of called) expect(() => procedureSource(name, PROCEDURES[name])).not.toThrow();
});

it.each(called)('%s inserts exactly the columns of the one list, and reads only its members', (name) => {
  const source = procedureSource(name, PROCEDURES[name]);
  const credentials = insertedColumns(source, 'credentials');
  // a spend inserts no credential
  expect(credentials.length > 0).toBe(name !== 'gh_spend_with_event');
  for (const columns of credentials) expect(columns).toEqual([...CREDENTIAL_COLUMNS]);
  for (const columns of insertedColumns(source, 'outbox')) expect(columns).toEqual([...OUTBOX_COLUMNS]);
  for (const member of membersRead(source, 'p_credentials')) expect(CREDENTIAL_COLUMNS).toContain(member);
  for (const member of membersRead(source, 'p_outbox')) expect(OUTBOX_COLUMNS).toContain(member);
  // every procedure the code calls writes its events, in the columns of the one list
  const events = insertedColumns(source, 'events');
  expect(events.length).toBeGreaterThan(0);
  for (const columns of events) expect(columns).toEqual([...EVENT_COLUMNS]);
  for (const member of eventMembersRead(source)) expect(EVENT_COLUMNS).toContain(member);
});

it('the spend procedure takes its event one parameter a column, in the list\'s order (the CALL hands them so)', () => {
  const source = procedureSource('gh_spend_with_event', PROCEDURES.gh_spend_with_event);
  const parameters = [...source.matchAll(/IN p_e_(\w+) /g)].map((m) => m[1]);
  expect(parameters).toEqual(EVENT_COLUMNS.filter((c) => c !== 'application_id'));
  expect(source).toContain(`VALUES (p_app, ${parameters.map((c) => `p_e_${c}`).join(', ')})`);
});

it('the rotation procedure takes its event as parameters, and makes the spent token\'s record its account', () => {
  const source = procedureSource('gh_rotate_with_event', PROCEDURES.gh_rotate_with_event);
  for (const parameter of ['p_uid', 'p_type', 'p_client_id', 'p_address', 'p_user_agent', 'p_request_id', 'p_data']) expect(source).toContain(`IN ${parameter} `);
  expect(source).toMatch(/VALUES \(p_app, p_uid, p_type, 1, v_entity, 'account', v_entity, p_client_id, 'record', v_entity, p_address, p_user_agent, p_request_id, p_now, p_data\)/);
  // the CALL hands them in that order
  const call = fs.readFileSync(path.join(ROOT, 'src/db/mysql/procedures.ts'), 'utf8');
  expect(call).toContain('e.uid, e.type, e.client_id, e.address, e.user_agent, e.request_id, e.data');
});

it('the sign-in procedure reads every member a CALL hands it', () => {
  const source = procedureSource('gh_sign_in_with_events', PROCEDURES.gh_sign_in_with_events);
  const credential = procedureMembers({ application_id: 1, kind: 'access_token', value_hash: 'h', entity_id: 2, client_id: 3, for_client_id: 4,
    redirect_uri: 'https://a.example/', extra: '{}', family: 'f', expires_at: 't', used_at: null, created_at: 't' }, ['application_id', 'entity_id', 'used_at', 'created_at']);
  expect(Object.keys(credential).sort()).toEqual([...new Set(membersRead(source, 'p_credentials'))].sort());
  const outbox = procedureMembers({ id: 'i', application_id: 1, queue: 'q', name: 'n', payload: '{}', status: 'pending', attempts: 0, created_at: 't', updated_at: 't', entity_id: 2, event_id: 'e' },
    ['application_id', 'status', 'attempts', 'created_at', 'updated_at']);
  expect(Object.keys(outbox).sort()).toEqual([...new Set(membersRead(source, 'p_outbox'))].sort());
  expect(EVENT_COLUMNS.filter((c) => c !== 'application_id').sort()).toEqual([...new Set(eventMembersRead(source))].sort());
});

it('finds a column a procedure inserts beyond the list, and one the list has beyond the procedure (the check itself)', () => {
  expect(insertedColumns('INSERT INTO credentials (a, b)\n VALUES (1, 2)', 'credentials')).toEqual([['a', 'b']]);
  expect(membersRead("JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].kind'))", 'p_credentials')).toEqual(['kind']);
  expect(insertRows('t', ['a', 'b'], [{ a: 1, b: 2 }, { a: 3, b: 4 }])).toEqual({ sql: 'INSERT INTO t (a, b) VALUES (?, ?), (?, ?)', values: [1, 2, 3, 4] });
});
