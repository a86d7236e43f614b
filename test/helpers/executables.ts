import { accessSync, constants, statSync } from 'node:fs';

/** An executable regular file (not, say, /dev/null bind-mounted over a removed binary). */
export function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
