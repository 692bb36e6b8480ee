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
export function holdDataDir(varDir: string): string | undefined {
  fs.mkdirSync(varDir, { recursive: true, mode: 0o700 });
  const file = path.join(varDir, 'api.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      process.on('exit', () => {
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.unlinkSync(file);
        } catch {
          // gone already
        }
      });
      return undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const pid = Number(fs.readFileSync(file, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      return `another Gatehouse api (pid ${pid}) uses ${varDir}; a second instance needs a data folder and a port of its own, such as DATA_DIR=var/second PORT=3001 npm start`;
    }
    // left by a process that is gone
    fs.rmSync(file, { force: true });
  }
  return `cannot hold ${varDir}: ${file} keeps coming back; remove it if no Gatehouse api runs there`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
