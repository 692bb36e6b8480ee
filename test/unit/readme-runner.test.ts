import { answerPattern, readmeBlocks, withValues } from '../helpers/readme';

// the reader of the README's blocks (test/e2e/readme.test.ts runs them): what is a command, what its answer, what prose

const doc = [
  '# Title',
  '## Section',
  '```sh',
  'B=http://localhost:3000',
  'curl $B/x -d a=1 \\',
  '  -d b=2',
  '# {"stat":"error","code":390,…,"invalid_fields":{',
  '#   "email":["bad"]},…}',
  '',
  '# a description of what follows',
  'curl $B/y     # {"result":"GB","stat":"ok"}',
  'curl $B/z     # one sub-value',
  'mariadb -e "CREATE DATABASE d;',
  '  CREATE USER u;"',
  'npx gatehouse mail:last --link',
  '# (in a browser, this is prose)',
  'curl $B/t',
  '# {"stat":"ok"}   → var/mail/<id>.eml links to …',
  '```',
  '### Sub',
  '   ```sh',
  '   npm start',
  '   ```',
].join('\n');

describe('readmeBlocks', () => {
  const [first, second] = readmeBlocks(doc);

  it('joins continued lines and lines inside a quoted string into one command', () => {
    const commands = first.steps.filter((s) => s.kind === 'command').map((s) => s.text);
    expect(commands).toEqual([
      'B=http://localhost:3000',
      'curl $B/x -d a=1 \\\n  -d b=2',
      'curl $B/y     # {"result":"GB","stat":"ok"}',
      'curl $B/z     # one sub-value',
      'mariadb -e "CREATE DATABASE d;\n  CREATE USER u;"',
      'npx gatehouse mail:last --link',
      'curl $B/t',
    ]);
  });

  it('takes the comment right under a command (and its indented lines) as its answer, without remarks; other comments are prose', () => {
    const answers = first.steps.flatMap((s) => (s.kind === 'command' && s.answer ? [s.answer.text] : []));
    expect(answers).toEqual(['{"stat":"error","code":390,…,"invalid_fields":{"email":["bad"]},…}', '{"result":"GB","stat":"ok"}', '{"stat":"ok"}']);
    expect(first.steps.filter((s) => s.kind === 'prose').map((s) => s.text)).toEqual(['a description of what follows', '(in a browser, this is prose)']);
  });

  it('knows the headings a block stands under, and reads indented blocks', () => {
    expect(first.headings).toEqual(['Title', 'Section']);
    expect(second.headings).toEqual(['Title', 'Section', 'Sub']);
    expect(second.steps).toEqual([{ kind: 'command', line: 22, text: 'npm start' }]);
  });
});

describe('answerPattern', () => {
  it('reads … as anything, timestamps and cut hex values by their shape, everything else literally', () => {
    const p = answerPattern('{"id":1,"uuid":"556557cc-…","created":"2026-11-21 06:17:52.332000 +0000",…,"stat":"ok"}');
    expect(p.test('{"id":1,"uuid":"0a1b2c3d-1111-4222-8333-444455556666","created":"2031-01-02 03:04:05.000000 +0000","email":"x","stat":"ok"}')).toBe(true);
    expect(p.test('{"id":2,"uuid":"0a1b2c3d","created":"2031-01-02 03:04:05.000000 +0000","stat":"ok"}')).toBe(false);
    expect(p.test('{"id":1,"uuid":"0a1b2c3d","created":"yesterday","stat":"ok"}')).toBe(false);
    expect(answerPattern('{"stat":"ok"}').test('{"stat":"ok"} and more')).toBe(false);
    // a record's id is opaque (1, 4, 7, … on a Galera cluster): any whole number, and only that
    expect(answerPattern('{"id":3,"stat":"ok"}').test('{"id":7,"stat":"ok"}')).toBe(true);
    expect(answerPattern('{"id":3,"stat":"ok"}').test('{"id":"7","stat":"ok"}')).toBe(false);
    expect(answerPattern('{"total_count":3,"stat":"ok"}').test('{"total_count":7,"stat":"ok"}')).toBe(false);
    expect(answerPattern('HTTP/1.1 200 OK … CSP: x…').test('HTTP/1.1 200 OK\r\nA: b\r\nCSP: x; y\r\n\r\n<html>')).toBe(true);
  });

  it('captures placeholders: a JSON string whole, elsewhere up to a separator; the same name twice is the same value', () => {
    const m = answerPattern('{"access_token":"A","when":"WHEN","refresh_token":"R"} http://h/p?code=CODE&state=s1').exec(
      '{"access_token":"abc","when":"2026-11-21 06:17:52 +0000","refresh_token":"def"} http://h/p?code=xyz&state=s1',
    );
    expect(m?.groups).toEqual({ A: 'abc', WHEN: '2026-11-21 06:17:52 +0000', R: 'def', CODE: 'xyz' });
    expect(answerPattern('"UUID" "UUID"').test('"a" "b"')).toBe(false);
    expect(answerPattern('"UUID" "UUID"').test('"a" "a"')).toBe(true);
  });

  it('a stable placeholder already bound must show its value again; another takes the new one', () => {
    const bound = new Map([['UUID', 'u-1'], ['TOKEN', 't-1']]);
    expect(answerPattern('{"uuid":"UUID"}', bound).test('{"uuid":"u-1"}')).toBe(true);
    expect(answerPattern('{"uuid":"UUID"}', bound).test('{"uuid":"u-2"}')).toBe(false);
    expect(answerPattern('{"access_token":"TOKEN"}', bound).exec('{"access_token":"t-2"}')?.groups).toEqual({ TOKEN: 't-2' });
  });
});

describe('withValues', () => {
  it('puts values in place of placeholders, never of shell variables or assignments', () => {
    const values = new Map([['TOKEN', 't0k'], ['LOGIN_SECRET', 's3c']]);
    expect(withValues('LOGIN=$LOGIN_ID:LOGIN_SECRET curl -d access_token=TOKEN -H "X-End-User-IP: 1" $TOKEN TOKEN=1', values, 1))
      .toBe('LOGIN=$LOGIN_ID:s3c curl -d access_token=t0k -H "X-End-User-IP: 1" $TOKEN TOKEN=1');
  });

  it('refuses a placeholder no answer above has named, saying which line', () => {
    expect(() => withValues('curl -d code=CODE', new Map(), 42)).toThrow(/README line 42 uses CODE .* before any answer above it names one/);
  });
});
