import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Held while a process has a PGlite data directory open. */
export interface DataDirLock {
  release(): void;
}

/** Thrown when another live process holds the data directory. */
export class DataDirBusyError extends Error {
  override readonly name = 'DataDirBusyError';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the data directory ${dataDir} is in use by process ${pid}`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Take `<dataDir>.lock`. PGlite is one process's embedded database: a second process that
 * opens the same directory (say `vouch verify` while `vouch serve` runs) can corrupt it, and
 * PGlite does not stop it, so every Vouch command that opens a data directory takes this
 * lock first. A lock left by a process that died is taken over.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = `${dataDir.replace(/[/\\]+$/, '')}.lock`;
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          try {
            if (readFileSync(path, 'utf8') === String(process.pid)) unlinkSync(path);
          } catch {
            // Already gone: nothing to release.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(readFileSync(path, 'utf8'), 10);
      if (Number.isInteger(owner) && owner > 0 && alive(owner)) {
        throw new DataDirBusyError(dataDir, owner);
      }
      // Stale: its process is gone. Remove it and try again.
      try {
        unlinkSync(path);
      } catch {
        // Someone else removed it first; retry.
      }
    }
  }
  throw new DataDirBusyError(dataDir, -1);
}
