import fs from 'node:fs';
import path from 'node:path';

/** The project root (where package.json, flows/ and templates/ live), from src/ or from dist/src/. */
export function projectRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('cannot find the Gatehouse project root');
    dir = up;
  }
  return dir;
}

/** The version in package.json. */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
