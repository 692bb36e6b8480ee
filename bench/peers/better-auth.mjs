// better-auth with email and password, its defaults (scrypt, SQLite through better-sqlite3, a
// session row written per sign-in), as a sign-in server for `npm run bench:peers`. Its own rate
// limit is off, as Gatehouse's limits are raised for the bench. It creates the tables and COUNT
// users (bench0@example.com, bench1@…) at start.   node better-auth.mjs PORT DB_FILE COUNT PASSWORD
import http from 'node:http';
import Database from 'better-sqlite3';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';

const [port, file, count, password] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4]), process.argv[5]];
const auth = betterAuth({
  baseURL: `http://127.0.0.1:${port}`,
  secret: 'bench-secret-0123456789abcdef0123456789abcdef',
  database: new Database(file),
  emailAndPassword: { enabled: true },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
});
const { runMigrations } = await getMigrations(auth.options);
await runMigrations();
for (let i = 0; i < count; i++) await auth.api.signUpEmail({ body: { email: `bench${i}@example.com`, password, name: 'Bench' } });
http.createServer(toNodeHandler(auth)).listen(port, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ listening: port })}\n`));
