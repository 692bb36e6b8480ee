import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MIGRATIONS } from '../../migrations';
import { PROCEDURES } from '../../migrations/procedures';

// A landed migration never changes behaviour: it imports nothing of the application's code
// (a change to that code would otherwise change what an old migration does on a new database),
// and the procedure versions it installs are never edited.

const DIR = path.join(__dirname, '../../migrations');

/** The SHA-256 of every landed procedure version: a new version is a new file and a new line here. */
const LANDED: Record<string, string> = {
  'gh_rotate_refresh.1.sql': 'f10c8428be1f3dc12432d997fbe7497a445e16f89260e9bd55aec047d6659373',
  'gh_rotate_refresh.2.sql': '150f3c1e06232078ab5f790f73798ab77e87403f7d3f43cc9a50dfa71ce2fddf',
  'gh_rotate_refresh.3.sql': '8f04095d7b0d2c9165f08660cb63a56bf0b913c99809223a05b74aaa5790d9ad',
  'gh_rotate_with_event.1.sql': '42678e62739d0169bb45122f8953c15ebc355b9a17f9b87c981d60635af585cb',
  'gh_rotate_with_event.2.sql': 'a4bddb7c811cc59a5888aeacc87e19a0ca1088e7182a122c261ccd6aebf00ee4',
  'gh_sign_in.1.sql': '26159a7a30ee4b22af83b12704a36d04923c5c9a563e3efb1999a03d29039d0e',
  'gh_sign_in_events.1.sql': '775ecf085edc66c63ae4c2ae72803c690a29ace720e95e01923faaf786902e1f',
  'gh_spend_with_event.1.sql': 'a8d05c6fe2eabf070c926f48b9c1e6b7eefecf7077229211e5c297d78404072e',
  'gh_sign_in_with_events.1.sql': 'c13d570a15351de37180a99efa4fff757750e7ed6956e9ac0c3cd8ce7e806007',
};

it('every migration imports only sequelize and the procedure installer (index.ts only the migrations)', () => {
  const only: Record<string, (i: string) => boolean> = {
    'index.ts': (i) => /^\.\/\d{4}-[a-z-]+$/.test(i),
    'procedures.ts': (i) => ['node:fs', 'node:path', 'sequelize'].includes(i),
  };
  for (const file of fs.readdirSync(DIR).filter((f) => f.endsWith('.ts'))) {
    const imports = [...fs.readFileSync(path.join(DIR, file), 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    const allowed = only[file] ?? ((i: string) => i === 'sequelize' || i === './procedures');
    expect({ file, outside: imports.filter((i) => !allowed(i)) }).toEqual({ file, outside: [] });
  }
});

it('the list names every migration file once, in order', () => {
  const files = fs.readdirSync(DIR).filter((f) => /^\d{4}-.*\.ts$/.test(f)).map((f) => f.replace(/\.ts$/, '')).sort();
  expect(MIGRATIONS.map((m) => m.name)).toEqual(files);
});

it('no landed procedure version has changed, and the code calls versions that exist', () => {
  const files = fs.readdirSync(path.join(DIR, 'procedures')).sort();
  const hashes = Object.fromEntries(files.map((f) => [f, createHash('sha256').update(fs.readFileSync(path.join(DIR, 'procedures', f))).digest('hex')]));
  expect(hashes).toEqual(LANDED);
  for (const [name, version] of Object.entries(PROCEDURES)) expect(files).toContain(`${name}.${version}.sql`);
});
