/**
 * Rolls back the journal a killed writer left, which node-sqlite3-wasm never does itself: SQLite treats a journal as
 * hot only when no process holds a RESERVED lock, and this VFS answers that question by looking for the lock directory
 * (sqliteFile.ts), which the asking connection has just created. So SQLite reads past a dead transaction's journal
 * and sees whatever of that transaction reached the database file (pages spilled from the cache, a commit cut short):
 * uncommitted rows, or a torn file. Before each transaction we therefore take the lock ourselves, and a journal found
 * while we hold it is a dead writer's: it is played back as SQLite would (https://www.sqlite.org/fileformat.html, "the
 * rollback journal"), then deleted.
 */
import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { lockDirOf } from './lockDir';

const MAGIC = Buffer.from('d9d505f920a163d7', 'hex');
/** SQLite never stores a page at the offset of its lock bytes (the "pending byte" at 1 GiB). */
const PENDING_BYTE = 0x40000000;

/**
 * Plays back and deletes `file`'s journal if it is a dead writer's; returns whether it did. Does nothing while another
 * process holds the lock (its transaction owns the journal; a lock left by a killed process is cleared first, by the
 * recorder).
 */
export function recoverHotJournal(file: string): boolean {
  const journal = `${file}-journal`;
  if (!existsSync(journal)) return false;
  try {
    mkdirSync(lockDirOf(file));
  } catch {
    return false;
  }
  try {
    if (!existsSync(journal)) return false;
    const saved = readFileSync(journal);
    // An empty journal, or one whose header was never synced, saved nothing: the database was not touched.
    if (saved.length >= 28 && saved.subarray(0, 8).equals(MAGIC)) playBack(file, saved);
    unlinkSync(journal);
    syncDirectory(dirname(journal));
    return true;
  } finally {
    rmdirSync(lockDirOf(file));
  }
}

/**
 * Writes every page the journal saved back into the database and cuts the file to its size before the transaction.
 * A segment whose header is not complete (its magic not yet written: SQLite writes it only when it syncs the segment)
 * or a record whose checksum fails ends the playback: what follows never reached the database.
 */
function playBack(file: string, journal: Buffer): void {
  const db = openSync(file, 'r+');
  try {
    playBackInto(db, journal);
    fsyncSync(db);
  } finally {
    closeSync(db);
  }
}

function playBackInto(db: number, journal: Buffer): void {
  let offset = 0;
  let originalPages: number | undefined;
  const done = new Set<number>();
  while (offset + 28 <= journal.length && journal.subarray(offset, offset + 8).equals(MAGIC)) {
    const records = journal.readUInt32BE(offset + 8);
    const nonce = journal.readUInt32BE(offset + 12);
    const pages = journal.readUInt32BE(offset + 16);
    const sector = journal.readUInt32BE(offset + 20);
    const pageSize = journal.readUInt32BE(offset + 24);
    if (sector < 32 || pageSize < 512 || pageSize > 65536) return;
    if (originalPages === undefined) {
      // The size before the transaction: it may have grown the file, or shrunk it (incremental vacuum).
      originalPages = pages;
      ftruncateSync(db, pages * pageSize);
    }
    offset += sector;
    const recordSize = 4 + pageSize + 4;
    // 0xffffffff: as many as the file holds (a journal written without syncs; ours sync, but read it right).
    const count = records === 0xffffffff ? Math.floor((journal.length - offset) / recordSize) : records;
    for (let i = 0; i < count; i++, offset += recordSize) {
      if (offset + recordSize > journal.length) return;
      const page = journal.readUInt32BE(offset);
      const data = journal.subarray(offset + 4, offset + 4 + pageSize);
      if (page === 0 || checksum(nonce, data) !== journal.readUInt32BE(offset + 4 + pageSize)) return;
      if (page > originalPages || done.has(page) || page === Math.floor(PENDING_BYTE / pageSize) + 1) continue;
      writeSync(db, data, 0, pageSize, (page - 1) * pageSize);
      done.add(page);
    }
    offset = Math.ceil(offset / sector) * sector;
  }
}

/** SQLite's page checksum: the nonce plus every 200th byte, from the end of the page back. */
function checksum(nonce: number, page: Buffer): number {
  let sum = nonce;
  for (let i = page.length - 200; i > 0; i -= 200) sum = (sum + page[i]) >>> 0;
  return sum >>> 0;
}

function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Not every system syncs a directory (Windows): the journal's deletion is then as durable as it gets.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
