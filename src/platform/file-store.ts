import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { sha256Hex } from './ids.js';

/** Content types accepted for uploaded documents and attachments, told by their first bytes. */
export type StoredType = 'application/pdf' | 'image/png' | 'image/jpeg' | 'image/webp' | 'text/plain';

/** Control bytes other than tab, LF and CR. */
const isControlByte = (b: number) => (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f;

const startsWith = (buf: Buffer, bytes: number[], at = 0) => bytes.every((b, i) => buf[at + i] === b);

/**
 * The type of a file by its magic bytes, never by the name or the type the client claims: a
 * renamed executable is not a PDF. Plain text is valid UTF-8 without control bytes other than
 * tab, CR and LF.
 */
export function sniffType(buf: Buffer): StoredType | null {
  if (startsWith(buf, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'application/pdf';
  if (startsWith(buf, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(buf, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(buf, [0x52, 0x49, 0x46, 0x46]) && startsWith(buf, [0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  const text = buf.toString('utf8');
  if (buf.length > 0 && Buffer.from(text, 'utf8').equals(buf) && !buf.some(isControlByte)) return 'text/plain';
  return null;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Strict base64 (no whitespace, no URL alphabet): null when the text is not base64. */
export function decodeBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return null;
  return Buffer.from(text, 'base64');
}

/** A file name safe to show and to put in Content-Disposition: no path, no control or quote characters. */
export function cleanFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = [...base]
    .filter((c) => c.charCodeAt(0) > 0x1f && c.charCodeAt(0) !== 0x7f && !'"\\;'.includes(c))
    .join('')
    .trim()
    .slice(0, 120);
  return clean || 'file';
}

/**
 * Files kept under `<state>/<area>/`, named by ids the database holds (never by client names),
 * readable by the daemon's user only.
 */
export function createFileStore(stateDir: string, area: string) {
  const root = resolve(stateDir, area);
  const pathOf = (key: string) => {
    if (!/^[0-9a-f-]{36}\/[0-9a-f-]{36}$/.test(key)) throw new Error(`bad file key ${key}`);
    return join(root, key);
  };
  return {
    /** Writes the bytes under `<owner>/<id>`; the key and the SHA-256 go in the owner's row. */
    async save(owner: string, id: string, bytes: Buffer): Promise<{ key: string; sha256: string }> {
      const key = `${owner}/${id}`;
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      await writeFile(path, bytes, { mode: 0o600, flag: 'wx' });
      return { key, sha256: sha256Hex(bytes) };
    },
    read: (key: string) => readFile(pathOf(key)),
    remove: (key: string) => rm(pathOf(key), { force: true }),
  };
}

export type FileStore = ReturnType<typeof createFileStore>;
