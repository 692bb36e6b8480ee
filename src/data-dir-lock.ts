import fs from 'node:fs';
import path from 'node:path';

/**
 * The embedded default's hold on its data folder (DATA_DIR, `var/`): one api process at a time
 * keeps its SQLite file, runs its jobs in-process and writes its emails there. A second one started
 * from the same checkout would share the database with another job runner and mix the two
 * instances' emails in one folder: it refuses to start, saying how to run a second instance.
 * The hold is a file naming the process; one left by a process that is gone is taken over.
 * Answers why it cannot hold the folder, or undefined once it does (released when the process exits).
 */
export function holdDataDir(varDir: string, publicBaseUrl?: string): string | undefined {
  fs.mkdirSync(varDir, { recursive: true, mode: 0o700 });
  const file = path.join(varDir, 'api.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      // the process, and where it answers (what a command run beside it prints as the applications' addresses)
      fs.writeFileSync(file, `${process.pid}\n${publicBaseUrl ?? ''}\n`, { flag: 'wx', mode: 0o600 });
      process.on('exit', () => {
        try {
          if (pidIn(fs.readFileSync(file, 'utf8')) === process.pid) fs.unlinkSync(file);
        } catch {
          // gone already
        }
      });
      return undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const pid = pidIn(fs.readFileSync(file, 'utf8'));
    if (pid > 0 && pid !== process.pid && alive(pid)) {
      return `another Gatehouse api (pid ${pid}) uses ${varDir}; a second instance needs a data folder and a port of its own, such as DATA_DIR=var/second PORT=3001 npm start`;
    }
    // left by a process that is gone
    fs.rmSync(file, { force: true });
  }
  return `cannot hold ${varDir}: ${file} keeps coming back; remove it if no Gatehouse api runs there`;
}

/** The process id a hold names (its first line), 0 when none. */
const pidIn = (text: string): number => {
  const pid = Number(text.split('\n')[0].trim());
  return Number.isInteger(pid) && pid > 0 ? pid : 0;
};

/** Where the api holding `varDir` answers (its PUBLIC_BASE_URL, or localhost and its port), when one runs there. */
export function heldBy(varDir: string): { pid: number; publicBaseUrl?: string } | undefined {
  try {
    const [first, url] = fs.readFileSync(path.join(varDir, 'api.pid'), 'utf8').split('\n');
    const pid = pidIn(first);
    return pid > 0 && alive(pid) ? { pid, ...(url?.trim() && { publicBaseUrl: url.trim() }) } : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
