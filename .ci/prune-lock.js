#!/usr/bin/env node
// The registry this project is built against does not carry every platform build of optional
// native packages (msgpackr-extract's darwin/win32 builds answer 404), so `npm install` leaves them
// named in package-lock.json without entries, and `npm ci` then refuses the lock file. This drops
// those dangling optional names. Run `npm run lock:prune` after every `npm install` that changes
// the lock file.
const fs = require('node:fs');
const path = require('node:path');

const file = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
let pruned = 0;
for (const [where, pkg] of Object.entries(lock.packages)) {
  for (const name of Object.keys(pkg.optionalDependencies ?? {})) {
    if (!lock.packages[`node_modules/${name}`] && !lock.packages[`${where}/node_modules/${name}`]) {
      delete pkg.optionalDependencies[name];
      pruned++;
    }
  }
}
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`pruned ${pruned} dangling optional dependencies from package-lock.json`);
