import { randomUUID } from 'node:crypto';
import { createAccount, editableAttributes, editAccount } from '../../src/usecases/operators/account-forms';
import { verifyEmailAsOperator } from '../../src/usecases/operators/verify-email';
import { DuplicateAttributeError } from '../../src/domain/storage/records';
import { localApp } from '../helpers/usecases';
import { changeOperatorRole, listOperators } from '../../src/usecases/operators/console-operators';
import { createRecord } from '../../src/usecases/records/create-records';
import { parseNewUser } from '../../src/domain/users';
import { OPERATOR_ROLE_ATTRIBUTE, operatorRoleOf } from '../../src/domain/operators';

// An operator's accounts, by the use cases the console runs (docs/console.md#accounts): made with a
// password or a mailed link, edited through the record writer (a new address unverified, the old
// one told), each change an event naming the operator.

const held = localApp();
const acting = { actor: { kind: 'operator' as const, name: 'ada@ops.example' }, origin: { requestId: 'use-case-test' } };

it('offers the address, the names and the attributes the flow writes, never the password or the verified mark', async () => {
  const attributes = (await editableAttributes(held.t.runtime.services, { app: held.app, locale: 'en-US' })).map((a) => a.attribute);
  expect(attributes.slice(0, 4)).toEqual(['email', 'givenName', 'familyName', 'displayName']);
  expect(attributes).toEqual(expect.arrayContaining(['birthdate']));
  expect(attributes).not.toEqual(expect.arrayContaining(['password']));
  expect(attributes).not.toEqual(expect.arrayContaining(['emailVerified']));
});

it('makes an account with a password or a mailed link; edits it through the writer; each change names the operator', async () => {
  const { services, db } = held.t.runtime;
  const email = `${randomUUID()}@example.com`;
  await expect(createAccount(services, { app: held.app, acting, email, attributes: {}, mailLink: false })).rejects.toMatchObject({ detail: { field: 'password' } });
  await expect(createAccount(services, { app: held.app, acting, email, attributes: {}, password: 'short', mailLink: false })).rejects.toMatchObject({ reason: 'invalid' });
  const made = await createAccount(services, { app: held.app, acting, email, attributes: { givenName: ' Ada ', password: 'sneaked in', emailVerified: '2026-01-01' }, password: 'correct horse battery', mailLink: false });
  expect(made).toMatchObject({ email, emailVerified: null, attributes: { givenName: 'Ada' } });
  expect(made.passwordHash).toMatch(/^\$argon2id\$/);
  await expect(createAccount(services, { app: held.app, acting, email, attributes: {}, mailLink: true })).rejects.toBeInstanceOf(DuplicateAttributeError);

  const linked = await createAccount(services, { app: held.app, acting, email: `l-${email}`, attributes: {}, mailLink: true });
  expect(linked.passwordHash).toBeNull();
  expect((await db.events.latest(held.app.id, 10, linked.id)).map((e) => e.type)).toContain('account.password_reset_requested');

  // verified first, then moved: unverified again, and the old address told
  await verifyEmailAsOperator(services, { app: held.app, entityId: made.id, acting });
  expect((await db.records.find(held.app.id, { id: made.id }))!.emailVerified).not.toBeNull();
  await editAccount(services, { app: held.app, acting, entityId: made.id, attributes: { email: `new-${email}`, familyName: 'Lovelace', givenName: '' } });
  const edited = (await db.records.find(held.app.id, { id: made.id }))!;
  expect(edited).toMatchObject({ email: `new-${email}`, emailVerified: null, attributes: { familyName: 'Lovelace' } });
  expect(edited.attributes.givenName).toBeUndefined();
  const events = await db.events.latest(held.app.id, 10, made.id);
  const updated = events.find((e) => e.type === 'record.updated')!;
  expect(updated.actor).toEqual({ kind: 'operator', name: 'ada@ops.example' });
  expect(events.map((e) => e.type)).toContain('account.email_changed');
  await expect(editAccount(services, { app: held.app, acting, entityId: made.id, attributes: { email: `l-${email}` } })).rejects.toBeInstanceOf(DuplicateAttributeError);
});

it('two admins taking away each other\'s role at once: one of them stays admin', async () => {
  const { services, db } = held.t.runtime;
  const made = await Promise.all(['a', 'b'].map((n) => createRecord(services, {
    app: held.app, origin: {}, operator: acting, record: parseNewUser(held.app.id, { email: `${n}-${randomUUID()}@ops.example`, [OPERATOR_ROLE_ATTRIBUTE]: 'admin' }),
  })));
  // every other admin of this application first made viewers, so these two are the last
  for (const row of await listOperators(services, { app: held.app })) {
    if (!made.some((m) => m.id === row.entityId) && row.role === 'admin') await changeOperatorRole(services, { app: held.app, entityId: row.entityId, role: 'viewer', acting });
  }
  const outcomes = await Promise.allSettled(made.map((m) => changeOperatorRole(services, { app: held.app, entityId: m.id, role: null, acting })));
  expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
  expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringContaining('last admin') });
  const roles = await Promise.all(made.map(async (m) => operatorRoleOf((await db.records.find(held.app.id, { id: m.id }))!)));
  expect(roles.filter((r) => r === 'admin')).toHaveLength(1);
});
