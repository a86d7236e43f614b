import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The operator command line, run as operators run it: `./bin/tandem …` in a child process,
// configured through the environment.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The last stdout line parsed as JSON (commands run with --json); {} otherwise. */
  json: Record<string, any>;
}

/** Runs `bin/tandem args…` with `env` over the test process's environment (logs silenced). */
export function runTandem(args: string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/tandem', ...args], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: Record<string, any> = {};
      if (args.includes('--json')) {
        const last = stdout.trimEnd().split('\n').at(-1) ?? '';
        try {
          json = JSON.parse(last) as Record<string, any>;
        } catch {
          return reject(new Error(`the last stdout line of tandem ${args.join(' ')} is not JSON: ${JSON.stringify(stdout)} (stderr ${stderr})`));
        }
        if (typeof json !== 'object' || json === null || Array.isArray(json)) return reject(new Error(`the last stdout line is not a JSON object: ${last}`));
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}
