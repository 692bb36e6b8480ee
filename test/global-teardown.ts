import mysql from 'mysql2/promise';
import { onMysql, serverUrl, testDatabasePrefix } from './helpers/backend';

/** Drops every database this run made on the server of DATABASE_URL, whatever became of its test file. */
export default async function globalTeardown(): Promise<void> {
  if (!onMysql || !process.env.GATEHOUSE_TEST_RUN) return;
  const conn = await mysql.createConnection(serverUrl());
  try {
    const [rows] = await conn.query('SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?', [`${testDatabasePrefix().replace(/_/g, '\\_')}%`]);
    for (const { name } of rows as { name: string }[]) await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await conn.end();
  }
}
