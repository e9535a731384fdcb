// End-to-end support for the web console: build it once into a test folder, and drive
// Debian's Chromium (/usr/bin/chromium) with playwright-core. No browser is ever downloaded.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it). */
export const CHROMIUM = process.env.VOUCH_CHROMIUM ?? '/usr/bin/chromium';

const CONSOLE_ROOT = fileURLToPath(new URL('../../apps/console', import.meta.url));
const VITE_BIN = fileURLToPath(new URL('../../node_modules/vite/bin/vite.js', import.meta.url));

/** `vite build` of apps/console into `outDir`, exactly as `npm start` builds it (there into dist/). */
export function buildConsole(outDir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VITE_BIN, 'build', '--outDir', outDir, '--emptyOutDir'], {
      cwd: CONSOLE_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c) => {
      output += c;
    });
    child.stderr.on('data', (c) => {
      output += c;
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`vite build exited ${code}:\n${output}`)),
    );
  });
}

/** Launch Chromium headless; fail with the install command when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set VOUCH_CHROMIUM)`);
  }
  // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}
