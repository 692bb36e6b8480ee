import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths';

// The documentation's links hold: every relative link of the README and docs/ names a file that
// exists and, with a #fragment, a heading of that page; every docs/…#fragment a comment of the
// code points a reader to is a heading too. (A page's headings are renamed as it grows.)

const root = projectRoot();

/** The files under `dir` whose names end with `ext`, recursively. */
function filesUnder(dir: string, ext: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((d) => {
    const rel = path.join(dir, d.name);
    return d.isDirectory() ? filesUnder(rel, ext) : d.name.endsWith(ext) ? [rel] : [];
  });
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens; a repeated one numbered. */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of fs.readFileSync(path.join(root, file), 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]!.replace(/<[^>]+>/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').toLowerCase().trim()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

const pages = ['README.md', 'BENCHMARKS.md', 'bench/README.md', ...filesUnder('docs', '.md')].filter((f) => fs.existsSync(path.join(root, f)));

it('every relative link of the README and docs/ names a file that exists, and a heading of it', () => {
  const broken: string[] = [];
  for (const page of pages) {
    const text = fs.readFileSync(path.join(root, page), 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [file, fragment] = target.split('#') as [string, string | undefined];
      const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), decodeURIComponent(file)));
      if (!fs.existsSync(path.join(root, resolved))) {
        broken.push(`${page}: ${target} (no such file)`);
        continue;
      }
      if (fragment && resolved.endsWith('.md') && !anchorsOf(resolved).has(fragment)) broken.push(`${page}: ${target} (no such heading)`);
    }
  }
  expect(broken).toEqual([]);
});

it('every docs/…#heading the code points to is a heading of that page', () => {
  const broken: string[] = [];
  for (const file of [...filesUnder('src', '.ts'), ...filesUnder('workers', '.ts')]) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    for (const m of text.matchAll(/\b(docs\/[\w./-]+\.md)#([\w-]+)/g)) {
      const [, page, fragment] = m as unknown as [string, string, string];
      if (!fs.existsSync(path.join(root, page))) broken.push(`${file}: ${page} (no such file)`);
      else if (!anchorsOf(page).has(fragment)) broken.push(`${file}: ${page}#${fragment}`);
    }
  }
  expect(broken).toEqual([]);
});
