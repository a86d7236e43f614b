import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import { pageOf, type PageOrder, type PagePosition, type PageRequest } from './keyset.ts';

// A long list as a stream of text (the dashboard's CSV downloads), with constant memory: the
// list is read by its own keyset, STREAM_BATCH_ROWS rows a read, each read starting after the
// last row of the one before (as the "Next" page does), in the list's own order; each batch is
// written as soon as it is read, and the event loop gets a turn between two reads, so other
// requests go first. The next batch is read only once the response has taken the one before
// (backpressure: a client that reads slowly slows the reads), so the process holds a batch or
// two however long the file.
//
// Each batch is its own read, not one snapshot: a file streamed while rows arrive or change
// holds rows as of different moments of the list. Keyset order still gives each row that
// existed at the start and kept its sort keys exactly once, none skipped; a row added during
// the download is in the file only if it sorts after the last row already read, and a row whose
// sort key changes meanwhile may be missed or come twice. That is what a keyset export gives.
//
// The first batch is read before the stream exists, so a failing database (or any error in that
// read) fails the call and the route answers it as any error, before a byte is sent. A read
// that fails later destroys the stream with its error: the status is sent by then, so Fastify
// ends the response abruptly (the client sees a failed download, not a shorter file) and logs
// the error.

/** Rows one read of a streamed list asks for. */
export const STREAM_BATCH_ROWS = 500;

export interface StreamedList<R> {
  /** The text before the rows (a CSV file's header line). */
  head: string;
  /** The list's order (the list function's default, newest first, when absent). */
  order?: PageOrder;
  /** At most this many rows in all (at least 1). */
  maxRows: number;
  /** One page of the list, as its list function reads it: at most `page.limit + 1` rows after `page.after`. */
  readPage(page: PageRequest): Promise<R[]>;
  /** One batch's rows as text; it may read what the batch needs (its affiliates' names). */
  textOf(rows: R[]): Promise<string> | string;
}

/** The list as a stream of text: the head and the first batch read now, the rest as the stream is read. */
export async function streamKeysetList<R extends { created_at: string | Date; id: string | number }>(list: StreamedList<R>): Promise<Readable> {
  let left = list.maxRows;
  let after: PagePosition | undefined;
  let more = true;
  const readBatch = async (): Promise<string> => {
    const page: PageRequest = { limit: Math.min(STREAM_BATCH_ROWS, left), ...(list.order ? { order: list.order } : {}), ...(after ? { after } : {}) };
    const { items, next } = pageOf(await list.readPage(page), page);
    left -= items.length;
    after = next;
    more = next !== undefined && left > 0;
    return items.length === 0 ? '' : list.textOf(items);
  };
  const first = list.head + (await readBatch());
  async function* chunks() {
    yield first;
    while (more) {
      await setImmediate(); // requests waiting meanwhile go first
      const text = await readBatch();
      if (text !== '') yield text;
    }
  }
  // Bytes, not objects: the stream buffers a few kilobytes, so it asks for the next batch only
  // once the response has taken the one before.
  return Readable.from(chunks(), { objectMode: false });
}
