import { isWriteConflict, retrying, WRITE_ATTEMPTS } from '../../src/db/sql';
import { errors } from '../../src/errors';

/** A driver error as mysql2 raises it, wrapped by Sequelize as it wraps them (`parent`). */
const driverError = (errno: number, message: string) => Object.assign(new Error(message), { parent: Object.assign(new Error(message), { errno }) });
const certificationFailure = () => driverError(1213, 'WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction');

describe('write conflicts (deadlock victims, Galera certification failures)', () => {
  it('are recognised by their error number, wrapped or not', () => {
    expect(isWriteConflict(certificationFailure())).toBe(true);
    expect(isWriteConflict(Object.assign(new Error('Lock wait timeout exceeded'), { errno: 1205 }))).toBe(true);
    expect(isWriteConflict(driverError(1062, 'Duplicate entry'))).toBe(false);
    expect(isWriteConflict(new Error('no errno'))).toBe(false);
    expect(isWriteConflict(undefined)).toBe(false);
  });

  it('run again until the work gets through, with pauses that stay short', async () => {
    let calls = 0;
    const started = Date.now();
    const answer = await retrying(async () => {
      if (++calls < WRITE_ATTEMPTS) throw certificationFailure();
      return 'written';
    });
    expect(answer).toBe('written');
    expect(calls).toBe(WRITE_ATTEMPTS);
    // the ceilings (4, 8, … 256 ms) add up to under a second for all the pauses together
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('give up after the last attempt with the conflict itself, which the API answers 503 with Retry-After', async () => {
    let calls = 0;
    const failing = retrying(async () => {
      calls++;
      throw certificationFailure();
    });
    await expect(failing).rejects.toThrow(/WSREP detected deadlock/);
    expect(calls).toBe(WRITE_ATTEMPTS);
    const answered = errors.conflicted(certificationFailure());
    expect(answered).toMatchObject({ kind: 'serviceUnavailable', transportStatus: 503, headers: { 'Retry-After': '1' } });
    expect(answered.message).not.toMatch(/WSREP|deadlock/);
  });

  it('a lock wait that timed out (it has waited long already) runs once more, not over and over', async () => {
    let calls = 0;
    await expect(retrying(async () => {
      calls++;
      throw driverError(1205, 'Lock wait timeout exceeded; try restarting transaction');
    })).rejects.toThrow('Lock wait timeout');
    expect(calls).toBe(2);
  });

  it('a lock wait that timed out after deadlocks lost before it still runs once more (a Galera node whose lock holder was aborted)', async () => {
    let calls = 0;
    const answer = await retrying(async () => {
      calls++;
      if (calls === 1) throw certificationFailure();
      if (calls === 2) throw driverError(1205, 'Lock wait timeout exceeded; try restarting transaction');
      return 'written';
    });
    expect(answer).toBe('written');
    expect(calls).toBe(3);
  });

  it('never run again work that failed for another reason', async () => {
    let calls = 0;
    await expect(retrying(async () => {
      calls++;
      throw driverError(1062, 'Duplicate entry');
    })).rejects.toThrow('Duplicate entry');
    expect(calls).toBe(1);
  });
});
