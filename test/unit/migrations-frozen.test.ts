import fs from 'node:fs';
import path from 'node:path';
import { MIGRATIONS } from '../../migrations';

// A landed migration never changes behaviour: it imports nothing of the application's code
// (a change to that code would otherwise change what an old migration does on a new database).

const DIR = path.join(__dirname, '../../migrations');

it('every migration imports only sequelize (and index.ts only the migrations)', () => {
  for (const file of fs.readdirSync(DIR).filter((f) => f.endsWith('.ts'))) {
    const imports = [...fs.readFileSync(path.join(DIR, file), 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    const allowed = file === 'index.ts' ? (i: string) => /^\.\/\d{4}-[a-z-]+$/.test(i) : (i: string) => i === 'sequelize';
    expect({ file, outside: imports.filter((i) => !allowed(i)) }).toEqual({ file, outside: [] });
  }
});

it('the list names every migration file once, in order', () => {
  const files = fs.readdirSync(DIR).filter((f) => /^\d{4}-.*\.ts$/.test(f)).map((f) => f.replace(/\.ts$/, '')).sort();
  expect(MIGRATIONS.map((m) => m.name)).toEqual(files);
});
