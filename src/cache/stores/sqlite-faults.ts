/**
 * Faults of the SQLite cache file, described for the operator: every message names the file
 * (or DATA_DIR) and, where there is one, what to do. Used by sqlite.ts.
 */
import fs from 'node:fs';

/** SQLite result codes that mean the file's content is not a usable database. */
const CORRUPT_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();
}

/**
 * A start-up failure as one line: a corrupted file says to move it away (the cache is only a
 * cache: it is rebuilt from the upstream); anything else names DATA_DIR.
 */
export function describeOpenFailure(err: unknown, dir: string, file: string): Error {
  const code = codeOf(err);
  if (code !== undefined && (CORRUPT_CODES.has(code) || code.startsWith('SQLITE_CORRUPT'))) {
    return new Error(
      `the cache database ${file} is corrupted (${messageOf(err)}): move it away or delete it, then start again; the cache is rebuilt from the upstream`,
      { cause: err },
    );
  }
  return new Error(
    `cannot open the cache database ${file} in DATA_DIR ${dir} (${messageOf(err)}): DATA_DIR must be a writable directory`,
    { cause: err },
  );
}

/** Device and inode of the database file as opened. */
export function fileIdentity(file: string): fs.Stats {
  return fs.statSync(file);
}

/**
 * undefined while `file` is still the file opened; otherwise why not (deleted or replaced).
 * One stat call: cheap enough to run before every write.
 */
export function sameFile(file: string, opened: fs.Stats): string | undefined {
  const now = fs.statSync(file, { throwIfNoEntry: false });
  if (now === undefined) {
    return `the cache database ${file} was deleted while open: writes are lost; restart the gateway to recreate it`;
  }
  if (now.ino !== opened.ino || now.dev !== opened.dev) {
    return `the cache database ${file} was replaced while open: writes go to the old file; restart the gateway to use the new one`;
  }
  return undefined;
}

/** A write failure with the file's path in its message (logs name the file). */
export function storeError(err: unknown, file: string): Error {
  const message = messageOf(err);
  if (message.includes(file)) return err instanceof Error ? err : new Error(message);
  const wrapped = new Error(`cache database ${file}: ${message}`, { cause: err });
  const code = codeOf(err);
  if (code !== undefined) Object.assign(wrapped, { code });
  return wrapped;
}
