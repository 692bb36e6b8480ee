import { randomUUID } from 'node:crypto';
import type { Tx } from '../../src/domain/storage';
import type { NewPasskey } from '../../src/domain/storage/factors';
import { forEveryEngine, newAccount } from '../helpers/contract';

// The passkeys' store (PasskeyStore): a credential id held by one account of an application, a
// counter moved once from the value a use was checked against — by one of 20 racing callers, on
// any node — names and removals of the account's own only, and the passkeys gone with their
// record; an account's last two passkeys removed at once on two nodes, one left. Run on every engine.

forEveryEngine('passkeys store', (storage) => {
  const RACE = 20;
  const newUser = () => newAccount(storage());
  const write = <T>(work: (tx: Tx) => Promise<T>) => storage().db.transaction(work);
  const passkey = (entityId: number, extra: Partial<NewPasskey> = {}): NewPasskey => ({
    applicationId: storage().appId, entityId, credentialId: randomUUID().replace(/-/g, ''), publicKey: 'pQECAyYgASFYIA', counter: 0,
    deviceType: 'multiDevice', backedUp: true, transports: ['internal', 'hybrid'], aaguid: '00000000-0000-0000-0000-000000000000', name: 'Laptop',
    createdAt: new Date('2026-11-25T10:00:00.123Z'), ...extra,
  });

  it('keeps what the ceremony proved; a credential id is one account\'s; oldest first', async () => {
    const { db, appId } = storage();
    const a = await newUser();
    const b = await newUser();
    const first = passkey(a.id);
    expect(await db.factors.summary(appId, a.id)).toEqual({ totp: false, passkeys: false });
    const id = await write((tx) => db.passkeys.add(first, tx));
    expect(id).toEqual(expect.any(Number));
    // the summary a sign-in reads says the account has one
    expect(await db.factors.summary(appId, a.id)).toEqual({ totp: false, passkeys: true });
    // the same credential id again, for this account or another: refused, nothing written
    expect(await write((tx) => db.passkeys.add({ ...first, name: 'again' }, tx))).toBeUndefined();
    expect(await write((tx) => db.passkeys.add({ ...first, entityId: b.id }, tx))).toBeUndefined();
    const second = await write((tx) => db.passkeys.add(passkey(a.id, { name: 'Phone', deviceType: 'singleDevice', backedUp: false, transports: [] }), tx));
    const listed = await db.passkeys.list(appId, a.id);
    expect(listed.map((p) => p.id)).toEqual([id, second]);
    expect(listed[0]).toEqual({ ...first, id, lastUsedAt: null });
    expect(listed[1]).toMatchObject({ name: 'Phone', deviceType: 'singleDevice', backedUp: false, transports: [] });
    expect(await db.passkeys.byCredential(appId, first.credentialId)).toMatchObject({ id, entityId: a.id });
    expect(await db.passkeys.list(appId, b.id)).toEqual([]);
  });

  it(`a use moves the counter from the value it checked: of ${RACE} racing with one value, on any node, one`, async () => {
    const { db, appId, on } = storage();
    const a = await newUser();
    const id = (await write((tx) => db.passkeys.add(passkey(a.id, { counter: 5 }), tx)))!;
    expect(await db.passkeys.useAlone(appId, id, 4, 6, true, new Date())).toBe(false);
    const at = new Date('2026-11-25T11:00:00.456Z');
    const used = await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).passkeys.useAlone(appId, id, 5, 6 + i, false, at)));
    expect(used.filter(Boolean)).toHaveLength(1);
    const after = (await db.passkeys.list(appId, a.id))[0];
    expect(after.counter).toBeGreaterThanOrEqual(6);
    expect(after).toMatchObject({ backedUp: false });
    expect(after.lastUsedAt!.toISOString()).toBe(at.toISOString());
  });

  it('renames and removes the account\'s own only; never another application\'s; gone with its record', async () => {
    const { db, appId } = storage();
    const a = await newUser();
    const b = await newUser();
    const id = (await write((tx) => db.passkeys.add(passkey(a.id), tx)))!;
    expect(await write((tx) => db.passkeys.rename(appId, b.id, id, 'Mine now', tx))).toBe(false);
    expect(await write((tx) => db.passkeys.remove(appId, b.id, id, tx))).toBe(false);
    const other = (await write((tx) => db.applications.create(`other${Date.now()}`, new Date(), tx))).id;
    expect(await db.passkeys.list(other, a.id)).toEqual([]);
    expect(await write((tx) => db.passkeys.rename(other, a.id, id, 'x', tx))).toBe(false);
    expect(await write((tx) => db.passkeys.rename(appId, a.id, id, 'Work laptop', tx))).toBe(true);
    expect((await db.passkeys.list(appId, a.id))[0].name).toBe('Work laptop');
    expect(await write((tx) => db.passkeys.remove(appId, a.id, id, tx))).toBe(true);
    expect(await write((tx) => db.passkeys.remove(appId, a.id, id, tx))).toBe(false);
    await write((tx) => db.passkeys.add(passkey(a.id), tx));
    expect(await write((tx) => db.records.remove(a, tx))).toBe(true);
    expect(await db.passkeys.list(appId, a.id)).toEqual([]);
  });

  it('an account\'s last two passkeys removed at once, 10 times over every node, each removal claiming the account and keeping one: one is left; the claim goes with the record', async () => {
    const { db, on, appId } = storage();
    for (let round = 0; round < 10; round++) {
      const a = await newUser();
      const ids = [(await write((tx) => db.passkeys.add(passkey(a.id), tx)))!, (await write((tx) => db.passkeys.add(passkey(a.id), tx)))!];
      // each as removing a passkey does: the record locked and the account claimed, then the passkeys counted
      const removed = await Promise.all(ids.map((id, i) => on(i + round).transaction(async (tx) => {
        const node = on(i + round);
        await node.records.findForUpdate(appId, a.id, tx);
        await node.records.claim(a.id, new Date(), tx);
        if ((await node.passkeys.list(appId, a.id, tx)).length <= 1) return false;
        return node.passkeys.remove(appId, a.id, id, tx);
      })));
      expect(removed.filter(Boolean)).toHaveLength(1);
      expect(await db.passkeys.list(appId, a.id)).toHaveLength(1);
      if (round === 0) {
        expect(await write((tx) => db.records.remove(a, tx))).toBe(true);
        const [left] = await db.sequelize.query('SELECT COUNT(*) AS n FROM account_claims WHERE entity_id = ?', { replacements: [a.id], type: 'SELECT' }) as { n: number | string }[];
        expect(Number(left.n)).toBe(0);
      }
    }
  });
});
