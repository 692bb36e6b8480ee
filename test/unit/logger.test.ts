import { DuplicateKeyError, SqlError } from '../../src/db/sql';
import { safeError } from '../../src/logger';

describe('safeError: what a log keeps of an error', () => {
  it('keeps only class, errno and code of a database error: its text can hold bound values', () => {
    const duplicate = safeError(new DuplicateKeyError("Duplicate entry 'ada@example.com' for key 'entities_app_email'"));
    expect(JSON.stringify(duplicate)).not.toContain('ada@example.com');
    expect(duplicate).toMatchObject({ type: 'DuplicateKeyError' });
    const failed = safeError(new SqlError("You have an error in your SQL syntax near 'secret'", 1064, 'ER_PARSE_ERROR'));
    expect(failed).toEqual({ type: 'SqlError', errno: 1064, code: 'ER_PARSE_ERROR', note: expect.any(String) });
    const sequelize = Object.assign(new Error('SQLITE_ERROR: near "x"'), { name: 'SequelizeDatabaseError', sql: "SELECT * FROM entities WHERE email = 'ada@example.com'", parameters: {} });
    expect(JSON.stringify(safeError(sequelize))).not.toMatch(/ada@example.com|SELECT/);
  });

  it('keeps message and stack of any other error', () => {
    expect(safeError(new Error('the argon2 thread failed'))).toMatchObject({ message: 'the argon2 thread failed', stack: expect.any(String) });
  });
});
